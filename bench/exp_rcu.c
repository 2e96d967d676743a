/*
 * bench/exp_rcu.c - the RCU experiments (FCP paper, section 8.3, and the
 * grace-period measurements that explain them), over the flavours of
 * rcu_impls.h: ours ("rcu", "rcu-fence") and liburcu's memb, mb, signal and
 * qsbr.
 *
 *   rcu_read      ns_per_read_pair: one thread, read_lock + read_unlock
 *                 pairs, the mean over 16 code placements of the loop
 *                 (RR_PLACE; --iterations N: exactly N, for callgrind);
 *                 ns_per_nested_pair(_opaque): the same for inner pairs;
 *                 ops_per_sec: T threads doing the same.
 *   grace_period  synchronize latency, p50_ns / p99_ns / max_ns over every
 *                 call of the run; beside it readers=N busy readers,
 *                 sleepy=K readers that sleep 100 us inside each section,
 *                 idle=K registered threads gone offline (asleep),
 *                 callers=K threads calling synchronize back to back.
 *   rcu_batch     (Fig. 22) one writer replaces a shared object batch=B
 *                 times, keeping the old copies, then waits for one grace
 *                 period and recycles them all; T busy readers.
 *                 updates_per_sec.
 *   writer_freq   (Fig. 21, in exp_fcp.c) uses rcu_writer_freq_point():
 *                 the same with B = 1 and a delay between updates.
 *
 * Readers.  A busy reader runs 64 sections, then its flavour's quiescent
 * announcement (urcu_qsbr_quiescent_state for qsbr, nothing for the
 * others), then checks the stop flag.  Where a shared object is updated
 * (rcu_batch, writer_freq) each section loads the object's address
 * (acquire, pairing with the writer's release store: rcu_dereference and
 * rcu_assign_pointer) and checks the object is live: the writer marks an
 * object dead after the grace period that follows its replacement and only
 * then recycles it, so a reader that sees a dead object has caught a grace
 * period that ended before a section that began before it; the driver then
 * fails (exit 1), whatever the timing.
 *
 * Every reader registers before the start and unregisters after the stop;
 * writers and synchronize callers do not register (no flavour needs them
 * to).
 */
#include "exp_rcu.h"
#include "rcu_impls.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*v_fn)(void);

/* The shared object of rcu_batch and writer_freq.  `alive` is 1 from
 * before the object is published until the grace period after it was
 * replaced has ended; the writer then stores 0 and may reuse the object. */
struct rcu_obj {
  uint64_t value;
  uint64_t alive;
  struct rcu_obj *next; /* the writer's free list */
} __attribute__((aligned(64)));

struct rcu_shared {
  struct rcu_obj *ptr __attribute__((aligned(128)));
  uint64_t batch __attribute__((aligned(128)));
};

/* ---- bodies (instantiated per flavour) ------------------------------------ */

/* An empty section's body: an empty volatile asm, which the compiler must
 * emit once per section (so the loop of a flavour whose sections compile
 * to nothing, qsbr, stays a loop) but which, having no memory clobber,
 * makes it reload nothing: zero instructions. */
#define SECTION_BODY() __asm__ __volatile__("")

/* Code placement.  The loop of one read pair is 30 to 60 bytes, and how
 * many cycles an iteration takes can depend on where it lies in the
 * instruction cache's 64-byte lines, which the linker decides: a change
 * anywhere in the binary moved liburcu's nested pair from 0.32 to 0.62 ns
 * (one cycle to two) and back.  rcu_read therefore compiles each of its
 * loops RR_PLACES times, copy P preceded (outside its loops, run once) by
 * P bytes of padding after a 64-byte boundary, so that the copies put the
 * loop at offsets spread over a line (the compiler's own loop alignment,
 * to 16 or 8 bytes, applies after the padding), and reports the mean over
 * the copies: the pair's cost at a placement chosen at random, as in a
 * program that inlines it.  --param placements=1 also prints each copy's
 * time. */
#define RR_PLACES 16
#define RR_OFFSETS(X, A) \
  X(A, 0) X(A, 4) X(A, 8) X(A, 12) X(A, 16) X(A, 20) X(A, 24) X(A, 28) \
  X(A, 32) X(A, 36) X(A, 40) X(A, 44) X(A, 48) X(A, 52) X(A, 56) X(A, 60)
