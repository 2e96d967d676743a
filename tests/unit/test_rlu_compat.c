/* The reference API (readmostly/rlu-compat.h) where it can differ from a
 * plain forwarding of names:
 *
 *  - RLU_INIT sets every option: the fields it does not name take the
 *    library's defaults.  It used to leave fence_free and
 *    fence_free_max_barriers as the stack had them; here the stack under
 *    it is filled with 0xa5 first, so the old code read back a limit of
 *    0xa5a5a5a5 membarriers a second and a bool holding 0xa5.
 */
#include "test.h"
#include <readmostly/rlu-compat.h>

/* Fill the stack below the caller's frame, then let the next call at the
 * same depth find it so. */
static __attribute__((noinline)) void dirty_stack(void) {
  volatile unsigned char junk[8192];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = 0xa5;
}
static __attribute__((noinline)) void init_on_dirty_stack(int type, int ws) {
  RLU_INIT(type, ws);
}

static void check_defaults(enum rm_rlu_flavor flavor, unsigned defer) {
  struct rm_rlu_options o;
  memset(&o, 0x5a, sizeof o);
  rm_rlu_options_get(&o);
  unsigned char ff;
  memcpy(&ff, &o.fence_free, 1); /* the byte, whatever the bool holds */
  CHECK_EQ(ff, 0);
  CHECK_EQ(o.fence_free_max_barriers, 5000); /* the library's default for 0 */
  CHECK_EQ(o.flavor, flavor);
  CHECK_EQ(o.max_defer, defer);
  CHECK(o.stats);
  CHECK_EQ(o.log_chunk, 4096);
  CHECK_EQ(o.max_log_bytes, 0);
}

static void test_init(void) {
  dirty_stack();
  init_on_dirty_stack(RLU_TYPE_FINE_GRAINED, 1);
  check_defaults(RM_RLU_FINE, 1); /* 1: no deferral */
  dirty_stack();
  init_on_dirty_stack(RLU_TYPE_FINE_GRAINED, 10);
  check_defaults(RM_RLU_FINE, 10);
  dirty_stack();
  init_on_dirty_stack(RLU_TYPE_COARSE_GRAINED, 1);
  check_defaults(RM_RLU_COARSE, 0);
  /* A thread runs sections with the entry the defaults give. */
  rlu_thread_data_t td;
  RLU_THREAD_INIT(&td);
  CHECK(!rm_rlu_fence_free());
  RLU_READER_LOCK(&td);
  RLU_READER_UNLOCK(&td);
  RLU_THREAD_FINISH(&td);
}

int main(void) {
  test_init();
  TEST_MAIN_END();
}
