/*
 * bench/exp_rlu_resize.c - experiment rlu_resize: the RLU paper's resizable
 * hash table benchmark (Matveev et al., SOSP 2015, section 4.3, Fig. 6),
 * which is Triplett's: a table of `items` keys (2^16) that a dedicated
 * thread keeps resizing between 2^13 and 2^14 buckets while T threads look
 * keys up.
 *
 *   readmostly-bench rlu_resize [--impl rcu,urcu-memb,rlu,rlu-upd10]
 *                    [--threads 1,2] [--duration S] [--reps N] [--csv FILE]
 *                    [--param mode=8k|16k|resizing|all] [--param items=65536]
 *                    [--param batch=1]
 *
 *   mode=8k        2^13 buckets, no resizes (the paper's "8K" curves)
 *   mode=16k       2^14 buckets, no resizes ("16K")
 *   mode=resizing  starts at 2^13; one more thread grows to 2^14 and shrinks
 *                  back, over and over ("8-16K"); it starts at least one
 *                  resize and finishes the one in progress at the stop
 *   mode=all       the three, the default
 *
 * Implementations:
 *   rcu        readmostly/rcu_hash.h on our FCP-RCU (readmostly/rcu.h):
 *              the relativistic table, zip on shrink, column-wise unzip
 *              with a grace period per pass on grow
 *   urcu-memb  the same table on liburcu's memb flavour
 *   rlu        readmostly/rlu_rhash.h: one-shot split / merge of each bucket
 *              pair in one RLU section, fine-grained flavour, the
 *              fence-free section entry (as `rlu` in the other RLU
 *              experiments; fenced where membarrier is unavailable)
 *   rlu-upd10  the same, with 10 % of the T threads' operations updates (an
 *              update removes a random key and adds it back: two sections,
 *              the add skipped when another thread has the key out);
 *              the RCU table serializes writers with resizes, so only RLU
 *              runs this variant
 * batch=K (RLU rows only; rm_rlu_rhash_set_batch): K bucket pairs per
 * resize section instead of the paper's 1; rows then say ";batch=K".
 * Nodes: one allocation per key in both tables (malloc for RCU's,
 * rm_rlu_alloc for RLU's), keys inserted in ascending order.
 * Every lookup is one read-side section (RLU: one RLU section) on a random
 * key of [0, items); keys 0 .. items-1 are in the table, and a lookup that
 * misses aborts the run, except under rlu-upd10 (a key being updated is
 * absent for a moment).
 *
 * Metrics (threads = T lookup threads; the resizer is not counted):
 *   lookups_per_sec    lookups of all T threads together
 *   resizes_per_sec    resizes completed before the stop, per second (0 in
 *                      the fixed modes)
 *   resize_ms          mean duration of one resize (grow or shrink), over
 *                      every resize of the run (resizing only)
 *   resizer_cpu        the resizer thread's CPU time over its own run (from
 *                      the start to the end of its last resize), in CPUs
 *                      (resizing only): the share it took from the lookups
 *   ops_per_sec        rlu-upd10 only: lookups and updates
 *   fence_free_at_end  RLU rows: 1 if the run ended with the fence-free
 *                      entry, 0 if RLU closed it (membarriers too frequent)
 * Fresh table per run; repetitions interleaved over implementations.
 */
#include "harness.h"
#include "rcu_impls.h"

#include <readmostly/rcu_hash.h>
#include <readmostly/rlu_rhash.h>

#include <stdlib.h>
#include <string.h>

#define RR_SMALL ((size_t)1 << 13)
#define RR_LARGE ((size_t)1 << 14)

enum { RR_RCU, RR_URCU_MEMB, RR_RLU, RR_RLU_UPD10, RR_N };
static const struct bench_impl rr_names[RR_N] = {
    {"rcu", RCU_RM_FLAGS, NULL},
    {"urcu-memb", RCU_MEMB_FLAGS, NULL},
    {"rlu", 0, NULL},
    {"rlu-upd10", 0, NULL},
};
static const struct bench_impl_set rr_impls = {"resizable hash tables", rr_names, RR_N};

