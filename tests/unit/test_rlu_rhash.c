/* readmostly/rlu_rhash.h: the resizable RLU hash table, one thread.
 *  - create's EINVAL cases; head slots that never straddle a cache line;
 *    add / remove / contains return values; count (a section) and size
 *    (without) across grows and shrinks (8 -> 16 -> 32 ->
 *    16 -> 8 -> 4 -> 2 -> 1 -> 2 -> 4 buckets, 2 -> 8 refused); resize's
 *    EINVAL cases (not double, half or the same size); the _in steps in one section, and an aborted
 *    section applying nothing.
 *  - ENOMEM, injected (RM_RLU_RHASH_INJECT): before the array is allocated,
 *    at a split of a grow, at a merge of a shrink, at the root's section:
 *    each leaves the size and every key as they were, and the next resize
 *    works; the same with three bucket pairs per section
 *    (rm_rlu_rhash_set_batch).  And for real: a max_log_bytes that a bucket of 40 keys
 *    exceeds makes the grow's split of that bucket fail, and the undo of
 *    the buckets already split restores the table.
 *  - the root's progress hint (every 2 sections here): the values each
 *    step's section sees, none left after a resize or an undone one.
 *  Under the fine-grained flavor, with deferral (limit 10), and the
 *  coarse-grained one.  (Mutants checked: the undo left out of resize, the
 *  ENOMEM cases find keys missing and the size changed; the undo without
 *  taking the hint away, and the root's section leaving it, fail hint();
 *  the array laid out right after its 16-byte struct, as malloc returned
 *  it, fails slots_in_lines().) */
#include "test.h"
#include <stdbool.h>
#include <stdint.h>

#include <readmostly/rlu.h>

static size_t inject_at = (size_t)-2; /* the step that fails; -2: none */
/* hint(): the root's progress hint as each step's section sees it. */
static struct rm_rlu_rhash *hint_h;
static rm_rlu_ctx *hint_self;
static size_t hint_done[64];
static bool hint_ntab[64];
static void hint_note(size_t k);
static bool inject(size_t k) {
  if (hint_h != NULL && k < 64) hint_note(k);
  return k == inject_at;
}
#define RM_RLU_RHASH_INJECT(k) inject(k)
/* The hint after every 2 resize sections (64 by default), so that these
 * small tables have one, and the undo after ENOMEM must take it away. */
#define RM_RLU_RHASH_HINT_EVERY 2
#include <readmostly/rlu_rhash.h>

static void hint_note(size_t k) {
  /* Inside the step's section: the root as this section reads it (our own
   * copy under deferral). */
  struct rm_rlu_rhash_root *root = RM_RLU_DEREF(hint_self, hint_h->root);
  hint_done[k] = root->done;
  hint_ntab[k] = root->ntab != NULL;
}

struct cfg {
  const char *name;
  enum rm_rlu_flavor flavor;
  unsigned max_defer;
};
static const struct cfg cfgs[] = {
    {"fine", RM_RLU_FINE, 0},
    {"defer 10", RM_RLU_FINE, 10},
    {"coarse", RM_RLU_COARSE, 0},
};
static const struct cfg *C;

static void set_rlu(size_t max_log_bytes) {
  struct rm_rlu_options o;
  memset(&o, 0, sizeof o);
  o.flavor = C->flavor;
  o.max_defer = C->max_defer;
  o.max_log_bytes = max_log_bytes;
  CHECK_EQ(rm_rlu_init(&o), 0);
}

static void enter_update(rm_rlu_ctx *self) {
  if (C->flavor == RM_RLU_COARSE) rm_rlu_writer_lock(self);
  else rm_rlu_reader_lock(self);
}

#define NKEYS 300
/* Key i of the test's keys (spread over the whole 64-bit range). */
static uint64_t key_of(unsigned i) { return (uint64_t)i * UINT64_C(0x9E3779B97F4A7C15) + 3; }

