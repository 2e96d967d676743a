/*
 * bench/exp_fcp.c - the FCP paper's user-level experiments (section 8.3).
 *
 *   writer_freq   Fig. 21: one writer, busy-waiting delay_us between
 *                 writes, T readers in a tight loop; reader and writer
 *                 ops/s.  no-lock, the same threads with no lock, is the
 *                 ceiling.
 *   sleepers      Fig. 20: one writer every delay_us and T readers, K of
 *                 them yielding the CPU inside every section.
 *   wakeup        Fig. 19: K readers parked behind a held prwlock; time
 *                 until each runs after the unlock, parallel against
 *                 broadcast wake-up.
 */
#include "exp_rcu.h"
#include "locks.h"

#include <readmostly/prwlock.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* writer_freq (FCP paper Fig. 21): one writer, a delay between writes. */
AI void *wf_writer_body(struct tctx *c, wl_fn wl, wl_fn wu) {
  void *l = c->lock;
  uint64_t n = 0;
  wait_go();
  while (!stopped()) {
    wl(l);
    c->sink++;
    wu(l);
    n++;
    delay_ns(c->arg);
  }
  c->count = n;
  return NULL;
}

/* sleepers (FCP paper Fig. 20): a reader that, when c->arg, gives up its
 * CPU inside every critical section (taking the lock with the read lock
 * meant for sections that may sleep: prwlock's active readers). */
AI void *sleeper_body(struct tctx *c, rl_fn rl, ru_fn ru, rl_fn rla) {
  void *l = c->lock;
  uint64_t n = 0;
  bool sleepy = c->arg != 0;
  wait_go();
  while (!stopped()) {
    rm_token_t t;
    if (sleepy) {
      rla(l, &t);
      sched_yield();
      ru(l, t);
      n++;
    } else {
      for (int i = 0; i < 16; i++) {
        rl(l, &t);
        prng_steps(c, 10);
        ru(l, t);
      }
      n += 16;
    }
  }
  c->count = n;
  return NULL;
}

/* ---- instantiation ------------------------------------------------------ */
struct fcp_fns {
  bench_thread_fn readers, wf_writer, sleeper;
};
#define FCP_INSTANTIATE(ID, NAME, T, FL)                                                      \
  static void *ID##_readers(void *a) { return readers_body((struct tctx *)a, ID##_rl, ID##_ru, 0); } \
  static void *ID##_wf_writer(void *a) { return wf_writer_body((struct tctx *)a, ID##_wl, ID##_wu); } \
  static void *ID##_sleeper(void *a) {                                                        \
    return sleeper_body((struct tctx *)a, ID##_rl, ID##_ru, ID##_rla);                        \
  }
ALL_IMPLS(FCP_INSTANTIATE)
#define FCP_ENTRY(ID, NAME, T, FL) {ID##_readers, ID##_wf_writer, ID##_sleeper},
static const struct fcp_fns fcp_fns[] = {ALL_IMPLS(FCP_ENTRY)};
_Static_assert(sizeof fcp_fns / sizeof fcp_fns[0] == NLOCKS, "one entry per lock");

/* ---- experiments --------------------------------------------------------- */

/* writer_freq's ceiling: the same loop with no lock at all.  The writer only
 * delays; the others spin on private counters, so both CPUs stay as busy as
 * in the measured runs.  What it reaches is the most writes per second the
 * machine allows at that delay (the delay overshoots, the vCPU is sometimes
 * away), printed beside the lock's numbers. */
static void *wf_nolock_writer(void *a) {
  struct tctx *c = (struct tctx *)a;
  uint64_t n = 0;
  wait_go();
  while (!stopped()) {
    c->sink++;
    n++;
    delay_ns(c->arg);
  }
  c->count = n;
  return NULL;
}
static void *wf_nolock_reader(void *a) {
  struct tctx *c = (struct tctx *)a;
  uint64_t n = 0;
  wait_go();
  while (!stopped()) {
    for (int i = 0; i < 16; i++) rm_compiler_barrier();
    n += 16;
  }
  c->count = n;
  return NULL;
}


