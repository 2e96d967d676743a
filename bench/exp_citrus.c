/*
 * bench/exp_citrus.c - the Citrus search tree (RLU paper, section 4.5,
 * Fig. 8): readmostly/rcu_citrus.h against readmostly/rlu_citrus.h.
 *
 *   citrus   T threads, each operation on a random key of range=K (default
 *            100 000): with probability update=P percent an update (insert
 *            or remove, 1:1, chosen at random), else a lookup.  The tree
 *            starts half full (K/2 distinct random keys, inserted before
 *            the clock starts), and stays so on average.  ops_per_sec.
 *
 * Implementations:
 *   rcu-citrus  Arbel and Attiya's tree on our FCP-RCU: lookups are read
 *               sections, updates take per-node locks; a removal of a node
 *               with two children waits one grace period.
 *   rlu-citrus  the RLU rewrite, fine-grained with deferral: defer=N
 *               (default 10, the limit of our RLU torture and of the
 *               reference's benchmarks) sections per synchronize, flushed
 *               earlier when another writer meets one of the locks.
 *
 * For rlu-citrus, beside ops_per_sec, the four RLU statistics of Fig. 8,
 * from RLU's own counters (rm_rlu_options.stats, counted on slow paths
 * only) over the measured interval:
 *   quiescence_iters    rounds of synchronize's wait loop per synchronize
 *                       call (per call, not per operation: the reference's
 *                       a_writeback_q_iters divides by write sections; ours
 *                       times sync_ratio gives that); a round is one
 *                       back-off step (cpu_relax, then yield, then sleep)
 *   sync_ratio          synchronize calls (each a write-back and unlock)
 *                       per committed write section
 *   read_copy_ratio     dereferences that stole another writer's copy, per
 *                       dereference (the tree counts its dereferences: RLU
 *                       does not, they are its fast path)
 *   sync_request_ratio  sync requests sent to a deferring owner (a
 *                       try_lock that met its lock) per committed write
 *                       section
 * The counters are read before the threads start and after they are
 * joined, so each thread's final flush at unregistration (one synchronize
 * at most) is counted too.
 */
#include "harness.h"

#include <readmostly/rcu_citrus.h>
#include <readmostly/rlu_citrus.h>

#include <stdlib.h>
#include <string.h>

enum { CITRUS_RCU, CITRUS_RLU };
static const struct bench_impl citrus_names[] = {
    {"rcu-citrus", 0, NULL},
    {"rlu-citrus", 0, NULL},
};
static const struct bench_impl_set citrus_impls = {"Citrus trees", citrus_names,
                                                   sizeof citrus_names / sizeof citrus_names[0]};

struct citrus_shared {
  struct rm_rcu_citrus *rcu;
  struct rm_rlu_citrus *rlu;
  uint64_t range;
  uint64_t upd_thresh; /* update when prng % 100 < this */
};

/* tctx use: shared = struct citrus_shared, count = operations, ticks =
 * dereferences (rlu-citrus). */

static void *rcu_citrus_worker(void *a) {
  struct tctx *c = (struct tctx *)a;
  struct citrus_shared *sh = (struct citrus_shared *)c->shared;
  uint64_t n = 0, found = 0, s = c->seed, range = sh->range, thr = sh->upd_thresh;
  if (rm_rcu_register_thread() != 0) bench_fatal("rm_rcu_register_thread failed");
  bench_ready();
  wait_go();
  while (!stopped()) {
    for (int i = 0; i < 16; i++) {
      uint64_t r = prng(&s);
      int64_t key = (int64_t)((r >> 16) % range);
      if (r % 100 < thr) {
        int x = (r >> 8) & 1 ? rm_rcu_citrus_insert(sh->rcu, key) : rm_rcu_citrus_remove(sh->rcu, key);
        if (x < 0) bench_fatal("rcu-citrus: out of memory");
        found += (uint64_t)x;
      } else {
        found += (uint64_t)rm_rcu_citrus_contains(sh->rcu, key);
      }
    }
    n += 16;
  }
  rm_rcu_unregister_thread();
  c->sink += found;
  c->count = n;
  return NULL;
}

static void *rlu_citrus_worker(void *a) {
  struct tctx *c = (struct tctx *)a;
  struct citrus_shared *sh = (struct citrus_shared *)c->shared;
  uint64_t n = 0, found = 0, derefs = 0, s = c->seed, range = sh->range, thr = sh->upd_thresh;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  if (self == NULL) bench_fatal("rm_rlu_thread_register failed");
  bench_ready();
  wait_go();
  while (!stopped()) {
    for (int i = 0; i < 16; i++) {
      uint64_t r = prng(&s);
      int64_t key = (int64_t)((r >> 16) % range);
      if (r % 100 < thr) {
        int x = (r >> 8) & 1 ? rm_rlu_citrus_insert_ex(self, sh->rlu, key, &derefs)
                             : rm_rlu_citrus_remove_ex(self, sh->rlu, key, &derefs);
        if (x < 0) bench_fatal("rlu-citrus: out of memory");
        found += (uint64_t)x;
      } else {
        found += (uint64_t)rm_rlu_citrus_contains_ex(self, sh->rlu, key, &derefs);
      }
    }
    n += 16;
  }
  /* Unregistering flushes our deferred sections (one synchronize, after
   * the clock stopped, counted in the statistics) and adds our counters to
   * the departed contexts' sums, which rm_rlu_stats_get() includes. */
  c->ticks = derefs;
  c->sink += found;
  c->count = n;
  rm_rlu_thread_unregister(self);
  return NULL;
}

