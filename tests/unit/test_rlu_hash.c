/* readmostly/rlu_hash.h: the hash table of RLU sorted lists.
 *  - Contract, one thread: create (0 buckets is 1), add / remove / contains
 *    return values, keys next to the sentinels, the _in steps inside one
 *    section, count (in a section) and size (without), destroy with keys left (LeakSanitizer checks the frees).
 *  - Snapshot atomicity across buckets, oversubscribed (3 writers, 2 readers): writers move keys
 *    (remove_in one key and add_in an absent one, usually in another
 *    bucket, in ONE section) while readers count the table with
 *    rm_rlu_hash_count() and must always find exactly N keys; a count made
 *    of one section per bucket sees N - 1 or N + 1 (the mutant this test
 *    was checked against).
 *  Each under the fine-grained flavor (fenced and fence-free entry, and
 *  with deferral, limit 10) and the coarse-grained one. */
#include "test.h"
#include <sched.h>
#include <readmostly/rlu_hash.h>

struct cfg {
  const char *name;
  enum rm_rlu_flavor flavor;
  unsigned max_defer;
  bool fence_free;
};
static const struct cfg cfgs[] = {
    {"fine", RM_RLU_FINE, 0, false},
    {"fine fence-free", RM_RLU_FINE, 0, true},
    {"defer 10", RM_RLU_FINE, 10, true},
    {"coarse", RM_RLU_COARSE, 0, false},
};
static const struct cfg *C;

static void enter_update(rm_rlu_ctx *self) {
  if (C->flavor == RM_RLU_COARSE) rm_rlu_writer_lock(self);
  else rm_rlu_reader_lock(self);
}

static void contract(void) {
  struct rm_rlu_hash *h = rm_rlu_hash_create(0, C->flavor == RM_RLU_COARSE);
  CHECK(h != NULL);
  CHECK_EQ(h->nbuckets, 1);
  rm_rlu_hash_destroy(h);
  h = rm_rlu_hash_create(7, C->flavor == RM_RLU_COARSE);
  CHECK(h != NULL);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK(self != NULL);
  CHECK_EQ(rm_rlu_hash_count(self, h), 0);
  const int64_t keys[] = {INT64_MIN + 1, -5, 0, 1, 2, 3, 100, 1000000, INT64_MAX - 1};
  const size_t nk = sizeof keys / sizeof keys[0];
  for (size_t i = 0; i < nk; i++) {
    CHECK_EQ(rm_rlu_hash_contains(self, h, keys[i]), 0);
    CHECK_EQ(rm_rlu_hash_add(self, h, keys[i]), 1);
    CHECK_EQ(rm_rlu_hash_add(self, h, keys[i]), 0);
    CHECK_EQ(rm_rlu_hash_contains(self, h, keys[i]), 1);
    CHECK(rm_rlu_hash_bucket(h, keys[i]) < 7);
  }
  CHECK_EQ(rm_rlu_hash_count(self, h), nk);
  /* Two steps in one section: 1 leaves, 4 arrives.  (Under deferral our
   * own deferred sections still lock nodes: flush them first.) */
  rm_rlu_sync(self);
  enter_update(self);
  CHECK_EQ(rm_rlu_hash_contains_in(self, h, 4), 0);
  CHECK_EQ(rm_rlu_hash_remove_in(self, h, 1), 1);
  CHECK_EQ(rm_rlu_hash_add_in(self, h, 4), 1);
  CHECK_EQ(rm_rlu_hash_contains_in(self, h, 4), 1);
  CHECK_EQ(rm_rlu_hash_contains_in(self, h, 1), 0);
  CHECK_EQ(rm_rlu_hash_remove_in(self, h, 1), 0);
  CHECK_EQ(rm_rlu_hash_add_in(self, h, 4), 0);
  rm_rlu_reader_unlock(self);
  CHECK_EQ(rm_rlu_hash_contains(self, h, 1), 0);
  CHECK_EQ(rm_rlu_hash_contains(self, h, 4), 1);
  /* An aborted section applies nothing. */
  rm_rlu_sync(self);
  enter_update(self);
  CHECK_EQ(rm_rlu_hash_remove_in(self, h, 4), 1);
  CHECK_EQ(rm_rlu_hash_add_in(self, h, 5), 1);
  rm_rlu_abort(self);
  CHECK_EQ(rm_rlu_hash_contains(self, h, 4), 1);
  CHECK_EQ(rm_rlu_hash_contains(self, h, 5), 0);
  CHECK_EQ(rm_rlu_hash_count(self, h), nk);
  for (size_t i = 0; i < nk; i += 2) {
    CHECK_EQ(rm_rlu_hash_remove(self, h, keys[i]), 1);
    CHECK_EQ(rm_rlu_hash_remove(self, h, keys[i]), 0);
  }
  CHECK_EQ(rm_rlu_hash_count(self, h), nk - (nk + 1) / 2);
  rm_rlu_thread_unregister(self); /* writes deferred sections back */
  CHECK_EQ(rm_rlu_hash_size(h), nk - (nk + 1) / 2);
  rm_rlu_hash_destroy(h); /* keys left in it */
}

