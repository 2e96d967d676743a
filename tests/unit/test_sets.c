/* The benchmark sets (bench/sets/): every implementation against a
 * reference, alone and under concurrency.
 *  - Sequential: 40 000 random operations on keys 1..500 agree with a
 *    boolean array, for a list and a 64-bucket hash table; size() agrees
 *    (after thread_fini, which writes back RLU's deferred sections).
 *  - Concurrent, oversubscribed (6 threads on 2 CPUs): each thread owns the
 *    keys k with k % 6 == its index and checks every answer about its own
 *    keys against its private copy of their membership, while the others'
 *    operations interleave with its traversals (and it looks up theirs);
 *    at the end every key is present exactly when its owner says so.
 *  - Conservation, oversubscribed: 6 threads insert and remove the same 24
 *    keys (a list, and a 4-bucket table) and count their successful
 *    inserts and removes per key; at the end, for every key, present at the
 *    start + inserts - removes is 0 or 1 and is what contains() says, and
 *    size() is their sum.  A lost update (two inserts of one key that both
 *    succeed, a remove that succeeds on a key another just removed, an
 *    insert that is later lost) breaks it.
 *  - Hazard pointers: once every thread has left, a scan frees everything
 *    that is still retired (no hazard pointer is left behind).
 *  Every implementation of sets.h: harris, harris-hp, rcu-set, urcu-set
 *  (liburcu-memb; not built for ThreadSanitizer: skipped under it), rlu,
 *  rlu-fence, rlu-defer, rlu-coarse. */
#include "test.h"
#ifdef RM_TEST_HAVE_URCU
#define RM_SETS_HAVE_URCU_MEMB 1
#endif
#include "../../bench/sets/sets.h"

/* ThreadSanitizer runs every operation 5-15 times slower, and the eight
 * implementations' oversubscribed runs took 4 minutes of CTest's 5 on a
 * loaded 2-CPU machine: a fifth of the concurrent operations there. */
#define SCALE (TEST_UNDER_TSAN ? 5 : 1)

static const struct rm_set_ops *ops;
static void *set;

