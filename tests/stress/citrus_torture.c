/*
 * citrus_torture - both Citrus trees under torture, with an oracle.
 *
 *   citrus_torture --tree rcu|rlu [--flavor fine|coarse] [--defer N]
 *                  [--readers N] [--writers N] [--seconds S] [--range K]
 *                  [--disjoint 0|1]
 *
 * Keys 0..K-1.  Every key divisible by 4 is "stable": inserted before the
 * threads start and never removed.  The others start present with
 * probability 1/2 (all inserted in random order, so the tree is not a
 * list).  Writers insert or remove random non-stable keys, each in its own
 * residue class (--disjoint 1) or all over the range (--disjoint 0), and
 * count per key the net effect of their successful calls.  Readers search
 * random keys along their own walk of the tree, inside one section, and
 * check at every node that its key lies within the bounds the path so far
 * allows, and that a stable key is found; every 32 searches they walk the
 * whole tree in order (the library's walk) and check the keys ascend and
 * every stable key is there.  At the end, with every thread stopped (RLU
 * contexts unregistered, which flushes deferred sections), every key must
 * be present exactly when the start plus the writers' net counts say, the
 * tree must be a strict BST with that many nodes, and (RCU) no node may be
 * marked or locked.
 *
 * Bounds.  The RLU tree moves a successor in one commit: a path sees
 * lo < key < hi.  The RCU tree copies the successor up and unlinks the old
 * one a grace period later: in between, a search that went right at the
 * copy (lo = k) may meet the old successor (key k) below it, so the RCU
 * check is lo <= key < hi.
 *
 * The run lasts --seconds, and then until every reader has made 64
 * searches and the writers 256 updates (at most 60 times longer), so that
 * a slow or loaded machine does not make it fail.  Any violation prints
 * what was seen and exits 1.  Run with more threads than CPUs.
 */
#define _GNU_SOURCE
#include "test.h"
#include <readmostly/rcu_citrus.h>
#include <readmostly/rlu_citrus.h>
#include <sched.h>
#include <stdint.h>
#include <unistd.h>

static bool use_rlu, coarse, disjoint = true;
static unsigned defer;
static int nreaders = 4, nwriters = 3;
static int64_t range = 2048;
static struct rm_rcu_citrus *rct;
static struct rm_rlu_citrus *lct;
static char *init_present;
static int32_t **delta; /* [writer][key] */
static int stop;
static long long n_searches, n_walks, n_writes, n_bound_errs, n_misses, n_walk_errs;
static long long live_searches, live_writes; /* progress, for the timer */

/* xorshift64*: the high half of the product (the low bits of plain
 * xorshift are linear in each other: a key would decide its operation). */
static uint64_t rnd(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return (*s * 0x2545F4914F6CDD1Dull) >> 32;
}

static bool stable(int64_t k) { return k % 4 == 0; }

/* ---- readers ------------------------------------------------------------------- */

/* One search along our own walk; returns found, counts bound violations. */
static bool rcu_search(int64_t key, long long *bad) {
  bool found = false;
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  rm_rcu_read_lock();
  struct rm_rcu_citrus_node *n = rm_rcu_dereference(rct->root->child[0]);
  while (n != NULL) {
    int64_t k = n->key;
    if (!(lo <= k && k < hi)) {
      if (*bad < 5)
        fprintf(stderr, "rcu: key %lld outside [%lld, %lld) on the path to %lld\n", (long long)k,
                (long long)lo, (long long)hi, (long long)key);
      ++*bad;
      break;
    }
    if (k == key) {
      found = true;
      break;
    }
    if (key < k) hi = k;
    else lo = k;
    n = rm_rcu_dereference(n->child[key > k]);
  }
  rm_rcu_read_unlock();
  return found;
}

