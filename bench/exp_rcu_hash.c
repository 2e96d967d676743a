/*
 * bench/exp_rcu_hash.c - experiment rcu_hash: the resizable RCU hash table
 * (readmostly/rcu_hash.h) on each RCU flavor (the FCP paper, section 8.2.3,
 * Figs. 16-17; the table is Triplett et al.'s, the paper's reference [34]).
 *
 *   readmostly-bench rcu_hash [--impl urcu-memb,...] [--threads 1,2,4]
 *                    [--duration S] [--reps N] [--csv FILE]
 *                    [--param mode=fixed|resizing|both] [--param items=65536]
 *                    [--param buckets=8192]
 *
 * A table of `items` keys (0 .. items-1, nodes in one array) and T reader
 * threads that look up random keys, each lookup in its own read-side
 * section (QSBR readers announce a quiescent state every 64 lookups).
 * Every lookup must hit; a miss aborts the run.
 *   mode=fixed     the table keeps `buckets` buckets.
 *   mode=resizing  one more thread resizes the table back and forth between
 *                  `buckets` and 2 x `buckets` (grow, shrink, grow, ...), as
 *                  in Triplett's benchmark; it is the only thread that
 *                  calls synchronize, and each call is timed.
 * Metrics (threads = T readers):
 *   lookups_per_sec                  all readers together
 *   resize_sync_ns                   mean synchronize latency in resizes
 *   resize_sync_p50_ns / _p99_ns / _max_ns
 *   grow_sync_ns / shrink_sync_ns    mean, during grows / shrinks only
 *   syncs_per_resize, resizes_per_sec
 * Implementations: the RCU flavours of rcu_impls.h (bench_rcu_flavors, the
 * set the RCU family's experiments use): rcu, rcu-fence (run by the
 * harness in a child process started in fence mode), urcu-memb, urcu-mb,
 * urcu-signal, urcu-qsbr.  The table's functions are stamped out per
 * flavour over its inline read side and its synchronize, through a timing
 * wrapper.  The family is bench_rcu_hash_family (harness.h).
 */
#include "exp_rcu.h"
#include "rcu_impls.h"

#include <readmostly/rcu_hash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- one run's shared state --------------------------------------------- */

struct rh_run {
  struct rm_rcu_hash h;
  struct rm_rcu_hash_node *nodes; /* items nodes, key i in nodes[i] */
  uint64_t items;
  size_t buckets;
  /* written by the resizer only (its synchronize wrapper) */
  uint64_t *sync_ns;
  size_t nsync, capsync;
  int growing; /* the resize in progress grows the table */
  uint64_t grow_ns, grow_n, shrink_ns, shrink_n, resizes;
};

/* The run in progress: synchronize wrappers are called with no argument. */
static struct rh_run *rh_cur;

/* Times one grace period of the resizer (the only caller). */
static void rh_record(uint64_t ns) {
  struct rh_run *r = rh_cur;
  if (r->nsync == r->capsync) {
    r->capsync = r->capsync ? r->capsync * 2 : 4096;
    r->sync_ns = (uint64_t *)realloc(r->sync_ns, r->capsync * sizeof *r->sync_ns);
    if (!r->sync_ns) bench_fatal("out of memory");
  }
  r->sync_ns[r->nsync++] = ns;
  if (r->growing) {
    r->grow_ns += ns;
    r->grow_n++;
  } else {
    r->shrink_ns += ns;
    r->shrink_n++;
  }
}

/* One flavor: the table's functions over a timed synchronize, the reader
 * and the resizer thread, all direct calls (no indirection in the loop). */
