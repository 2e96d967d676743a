/* The flat table's revocation scan (bravo.h, rm_bravo_set_scan):
 *  - rm_bravo_set_scan: EINVAL for unknown methods, ENOTSUP for ones this
 *    CPU or build lacks, AUTO picks a supported one;
 *  - every supported method finds exactly the nonzero slots, in order, for
 *    table sizes that are and are not multiples of its step, from any
 *    start index, whatever the values (nest bits, the released mark);
 *  - a writer scanning with each method waits for a fast reader whose slot
 *    lies anywhere in the table (first, last, middle of a step). */
#include "test.h"
#include <readmostly/bravo_locks.h>

static const char *const names[] = {"auto", "plain", "sse2", "avx2"};

static void check_method(int m) {
  static const size_t sizes[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 4096};
  uint32_t seed = 12345u + (uint32_t)m;
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    size_t n = sizes[si];
    uintptr_t *t = (uintptr_t *)aligned_alloc(128, (n * sizeof *t + 127) / 128 * 128);
    CHECK(t != NULL);
    for (int round = 0; round < 50; round++) {
      memset(t, 0, n * sizeof *t);
      int k = (int)(test_xorshift32(&seed) % 5u);
      for (int j = 0; j < k; j++) {
        uintptr_t v = (uintptr_t)0x7f0000001000ull + (uintptr_t)(test_xorshift32(&seed) % 64u) * 128u;
        if (j == 1) v |= RM_BRAVO_SLOT_NEST_ONE;
        if (j == 2) v |= RM_BRAVO_SLOT_RELEASED;
        t[test_xorshift32(&seed) % n] = v;
      }
      size_t from = round % 3 == 0 ? (size_t)(test_xorshift32(&seed) % n) : 0;
      size_t expect = from, got = from;
      for (;;) {
        while (expect < n && t[expect] == 0) expect++;
        got = rm_bravo_scan_nonzero(t, got, n, m);
        CHECK_EQ(got, expect);
        if (got == n) break;
        got++;
        expect++;
      }
    }
    free(t);
  }
}

/* A fast reader of a private-table lock sits in slot `where`; a writer
 * must wait for it. */
RM_BRAVO_DEFINE_PRIVATE(scan_lock, rm_ba_t, rm_ba, 4096)
static scan_lock_t lk;
static int writer_in;
static void *writer_main(void *p) {
  (void)p;
  CHECK_ERR(scan_lock_write_lock(&lk), 0);
  __atomic_store_n(&writer_in, 1, __ATOMIC_RELEASE);
  CHECK_ERR(scan_lock_write_unlock(&lk), 0);
  return NULL;
}

static void check_writer(size_t where) {
  /* Turn the bias on (a slow read with N = 0), then stand in for a fast
   * reader by publishing the lock in slot `where` as the fast path would
   * (the hash would pick one slot; any slot must be found). */
  rm_token_t t;
  CHECK_ERR(scan_lock_read_lock(&lk, &t), 0);
  CHECK_ERR(scan_lock_read_unlock(&lk, t), 0);
  CHECK(__atomic_load_n(&lk.bias.rbias, __ATOMIC_ACQUIRE) & RM_BRAVO_BIAS);
  uintptr_t *slot = &lk.table.slots[where];
  uintptr_t zero = 0;
  CHECK(__atomic_compare_exchange_n(slot, &zero, (uintptr_t)&lk.bias, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST));
  __atomic_store_n(&writer_in, 0, __ATOMIC_RELEASE);
  pthread_t w;
  CHECK_ERR(pthread_create(&w, NULL, writer_main, NULL), 0);
  test_sleep_ms(30);
  CHECK_EQ(__atomic_load_n(&writer_in, __ATOMIC_ACQUIRE), 0);
  __atomic_store_n(slot, (uintptr_t)0, __ATOMIC_RELEASE);
  pthread_join(w, NULL);
  CHECK_EQ(__atomic_load_n(&writer_in, __ATOMIC_ACQUIRE), 1);
}

int main(void) {
  CHECK_ERR(rm_bravo_set_scan(-1), EINVAL);
  CHECK_ERR(rm_bravo_set_scan(4), EINVAL);
  CHECK_ERR(rm_bravo_set_scan(RM_BRAVO_SCAN_AUTO), 0);
  int best = rm_bravo_scan();
  CHECK(best >= RM_BRAVO_SCAN_PLAIN && best <= RM_BRAVO_SCAN_AVX2);
  printf("widest scan: %s\n", names[best]);
  CHECK_ERR(rm_bravo_set_scan(RM_BRAVO_SCAN_PLAIN), 0);
  CHECK_ERR(rm_bravo_set_inhibit_multiplier(0), 0);
  CHECK_ERR(scan_lock_init(&lk), 0);
  for (int m = RM_BRAVO_SCAN_PLAIN; m <= RM_BRAVO_SCAN_AVX2; m++) {
    int e = rm_bravo_set_scan(m);
    if (e == ENOTSUP) {
      CHECK(m > best);
      /* Unsupported: the scan function finds nothing rather than fault. */
      printf("%s: not supported here\n", names[m]);
      continue;
    }
    CHECK_ERR(e, 0);
    CHECK_EQ(rm_bravo_scan(), m);
    check_method(m);
    static const size_t where[] = {0, 1, 7, 8, 15, 16, 17, 2047, 4079, 4095};
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) check_writer(where[i]);
    printf("%s: ok\n", names[m]);
  }
  CHECK_ERR(scan_lock_destroy(&lk), 0);
  CHECK_ERR(rm_bravo_set_scan(RM_BRAVO_SCAN_AUTO), 0);
  TEST_MAIN_END();
}