#define NKEYS 63
#define RANGE 1008
#define NWRITERS 3
#define NREADERS 2
#define MOVES 3000
static struct rm_rlu_hash *H;
static int g_stop, g_started;
static uint64_t g_counts, g_bad;

static uint64_t rnd(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

static void worker(void *arg, int t) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK(self != NULL);
  /* Everyone starts together (thread creation is slow next to the moves). */
  __atomic_add_fetch(&g_started, 1, __ATOMIC_RELEASE);
  while (__atomic_load_n(&g_started, __ATOMIC_ACQUIRE) < NWRITERS + NREADERS) sched_yield();
  if (t < NWRITERS) {
    /* Writer t owns the keys k with k % NWRITERS == t: it knows which are
     * present, so every move is real and both steps must succeed. */
    uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(t + 1);
    bool mine[RANGE] = {false};
    int64_t have[NKEYS / NWRITERS];
    int nh = 0;
    for (int64_t k = t; k < RANGE; k += NWRITERS)
      if (k % (RANGE / NKEYS) == 0 && nh < NKEYS / NWRITERS) mine[k] = true, have[nh++] = k;
    CHECK_EQ(nh, NKEYS / NWRITERS);
    for (int i = 0; i < MOVES; i++) {
      int j = (int)(rnd(&x) % (uint64_t)nh);
      int64_t from = have[j], to;
      do to = (int64_t)(rnd(&x) % (RANGE / NWRITERS)) * NWRITERS + t;
      while (mine[to]);
      for (;;) {
        enter_update(self);
        int r = rm_rlu_hash_remove_in(self, H, from);
        if (r >= 0) {
          CHECK_EQ(r, 1);
          r = rm_rlu_hash_add_in(self, H, to);
        }
        if (r >= 0) {
          CHECK_EQ(r, 1);
          rm_rlu_reader_unlock(self);
          break;
        }
        CHECK_EQ(r, -EBUSY);
        rm_rlu_abort(self);
      }
      mine[from] = false;
      mine[to] = true;
      have[j] = to;
    }
    __atomic_add_fetch(&g_stop, 1, __ATOMIC_RELEASE);
  } else {
    uint64_t n = 0, bad = 0;
    while (__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE) < NWRITERS || n < 10) {
      size_t s = rm_rlu_hash_count(self, H);
      if (s != NKEYS && bad++ < 3) fprintf(stderr, "size %zu, expected %d\n", s, NKEYS);
      if (++n % 64 == 0) sched_yield(); /* oversubscribed: let the writers run */
    }
    __atomic_add_fetch(&g_counts, n, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g_bad, bad, __ATOMIC_RELAXED);
  }
  rm_rlu_thread_unregister(self);
}

static void snapshot(void) {
  H = rm_rlu_hash_create(256, C->flavor == RM_RLU_COARSE);
  CHECK(H != NULL);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  for (int64_t k = 0; k < NKEYS; k++) CHECK_EQ(rm_rlu_hash_add(self, H, k * (RANGE / NKEYS)), 1);
  rm_rlu_thread_unregister(self);
  g_stop = g_started = 0;
  g_counts = g_bad = 0;
  test_run_threads(NWRITERS + NREADERS, worker, NULL);
  CHECK_EQ(g_bad, 0);
  CHECK(g_counts >= NREADERS * 10);
  self = rm_rlu_thread_register();
  CHECK_EQ(rm_rlu_hash_count(self, H), NKEYS);
  rm_rlu_thread_unregister(self);
  CHECK_EQ(rm_rlu_hash_size(H), NKEYS);
  rm_rlu_hash_destroy(H);
}

int main(void) {
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    C = &cfgs[i];
    struct rm_rlu_options o;
    memset(&o, 0, sizeof o);
    o.flavor = C->flavor;
    o.max_defer = C->max_defer;
    o.fence_free = C->fence_free;
    CHECK_EQ(rm_rlu_init(&o), 0);
    fprintf(stderr, "%s\n", C->name);
    contract();
    snapshot();
  }
  TEST_MAIN_END();
}