#define RH_FLAVOR(ID, RL, RU, SYNC, REG, UNREG, QS)                                         \
  static void ID##_timed_sync(void) {                                                     \
    uint64_t t0 = rm_now_ns();                                                            \
    SYNC();                                                                               \
    rh_record(rm_now_ns() - t0);                                                          \
  }                                                                                       \
  RM_RCU_HASH_DEFINE(ID##_h, RL, RU, ID##_timed_sync)                                     \
  static void *ID##_reader(void *a) {                                                     \
    struct tctx *c = (struct tctx *)a;                                                    \
    struct rh_run *r = (struct rh_run *)c->shared;                                        \
    uint64_t s = c->seed, n = 0, miss = 0, items = r->items;                              \
    REG();                                                                                \
    wait_go();                                                                            \
    do { /* at least one batch, even for a reader first scheduled after the stop */       \
      for (int i = 0; i < 64; i++) {                                                      \
        uint64_t k = prng(&s) % items;                                                    \
        RL();                                                                             \
        miss += ID##_h_lookup(&r->h, k) == NULL;                                          \
        RU();                                                                             \
      }                                                                                   \
      QS();                                                                               \
      n += 64;                                                                            \
    } while (!stopped());                                                                 \
    UNREG();                                                                              \
    c->count = n;                                                                         \
    c->sink = miss;                                                                       \
    return NULL;                                                                          \
  }                                                                                       \
  static void *ID##_resizer(void *a) {                                                    \
    struct tctx *c = (struct tctx *)a;                                                    \
    struct rh_run *r = (struct rh_run *)c->shared;                                        \
    wait_go();                                                                            \
    /* Not registered (it never reads): grow, shrink, grow, ... */                       \
    r->growing = 0;                                                                       \
    do { /* at least one resize (a grow), as the readers do one batch */                  \
      r->growing = !r->growing;                                                           \
      if (ID##_h_resize(&r->h, r->growing ? r->buckets * 2 : r->buckets) != 0)            \
        bench_fatal("rcu_hash: resize failed");                                           \
      r->resizes++;                                                                       \
    } while (!stopped());                                                                 \
    return NULL;                                                                          \
  }