#define RR_PLACE(P) __asm__ __volatile__(".p2align 6\n\t.skip " #P ", 0x90")

/* rcu_read's read pair on the calling thread: blocks of 4096 sections, one
 * quiescent announcement per block. */
AI double rr_pair_body(uint64_t iters, double secs, v_fn rl, v_fn ru, v_fn qs) {
  for (int i = 0; i < 1000; i++) {
    rl();
    SECTION_BODY();
    ru();
  }
  qs();
  uint64_t n = 0, t0 = rm_now_ns(), t1;
  if (iters) {
    for (uint64_t b = 0; b < iters / 4096; b++) {
      for (int i = 0; i < 4096; i++) {
        rl();
        SECTION_BODY();
        ru();
      }
      qs();
    }
    for (uint64_t i = 0; i < iters % 4096; i++) {
      rl();
      SECTION_BODY();
      ru();
    }
    n = iters;
    t1 = rm_now_ns();
  } else {
    uint64_t end = t0 + (uint64_t)(secs * 1e9);
    do {
      for (int i = 0; i < 4096; i++) {
        rl();
        SECTION_BODY();
        ru();
      }
      qs();
      n += 4096;
      t1 = rm_now_ns();
    } while (t1 < end);
  }
  return (double)(t1 - t0) / (double)n;
}

/* rcu_read's nested pair: the same blocks of empty sections, each inside
 * one outer section of its own flavour (a library called from inside its
 * caller's section), so every pair measured is an inner one. */
/* `opaque` gives each inner section a compiler memory barrier as its body:
 * what a section that calls a function, or runs an atomic operation, looks
 * like to the compiler.  The empty body lets the compiler carry a flavour's
 * thread-local counter in a register from the lock to the unlock (liburcu's
 * unlock then stores the value its lock loaded); the opaque body makes
 * both flavours store and reload it, as they do in most real sections
 * (docs/rcu.md, "Measured"). */
AI double rr_nested_body(uint64_t iters, double secs, v_fn rl, v_fn ru, v_fn qs, bool opaque) {
  uint64_t n = 0, t0 = rm_now_ns(), t1;
  uint64_t blocks = iters ? iters / 4096 : UINT64_MAX;
  uint64_t end = iters ? UINT64_MAX : t0 + (uint64_t)(secs * 1e9);
  for (uint64_t b = 0; b < blocks; b++) {
    rl();
    for (int i = 0; i < 4096; i++) {
      rl();
      if (opaque)
        rm_compiler_barrier();
      else
        SECTION_BODY();
      ru();
    }
    ru();
    qs();
    n += 4096;
    t1 = rm_now_ns();
    if (t1 >= end) break;
  }
  t1 = rm_now_ns();
  return n ? (double)(t1 - t0) / (double)n : 0.0;
}

/* A busy reader with empty sections (rcu_read, grace_period). */
AI void *rr_reader_body(struct tctx *c, v_fn rl, v_fn ru, v_fn qs, v_fn reg, v_fn unreg) {
  uint64_t n = 0;
  reg();
  bench_ready();
  wait_go();
  while (!stopped()) {
    for (int i = 0; i < 64; i++) {
      rl();
      SECTION_BODY();
      ru();
    }
    qs();
    n += 64;
  }
  unreg();
  c->count = n;
  return NULL;
}

/* A busy reader of the shared object (rcu_batch, writer_freq). */
AI void *deref_reader_body(struct tctx *c, v_fn rl, v_fn ru, v_fn qs, v_fn reg, v_fn unreg) {
  struct rcu_shared *sh = (struct rcu_shared *)c->shared;
  uint64_t n = 0, bad = 0, sum = 0;
  reg();
  bench_ready();
  wait_go();
  while (!stopped()) {
    for (int i = 0; i < 64; i++) {
      rl();
      /* Acquire: pairs with the writer's release store of the pointer, so
       * the object's fields, written before it, are seen. */
      struct rcu_obj *p = __atomic_load_n(&sh->ptr, __ATOMIC_ACQUIRE);
      sum += p->value;
      bad += __atomic_load_n(&p->alive, __ATOMIC_RELAXED) != 1;
      ru();
    }
    qs();
    n += 64;
  }
  unreg();
  c->sink += sum;
  c->errors = bad;
  c->count = n;
  return NULL;
}

