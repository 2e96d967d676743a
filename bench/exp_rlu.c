/*
 * bench/exp_rlu.c - the RLU paper's experiments (Matveev et al., SOSP 2015,
 * sections 4.1, 4.2 and 4.4) over the sets of bench/sets/sets.h, and the
 * cost of an RLU section's entry and exit.
 *
 *   rlu_list    (Fig. 4) one sorted list of size=N keys (default 1000) drawn
 *               from [1, 2N]; each thread runs operations on random keys of
 *               that range: update=P percent of them updates (insert and
 *               remove with equal probability, so the size stays near N),
 *               the rest lookups.  update=2,20,40 by default.
 *   rlu_hash    (Fig. 5) the same over a hash table of buckets=B lists
 *               (default 1000) holding size=N keys (default 100000: 100 per
 *               bucket on average).
 *   rlu_stress  (Fig. 7, section 4.4) update-only: buckets=B (default
 *               10000) buckets, size=N (default 10000: one key per bucket on
 *               average); every operation removes a random key of [1, 2N]
 *               and, if it was absent, inserts it, so each one writes.
 *   rlu_read    ns_per_section_pair: one thread, an empty section entered
 *               and left (RLU: rm_rlu_reader_lock + rm_rlu_reader_unlock;
 *               the RCU flavours: read_lock + read_unlock), the median of
 *               blocks of 4096 pairs, each block timed (--iterations N:
 *               exactly N, their mean, for callgrind).
 *
 * Metrics of the set experiments, per (update, threads, rep, impl):
 * ops_per_sec (every operation, lookups included); for the RLU rows
 * aborts_per_op, syncs_per_op, steals_per_op and membarriers_per_op (RLU's
 * statistics, on for every RLU row: they count on slow paths only; the
 * last is what the fence-free entry costs writers), and fence_free_at_end
 * (1: the run ended with the fence-free entry; 0: fenced, by choice or
 * because RLU closed the fence-free entry on too many membarriers); for rcu-set and urcu-set
 * writer_lock_wait_ns_per_op (the time writers waited for their bucket's
 * mutex, summed over threads, divided by all operations).
 *
 * Each run: the main thread creates the set and fills it with N distinct
 * random keys, the threads register (thread_init) and are released
 * together, run --duration seconds, read their per-thread statistics and
 * leave (thread_fini: RLU then writes back deferred sections).  A fresh set
 * per run; repetitions interleaved over implementations.
 */
#include "harness.h"
#include "exp_rcu.h"
#include "rcu_impls.h"

#ifdef RM_BENCH_HAVE_URCU_MEMB
#define RM_SETS_HAVE_URCU_MEMB 1
#endif
#include "sets/sets.h"

#include <stdlib.h>
#include <string.h>

/* ---- implementations ------------------------------------------------------ */
#ifdef RM_BENCH_HAVE_URCU_MEMB
#define URCU_SET_FLAGS 0u
#else
#define URCU_SET_FLAGS BENCH_IMPL_ABSENT
#endif
/* In rm_sets_all's order. */
static const struct bench_impl set_names[RM_SETS_N] = {
    {"harris", 0, NULL},      {"harris-hp", 0, NULL},  {"rcu-set", 0, NULL},
    {"urcu-set", URCU_SET_FLAGS, NULL}, {"rlu", 0, NULL}, {"rlu-fence", 0, NULL},
    {"rlu-defer", 0, NULL},   {"rlu-coarse", 0, NULL},
};
static const struct bench_impl_set bench_set_impls = {"sets", set_names, RM_SETS_N};
/* rlu_stress compares RLU with RCU: the Harris-Michael lists only by name. */
static const struct bench_impl stress_names[RM_SETS_N] = {
    {"harris", BENCH_IMPL_HIDDEN, NULL}, {"harris-hp", BENCH_IMPL_HIDDEN, NULL},
    {"rcu-set", 0, NULL},               {"urcu-set", URCU_SET_FLAGS, NULL},
    {"rlu", 0, NULL},                   {"rlu-fence", 0, NULL},
    {"rlu-defer", 0, NULL},             {"rlu-coarse", 0, NULL},
};
static const struct bench_impl_set bench_stress_impls = {"sets", stress_names, RM_SETS_N};

static bool is_rlu(const char *name) { return strncmp(name, "rlu", 3) == 0; }
static bool is_rcu(const char *name) {
  return strcmp(name, "rcu-set") == 0 || strcmp(name, "urcu-set") == 0;
}

/* `rlu` and its variants other than rlu-fence ask for the fence-free entry;
 * say once when the process cannot give it (no membarrier, or a
 * ThreadSanitizer build): their rows are then fenced-entry numbers.  Asked
 * with a context registered, when FCP's mode is settled. */