static bool rlu_search(rm_rlu_ctx *self, int64_t key, long long *bad) {
  bool found = false;
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  rm_rlu_reader_lock(self);
  struct rm_rlu_citrus_node *n = RM_RLU_DEREF(self, lct->root);
  n = RM_RLU_DEREF(self, n->child[0]);
  bool first = true;
  while (n != NULL) {
    int64_t k = n->key;
    if (!((first || lo < k) && k < hi)) {
      if (*bad < 5)
        fprintf(stderr, "rlu: key %lld outside (%lld, %lld) on the path to %lld\n", (long long)k,
                (long long)lo, (long long)hi, (long long)key);
      ++*bad;
      break;
    }
    if (k == key) {
      found = true;
      break;
    }
    if (key < k) hi = k;
    else {
      lo = k;
      first = false;
    }
    n = RM_RLU_DEREF(self, n->child[key > k]);
  }
  rm_rlu_reader_unlock(self);
  return found;
}

struct walk_state {
  int64_t last;
  long n, stable_seen, errs;
};
static int walk_fn(int64_t key, void *arg) {
  struct walk_state *w = (struct walk_state *)arg;
  if (w->n > 0 && key <= w->last) {
    if (w->errs++ < 5)
      fprintf(stderr, "walk: %lld after %lld\n", (long long)key, (long long)w->last);
  }
  if (key < 0 || key >= range) w->errs++;
  w->stable_seen += stable(key);
  w->last = key;
  w->n++;
  return 0;
}

static void reader(void *arg, int idx) {
  (void)arg;
  uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(idx + 1);
  rm_rlu_ctx *self = NULL;
  if (use_rlu) {
    self = rm_rlu_thread_register();
    CHECK(self != NULL);
  }
  long long searches = 0, walks = 0, bad = 0, misses = 0, walk_errs = 0;
  int64_t nstable = (range + 3) / 4;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
    int64_t k = (int64_t)(rnd(&s) % (uint64_t)range);
    bool f = use_rlu ? rlu_search(self, k, &bad) : rcu_search(k, &bad);
    if (stable(k) && !f) {
      if (misses < 5) fprintf(stderr, "%s: stable key %lld not found\n", use_rlu ? "rlu" : "rcu",
                              (long long)k);
      misses++;
    }
    if (searches < 64) __atomic_fetch_add(&live_searches, 1, __ATOMIC_RELAXED);
    if (++searches % 32 == 0) {
      struct walk_state w = {0, 0, 0, 0};
      long r = use_rlu ? rm_rlu_citrus_walk(self, lct, walk_fn, &w)
                       : rm_rcu_citrus_walk(rct, walk_fn, &w);
      CHECK(r >= 0);
      if (w.stable_seen != nstable) {
        if (walk_errs < 5)
          fprintf(stderr, "walk: %ld stable keys of %lld\n", w.stable_seen, (long long)nstable);
        w.errs++;
      }
      walk_errs += w.errs;
      walks++;
    }
  }
  if (use_rlu) rm_rlu_thread_unregister(self);
  else rm_rcu_unregister_thread();
  __atomic_fetch_add(&n_searches, searches, __ATOMIC_RELAXED);
  __atomic_fetch_add(&n_walks, walks, __ATOMIC_RELAXED);
  __atomic_fetch_add(&n_bound_errs, bad, __ATOMIC_RELAXED);
  __atomic_fetch_add(&n_misses, misses, __ATOMIC_RELAXED);
  __atomic_fetch_add(&n_walk_errs, walk_errs, __ATOMIC_RELAXED);
}

/* ---- writers --------------------------------------------------------------------- */