static void exp_writer_freq(const struct bench_exp *e) {
  (void)e;
  uint64_t ds[MAXLIST];
  int nd = bench_param_uints("delay_us", ds, MAXLIST);
  for (int di = 0; di < nd; di++) {
    char par[64];
    snprintf(par, sizeof par, "delay_us=%llu", (unsigned long long)ds[di]);
    for (int ti = 0; ti < O.nthreads; ti++) {
      int nr = O.threads[ti], n = nr + 1;
      for (int rep = 1; rep <= O.reps; rep++) {
        /* (A child run for one implementation leaves the ceiling to its parent.) */
        if (strcmp(bench_param("ceiling"), "0") != 0 && !O.child) {
          struct tctx *c = ctx_new(n, NULL);
          bench_thread_fn fns[MAXLIST * 4];
          fns[0] = wf_nolock_writer;
          c[0].arg = ds[di] * 1000u;
          for (int k = 1; k < n; k++) fns[k] = wf_nolock_reader;
          double secs = bench_run(n, c, fns);
          emit("no-lock", nr, par, rep, "writer_ops_per_sec", (double)c[0].count / secs, "ops/s");
          free(c);
        }
        for (int i = 0; i < O.nimpl; i++) {
          size_t ix = O.impl[i].idx;
          const char *name = O.impl[i].name;
          if (O.impl[i].set == &bench_rcu_flavors) {
            /* RCU: a write replaces the shared object and waits for one
             * grace period (batch size 1, as the paper fixes it). */
            struct rcu_wf_result r = rcu_writer_freq_point(ix, nr, ds[di] * 1000u);
            emit(name, nr, par, rep, "reader_ops_per_sec", (double)r.reads / r.secs, "ops/s");
            emit(name, nr, par, rep, "writer_ops_per_sec", (double)r.writes / r.secs, "ops/s");
            continue;
          }
          void *l = lock_new(ix);
          struct tctx *c = ctx_new(n, l);
          bench_thread_fn fns[MAXLIST * 4];
          fns[0] = fcp_fns[ix].wf_writer;
          c[0].arg = ds[di] * 1000u;
          for (int k = 1; k < n; k++) fns[k] = fcp_fns[ix].readers;
          stats_begin();
          double secs = bench_run(n, c, fns);
          stats_emit(name, nr, par, rep, secs);
          emit(name, nr, par, rep, "reader_ops_per_sec", (double)ctx_sum(c, 1, n) / secs, "ops/s");
          emit(name, nr, par, rep, "writer_ops_per_sec", (double)c[0].count / secs, "ops/s");
          free(c);
          lock_free(ix, l);
        }
      }
    }
  }
}

static void exp_sleepers(const struct bench_exp *e) {
  (void)e;
  uint64_t ss[MAXLIST];
  int ns = bench_param_uints("sleepy", ss, MAXLIST);
  uint64_t delay = bench_param_uint("delay_us") * 1000u;
  for (int si = 0; si < ns; si++) {
    char par[64];
    snprintf(par, sizeof par, "sleepy=%llu", (unsigned long long)ss[si]);
    for (int ti = 0; ti < O.nthreads; ti++) {
      int nr = O.threads[ti], n = nr + 1;
      if ((int)ss[si] > nr) continue;
      for (int rep = 1; rep <= O.reps; rep++)
        for (int i = 0; i < O.nimpl; i++) {
          size_t ix = O.impl[i].idx;
          const char *name = O.impl[i].name;
          void *l = lock_new(ix);
          struct tctx *c = ctx_new(n, l);
          bench_thread_fn fns[MAXLIST * 4];
          fns[0] = fcp_fns[ix].wf_writer;
          c[0].arg = delay;
          for (int k = 1; k < n; k++) {
            fns[k] = fcp_fns[ix].sleeper;
            c[k].arg = (uint64_t)(k <= (int)ss[si]);
          }
          double secs = bench_run(n, c, fns);
          emit(name, nr, par, rep, "reader_ops_per_sec", (double)ctx_sum(c, 1, n) / secs, "ops/s");
          emit(name, nr, par, rep, "writer_ops_per_sec", (double)c[0].count / secs, "ops/s");
          free(c);
          lock_free(ix, l);
        }
    }
  }
}

/* wakeup (FCP paper Fig. 19): K readers park behind a writer; time from the
 * writer's unlock until each reader runs.  prwlock's parallel wake-up (one
 * reader per CPU group wakes its group) against one broadcast FUTEX_WAKE. */