static void check_entry(const char *name) {
  bool want = strcmp(name, "rlu-fence") != 0;
  static bool said;
  if (rm_rlu_fence_free() == want || said) return;
  said = true;
  if (want)
    fprintf(stderr, "readmostly-bench: note: %s runs with the fenced section entry (the "
                    "fence-free entry needs membarrier, and is off under ThreadSanitizer)\n",
            name);
  else
    bench_fatal("%s: the section entry is fence-free", name);
}

/* ---- the set workload ------------------------------------------------------- */
struct setrun {
  const struct rm_set_ops *ops;
  void *set;
  uint64_t range;  /* keys are 1..range */
  uint64_t upd;    /* an operation updates when 32 random bits are below
                      this (update=P: P/100 * 2^32); STRESS: toggles */
};
#define STRESS UINT64_MAX

static void *set_worker(void *a) {
  struct tctx *c = (struct tctx *)a;
  const struct setrun *r = (const struct setrun *)c->shared;
  const struct rm_set_ops *ops = r->ops;
  void *set = r->set;
  const uint64_t range = r->range, upd = r->upd;
  void *th = ops->thread_init(set);
  uint64_t n = 0, hits = 0;
  bench_ready();
  wait_go();
  while (!stopped()) {
    uint64_t k = prng(&c->seed) % range + 1;
    if (upd == STRESS) {
      if (!ops->remove(set, th, k)) hits += ops->insert(set, th, k);
    } else {
      uint64_t d = prng(&c->seed);
      if ((d >> 32) < upd) {
        if (d & 1) hits += ops->insert(set, th, k);
        else hits += ops->remove(set, th, k);
      } else {
        hits += ops->contains(set, th, k);
      }
    }
    n++;
  }
  struct rm_set_stats st;
  memset(&st, 0, sizeof st);
  if (ops->stats) ops->stats(set, th, &st);
  c->ns = st.writer_lock_wait_ns;
  ops->thread_fini(set, th);
  c->count = n;
  c->sink = hits;
  return NULL;
}

/* One measured run of implementation idx; emits its rows. */
static void set_point(size_t idx, const char *name, int nthreads, const char *par, int rep,
                      size_t buckets, uint64_t size, uint64_t upd) {
  const struct rm_set_ops *ops = rm_sets_all[idx];
  struct rm_set_config cfg = {buckets};
  void *set = ops->create(&cfg);
  if (!set) bench_fatal("%s: cannot create the set (out of memory, or RLU busy)", name);
  /* Fill with `size` distinct random keys of [1, 2 size], inserted in
   * descending order: each lands at the front of its sorted list, so the
   * fill costs no traversals (100 000 keys in 1000 lists otherwise take
   * longer than a run). */
  void *th = ops->thread_init(set);
  if (is_rlu(name)) check_entry(name);
  uint64_t seed = 0x9E3779B97F4A7C15ull ^ (uint64_t)rep, have = 0;
  uint8_t *pick = (uint8_t *)calloc(2 * size + 1, 1);
  if (!pick) bench_fatal("out of memory");
  while (have < size) {
    uint64_t k = prng(&seed) % (2 * size) + 1;
    have += !pick[k];
    pick[k] = 1;
  }
  for (uint64_t k = 2 * size; k >= 1; k--)
    if (pick[k] && !ops->insert(set, th, k)) bench_fatal("%s: fill: key %llu present", name,
                                                          (unsigned long long)k);
  free(pick);
  ops->thread_fini(set, th);
  struct rm_set_stats st;
  memset(&st, 0, sizeof st);
  if (ops->stats) ops->stats(set, NULL, &st); /* the fill's counters: dropped */

  struct setrun r = {ops, set, 2 * size, upd};
  struct tctx *c = ctx_new(nthreads, NULL);
  bench_thread_fn fns[MAXLIST];
  for (int j = 0; j < nthreads; j++) {
    c[j].shared = &r;
    fns[j] = set_worker;
  }
  double secs = bench_run_ex(nthreads, c, fns, nthreads, nthreads);
  uint64_t total = ctx_sum(c, 0, nthreads);
  double ops_n = total ? (double)total : 1.0;
  emit(name, nthreads, par, rep, "ops_per_sec", (double)total / secs, "ops/s");
  if (is_rlu(name)) {
    memset(&st, 0, sizeof st);
    ops->stats(set, NULL, &st);
    emit(name, nthreads, par, rep, "aborts_per_op", (double)st.aborts / ops_n, "1");
    emit(name, nthreads, par, rep, "syncs_per_op", (double)st.syncs / ops_n, "1");
    emit(name, nthreads, par, rep, "steals_per_op", (double)st.steals / ops_n, "1");
    /* The fence-free entry's cost on the writer's side: a synchronize that
     * finds a context whose run counter did not move issues a membarrier. */
    emit(name, nthreads, par, rep, "membarriers_per_op", (double)st.barriers / ops_n, "1");
    /* 0 when the fence-free entry was closed during the run (membarriers
     * too frequent: rm_rlu_options.fence_free_max_barriers) or never on. */
    emit(name, nthreads, par, rep, "fence_free_at_end", rm_rlu_fence_free() ? 1.0 : 0.0, "1");
  } else if (is_rcu(name)) {
    uint64_t wait = 0;
    for (int j = 0; j < nthreads; j++) wait += c[j].ns;
    emit(name, nthreads, par, rep, "writer_lock_wait_ns_per_op", (double)wait / ops_n, "ns");
  }
  free(c);
  ops->destroy(set);
}