/* A reader that sleeps 100 us inside every section (grace_period sleepy=K). */
AI void *sleepy_reader_body(struct tctx *c, v_fn rl, v_fn ru, v_fn qs, v_fn reg, v_fn unreg) {
  uint64_t n = 0;
  reg();
  bench_ready();
  wait_go();
  while (!stopped()) {
    rl();
    /* The whole 100 us even when a signal (urcu-signal's) interrupts. */
    struct timespec d = {0, 100000};
    while (nanosleep(&d, &d) == -1 && errno == EINTR) {
    }
    ru();
    qs();
    n++;
  }
  unreg();
  c->count = n;
  return NULL;
}

/* A registered thread that goes idle the way its flavour asks (offline;
 * liburcu's memb, mb and signal have nothing to say) and sleeps. */
AI void *idle_body(struct tctx *c, v_fn reg, v_fn unreg, v_fn off, v_fn on) {
  reg();
  off();
  bench_ready();
  wait_go();
  while (!stopped()) {
    struct timespec d = {0, 10000000};
    nanosleep(&d, NULL);
  }
  on();
  unreg();
  c->count = 0;
  return NULL;
}

/* grace_period's caller: synchronize back to back, each call timed. */
AI void *caller_body(struct tctx *c, v_fn sync) {
  uint64_t n = 0, max = c->maxsamples;
  bench_ready();
  wait_go();
  while (!stopped() && n < max) {
    uint64_t t0 = rm_now_ns();
    sync();
    c->samples[n++] = rm_now_ns() - t0;
  }
  c->nsamples = n;
  c->count = n;
  return NULL;
}

/* rcu_batch's and writer_freq's writer: sh->batch updates (each a fresh
 * object published with a release store), one grace period, then the
 * replaced objects are marked dead and recycled; c->arg ns of delay after
 * each batch.  The free list starts with batch + 1 objects. */
AI void *batch_writer_body(struct tctx *c, v_fn sync) {
  struct rcu_shared *sh = (struct rcu_shared *)c->shared;
  struct rcu_obj *free_list = (struct rcu_obj *)c->lock, *retired = NULL;
  uint64_t n = 0, b = sh->batch, seq = 0;
  bench_ready();
  wait_go();
  while (!stopped()) {
    for (uint64_t i = 0; i < b; i++) {
      struct rcu_obj *o = free_list;
      free_list = o->next;
      o->value = ++seq;
      __atomic_store_n(&o->alive, 1, __ATOMIC_RELAXED);
      /* Release: the object's fields before its address (pairs with the
       * readers' acquire load). */
      struct rcu_obj *old = sh->ptr; /* the only writer */
      __atomic_store_n(&sh->ptr, o, __ATOMIC_RELEASE);
      old->next = retired;
      retired = old;
    }
    sync();
    /* Every section that could hold a retired object has ended. */
    while (retired) {
      struct rcu_obj *o = retired;
      retired = o->next;
      __atomic_store_n(&o->alive, 0, __ATOMIC_RELAXED);
      o->next = free_list;
      free_list = o;
    }
    n += b;
    delay_ns(c->arg);
  }
  c->lock = free_list;
  c->count = n;
  return NULL;
}

/* ---- instantiation ------------------------------------------------------------ */
struct rcu_fns {
  double (*pair[RR_PLACES])(uint64_t, double);
  double (*nested[RR_PLACES])(uint64_t, double);
  double (*nested_opaque[RR_PLACES])(uint64_t, double);
  bench_thread_fn reader, deref_reader, sleepy, idle, caller, writer;
  void (*reg)(void);
  void (*unreg)(void);
};