/* Exactly the keys with have[i] set are present, counted both ways. */
static void check_set(rm_rlu_ctx *self, struct rm_rlu_rhash *h, const bool *have) {
  size_t n = 0;
  for (unsigned i = 0; i < NKEYS; i++) {
    CHECK_EQ(rm_rlu_rhash_contains(self, h, key_of(i)), have[i]);
    n += have[i];
  }
  CHECK_EQ(rm_rlu_rhash_count(self, h), n);
  rm_rlu_sync(self);
  CHECK_EQ(rm_rlu_rhash_size(h), n);
}

/* A resize of the 4-bucket table to `to` that fails at step `at`: ENOMEM,
 * and the table keeps its size and keys. */
static void fail_resize(rm_rlu_ctx *self, struct rm_rlu_rhash *h, size_t to, size_t at,
                        const bool *have) {
  inject_at = at;
  CHECK_ERR(rm_rlu_rhash_resize(self, h, to), ENOMEM);
  inject_at = (size_t)-2;
  CHECK_EQ(rm_rlu_rhash_buckets(self, h), 4);
  check_set(self, h, have);
}

/* Every head slot (object header and head) lies within one cache line,
 * wherever the heap puts the array: tables of 1 to 64 buckets, each after
 * an allocation of 16 to 64 bytes that moves the next one along. */
static void slots_in_lines(void) {
  for (size_t n = 1; n <= 64; n *= 2)
    for (size_t pad = 16; pad <= 64; pad += 16) {
      void *shift = malloc(pad);
      struct rm_rlu_rhash *t = rm_rlu_rhash_create(n, C->flavor == RM_RLU_COARSE);
      CHECK(shift != NULL && t != NULL);
      for (size_t i = 0; i < n; i++) {
        uintptr_t a = (uintptr_t)&t->root->tab->b[i];
        CHECK(a / 64 == (a + sizeof t->root->tab->b[i] - 1) / 64);
      }
      rm_rlu_rhash_destroy(t);
      free(shift);
    }
}