static void writer(void *arg, int w) {
  (void)arg;
  uint64_t s = 0xD1B54A32D192ED03ull * (uint64_t)(w + 7);
  rm_rlu_ctx *self = NULL;
  if (use_rlu) {
    self = rm_rlu_thread_register();
    CHECK(self != NULL);
  }
  int32_t *d = delta[w];
  long long n = 0;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
    int64_t k = (int64_t)(rnd(&s) % (uint64_t)range);
    if (stable(k) || (disjoint && k % nwriters != w)) continue;
    int r;
    bool ins = rnd(&s) & 1;
    if (use_rlu)
      r = ins ? rm_rlu_citrus_insert(self, lct, k) : rm_rlu_citrus_remove(self, lct, k);
    else
      r = ins ? rm_rcu_citrus_insert(rct, k) : rm_rcu_citrus_remove(rct, k);
    CHECK(r == 0 || r == 1);
    if (r == 1) d[k] += ins ? 1 : -1;
    if (n < 256) __atomic_fetch_add(&live_writes, 1, __ATOMIC_RELAXED);
    n++;
  }
  if (use_rlu) rm_rlu_thread_unregister(self); /* flushes deferred sections */
  __atomic_fetch_add(&n_writes, n, __ATOMIC_RELAXED);
}

/* The run lasts the given time and then until every reader has made 64
 * searches and the writers 256 updates in all (a loaded machine, or a
 * sanitizer, may not have run them yet), at most 60 times longer. */
static void *timer_fn(void *arg) {
  double secs = *(double *)arg;
  test_sleep_ms((long)(secs * 1000));
  for (long waited = 0; waited < (long)(secs * 60000); waited += 10) {
    if (__atomic_load_n(&live_searches, __ATOMIC_RELAXED) >= 64LL * nreaders &&
        __atomic_load_n(&live_writes, __ATOMIC_RELAXED) >= 256)
      break;
    test_sleep_ms(10);
  }
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  return NULL;
}

static void thread_fn(void *arg, int i) {
  if (i < nwriters) writer(arg, i);
  else reader(arg, i - nwriters);
}

/* ---- the final check -------------------------------------------------------------- */

static long rcu_shape(struct rm_rcu_citrus_node *n, int64_t lo, int64_t hi) {
  if (n == NULL) return 0;
  CHECK(n->key > lo && n->key < hi);
  CHECK_EQ(n->marked, 0);
  CHECK_EQ(n->lock, 0);
  return 1 + rcu_shape(n->child[0], lo, n->key) + rcu_shape(n->child[1], n->key, hi);
}
static long rlu_shape(rm_rlu_ctx *self, struct rm_rlu_citrus_node *n, int64_t lo, int64_t hi) {
  n = RM_RLU_DEREF(self, n);
  if (n == NULL) return 0;
  CHECK(n->key > lo && n->key < hi);
  return 1 + rlu_shape(self, n->child[0], lo, n->key) + rlu_shape(self, n->child[1], n->key, hi);
}