/* ---- one run's shared state ----------------------------------------------- */
struct rr_run {
  uint64_t items;
  /* RCU tables */
  struct rm_rcu_hash h;
  /* RLU table */
  struct rm_rlu_rhash *rh;
  bool upd;              /* rlu-upd10: the lookup threads also update */
  /* the resizer's results */
  uint64_t resizes;      /* completed before the stop */
  uint64_t all_resizes;  /* completed */
  uint64_t resize_ns;    /* time of all completed */
  uint64_t resizer_cpu_ns; /* CPU time the resizer thread used */
  uint64_t resizer_ns;     /* and the time from its start to its end */
};

/* CPU time the calling thread has used. */
static uint64_t rr_thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Resizer body shared by all: grow, shrink, grow, ... until the stop, at
 * least one started. */
#define RR_RESIZE_LOOP(r, RESIZE)                                               \
  do {                                                                          \
    size_t want_ = RR_LARGE;                                                    \
    uint64_t start_ = rm_now_ns(), cpu0_ = rr_thread_cpu_ns();                  \
    do {                                                                        \
      uint64_t t0_ = rm_now_ns();                                               \
      if ((RESIZE) != 0) bench_fatal("rlu_resize: resize to %zu failed", want_); \
      (r)->resize_ns += rm_now_ns() - t0_;                                      \
      (r)->all_resizes++;                                                       \
      if (!stopped()) (r)->resizes++;                                           \
      want_ = want_ == RR_LARGE ? RR_SMALL : RR_LARGE;                          \
    } while (!stopped());                                                       \
    (r)->resizer_cpu_ns = rr_thread_cpu_ns() - cpu0_;                           \
    (r)->resizer_ns = rm_now_ns() - start_;                                     \
  } while (0)

/* ---- RCU flavours over rcu_hash.h -------------------------------------------- */
#define RR_RCU_FLAVOR(ID)                                                       \
  RM_RCU_HASH_DEFINE(ID##_rr, ID##_read_lock, ID##_read_unlock, ID##_synchronize) \
  static void *ID##_rr_reader(void *a) {                                        \
    struct tctx *c = (struct tctx *)a;                                          \
    struct rr_run *r = (struct rr_run *)c->shared;                              \
    uint64_t s = c->seed, n = 0, miss = 0, items = r->items;                    \
    ID##_register();                                                            \
    bench_ready();                                                              \
    wait_go();                                                                  \
    do {                                                                        \
      for (int i = 0; i < 64; i++) {                                            \
        uint64_t k = prng(&s) % items;                                          \
        ID##_read_lock();                                                       \
        miss += ID##_rr_lookup(&r->h, k) == NULL;                               \
        ID##_read_unlock();                                                     \
      }                                                                         \
      ID##_quiescent();                                                         \
      n += 64;                                                                  \
    } while (!stopped());                                                       \
    ID##_unregister();                                                          \
    c->count = n;                                                               \
    c->errors = miss;                                                           \
    return NULL;                                                                \
  }                                                                             \
  static void *ID##_rr_resizer(void *a) {                                       \
    struct tctx *c = (struct tctx *)a;                                          \
    struct rr_run *r = (struct rr_run *)c->shared;                              \
    bench_ready();                                                              \
    wait_go();                                                                  \
    RR_RESIZE_LOOP(r, ID##_rr_resize(&r->h, want_));                            \
    return NULL;                                                                \
  }
RR_RCU_FLAVOR(rcu_rm)
RR_RCU_FLAVOR(rcu_memb)

/* ---- RLU ------------------------------------------------------------------------ */
/* 10 % updates (rlu-upd10): 32 random bits below 2^32 / 10. */
#define RR_UPD_THRESH (UINT64_C(4294967296) / 10)
/* A lookup thread; for rlu-upd10 also an updater.  Without updates a miss
 * is an error (every key stays in the table); with them a key another
 * thread has out for its update may be missing. */