static void contract(void) {
  errno = 0;
  CHECK(rm_rlu_rhash_create(0, false) == NULL);
  CHECK_EQ(errno, EINVAL);
  CHECK(rm_rlu_rhash_create(12, false) == NULL);
  CHECK(rm_rlu_rhash_create(RM_RLU_RHASH_MAX_BUCKETS * 2, false) == NULL);
  bool coarse = C->flavor == RM_RLU_COARSE;
  struct rm_rlu_rhash *h = rm_rlu_rhash_create(8, coarse);
  CHECK(h != NULL);
  slots_in_lines();
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK(self != NULL);
  static bool have[NKEYS];
  memset(have, 0, sizeof have);
  check_set(self, h, have);
  CHECK_EQ(rm_rlu_rhash_contains(self, h, 0), 0);
  CHECK_EQ(rm_rlu_rhash_add(self, h, 0), 1);
  CHECK_EQ(rm_rlu_rhash_add(self, h, UINT64_MAX), 1);
  CHECK_EQ(rm_rlu_rhash_contains(self, h, 0), 1);
  CHECK_EQ(rm_rlu_rhash_contains(self, h, UINT64_MAX), 1);
  CHECK_EQ(rm_rlu_rhash_remove(self, h, 0), 1);
  CHECK_EQ(rm_rlu_rhash_remove(self, h, 0), 0);
  CHECK_EQ(rm_rlu_rhash_remove(self, h, UINT64_MAX), 1);
  for (unsigned i = 0; i < NKEYS; i++) {
    CHECK_EQ(rm_rlu_rhash_add(self, h, key_of(i)), 1);
    CHECK_EQ(rm_rlu_rhash_add(self, h, key_of(i)), 0);
    have[i] = true;
  }
  check_set(self, h, have);
  /* Grow and shrink, changing the set between resizes. */
  static const size_t sizes[] = {16, 32, 16, 8, 4, 2, 1, 2, 8, 4};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t cur = rm_rlu_rhash_buckets(self, h);
    int want = (sizes[s] == cur * 2 || sizes[s] * 2 == cur) ? 0 : EINVAL;
    CHECK_ERR(rm_rlu_rhash_resize(self, h, sizes[s]), want);
    CHECK_EQ(rm_rlu_rhash_buckets(self, h), want == 0 ? sizes[s] : cur);
    check_set(self, h, have);
    for (unsigned i = (unsigned)s; i < NKEYS; i += 7) {
      CHECK_EQ(have[i] ? rm_rlu_rhash_remove(self, h, key_of(i))
                       : rm_rlu_rhash_add(self, h, key_of(i)), 1);
      have[i] = !have[i];
    }
    check_set(self, h, have);
  }
  CHECK_EQ(rm_rlu_rhash_buckets(self, h), 4); /* 8 was refused (from 2) */
  CHECK_ERR(rm_rlu_rhash_resize(self, h, 4), 0);
  CHECK_ERR(rm_rlu_rhash_resize(self, h, 3), EINVAL);
  CHECK_ERR(rm_rlu_rhash_resize(self, h, 0), EINVAL);
  CHECK_ERR(rm_rlu_rhash_resize(self, h, 16), EINVAL);
  CHECK_ERR(rm_rlu_rhash_resize(self, h, 1), EINVAL);
  CHECK_EQ(rm_rlu_rhash_buckets(self, h), 4);
  check_set(self, h, have);

  /* Two steps in one section: key 0 leaves, key 1 arrives (or the reverse
   * of whichever is present). */
  rm_rlu_sync(self);
  bool h0 = have[0], h1 = have[1];
  enter_update(self);
  CHECK_EQ(h0 ? rm_rlu_rhash_remove_in(self, h, key_of(0)) : rm_rlu_rhash_add_in(self, h, key_of(0)), 1);
  CHECK_EQ(h1 ? rm_rlu_rhash_remove_in(self, h, key_of(1)) : rm_rlu_rhash_add_in(self, h, key_of(1)), 1);
  CHECK_EQ(rm_rlu_rhash_contains_in(self, h, key_of(0)), !h0);
  CHECK_EQ(rm_rlu_rhash_contains_in(self, h, key_of(1)), !h1);
  rm_rlu_reader_unlock(self);
  have[0] = !h0;
  have[1] = !h1;
  check_set(self, h, have);
  /* An aborted section applies nothing. */
  rm_rlu_sync(self);
  enter_update(self);
  CHECK_EQ(have[2] ? rm_rlu_rhash_remove_in(self, h, key_of(2)) : rm_rlu_rhash_add_in(self, h, key_of(2)), 1);
  CHECK_EQ(have[3] ? rm_rlu_rhash_remove_in(self, h, key_of(3)) : rm_rlu_rhash_add_in(self, h, key_of(3)), 1);
  rm_rlu_abort(self);
  check_set(self, h, have);

  /* Injected ENOMEM: allocation, a middle step, the last step, the root,
   * for a grow (4 -> 8: 4 steps) and a shrink (4 -> 2: 2 steps). */
  static const size_t at_grow[] = {SIZE_MAX, 0, 2, 3, 4};
  for (size_t k = 0; k < sizeof at_grow / sizeof at_grow[0]; k++) fail_resize(self, h, 8, at_grow[k], have);
  static const size_t at_shrink[] = {SIZE_MAX, 0, 1, 2};
  for (size_t k = 0; k < sizeof at_shrink / sizeof at_shrink[0]; k++)
    fail_resize(self, h, 2, at_shrink[k], have);
  CHECK_ERR(rm_rlu_rhash_resize(self, h, 8), 0);
  check_set(self, h, have);
  CHECK_ERR(rm_rlu_rhash_resize(self, h, 4), 0);
  check_set(self, h, have);
  /* Three bucket pairs per section: a failure inside the first batch
   * (nothing committed) and inside the second (three steps undone). */
  rm_rlu_rhash_set_batch(h, 3);
  for (size_t at = 2; at <= 4; at++) fail_resize(self, h, 8, at, have);
  CHECK_ERR(rm_rlu_rhash_resize(self, h, 8), 0);
  check_set(self, h, have);
  CHECK_ERR(rm_rlu_rhash_resize(self, h, 4), 0);
  check_set(self, h, have);
  rm_rlu_rhash_set_batch(h, 0); /* back to 1 */

  rm_rlu_thread_unregister(self);
  rm_rlu_rhash_destroy(h); /* keys left: LeakSanitizer checks the frees */
}