static void exp_sets(const struct bench_exp *e) {
  double pv[MAXLIST];
  char ptext[MAXLIST][32];
  int nu = 1;
  if (e->arg != 2) nu = bench_param_percents("update", pv, ptext, MAXLIST);
  uint64_t size = bench_param_uint("size");
  size_t buckets = e->arg == 0 ? 1 : (size_t)bench_param_uint("buckets");
  for (int u = 0; u < nu; u++) {
    char par[128];
    int off = 0;
    uint64_t upd = STRESS;
    if (e->arg != 2) {
      off = snprintf(par, sizeof par, "update=%s;", ptext[u]);
      upd = (uint64_t)(pv[u] / 100.0 * 4294967296.0);
    }
    off += snprintf(par + off, sizeof par - (size_t)off, "size=%llu", (unsigned long long)size);
    if (e->arg != 0) snprintf(par + off, sizeof par - (size_t)off, ";buckets=%zu", buckets);
    for (int ti = 0; ti < O.nthreads; ti++)
      for (int rep = 1; rep <= O.reps; rep++)
        for (int i = 0; i < O.nimpl; i++)
          set_point(O.impl[i].idx, O.impl[i].name, O.threads[ti], par, rep, buckets, size, upd);
  }
}

/* ---- rlu_read --------------------------------------------------------------- */
static const struct bench_impl read_names[] = {{"rlu", 0, NULL}, {"rlu-fence", 0, NULL}};
static const struct bench_impl_set bench_rlu_entries = {"RLU section entries", read_names, 2};

/* An empty section's body, as rcu_read's (exp_rcu.c): one empty volatile
 * asm, so the loop stays a loop and nothing is reloaded. */
#define SECTION_BODY() __asm__ __volatile__("")

typedef void (*sec_fn)(void *);
/* The median block's time is the measurement: on a machine busy with other
 * work a thread loses its CPU now and then, and a block during which it
 * did takes far longer; the mean over the run would charge that to the
 * section pair. */
#define PAIR_BLOCK 4096
#define PAIR_MAX_BLOCKS (1u << 20)
static uint64_t pair_samples[PAIR_MAX_BLOCKS];

/* ns per pair: `iters` pairs exactly (their mean), or the median of blocks
 * of 4096 pairs over `secs`; qs() after each block (QSBR's quiescent
 * announcement; nothing elsewhere). */
AI double pair_body(void *arg, uint64_t iters, double secs, sec_fn lock, sec_fn unlock, sec_fn qs) {
  for (int i = 0; i < 1000; i++) {
    lock(arg);
    SECTION_BODY();
    unlock(arg);
  }
  qs(arg);
  uint64_t t0 = rm_now_ns(), t1;
  if (iters) {
    for (uint64_t b = 0; b < iters / PAIR_BLOCK; b++) {
      for (int i = 0; i < PAIR_BLOCK; i++) {
        lock(arg);
        SECTION_BODY();
        unlock(arg);
      }
      qs(arg);
    }
    for (uint64_t i = 0; i < iters % PAIR_BLOCK; i++) {
      lock(arg);
      SECTION_BODY();
      unlock(arg);
    }
    t1 = rm_now_ns();
    return (double)(t1 - t0) / (double)iters;
  }
  uint64_t end = t0 + (uint64_t)(secs * 1e9), nb = 0;
  do {
    for (int i = 0; i < PAIR_BLOCK; i++) {
      lock(arg);
      SECTION_BODY();
      unlock(arg);
    }
    qs(arg);
    t1 = rm_now_ns();
    pair_samples[nb++] = t1 - t0;
    t0 = t1;
  } while (t1 < end && nb < PAIR_MAX_BLOCKS);
  qsort(pair_samples, nb, sizeof pair_samples[0], bench_cmp_u64);
  return (double)bench_quantile(pair_samples, nb, 0.5) / PAIR_BLOCK;
}