static void *rlu_rr_worker(void *a) {
  struct tctx *c = (struct tctx *)a;
  struct rr_run *r = (struct rr_run *)c->shared;
  uint64_t s = c->seed, lookups = 0, updates = 0, miss = 0, items = r->items;
  uint64_t thresh = r->upd ? RR_UPD_THRESH : 0;
  struct rm_rlu_rhash *rh = r->rh;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  if (!self) bench_fatal("rlu_resize: rm_rlu_thread_register failed");
  bench_ready();
  wait_go();
  do {
    for (int i = 0; i < 64; i++) {
      uint64_t x = prng(&s), k = (x & 0xffffffffu) % items;
      if ((x >> 32) < thresh) {
        /* Remove and add back: the key count stays `items`.  Another
         * thread may have the key out for its own update (then our remove
         * finds it absent and we skip); no one else can add it back while
         * it is ours. */
        int rm = rm_rlu_rhash_remove(self, rh, k);
        if (rm < 0 || (rm == 1 && rm_rlu_rhash_add(self, rh, k) != 1))
          bench_fatal("rlu_resize: rlu-upd10: update of key %llu failed", (unsigned long long)k);
        updates++;
      } else {
        miss += !rm_rlu_rhash_contains(self, rh, k);
        lookups++;
      }
    }
  } while (!stopped());
  rm_rlu_thread_unregister(self);
  c->count = lookups;
  c->arg = updates;
  if (!r->upd) c->errors = miss;
  return NULL;
}

static void *rlu_rr_resizer(void *a) {
  struct tctx *c = (struct tctx *)a;
  struct rr_run *r = (struct rr_run *)c->shared;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  if (!self) bench_fatal("rlu_resize: rm_rlu_thread_register failed");
  bench_ready();
  wait_go();
  RR_RESIZE_LOOP(r, rm_rlu_rhash_resize(self, r->rh, want_));
  rm_rlu_thread_unregister(self);
  return NULL;
}

static void rr_free_node(struct rm_rcu_hash_node *n, void *arg) {
  (void)arg;
  free(n);
}

/* ---- one measurement ------------------------------------------------------------ */
static void rr_measure(const struct bench_sel *sel, int nthreads, int mode, int rep,
                       uint64_t items, uint64_t batch) {
  static const char *const pars[] = {"mode=8k", "mode=16k", "mode=resizing"};
  size_t buckets = mode == 1 ? RR_LARGE : RR_SMALL;
  bool resizing = mode == 2, rcu = sel->idx == RR_RCU || sel->idx == RR_URCU_MEMB;
  struct rr_run *r = (struct rr_run *)calloc(1, sizeof *r);
  if (!r) bench_fatal("out of memory");
  r->items = items;
  bench_thread_fn reader, resizer;
  if (rcu) {
    bool ours = sel->idx == RR_RCU;
    if ((ours ? rcu_rm_rr_init : rcu_memb_rr_init)(&r->h, buckets) != 0)
      bench_fatal("out of memory");
    /* One malloc per node, as RLU's nodes are (rm_rlu_alloc), in key order
     * for both: the two tables get the memory layout of a program that
     * inserted its items one by one (rcu_hash keeps its nodes in one
     * array, which is denser than either). */
    for (uint64_t k = 0; k < items; k++) {
      struct rm_rcu_hash_node *nd = (struct rm_rcu_hash_node *)malloc(sizeof *nd);
      if (!nd) bench_fatal("out of memory");
      if ((ours ? rcu_rm_rr_insert : rcu_memb_rr_insert)(&r->h, k, nd) != 0)
        bench_fatal("rlu_resize: insert failed");
    }
    reader = ours ? rcu_rm_rr_reader : rcu_memb_rr_reader;
    resizer = ours ? rcu_rm_rr_resizer : rcu_memb_rr_resizer;
  } else {
    /* Fine-grained, the fence-free section entry (as the other RLU
     * experiments' `rlu`; rm_rlu_init falls back to the fenced one without
     * membarrier), statistics off.  No context is registered here. */
    struct rm_rlu_options o;
    memset(&o, 0, sizeof o);
    o.fence_free = true;
    if (rm_rlu_init(&o) != 0) bench_fatal("rlu_resize: rm_rlu_init failed");
    r->rh = rm_rlu_rhash_create(buckets, false);
    rm_rlu_ctx *self = rm_rlu_thread_register();
    if (!r->rh || !self) bench_fatal("out of memory");
    rm_rlu_rhash_set_batch(r->rh, (size_t)batch);
    for (uint64_t k = 0; k < items; k++)
      if (rm_rlu_rhash_add(self, r->rh, k) != 1) bench_fatal("rlu_resize: add failed");
    rm_rlu_thread_unregister(self);
    r->upd = sel->idx == RR_RLU_UPD10;
    reader = rlu_rr_worker;
    resizer = rlu_rr_resizer;
  }
  int n = nthreads + resizing;
  struct tctx *c = ctx_new(n, NULL);
  bench_thread_fn fns[MAXLIST + 1];
  for (int i = 0; i < n; i++) {
    c[i].shared = r;
    fns[i] = i < nthreads ? reader : resizer;
  }
  /* Pin the lookup threads (one per CPU when they fit); the resizer runs
   * free.  Release them once all have registered. */
  double secs = bench_run_ex(n, c, fns, nthreads, n);

  uint64_t lookups = ctx_sum(c, 0, nthreads), misses = 0, updates = 0;
  for (int i = 0; i < nthreads; i++) {
    misses += c[i].errors;
    updates += c[i].arg;
  }
  if (misses)
    bench_fatal("rlu_resize: %s: %llu lookups of present keys missed", sel->name,
                (unsigned long long)misses);
  /* The param column is mode=... alone for the paper's batch of 1 (the
   * report reads it so), ";batch=K" added otherwise (RLU rows). */
  char parb[64];
  const char *par = pars[mode], *name = sel->name;
  if (batch != 1 && !rcu) {
    snprintf(parb, sizeof parb, "%s;batch=%llu", pars[mode], (unsigned long long)batch);
    par = parb;
  }
  emit(name, nthreads, par, rep, "lookups_per_sec", (double)lookups / secs, "ops/s");
  emit(name, nthreads, par, rep, "resizes_per_sec", (double)r->resizes / secs, "1/s");
  if (resizing && r->all_resizes)
    emit(name, nthreads, par, rep, "resize_ms", (double)r->resize_ns / 1e6 / (double)r->all_resizes,
         "ms");
  if (resizing && r->resizer_ns) /* the share of a CPU the resizer took from the lookups */
    emit(name, nthreads, par, rep, "resizer_cpu", (double)r->resizer_cpu_ns / (double)r->resizer_ns,
         "CPU");
  if (sel->idx == RR_RLU_UPD10)
    emit(name, nthreads, par, rep, "ops_per_sec", (double)(lookups + updates) / secs, "ops/s");
  if (!rcu) /* 0: RLU closed its fence-free entry during the run (rlu.h) */
    emit(name, nthreads, par, rep, "fence_free_at_end", rm_rlu_fence_free() ? 1.0 : 0.0, "1");
  if (rcu) {
    (sel->idx == RR_RCU ? rcu_rm_rr_destroy : rcu_memb_rr_destroy)(&r->h, rr_free_node, NULL);
  } else {
    rm_rlu_rhash_destroy(r->rh);
  }
  free(r);
  free(c);
}