int main(int argc, char **argv) {
  double seconds = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--tree")) use_rlu = !strcmp(argv[i + 1], "rlu");
    else if (!strcmp(argv[i], "--flavor")) coarse = !strcmp(argv[i + 1], "coarse");
    else if (!strcmp(argv[i], "--defer")) defer = (unsigned)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--readers")) nreaders = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--writers")) nwriters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--range")) range = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--disjoint")) disjoint = atoi(argv[i + 1]) != 0;
    else {
      fprintf(stderr, "usage: citrus_torture --tree rcu|rlu [--flavor fine|coarse] [--defer N] "
                      "[--readers N] [--writers N] [--seconds S] [--range K] [--disjoint 0|1]\n");
      return 2;
    }
  }
  const char *scale = getenv("READMOSTLY_TORTURE_SCALE");
  if (scale != NULL && atoi(scale) > 0) seconds *= atoi(scale);
  CHECK(range >= 16 && nwriters >= 1 && nreaders >= 1);

  rm_rlu_ctx *self = NULL;
  if (use_rlu) {
    struct rm_rlu_options o = {.flavor = coarse ? RM_RLU_COARSE : RM_RLU_FINE, .max_defer = defer, .stats = true};
    CHECK_ERR(rm_rlu_init(&o), 0);
    lct = rm_rlu_citrus_create_flavor(coarse);
    CHECK(lct != NULL);
    self = rm_rlu_thread_register();
    CHECK(self != NULL);
  } else {
    rct = rm_rcu_citrus_create();
    CHECK(rct != NULL);
  }
  /* The start: every key in random order, stable ones always. */
  init_present = (char *)calloc((size_t)range, 1);
  int64_t *order = (int64_t *)malloc((size_t)range * sizeof *order);
  CHECK(init_present && order);
  uint64_t s = 12345;
  for (int64_t k = 0; k < range; k++) order[k] = k;
  for (int64_t k = range - 1; k > 0; k--) {
    int64_t j = (int64_t)(rnd(&s) % (uint64_t)(k + 1)), t = order[k];
    order[k] = order[j];
    order[j] = t;
  }
  for (int64_t i = 0; i < range; i++) {
    int64_t k = order[i];
    if (!stable(k) && (rnd(&s) & 1)) continue;
    init_present[k] = 1;
    CHECK_EQ(use_rlu ? rm_rlu_citrus_insert(self, lct, k) : rm_rcu_citrus_insert(rct, k), 1);
  }
  free(order);
  /* With deferral the fill's last sections are still private and their
   * nodes locked: publish them before the threads start. */
  if (use_rlu) rm_rlu_sync(self);
  delta = (int32_t **)calloc((size_t)nwriters, sizeof *delta);
  CHECK(delta != NULL);
  for (int w = 0; w < nwriters; w++) {
    delta[w] = (int32_t *)calloc((size_t)range, sizeof **delta);
    CHECK(delta[w] != NULL);
  }

  /* Run: writers and readers; a timer thread sets the stop flag. */
  pthread_t timer;
  CHECK_EQ(pthread_create(&timer, NULL, timer_fn, &seconds), 0);
  test_run_threads(nwriters + nreaders, thread_fn, NULL);
  pthread_join(timer, NULL);

  /* Conservation: every key as the start and the net counts say. */
  long expect = 0, bad_keys = 0;
  for (int64_t k = 0; k < range; k++) {
    long v = init_present[k];
    for (int w = 0; w < nwriters; w++) v += delta[w][k];
    bool in = use_rlu ? rm_rlu_citrus_contains(self, lct, k) : rm_rcu_citrus_contains(rct, k);
    if ((v != 0 && v != 1) || (long)in != v) {
      if (bad_keys < 10)
        fprintf(stderr, "key %lld: start %d, net count says %ld, tree says %d\n", (long long)k,
                init_present[k], v, (int)in);
      bad_keys++;
    }
    expect += v;
  }
  long nodes;
  if (use_rlu) {
    rm_rlu_reader_lock(self);
    struct rm_rlu_citrus_node *root = RM_RLU_DEREF(self, lct->root);
    nodes = rlu_shape(self, root->child[0], INT64_MIN, INT64_MAX);
    rm_rlu_reader_unlock(self);
  } else {
    nodes = rcu_shape(rct->root->child[0], INT64_MIN, INT64_MAX);
  }
  printf("%s%s%s: %lld writes, %lld searches, %lld walks; %lld bound errors, %lld stable "
         "misses, %lld walk errors, %ld keys wrong; %ld nodes, %ld expected\n",
         use_rlu ? "rlu" : "rcu", use_rlu ? (coarse ? " coarse" : " fine") : "",
         defer > 1 ? " defer" : "", n_writes, n_searches, n_walks, n_bound_errs, n_misses,
         n_walk_errs, bad_keys, nodes, expect);
  if (use_rlu) rm_rlu_stats_print(stdout);
  CHECK_EQ(n_bound_errs, 0);
  CHECK_EQ(n_misses, 0);
  CHECK_EQ(n_walk_errs, 0);
  CHECK_EQ(bad_keys, 0);
  CHECK_EQ(nodes, expect);
  CHECK(n_writes > 0 && n_searches > 0);
  if (use_rlu) {
    rm_rlu_thread_unregister(self);
    rm_rlu_citrus_destroy(lct);
  } else {
    rm_rcu_citrus_destroy(rct);
    CHECK_EQ(rm_rcu_barrier(), 0);
  }
  for (int w = 0; w < nwriters; w++) free(delta[w]);
  free(delta);
  free(init_present);
  TEST_MAIN_END();
}