/* The copies of rcu_read's loops for one flavour and one placement. */
#define RR_PLACED(ID, P)                                                                    \
  static double ID##_pair##P(uint64_t it, double s) {                                       \
    RR_PLACE(P);                                                                            \
    return rr_pair_body(it, s, ID##_read_lock, ID##_read_unlock, ID##_quiescent);           \
  }                                                                                         \
  static double ID##_nested##P(uint64_t it, double s) {                                     \
    RR_PLACE(P);                                                                            \
    return rr_nested_body(it, s, ID##_read_lock, ID##_read_unlock, ID##_quiescent, false);  \
  }                                                                                         \
  static double ID##_nested_opaque##P(uint64_t it, double s) {                              \
    RR_PLACE(P);                                                                            \
    return rr_nested_body(it, s, ID##_read_lock, ID##_read_unlock, ID##_quiescent, true);   \
  }

#define RCU_INSTANTIATE(ID, NAME, FL, ENV)                                                  \
  RR_OFFSETS(RR_PLACED, ID)                                                                \
  static void *ID##_reader(void *a) {                                                       \
    return rr_reader_body((struct tctx *)a, ID##_read_lock, ID##_read_unlock, ID##_quiescent, \
                          ID##_register, ID##_unregister);                                  \
  }                                                                                         \
  static void *ID##_deref_reader(void *a) {                                                 \
    return deref_reader_body((struct tctx *)a, ID##_read_lock, ID##_read_unlock,            \
                             ID##_quiescent, ID##_register, ID##_unregister);               \
  }                                                                                         \
  static void *ID##_sleepy(void *a) {                                                       \
    return sleepy_reader_body((struct tctx *)a, ID##_read_lock, ID##_read_unlock,           \
                              ID##_quiescent, ID##_register, ID##_unregister);              \
  }                                                                                         \
  static void *ID##_idle(void *a) {                                                         \
    return idle_body((struct tctx *)a, ID##_register, ID##_unregister, ID##_offline,        \
                     ID##_online);                                                          \
  }                                                                                         \
  static void *ID##_caller(void *a) { return caller_body((struct tctx *)a, ID##_synchronize); } \
  static void *ID##_writer(void *a) {                                                       \
    return batch_writer_body((struct tctx *)a, ID##_synchronize);                           \
  }
RCU_FLAVORS(RCU_INSTANTIATE)

