/*
 * bench/harness.h - what every experiment of readmostly-bench shares.
 *
 * The driver is one harness (harness.c: options, the experiment table,
 * starting, timing and stopping threads, the CSV rows, the machine
 * description, run-time statistics) and one file per experiment family:
 *
 *   exp_rwlock.c  the BRAVO paper's lock experiments and Table 3 of the FCP
 *                 paper, over the locks of impls.h (locks.c)
 *   exp_fcp.c     the FCP paper's user-level experiments (writer_freq,
 *                 sleepers, wakeup)
 *   exp_rcu.c     the RCU experiments over the flavours of rcu_impls.h
 *   exp_citrus.c  the Citrus tree on RCU and on RLU (the RLU paper's Fig. 8)
 *   exp_rlu.c     the RLU paper's set experiments over bench/sets/sets.h,
 *                 and RLU's section entry beside RCU's read pairs
 *   exp_dlist.c   the RLU paper's kernel-list experiment (Fig. 9): a doubly
 *                 linked list on RLU against liburcu's RCU list
 *   exp_rcu_hash.c  rcu_hash: the resizable RCU hash table on each flavour
 *   exp_rlu_resize.c  rlu_resize: the RLU paper's resizable hash table
 *                 benchmark, RLU's table against RCU's
 *
 * A family exports one `const struct bench_family`: its experiments, each
 * with the implementation sets it accepts (--impl), the parameters it
 * declares (--param key=value; anything else is refused) and its run
 * function.  A new family is a new file, one line in harness.c's family
 * table and one in bench.cmake.
 *
 * An experiment reads its options from `O` (implementations chosen, thread
 * counts, duration, repetitions), its parameters with bench_param_*(), starts
 * its threads with bench_run() and writes each measurement with emit():
 *
 *   experiment,impl,threads,param,rep,metric,value,unit
 *
 * Repetitions are interleaved (rep 1 of every implementation, then rep 2,
 * ...) by every experiment, so that drift of the machine hits all
 * implementations alike.
 */
#ifndef READMOSTLY_BENCH_HARNESS_H
#define READMOSTLY_BENCH_HARNESS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <readmostly/platform.h>

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define AI static inline __attribute__((always_inline))
#define MAXLIST 64

/* ---- implementations ---------------------------------------------------- */
/* Flags of an implementation (bench_impl.flags); an experiment refuses the
 * implementations whose flags meet its `exclude` mask. */
#define BENCH_IMPL_READ_ONLY 1u /* no write lock (RCU read sides) */
#define BENCH_IMPL_HIDDEN 2u    /* only by name, never in a default list */
#define BENCH_IMPL_ABSENT 4u    /* not built in (its library was not found):
                                   skipped with a note when named */

struct bench_impl {
  const char *name;
  unsigned flags;
  /* NULL, or "VAR=value": the implementation needs VAR=value in force from
   * the start of the process (a process-wide, one-way mode).  When it is
   * not, the harness measures the other implementations, then runs this
   * one in a child process of its own (the same arguments, --impl NAME,
   * VAR=value in its environment) and passes its rows on: they follow the
   * others' instead of being interleaved with them. */
  const char *env;
};
/* The implementations of one family, in its own order: the family keeps
 * whatever else it needs (functions, sizes) in arrays of the same order. */
struct bench_impl_set {
  const char *what; /* "locks", "RCU flavours" */
  const struct bench_impl *v;
  size_t n;
};
/* One line of meaning per implementation name (glossary.c; NULL when it has
 * none), and the glossary's names for which has() is false. */
const char *bench_glossary(const char *name);
void bench_glossary_others(FILE *f, bool (*has)(const char *));
/* One implementation chosen with --impl (or by default). */
struct bench_sel {
  const struct bench_impl_set *set;
  size_t idx;
  const char *name;
};

/* ---- parameters ---------------------------------------------------------- */
enum bench_pkind {
  BENCH_P_UINTS,  /* comma-separated integers in [min, max] */
  BENCH_P_PROBS,  /* comma-separated probabilities: 0.5, 1/2, 9/10 */
  BENCH_P_CHOICE, /* one of `choices` (separated by '|') */
  BENCH_P_UINT,   /* one integer in [min, max] */
  BENCH_P_PERCENTS, /* comma-separated percentages in [0, 100]: 0.1,1 */
};
struct bench_param {
  const char *key;
  enum bench_pkind kind;
  const char *def; /* the default value, in the same syntax */
  uint64_t min, max;
  const char *choices;
  const char *help;
};

/* Ends an experiment's array of parameters. */
#define BENCH_PARAM_END {NULL, BENCH_P_UINT, NULL, 0, 0, NULL, NULL}

/* ---- experiments ---------------------------------------------------------- */
struct bench_exp {
  const char *name;
  const char *what; /* one line for the usage text */
  /* The sets --impl names are looked up in, first match wins (NULL-ended). */
  const struct bench_impl_set *sets[4];
  unsigned exclude;        /* refuse implementations with any of these flags */
  const char *exclude_why; /* "has no write lock" */
  const struct bench_param *params; /* ends with {NULL} */
  bool uses_threads;                /* --threads is meaningful */
  void (*run)(const struct bench_exp *);
  int arg; /* passed through for experiments sharing a run function */
};
struct bench_family {
  const char *name;
  const struct bench_exp *exps;
  size_t n;
};
extern const struct bench_family bench_rwlock_family, bench_fcp_family, bench_rcu_family,
    bench_citrus_family, bench_rlu_family, bench_dlist_family, bench_rcu_hash_family,
    bench_rlu_resize_family;

