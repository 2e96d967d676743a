/* The reference API (readmostly/rlu-compat.h) where it can differ from a
 * plain forwarding of names:
 *
 *  - RLU_INIT sets every option: the fields it does not name take the
 *    library's defaults.  It used to leave fence_free and
 *    fence_free_max_barriers as the stack had them; here the stack under
 *    it is filled with 0xa5 first, so the old code read back a limit of
 *    0xa5a5a5a5 membarriers a second and a bool holding 0xa5.
 *  - RLU_ALLOC is the reference's plain allocation: RLU_ABORT does not
 *    free an object allocated in the aborted section.  A reference program
 *    either keeps it for the retry or frees it itself; the old code freed
 *    it at the abort, so the first program linked freed memory (malloc
 *    handed the block out again at once) and the second freed it twice.
 *    The native rm_rlu_alloc keeps its own rule (an abort frees what the
 *    section allocated): checked here too.
 */
#include "test.h"
#include <readmostly/rlu-compat.h>
#include <stdint.h>

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

typedef struct node {
  long val;
  struct node *next;
} node_t;

static node_t *head; /* sentinel; the list is head -> ... */

/* The reference's idiom: allocate before locking, keep the node across an
 * abort and retry with it. */
static void test_alloc_kept_for_retry(void) {
  RLU_INIT(RLU_TYPE_FINE_GRAINED, 1);
  head = (node_t *)RLU_ALLOC(sizeof(node_t));
  head->val = -1;
  head->next = NULL;
  rlu_thread_data_t td;
  RLU_THREAD_INIT(&td);
  node_t *n = NULL;
  int tries = 0;
restart:
  RLU_READER_LOCK(&td);
  if (n == NULL) {
    n = (node_t *)RLU_ALLOC(sizeof(node_t));
    CHECK(n != NULL);
    n->val = 42;
  }
  if (tries++ == 0) { /* as after a failed RLU_TRY_LOCK */
    RLU_ABORT(&td);
    /* A block of the same size: malloc must not hand out n again. */
    void *other = malloc(RLU_OBJ_HEADER_SIZE + sizeof(node_t));
    CHECK(other != NULL);
    CHECK(other != (void *)RLU_OBJ_TO_H(n));
    memset(other, 0, RLU_OBJ_HEADER_SIZE + sizeof(node_t));
    free(other);
    goto restart;
  }
  node_t *h = (node_t *)RLU_DEREF(&td, head);
  CHECK(RLU_TRY_LOCK(&td, &h));
  RLU_ASSIGN_PTR(&td, &n->next, h->next);
  RLU_ASSIGN_PTR(&td, &h->next, n);
  RLU_READER_UNLOCK(&td);
  RLU_READER_LOCK(&td);
  node_t *first = (node_t *)RLU_DEREF(&td, ((node_t *)RLU_DEREF(&td, head))->next);
  CHECK(first == n);
  CHECK_EQ(first->val, 42);
  RLU_READER_UNLOCK(&td);
  RLU_THREAD_FINISH(&td);
  RLU_FREE(NULL, n);
  RLU_FREE(NULL, head);
}

/* The other idiom: free the speculative node after the abort. */
static void test_alloc_freed_after_abort(void) {
  RLU_INIT(RLU_TYPE_FINE_GRAINED, 1);
  rlu_thread_data_t td;
  RLU_THREAD_INIT(&td);
  for (int i = 0; i < 100; i++) {
    RLU_READER_LOCK(&td);
    node_t *n = (node_t *)RLU_ALLOC(sizeof(node_t));
    CHECK(n != NULL);
    n->val = i;
    RLU_ABORT(&td);
    CHECK_EQ(n->val, i);
    RLU_FREE(NULL, n); /* the only free of n */
  }
  /* An allocation alone does not make a section a writer: no commit. */
  uint64_t clk = rm_rlu_clock();
  RLU_READER_LOCK(&td);
  node_t *n = (node_t *)RLU_ALLOC(sizeof(node_t));
  RLU_READER_UNLOCK(&td);
  CHECK_EQ(rm_rlu_clock(), clk);
  RLU_FREE(NULL, n);
  RLU_THREAD_FINISH(&td);
}

/* The native rule, documented in rlu.h: rm_rlu_alloc in a section is
 * freed by the section's abort (the AddressSanitizer build's leak check
 * would report it otherwise); rm_rlu_alloc_untracked is not. */
static void test_native_alloc(void) {
  CHECK_ERR(rm_rlu_init(NULL), 0);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  rm_rlu_reader_lock(self);
  long *kept = (long *)rm_rlu_alloc_untracked(sizeof *kept);
  CHECK(kept != NULL);
  CHECK(((uintptr_t)kept & 15) == 0);
  CHECK(RM_RLU_HDR(kept)->copy == NULL);
  CHECK_EQ(RM_RLU_HDR(kept)->size, sizeof *kept);
  *kept = 7;
  long *tracked = (long *)rm_rlu_alloc(sizeof *tracked);
  CHECK(tracked != NULL);
  *tracked = 8;
  rm_rlu_abort(self);
  void *other = malloc(sizeof(struct rm_rlu_obj_hdr) + sizeof(long));
  CHECK(other != NULL);
  CHECK(other != (void *)RM_RLU_HDR(kept));
  free(other);
  CHECK_EQ(*kept, 7);
  rm_rlu_free(NULL, kept);
  rm_rlu_thread_unregister(self);
}

int main(void) {
  test_init();
  test_alloc_kept_for_retry();
  test_alloc_freed_after_abort();
  test_native_alloc();
  TEST_MAIN_END();
}