struct wk {
  rm_prwlock_t *l;
  uint64_t t_in;
  int parked;
};
static void *wk_reader(void *a) {
  struct wk *w = (struct wk *)a;
  __atomic_store_n(&w->parked, 1, __ATOMIC_RELEASE);
  if (rm_prwlock_read_lock(w->l) != 0) abort();
  w->t_in = rm_now_ns();
  rm_prwlock_read_unlock(w->l);
  return NULL;
}
static void exp_wakeup(const struct bench_exp *e) {
  (void)e;
  uint64_t ks[MAXLIST];
  int nk = bench_param_uints("readers", ks, MAXLIST);
  for (int ki = 0; ki < nk; ki++) {
    int K = (int)ks[ki];
    if (K < 1 || K > 1024) continue;
    char par[64];
    snprintf(par, sizeof par, "readers=%d", K);
    for (int rep = 1; rep <= O.reps; rep++)
      for (int mode = 0; mode < 2; mode++) {
        const char *name = mode ? "prwlock-broadcast" : "prwlock-parallel";
        rm_prwlock_t *l = (rm_prwlock_t *)aligned_alloc(128, 128);
        rm_prwlock_init_domain(l, NULL, mode ? RM_PRWLOCK_BROADCAST_WAKE : 0);
        struct wk *w = (struct wk *)calloc((size_t)K, sizeof *w);
        pthread_t *th = (pthread_t *)calloc((size_t)K, sizeof *th);
        if (!l || !w || !th) abort();
        rm_prwlock_write_lock(l);
        for (int k = 0; k < K; k++) {
          w[k].l = l;
          if (pthread_create(&th[k], NULL, wk_reader, &w[k])) abort();
        }
        /* Every reader has parked: each announced itself in rmask, and the
         * spin phase (well under 50 ms) is long over. */
        for (int k = 0; k < K; k++)
          while (!__atomic_load_n(&w[k].parked, __ATOMIC_ACQUIRE)) usleep(100);
        usleep(50000);
        uint64_t t0 = rm_now_ns();
        rm_prwlock_write_unlock(l);
        for (int k = 0; k < K; k++) pthread_join(th[k], NULL);
        uint64_t *lat = (uint64_t *)calloc((size_t)K, sizeof *lat);
        double sum = 0;
        for (int k = 0; k < K; k++) {
          lat[k] = w[k].t_in > t0 ? w[k].t_in - t0 : 1;
          sum += (double)lat[k];
        }
        qsort(lat, (size_t)K, sizeof *lat, bench_cmp_u64);
        emit(name, K, par, rep, "wake_us_mean", sum / K / 1000.0, "us");
        emit(name, K, par, rep, "wake_us_p90", (double)lat[(K * 9) / 10 < K ? (K * 9) / 10 : K - 1] / 1000.0, "us");
        emit(name, K, par, rep, "wake_us_last", (double)lat[K - 1] / 1000.0, "us");
        free(lat);
        free(w);
        free(th);
        rm_prwlock_destroy(l);
        free(l);
      }
  }
}


/* ---- the family ------------------------------------------------------------- */
static const struct bench_param p_writer_freq[] = {
    {"delay_us", BENCH_P_UINTS, "1,10,100,1000", 0, 10000000, NULL, "the writer's delay between writes"},
    {"ceiling", BENCH_P_CHOICE, "1", 0, 0, "0|1", "also run the no-lock ceiling"},
    BENCH_PARAM_END};
static const struct bench_param p_sleepers[] = {
    {"sleepy", BENCH_P_UINTS, "0,1,2,4", 0, 1024, NULL, "readers that yield inside their sections"},
    {"delay_us", BENCH_P_UINT, "100", 0, 10000000, NULL, "the writer's delay between writes"},
    BENCH_PARAM_END};
static const struct bench_param p_wakeup[] = {
    {"readers", BENCH_P_UINTS, "1,2,4,8,16", 1, 1024, NULL, "readers parked behind the writer"},
    BENCH_PARAM_END};

static const struct bench_exp fcp_exps[] = {
    {"writer_freq",
     "1 writer (delay_us between writes; RCU: an update and a grace period) + T readers: "
     "reader and writer ops/s; no-lock (same threads, no lock) is the ceiling",
     {&bench_locks, &bench_rcu_flavors, NULL}, BENCH_IMPL_READ_ONLY, "has no write lock",
     p_writer_freq, true, exp_writer_freq, 0},
    {"sleepers", "1 writer + T readers, param sleepy=K of them yield inside sections: ops/s",
     {&bench_locks, NULL}, BENCH_IMPL_READ_ONLY, "has no write lock", p_sleepers, true, exp_sleepers, 0},
    {"wakeup", "prwlock: K readers parked behind a writer, parallel vs broadcast wake-up: us",
     {&bench_locks, NULL}, 0, NULL, p_wakeup, false, exp_wakeup, 0},
};
const struct bench_family bench_fcp_family = {"fcp", fcp_exps, sizeof fcp_exps / sizeof fcp_exps[0]};