/* ---- options --------------------------------------------------------------- */
struct opts {
  const char *exp;
  const struct bench_exp *e;
  struct bench_sel impl[MAXLIST];
  int nimpl;
  int threads[MAXLIST];
  int nthreads;
  double duration;
  int reps;
  uint64_t iterations;
  const char *pkey[16], *pval[16];
  int nparam;
  int pin; /* pin thread i to CPU i when threads <= CPUs */
  FILE *csv;
  bool child; /* a child run for an implementation's env (see bench_impl) */
};
extern struct opts O;

/* The value of --param key, or the experiment's declared default (the
 * key must be declared; the value was checked when the options were read). */
const char *bench_param(const char *key);
/* A list parameter as numbers (BENCH_P_UINTS); returns the count. */
int bench_param_uints(const char *key, uint64_t *out, int max);
/* One number (BENCH_P_UINT). */
uint64_t bench_param_uint(const char *key);
/* A list parameter of percentages (BENCH_P_PERCENTS): each value and its
 * text as given (for the CSV's param column); returns the count. */
int bench_param_percents(const char *key, double *out, char (*text)[32], int max);
/* Parse one percentage ("0.1", "25"); false when malformed or outside
 * [0, 100]. */
bool bench_parse_percent(const char *s, double *p);
/* Parse one probability ("0.5", "1/2"); false when malformed. */
bool bench_parse_prob(const char *s, double *p);

/* One CSV row, on stdout and in the --csv file. */
void emit(const char *impl, int threads, const char *par, int rep, const char *metric, double value,
          const char *unit);

/* With READMOSTLY_STATS=1: BRAVO's revocation counters and prwlock's
 * consensus counters over one run, as extra rows. */
void stats_begin(void);
void stats_emit(const char *impl, int threads, const char *par, int rep, double secs);

/* ---- threads ----------------------------------------------------------------- */
/* One thread's context, alone on its 128-byte sector. */
struct tctx {
  void *lock;
  void **locks;        /* interference pool */
  uint64_t nlocks;
  int idx, n;          /* thread index, thread count */
  uint64_t count;      /* completed operations */
  uint64_t seed, sink; /* thread-local PRNG; sink keeps results alive */
  uint64_t wthresh;    /* rwbench: write when prng < wthresh */
  void *shared;        /* experiment data */
  uint64_t arg;        /* cs_efficiency: 1 = measure writes; writer_freq: delay ns;
                          sleepers: 1 = sleep inside sections */
  uint64_t ticks, ns;  /* cs_efficiency: the measured thread's time */
  uint64_t errors;     /* RCU readers: objects seen after their grace period */
  uint64_t *samples;   /* grace_period: one latency per synchronize */
  uint64_t nsamples, maxsamples;
} __attribute__((aligned(128)));

typedef void *(*bench_thread_fn)(void *);

/* n contexts (freed with free()), each with its index, a seed, `lock`. */
struct tctx *ctx_new(int n, void *lock);
uint64_t ctx_sum(const struct tctx *c, int from, int to);
/* Start n threads (fns[i] with ctx[i]), release them together, let them run
 * O.duration seconds, stop and join them; returns the measured seconds. */
double bench_run(int n, struct tctx *ctx, bench_thread_fn *fns);
/* The same, pinning only the first npin threads (one per CPU, when npin is
 * at most the CPUs and --pin 1; the others run free), and releasing them
 * only once nready threads have called bench_ready() (after their set-up,
 * such as an RCU registration, which a loaded machine may delay). */
double bench_run_ex(int n, struct tctx *ctx, bench_thread_fn *fns, int npin, int nready);

/* The start and stop flags of bench_run: a thread calls wait_go() once,
 * then loops while !stopped(). */
extern int g_go, g_stop, g_ready;
static inline void bench_ready(void) { __atomic_add_fetch(&g_ready, 1, __ATOMIC_RELEASE); }
AI bool stopped(void) { return __atomic_load_n(&g_stop, __ATOMIC_RELAXED) != 0; }
static inline void wait_go(void) {
  unsigned k = 0;
  while (!__atomic_load_n(&g_go, __ATOMIC_ACQUIRE))
    if (++k % 64 == 0) sched_yield();
    else rm_cpu_relax();
}

/* ---- helpers of the measured loops -------------------------------------------- */
AI uint64_t prng(uint64_t *s) { /* xorshift64* */
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}
AI void prng_steps(struct tctx *c, unsigned n) {
  uint64_t s = c->seed, acc = 0;
  for (unsigned i = 0; i < n; i++) acc += prng(&s);
  c->seed = s;
  c->sink += acc;
}
AI void spin_work(unsigned n) { /* test_rwlock's "loops": a counted-down local */
  if (n == 0) return; /* folded away where n is the constant 0 */
  for (volatile unsigned i = n; i > 0; i--) {
  }
}
/* Busy-wait d nanoseconds (a writer's delay between writes), on the cheap
 * clock so that reading the time does not become the delay. */
AI void delay_ns(uint64_t d) {
  if (!d) return;
  uint64_t ticks = rm_platform.tsc_ok ? (uint64_t)((double)d / rm_platform.ns_per_tick) : d;
  uint64_t end = rm_ticks() + ticks;
  while (rm_ticks() < end) rm_cpu_relax();
}

/* ---- statistics ------------------------------------------------------------------ */
int bench_cmp_u64(const void *a, const void *b);
/* The q-quantile (0..1) of v[0..n) sorted ascending: the nearest rank. */
uint64_t bench_quantile(const uint64_t *sorted, size_t n, double q);

/* Print a message naming the bad value and what is valid, exit 2. */
__attribute__((noreturn, format(printf, 1, 2))) void bench_usage_error(const char *fmt, ...);
/* Out of memory or a failed system call in the driver itself: exit 1. */
__attribute__((noreturn, format(printf, 1, 2))) void bench_fatal(const char *fmt, ...);

#endif