/* Every flavour of rcu_impls.h, in RCU_FLAVORS order (bench_rcu_flavors). */
#define RH_INSTANTIATE(ID, NAME, FL, ENV)                                                   \
  RH_FLAVOR(rh_##ID, ID##_read_lock, ID##_read_unlock, ID##_synchronize, ID##_register,    \
            ID##_unregister, ID##_quiescent)
RCU_FLAVORS(RH_INSTANTIATE)

struct rh_impl {
  int (*init)(struct rm_rcu_hash *, size_t);
  int (*insert)(struct rm_rcu_hash *, uint64_t, struct rm_rcu_hash_node *);
  void (*destroy)(struct rm_rcu_hash *, rm_rcu_hash_free_fn *, void *);
  bench_thread_fn reader, resizer;
};
#define RH_ENTRY(ID, NAME, FL, ENV) \
  {rh_##ID##_h_init, rh_##ID##_h_insert, rh_##ID##_h_destroy, rh_##ID##_reader, rh_##ID##_resizer},
static const struct rh_impl rh_impls[] = {RCU_FLAVORS(RH_ENTRY)};

/* One measurement: T readers (+ the resizer), one implementation. */
static void rh_measure(const struct bench_sel *sel, int nreaders, int resizing, int rep,
                       uint64_t items, size_t buckets) {
  const struct rh_impl *im = &rh_impls[sel->idx];
  struct rh_run *r = (struct rh_run *)calloc(1, sizeof *r);
  if (!r) bench_fatal("out of memory");
  r->items = items;
  r->buckets = buckets;
  r->nodes = (struct rm_rcu_hash_node *)calloc(items, sizeof *r->nodes);
  if (!r->nodes || im->init(&r->h, buckets) != 0) bench_fatal("out of memory");
  for (uint64_t k = 0; k < items; k++)
    if (im->insert(&r->h, k, &r->nodes[k]) != 0) bench_fatal("rcu_hash: insert failed");
  rh_cur = r;
  int n = nreaders + resizing;
  struct tctx *c = ctx_new(n, NULL);
  bench_thread_fn fns[MAXLIST * 4 + 1];
  for (int i = 0; i < n; i++) {
    c[i].shared = r;
    fns[i] = i < nreaders ? im->reader : im->resizer;
  }
  double secs = bench_run(n, c, fns);

  uint64_t lookups = ctx_sum(c, 0, nreaders), misses = 0;
  for (int i = 0; i < nreaders; i++) misses += c[i].sink;
  if (misses)
    bench_fatal("rcu_hash: %s: %llu lookups of present keys missed", sel->name,
                (unsigned long long)misses);
  const char *par = resizing ? "mode=resizing" : "mode=fixed";
  const char *name = sel->name;
  emit(name, nreaders, par, rep, "lookups_per_sec", (double)lookups / secs, "ops/s");
  if (resizing && r->nsync) {
    uint64_t sum = 0;
    for (size_t i = 0; i < r->nsync; i++) sum += r->sync_ns[i];
    qsort(r->sync_ns, r->nsync, sizeof *r->sync_ns, bench_cmp_u64);
    emit(name, nreaders, par, rep, "resize_sync_ns", (double)sum / (double)r->nsync, "ns");
    emit(name, nreaders, par, rep, "resize_sync_p50_ns",
         (double)bench_quantile(r->sync_ns, r->nsync, 0.5), "ns");
    emit(name, nreaders, par, rep, "resize_sync_p99_ns",
         (double)bench_quantile(r->sync_ns, r->nsync, 0.99), "ns");
    emit(name, nreaders, par, rep, "resize_sync_max_ns", (double)r->sync_ns[r->nsync - 1], "ns");
    if (r->grow_n)
      emit(name, nreaders, par, rep, "grow_sync_ns", (double)r->grow_ns / (double)r->grow_n, "ns");
    if (r->shrink_n)
      emit(name, nreaders, par, rep, "shrink_sync_ns",
           (double)r->shrink_ns / (double)r->shrink_n, "ns");
    if (r->resizes) {
      emit(name, nreaders, par, rep, "syncs_per_resize", (double)r->nsync / (double)r->resizes,
           "1");
      emit(name, nreaders, par, rep, "resizes_per_sec", (double)r->resizes / secs, "1/s");
    }
  }
  /* Nodes live in one array: nothing to free per node. */
  im->destroy(&r->h, NULL, NULL);
  rh_cur = NULL;
  free(r->sync_ns);
  free(r->nodes);
  free(r);
  free(c);
}

static void exp_rcu_hash(const struct bench_exp *e) {
  (void)e;
  uint64_t items = bench_param_uint("items");
  uint64_t buckets = bench_param_uint("buckets");
  if (!rm_rcu_hash__size_ok((size_t)buckets) || !rm_rcu_hash__size_ok((size_t)buckets * 2))
    bench_usage_error("buckets=%llu: a power of two, at most 2^39", (unsigned long long)buckets);
  /* fixed, resizing (the harness checked the value against the choices) */
  const char *modes = bench_param("mode");
  int want[2] = {strcmp(modes, "resizing") != 0, strcmp(modes, "fixed") != 0};
  for (int mode = 0; mode < 2; mode++) {
    if (!want[mode]) continue;
    for (int ti = 0; ti < O.nthreads; ti++)
      for (int rep = 1; rep <= O.reps; rep++)
        for (int i = 0; i < O.nimpl; i++)
          rh_measure(&O.impl[i], O.threads[ti], mode, rep, items, (size_t)buckets);
  }
}

static const struct bench_param p_rcu_hash[] = {
    {"mode", BENCH_P_CHOICE, "both", 0, 0, "fixed|resizing|both",
     "fixed: no resizes; resizing: one more thread resizes buckets <-> 2 x buckets"},
    {"items", BENCH_P_UINT, "65536", 1, 1ull << 32, NULL, "keys in the table"},
    {"buckets", BENCH_P_UINT, "8192", 1, 1ull << 39, NULL,
     "buckets (a power of two; resizing goes to twice as many and back)"},
    {NULL, BENCH_P_UINT, NULL, 0, 0, NULL, NULL}};

static const struct bench_exp rcu_hash_exps[] = {
    {"rcu_hash",
     "resizable RCU hash table, T readers (param mode=fixed|resizing): lookups/s and "
     "synchronize latency in resizes",
     {&bench_rcu_flavors, NULL, NULL, NULL}, 0, NULL, p_rcu_hash, true, exp_rcu_hash, 0},
};
const struct bench_family bench_rcu_hash_family = {
    "rcu_hash", rcu_hash_exps, sizeof rcu_hash_exps / sizeof rcu_hash_exps[0]};