static uint64_t rnd(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

static void sequential(size_t buckets) {
  struct rm_set_config cfg = {buckets};
  void *s = ops->create(&cfg);
  CHECK(s != NULL);
  void *th = ops->thread_init(s);
  bool ref[501] = {false};
  uint64_t x = 88172645463325252ull;
  size_t n = 0;
  for (int i = 0; i < 40000; i++) {
    uint64_t k = rnd(&x) % 500 + 1;
    switch (rnd(&x) % 3) {
      case 0:
        CHECK_EQ(ops->insert(s, th, k), !ref[k]);
        if (!ref[k]) n++;
        ref[k] = true;
        break;
      case 1:
        CHECK_EQ(ops->remove(s, th, k), ref[k]);
        if (ref[k]) n--;
        ref[k] = false;
        break;
      default:
        CHECK_EQ(ops->contains(s, th, k), ref[k]);
    }
  }
  for (uint64_t k = 1; k <= 500; k++) CHECK_EQ(ops->contains(s, th, k), ref[k]);
  ops->thread_fini(s, th);
  CHECK_EQ(ops->size(s), n);
  th = ops->thread_init(s);
  /* Extremes of the key range. */
  CHECK(ops->insert(s, th, RM_SET_KEY_MAX));
  CHECK(ops->insert(s, th, 1) == !ref[1]);
  CHECK(ops->contains(s, th, RM_SET_KEY_MAX));
  CHECK(ops->remove(s, th, RM_SET_KEY_MAX));
  CHECK(!ops->contains(s, th, RM_SET_KEY_MAX));
  ops->thread_fini(s, th);
  ops->destroy(s);
}

#define NT 6
#define KEYS 2000
static bool expect[KEYS + 1];

static void worker(void *arg, int t) {
  (void)arg;
  void *th = ops->thread_init(set);
  uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(t + 1);
  for (int i = 0; i < 30000 / SCALE; i++) {
    uint64_t k = rnd(&x) % KEYS + 1;
    k = k - k % NT + (uint64_t)t; /* one of ours */
    if (k == 0 || k > KEYS) continue;
    switch (rnd(&x) % 4) {
      case 0:
        CHECK_EQ(ops->insert(set, th, k), !expect[k]);
        expect[k] = true;
        break;
      case 1:
        CHECK_EQ(ops->remove(set, th, k), expect[k]);
        expect[k] = false;
        break;
      case 2:
        CHECK_EQ(ops->contains(set, th, k), expect[k]);
        break;
      default:
        (void)ops->contains(set, th, rnd(&x) % KEYS + 1); /* someone's */
    }
  }
  ops->thread_fini(set, th);
}

static void concurrent(size_t buckets) {
  struct rm_set_config cfg = {buckets};
  set = ops->create(&cfg);
  CHECK(set != NULL);
  memset(expect, 0, sizeof expect);
  test_run_threads(NT, worker, NULL);
  void *th = ops->thread_init(set);
  size_t n = 0;
  for (uint64_t k = 1; k <= KEYS; k++) {
    CHECK_EQ(ops->contains(set, th, k), expect[k]);
    n += expect[k];
  }
  ops->thread_fini(set, th);
  CHECK_EQ(ops->size(set), n);
  /* Nodes a thread could not free when it left (another thread's hazard
   * named them) stay with its record; with every thread gone, a scan must
   * free them all. */
  if (ops == &rm_set_harris_hp)
    for (struct hm_rec *r = ((struct hm_set *)set)->recs; r; r = r->next) {
      hm_scan((struct hm_set *)set, r);
      CHECK_EQ(r->nretired, 0);
    }
  ops->destroy(set);
}

#define CKEYS 24
#define COPS (20000 / SCALE)
static int64_t cins[NT][CKEYS + 1], crem[NT][CKEYS + 1];

static void conserver(void *arg, int t) {
  (void)arg;
  void *th = ops->thread_init(set);
  uint64_t x = 0x2545F4914F6CDD1Dull * (uint64_t)(t + 1);
  for (int i = 0; i < COPS; i++) {
    uint64_t k = rnd(&x) % CKEYS + 1;
    switch (rnd(&x) % 3) {
      case 0: cins[t][k] += ops->insert(set, th, k); break;
      case 1: crem[t][k] += ops->remove(set, th, k); break;
      default: (void)ops->contains(set, th, k);
    }
  }
  ops->thread_fini(set, th);
}

static void conservation(size_t buckets) {
  struct rm_set_config cfg = {buckets};
  set = ops->create(&cfg);
  CHECK(set != NULL);
  memset(cins, 0, sizeof cins);
  memset(crem, 0, sizeof crem);
  void *th = ops->thread_init(set);
  for (uint64_t k = 1; k <= CKEYS; k += 2) CHECK(ops->insert(set, th, k)); /* odd keys at start */
  ops->thread_fini(set, th);
  test_run_threads(NT, conserver, NULL);
  th = ops->thread_init(set);
  size_t n = 0;
  for (uint64_t k = 1; k <= CKEYS; k++) {
    int64_t have = (int64_t)(k & 1);
    for (int t = 0; t < NT; t++) have += cins[t][k] - crem[t][k];
    CHECK(have == 0 || have == 1);
    CHECK_EQ(ops->contains(set, th, k), have);
    n += (size_t)have;
  }
  ops->thread_fini(set, th);
  CHECK_EQ(ops->size(set), n);
  if (strncmp(ops->name, "rlu", 3) == 0) {
    /* RLU's set-wide counters: every update committed through a
     * synchronize, and the call resets them. */
    struct rm_set_stats st = {0, 0, 0, 0, 0, 0};
    ops->stats(set, NULL, &st);
    CHECK(st.syncs > 0);
    memset(&st, 0, sizeof st);
    ops->stats(set, NULL, &st);
    CHECK_EQ(st.syncs, 0);
  }
  ops->destroy(set);
}

int main(void) {
  for (size_t i = 0; i < RM_SETS_N; i++) {
    ops = rm_sets_all[i];
    if (ops == NULL) {
      fprintf(stderr, "%s: not built (liburcu-dev missing)\n", rm_sets_names[i]);
      continue;
    }
    CHECK(strcmp(ops->name, rm_sets_names[i]) == 0);
    CHECK(rm_set_find(rm_sets_names[i]) == ops);
    if (TEST_UNDER_TSAN && strncmp(ops->name, "urcu", 4) == 0) continue;
    fprintf(stderr, "%s\n", ops->name);
    sequential(1);
    sequential(64);
    concurrent(1);
    concurrent(64);
    conservation(1);
    conservation(4);
  }
  CHECK(rm_set_find("nope") == NULL);
  TEST_MAIN_END();
}