static void exp_rlu_resize(const struct bench_exp *e) {
  (void)e;
  uint64_t items = bench_param_uint("items"), batch = bench_param_uint("batch");
  const char *m = bench_param("mode");
  static const char *const modes[] = {"8k", "16k", "resizing"};
  for (int mode = 0; mode < 3; mode++) {
    if (strcmp(m, "all") != 0 && strcmp(m, modes[mode]) != 0) continue;
    for (int ti = 0; ti < O.nthreads; ti++)
      for (int rep = 1; rep <= O.reps; rep++)
        for (int i = 0; i < O.nimpl; i++) rr_measure(&O.impl[i], O.threads[ti], mode, rep, items, batch);
  }
}

static const struct bench_param p_rlu_resize[] = {
    {"mode", BENCH_P_CHOICE, "all", 0, 0, "8k|16k|resizing|all",
     "8k / 16k: 2^13 / 2^14 buckets, no resizes; resizing: one more thread resizes 2^13 <-> 2^14"},
    {"items", BENCH_P_UINT, "65536", 1, 1ull << 32, NULL, "keys in the table"},
    {"batch", BENCH_P_UINT, "1", 1, 8192, NULL,
     "RLU: bucket pairs split or merged per resize section (1: the paper's one-shot per pair)"},
    BENCH_PARAM_END};

static const struct bench_exp rlu_resize_exps[] = {
    {"rlu_resize",
     "(RLU Fig. 6) resizable hash table, T lookup threads, mode=8k|16k|resizing: lookups/s, "
     "resizes/s (RCU's rcu_hash.h, RLU's rlu_rhash.h)",
     {&rr_impls, NULL}, 0, NULL, p_rlu_resize, true, exp_rlu_resize, 0},
};
const struct bench_family bench_rlu_resize_family = {
    "rlu_resize", rlu_resize_exps, sizeof rlu_resize_exps / sizeof rlu_resize_exps[0]};