/* K/2 distinct random keys, inserted by the calling thread. */
static void fill(struct citrus_shared *sh, bool rlu) {
  uint64_t s = 0x5EED5EEDull, want = sh->range / 2, have = 0;
  rm_rlu_ctx *self = NULL;
  if (rlu) {
    self = rm_rlu_thread_register();
    if (self == NULL) bench_fatal("rm_rlu_thread_register failed");
  }
  while (have < want) {
    int64_t key = (int64_t)((prng(&s) >> 16) % sh->range);
    int x = rlu ? rm_rlu_citrus_insert(self, sh->rlu, key) : rm_rcu_citrus_insert(sh->rcu, key);
    if (x < 0) bench_fatal("citrus: out of memory");
    have += (uint64_t)x;
  }
  if (rlu) rm_rlu_thread_unregister(self); /* flushes the deferred fill */
  else rm_rcu_unregister_thread();        /* the fill's reads registered us */
}

static void exp_citrus(const struct bench_exp *e) {
  (void)e;
  uint64_t uv[MAXLIST];
  int nu = bench_param_uints("update", uv, MAXLIST);
  uint64_t range = bench_param_uint("range"), defer = bench_param_uint("defer");
  for (int ui = 0; ui < nu; ui++) {
    char par[64];
    if (defer == 10 && range == 100000)
      snprintf(par, sizeof par, "update=%llu", (unsigned long long)uv[ui]);
    else
      snprintf(par, sizeof par, "update=%llu;range=%llu;defer=%llu", (unsigned long long)uv[ui],
               (unsigned long long)range, (unsigned long long)defer);
    for (int ti = 0; ti < O.nthreads; ti++) {
      int n = O.threads[ti];
      for (int rep = 1; rep <= O.reps; rep++)
        for (int i = 0; i < O.nimpl; i++) {
          bool rlu = O.impl[i].idx == CITRUS_RLU;
          struct citrus_shared sh = {NULL, NULL, range, uv[ui]};
          if (rlu) {
            struct rm_rlu_options o = {.flavor = RM_RLU_FINE, .max_defer = (unsigned)defer, .stats = true};
            if (rm_rlu_init(&o) != 0) bench_fatal("rm_rlu_init failed (contexts still registered?)");
            sh.rlu = rm_rlu_citrus_create();
            if (!sh.rlu) bench_fatal("out of memory");
          } else {
            sh.rcu = rm_rcu_citrus_create();
            if (!sh.rcu) bench_fatal("out of memory");
          }
          fill(&sh, rlu);
          struct rm_rlu_stats s0, s1;
          struct tctx *c = ctx_new(n, NULL);
          bench_thread_fn fns[MAXLIST];
          for (int j = 0; j < n; j++) {
            c[j].shared = &sh;
            fns[j] = rlu ? rlu_citrus_worker : rcu_citrus_worker;
          }
          rm_rlu_stats_get(&s0);
          double secs = bench_run_ex(n, c, fns, n, n);
          rm_rlu_stats_get(&s1);
          const char *name = O.impl[i].name;
          emit(name, n, par, rep, "ops_per_sec", (double)ctx_sum(c, 0, n) / secs, "ops/s");
          if (rlu) {
            uint64_t derefs = 0;
            for (int j = 0; j < n; j++) derefs += c[j].ticks;
            double commits = (double)(s1.commits - s0.commits);
            double syncs = (double)(s1.syncs - s0.syncs);
            emit(name, n, par, rep, "quiescence_iters",
                 syncs > 0 ? (double)(s1.sync_wait_iters - s0.sync_wait_iters) / syncs : 0,
                 "iters/sync");
            emit(name, n, par, rep, "sync_ratio", commits > 0 ? syncs / commits : 0, "ratio");
            emit(name, n, par, rep, "read_copy_ratio",
                 derefs > 0 ? (double)(s1.steals - s0.steals) / (double)derefs : 0, "ratio");
            emit(name, n, par, rep, "sync_request_ratio",
                 commits > 0 ? (double)(s1.sync_requests - s0.sync_requests) / commits : 0,
                 "ratio");
            rm_rlu_citrus_destroy(sh.rlu);
          } else {
            rm_rcu_citrus_destroy(sh.rcu);
            rm_rcu_barrier();
          }
          free(c);
        }
    }
  }
}

static const struct bench_param p_citrus[] = {
    {"update", BENCH_P_UINTS, "10,20,40", 0, 100, NULL, "percent of operations that update"},
    {"range", BENCH_P_UINT, "100000", 16, 100000000, NULL, "key range (the tree starts half full)"},
    {"defer", BENCH_P_UINT, "10", 1, 100000, NULL, "rlu-citrus: sections per synchronize"},
    BENCH_PARAM_END};

static const struct bench_exp citrus_exps[] = {
    {"citrus", "Citrus tree, RCU and RLU (Fig. 8): ops/s at update=P percent; RLU statistics",
     {&citrus_impls, NULL}, 0, NULL, p_citrus, true, exp_citrus, 0},
};
const struct bench_family bench_citrus_family = {"citrus", citrus_exps,
                                                 sizeof citrus_exps / sizeof citrus_exps[0]};