AI void rlu_lock_(void *s) { rm_rlu_reader_lock((rm_rlu_ctx *)s); }
AI void rlu_unlock_(void *s) { rm_rlu_reader_unlock((rm_rlu_ctx *)s); }
AI void nothing_(void *s) { (void)s; }
static double rlu_pair(rm_rlu_ctx *self, uint64_t iters, double secs) {
  return pair_body(self, iters, secs, rlu_lock_, rlu_unlock_, nothing_);
}

#define RLU_RCU_PAIR(ID, NAME, FL, ENV)                                          \
  AI void ID##_rl_(void *a) { (void)a; ID##_read_lock(); }                       \
  AI void ID##_ru_(void *a) { (void)a; ID##_read_unlock(); }                     \
  AI void ID##_qs_(void *a) { (void)a; ID##_quiescent(); }                       \
  static double ID##_rlu_read_pair(uint64_t iters, double secs) {                \
    ID##_register();                                                             \
    double ns = pair_body(NULL, iters, secs, ID##_rl_, ID##_ru_, ID##_qs_);      \
    ID##_unregister();                                                           \
    return ns;                                                                   \
  }
RCU_FLAVORS(RLU_RCU_PAIR)
#define RLU_RCU_PAIR_FN(ID, NAME, FL, ENV) ID##_rlu_read_pair,
static double (*const rcu_pairs[])(uint64_t, double) = {RCU_FLAVORS(RLU_RCU_PAIR_FN)};

static void exp_rlu_read(const struct bench_exp *e) {
  (void)e;
  for (int rep = 1; rep <= O.reps; rep++)
    for (int i = 0; i < O.nimpl; i++) {
      const char *name = O.impl[i].name;
      double ns;
      if (O.impl[i].set == &bench_rlu_entries) {
        struct rm_rlu_options o;
        memset(&o, 0, sizeof o);
        o.fence_free = strcmp(name, "rlu") == 0;
        if (rm_rlu_init(&o) != 0) bench_fatal("%s: rm_rlu_init failed", name);
        rm_rlu_ctx *self = rm_rlu_thread_register();
        if (!self) bench_fatal("%s: rm_rlu_thread_register failed", name);
        check_entry(name);
        ns = rlu_pair(self, O.iterations, O.duration);
        rm_rlu_thread_unregister(self);
      } else {
        ns = rcu_pairs[O.impl[i].idx](O.iterations, O.duration);
      }
      emit(name, 1, "", rep, "ns_per_section_pair", ns, "ns");
    }
}

/* ---- the family ------------------------------------------------------------------ */
static const struct bench_param p_list[] = {
    {"update", BENCH_P_PERCENTS, "2,20,40", 0, 0, NULL, "percent of operations that update"},
    {"size", BENCH_P_UINT, "1000", 1, 100000000, NULL, "keys in the list (range: twice that)"},
    BENCH_PARAM_END};
static const struct bench_param p_hash[] = {
    {"update", BENCH_P_PERCENTS, "2,20,40", 0, 0, NULL, "percent of operations that update"},
    {"size", BENCH_P_UINT, "100000", 1, 100000000, NULL, "keys in the table (range: twice that)"},
    {"buckets", BENCH_P_UINT, "1000", 1, 100000000, NULL, "buckets (each a sorted list)"},
    BENCH_PARAM_END};
static const struct bench_param p_stress[] = {
    {"size", BENCH_P_UINT, "10000", 1, 100000000, NULL, "keys in the table (range: twice that)"},
    {"buckets", BENCH_P_UINT, "10000", 1, 100000000, NULL, "buckets (each a sorted list)"},
    BENCH_PARAM_END};

static const struct bench_exp rlu_exps[] = {
    {"rlu_list", "(RLU Fig. 4) sorted list, update=P% inserts/removes, T threads: ops/s",
     {&bench_set_impls, NULL}, 0, NULL, p_list, true, exp_sets, 0},
    {"rlu_hash", "(RLU Fig. 5) hash table of sorted lists, update=P%, T threads: ops/s",
     {&bench_set_impls, NULL}, 0, NULL, p_hash, true, exp_sets, 1},
    {"rlu_stress", "(RLU Fig. 7) update-only hash table, T threads: ops/s, syncs per op",
     {&bench_stress_impls, NULL}, 0, NULL, p_stress, true, exp_sets, 2},
    {"rlu_read", "RLU empty section pair (fence-free and fenced entry) beside RCU's: ns",
     {&bench_rlu_entries, &bench_rcu_flavors, NULL}, 0, NULL, NULL, false, exp_rlu_read, 0},
};
const struct bench_family bench_rlu_family = {"rlu", rlu_exps, sizeof rlu_exps / sizeof rlu_exps[0]};