/* A real ENOMEM: max_log_bytes lets a section copy a few objects, not 43.
 * 64 buckets; the last bucket split gets 40 keys, the others at most 2. */
static void log_limit(void) {
  set_rlu(1536);
  struct rm_rlu_rhash *h = rm_rlu_rhash_create(64, C->flavor == RM_RLU_COARSE);
  CHECK(h != NULL);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK(self != NULL);
  uint64_t keys[200];
  size_t nk = 0, per[64] = {0};
  for (uint64_t k = 1; nk < 40 + 2 * 40; k++) {
    size_t b = rm_rlu_rhash_mix(k) & 63;
    size_t cap = b == 50 ? 40 : b < 40 ? 2 : 0; /* bucket 50: the long one */
    if (per[b] >= cap) continue;
    per[b]++;
    keys[nk++] = k;
    CHECK_EQ(rm_rlu_rhash_add(self, h, k), 1);
  }
  CHECK_ERR(rm_rlu_rhash_resize(self, h, 128), ENOMEM);
  CHECK_EQ(rm_rlu_rhash_buckets(self, h), 64);
  for (size_t i = 0; i < nk; i++) CHECK_EQ(rm_rlu_rhash_contains(self, h, keys[i]), 1);
  CHECK_EQ(rm_rlu_rhash_count(self, h), nk);
  /* Without the long bucket the grow fits. */
  for (size_t i = 0; i < nk; i++)
    if ((rm_rlu_rhash_mix(keys[i]) & 63) == 50) CHECK_EQ(rm_rlu_rhash_remove(self, h, keys[i]), 1);
  CHECK_ERR(rm_rlu_rhash_resize(self, h, 128), 0);
  CHECK_EQ(rm_rlu_rhash_count(self, h), nk - 40);
  CHECK_ERR(rm_rlu_rhash_resize(self, h, 64), 0);
  CHECK_EQ(rm_rlu_rhash_count(self, h), nk - 40);
  rm_rlu_thread_unregister(self);
  rm_rlu_rhash_destroy(h);
  set_rlu(0);
}

/* The hint: a grow of 8 steps, one per section, publishes 2, 4 and 6 (not
 * 8: the root's own section comes next); the steps after a hint find it;
 * none is left after the resize, nor after one that failed at step 5. */
static void hint(void) {
  struct rm_rlu_rhash *h = rm_rlu_rhash_create(8, C->flavor == RM_RLU_COARSE);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK(h != NULL && self != NULL);
  for (unsigned i = 0; i < 100; i++) CHECK_EQ(rm_rlu_rhash_add(self, h, key_of(i)), 1);
  hint_h = h;
  hint_self = self;
  CHECK_ERR(rm_rlu_rhash_resize(self, h, 16), 0);
  for (size_t k = 0; k <= 8; k++) {
    size_t want = k < 2 ? 0 : k == 8 ? 6 : k - k % 2;
    CHECK_EQ(hint_done[k], want);
    CHECK_EQ(hint_ntab[k], want != 0);
  }
  rm_rlu_sync(self);
  CHECK(h->root->ntab == NULL && h->root->done == 0);
  inject_at = 5;
  CHECK_ERR(rm_rlu_rhash_resize(self, h, 8), ENOMEM);
  inject_at = (size_t)-2;
  CHECK_EQ(hint_done[5], 4);
  rm_rlu_sync(self);
  CHECK(h->root->ntab == NULL && h->root->done == 0);
  CHECK_EQ(rm_rlu_rhash_buckets(self, h), 16);
  hint_h = NULL;
  for (unsigned i = 0; i < 100; i++) CHECK_EQ(rm_rlu_rhash_contains(self, h, key_of(i)), 1);
  CHECK_EQ(rm_rlu_rhash_count(self, h), 100);
  rm_rlu_thread_unregister(self);
  rm_rlu_rhash_destroy(h);
}

int main(void) {
  for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
    C = &cfgs[c];
    printf("%s\n", C->name);
    set_rlu(0);
    contract();
    log_limit();
    hint();
  }
  TEST_MAIN_END();
}