#define RR_PAIR_FN(ID, P) ID##_pair##P,
#define RR_NESTED_FN(ID, P) ID##_nested##P,
#define RR_OPAQUE_FN(ID, P) ID##_nested_opaque##P,
#define RCU_ENTRY(ID, NAME, FL, ENV)                                                         \
  {{RR_OFFSETS(RR_PAIR_FN, ID)}, {RR_OFFSETS(RR_NESTED_FN, ID)},                              \
   {RR_OFFSETS(RR_OPAQUE_FN, ID)},                                                          \
   ID##_reader, ID##_deref_reader, ID##_sleepy, ID##_idle, ID##_caller, ID##_writer, \
   ID##_register, ID##_unregister},
static const struct rcu_fns rcu_fns[] = {RCU_FLAVORS(RCU_ENTRY)};

#define RCU_NAME(ID, NAME, FL, ENV) {NAME, FL, ENV},
static const struct bench_impl rcu_names[] = {RCU_FLAVORS(RCU_NAME)};
const struct bench_impl_set bench_rcu_flavors = {"RCU flavours", rcu_names,
                                                 sizeof rcu_names / sizeof rcu_names[0]};

/* Our RCU's mode is what its name says (a process started with
 * READMOSTLY_NO_MEMBARRIER=1, or a kernel without membarrier, is in fence
 * mode).  Asked after a registration, when the mode is settled. */
static void check_mode(size_t idx) {
#ifdef RM_BENCH_HAVE_RM_RCU
  const char *name = rcu_names[idx].name;
  bool fence_wanted = strcmp(name, "rcu-fence") == 0;
  if (!fence_wanted && strcmp(name, "rcu") != 0) return;
  static bool checked[2];
  if (checked[fence_wanted]) return;
  checked[fence_wanted] = true;
  if (rm_rcu_register_thread() != 0) bench_fatal("rm_rcu_register_thread failed");
  bool fence = !rm_fcp_membarrier_mode();
  rm_rcu_unregister_thread();
  if (fence_wanted && !fence)
    bench_fatal("rcu-fence: the process is not in fence mode (READMOSTLY_NO_MEMBARRIER=1 missing?)");
  if (!fence_wanted && fence)
    fprintf(stderr, "readmostly-bench: note: rcu runs in fence mode here (membarrier unavailable "
                    "or READMOSTLY_NO_MEMBARRIER set); its rows are fence-mode numbers\n");
#else
  (void)idx;
#endif
}

/* ---- experiments ------------------------------------------------------------------ */
/* One pair's time, the mean over the placements of its loop (see
 * RR_PLACE), each run for a share of the duration.  A counted run
 * (--iterations) runs the first copy only: the instructions do not depend
 * on the placement. */
static double rr_placed(double (*const fn[RR_PLACES])(uint64_t, double), const char *impl,
                        const char *metric) {
  if (O.iterations) return fn[0](O.iterations, O.duration);
  bool rows = bench_param_uint("placements") != 0;
  double sum = 0;
  for (int p = 0; p < RR_PLACES; p++) {
    double ns = fn[p](0, O.duration / RR_PLACES);
    if (rows) fprintf(stderr, "# %s %s placement +%d: %.4g ns\n", impl, metric, p * 4, ns);
    sum += ns;
  }
  return sum / RR_PLACES;
}

/* rcu_read's inner pairs of every impl, O.reps times, as `metric`: with an
 * empty section body, or an opaque one. */
static void rr_inner_rows(bool opaque, const char *metric) {
  for (int rep = 1; rep <= O.reps; rep++)
    for (int i = 0; i < O.nimpl; i++) {
      size_t k = O.impl[i].idx;
      rcu_fns[k].reg();
      double ns = rr_placed(opaque ? rcu_fns[k].nested_opaque : rcu_fns[k].nested,
                            O.impl[i].name, metric);
      rcu_fns[k].unreg();
      emit(O.impl[i].name, 1, "", rep, metric, ns, "ns");
    }
}

static void exp_rcu_read(const struct bench_exp *e) {
  (void)e;
  /* nested=1: inner pairs only (with --iterations, counting instructions
   * sees one kind of pair per run); 0: outermost pairs only; 2: both. */
  uint64_t nested = bench_param_uint("nested");
  for (int rep = 1; rep <= O.reps && nested != 1; rep++)
    for (int i = 0; i < O.nimpl; i++) {
      size_t k = O.impl[i].idx;
      check_mode(k);
      rcu_fns[k].reg();
      double ns = rr_placed(rcu_fns[k].pair, O.impl[i].name, "ns_per_read_pair");
      rcu_fns[k].unreg();
      emit(O.impl[i].name, 1, "", rep, "ns_per_read_pair", ns, "ns");
    }
  /* Inner pairs, inside an outer section of the same flavour; then the
   * same around an opaque section body (not with --iterations: a counted
   * run measures one kind of pair). */
  if (nested != 0) {
    rr_inner_rows(false, "ns_per_nested_pair");
    if (!O.iterations) rr_inner_rows(true, "ns_per_nested_pair_opaque");
  }
  if (O.iterations) return; /* counting instructions: the pairs only */
  for (int ti = 0; ti < O.nthreads; ti++) {
    int n = O.threads[ti];
    for (int rep = 1; rep <= O.reps; rep++)
      for (int i = 0; i < O.nimpl; i++) {
        size_t k = O.impl[i].idx;
        struct tctx *c = ctx_new(n, NULL);
        bench_thread_fn fns[MAXLIST];
        for (int j = 0; j < n; j++) fns[j] = rcu_fns[k].reader;
        double secs = bench_run_ex(n, c, fns, n, n);
        emit(O.impl[i].name, n, "", rep, "ops_per_sec", (double)ctx_sum(c, 0, n) / secs, "ops/s");
        free(c);
      }
  }
}

/* The samples a caller may keep: enough for 1 s of sub-microsecond grace
 * periods; a caller that fills them stops early. */
#define GP_MAX_SAMPLES (UINT64_C(1) << 21)

static void exp_grace_period(const struct bench_exp *e) {
  (void)e;
  uint64_t rv[MAXLIST], sv[MAXLIST], iv[MAXLIST], cv[MAXLIST];
  int nr = bench_param_uints("readers", rv, MAXLIST), ns = bench_param_uints("sleepy", sv, MAXLIST);
  int ni = bench_param_uints("idle", iv, MAXLIST), nc = bench_param_uints("callers", cv, MAXLIST);
  for (int a = 0; a < nr; a++)
    for (int b = 0; b < ns; b++)
      for (int d = 0; d < ni; d++)
        for (int f = 0; f < nc; f++) {
          int R = (int)rv[a], S = (int)sv[b], I = (int)iv[d], C = (int)cv[f];
          int n = C + R + S + I;
          if (n > MAXLIST) bench_usage_error("grace_period: %d threads, at most %d", n, MAXLIST);
          char par[96];
          int off = snprintf(par, sizeof par, "readers=%d", R);
          if (S) off += snprintf(par + off, sizeof par - (size_t)off, ";sleepy=%d", S);
          if (I) off += snprintf(par + off, sizeof par - (size_t)off, ";idle=%d", I);
          if (C != 1) snprintf(par + off, sizeof par - (size_t)off, ";callers=%d", C);
          for (int rep = 1; rep <= O.reps; rep++)
            for (int i = 0; i < O.nimpl; i++) {
              size_t k = O.impl[i].idx;
              check_mode(k);
              /* callers, busy readers, sleepy readers (pinned one per CPU when they
               * fit: a caller woken by a reader's unlock would otherwise preempt
               * that reader on its CPU, outside its section), idle threads */
              struct tctx *c = ctx_new(n, NULL);
              bench_thread_fn fns[MAXLIST];
              for (int j = 0; j < n; j++)
                fns[j] = j < C           ? rcu_fns[k].caller
                         : j < C + R     ? rcu_fns[k].reader
                         : j < C + R + S ? rcu_fns[k].sleepy
                                         : rcu_fns[k].idle;
              for (int j = 0; j < C; j++) {
                c[j].samples = (uint64_t *)malloc(GP_MAX_SAMPLES * sizeof(uint64_t));
                if (!c[j].samples) bench_fatal("out of memory");
                c[j].maxsamples = GP_MAX_SAMPLES;
              }
              bench_run_ex(n, c, fns, C + R + S, n);
              uint64_t total = 0;
              for (int j = 0; j < C; j++) total += c[j].nsamples;
              uint64_t *all = (uint64_t *)malloc((total ? total : 1) * sizeof(uint64_t));
              if (!all) bench_fatal("out of memory");
              uint64_t m = 0;
              for (int j = 0; j < C; j++) {
                memcpy(all + m, c[j].samples, c[j].nsamples * sizeof(uint64_t));
                m += c[j].nsamples;
                free(c[j].samples);
              }
              if (total == 0) {
                /* Not one grace period ended in the run (a reader that never
                 * left its section): the latency is at least the run. */
                all[0] = (uint64_t)(O.duration * 1e9);
                total = 1;
              }
              qsort(all, total, sizeof *all, bench_cmp_u64);
              const char *name = O.impl[i].name;
              emit(name, R + S, par, rep, "p50_ns", (double)bench_quantile(all, total, 0.50), "ns");
              emit(name, R + S, par, rep, "p99_ns", (double)bench_quantile(all, total, 0.99), "ns");
              emit(name, R + S, par, rep, "max_ns", (double)all[total - 1], "ns");
              free(all);
              free(c);
            }
        }
}

/* One writer (thread 0, its delay and batch as given) and n - 1 readers of
 * a shared object; fails the driver when a reader saw a dead object. */
static struct rcu_wf_result run_updates(size_t k, int nreaders, uint64_t batch, uint64_t delay) {
  int n = nreaders + 1;
  struct rcu_shared *sh = (struct rcu_shared *)aligned_alloc(128, sizeof *sh);
  struct rcu_obj *pool = (struct rcu_obj *)aligned_alloc(64, (batch + 2) * sizeof *pool);
  if (!sh || !pool) bench_fatal("out of memory");
  memset(sh, 0, sizeof *sh);
  memset(pool, 0, (batch + 2) * sizeof *pool);
  pool[0].alive = 1;
  sh->ptr = &pool[0];
  sh->batch = batch;
  for (uint64_t j = 1; j < batch + 2; j++) pool[j].next = j + 1 < batch + 2 ? &pool[j + 1] : NULL;
  struct tctx *c = ctx_new(n, NULL);
  bench_thread_fn fns[MAXLIST];
  fns[0] = rcu_fns[k].writer;
  c[0].lock = &pool[1];
  c[0].arg = delay;
  for (int j = 0; j < n; j++) {
    c[j].shared = sh;
    if (j) fns[j] = rcu_fns[k].deref_reader;
  }
  struct rcu_wf_result r;
  r.secs = bench_run_ex(n, c, fns, n, n);
  r.writes = c[0].count;
  r.reads = ctx_sum(c, 1, n);
  uint64_t bad = 0;
  for (int j = 1; j < n; j++) bad += c[j].errors;
  if (bad)
    bench_fatal("%s: readers saw %llu objects after the grace period that retired them", rcu_names[k].name,
                (unsigned long long)bad);
  free(c);
  free(pool);
  free(sh);
  return r;
}

struct rcu_wf_result rcu_writer_freq_point(size_t idx, int nreaders, uint64_t delay_ns) {
  check_mode(idx);
  return run_updates(idx, nreaders, 1, delay_ns);
}

static void exp_rcu_batch(const struct bench_exp *e) {
  (void)e;
  uint64_t bv[MAXLIST];
  int nb = bench_param_uints("batch", bv, MAXLIST);
  for (int bi = 0; bi < nb; bi++) {
    char par[64];
    snprintf(par, sizeof par, "batch=%llu", (unsigned long long)bv[bi]);
    for (int ti = 0; ti < O.nthreads; ti++) {
      int nr = O.threads[ti];
      if (nr + 1 > MAXLIST) bench_usage_error("rcu_batch: %d readers, at most %d", nr, MAXLIST - 1);
      for (int rep = 1; rep <= O.reps; rep++)
        for (int i = 0; i < O.nimpl; i++) {
          size_t k = O.impl[i].idx;
          check_mode(k);
          struct rcu_wf_result r = run_updates(k, nr, bv[bi], 0);
          emit(O.impl[i].name, nr, par, rep, "updates_per_sec", (double)r.writes / r.secs, "ops/s");
        }
    }
  }
}

/* ---- the family ---------------------------------------------------------------------- */
static const struct bench_param p_grace_period[] = {
    {"readers", BENCH_P_UINTS, "0,1,2", 0, 32, NULL, "busy readers"},
    {"sleepy", BENCH_P_UINTS, "0", 0, 32, NULL, "readers sleeping 100 us inside each section"},
    {"idle", BENCH_P_UINTS, "0", 0, 32, NULL, "registered threads gone idle (offline)"},
    {"callers", BENCH_P_UINTS, "1", 1, 16, NULL, "threads calling synchronize back to back"},
    BENCH_PARAM_END};
static const struct bench_param p_rcu_read[] = {
    {"nested", BENCH_P_UINT, "2", 0, 2, NULL,
     "0: outermost pairs, 1: inner pairs (inside an outer section), 2: both"},
    {"placements", BENCH_P_UINT, "0", 0, 1, NULL,
     "1: also print (to stderr) each code placement's time of every pair"},
    BENCH_PARAM_END};
static const struct bench_param p_rcu_batch[] = {
    {"batch", BENCH_P_UINTS, "1,10,100,1000,10000", 1, 1000000, NULL,
     "updates per grace period"},
    BENCH_PARAM_END};

#define FLAVORS {&bench_rcu_flavors, NULL}
static const struct bench_exp rcu_exps[] = {
    {"rcu_read", "RCU read_lock+read_unlock: ns per pair (1 thread), ops/s of T readers", FLAVORS, 0,
     NULL, p_rcu_read, true, exp_rcu_read, 0},
    {"grace_period", "synchronize latency (p50, p99, max) with busy, sleepy, idle readers and "
                     "concurrent callers",
     FLAVORS, 0, NULL, p_grace_period, false, exp_grace_period, 0},
    {"rcu_batch", "1 writer, batch=B updates per grace period, T busy readers: updates/s", FLAVORS, 0,
     NULL, p_rcu_batch, true, exp_rcu_batch, 0},
};
const struct bench_family bench_rcu_family = {"rcu", rcu_exps, sizeof rcu_exps / sizeof rcu_exps[0]};
