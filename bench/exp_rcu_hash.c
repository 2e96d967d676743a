/*
 * bench/exp_rcu_hash.c - experiment rcu_hash: the resizable RCU hash table
 * (readmostly/rcu_hash.h) on each RCU flavor (the FCP paper, section 8.2.3,
 * Figs. 16-17; the table is Triplett et al.'s, the paper's reference [34]).
 *
 *   readmostly-bench rcu_hash [--impl urcu-memb,...] [--threads 1,2,4]
 *                    [--duration S] [--reps N] [--csv FILE]
 *                    [--param mode=fixed,resizing] [--param items=65536]
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
 * Implementations: urcu-memb, urcu-mb, urcu-signal, urcu-qsbr (liburcu-dev,
 * its inline read side) and, once readmostly/rcu.h is in the tree, rcu.
 *
 * The entry point is rmb_rcu_hash_main(argc, argv): readmostly-bench hands
 * it the command line unchanged when the experiment is rcu_hash, and it
 * prints the '#' machine lines and rows of the driver's CSV
 * (experiment,impl,threads,param,rep,metric,value,unit) itself.
 */
#define _GNU_SOURCE
#include "exp_rcu_hash.h"

#include <readmostly/platform.h>
#include <readmostly/rcu_hash.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifdef RM_BENCH_HAVE_URCU
#define _LGPL_SOURCE 1 /* liburcu's inline read side, as its users build */
#include <urcu/urcu-mb.h>
#include <urcu/urcu-memb.h>
#include <urcu/urcu-qsbr.h>
#include <urcu/urcu-signal.h>
#endif

/* ---- one run's shared state --------------------------------------------- */

struct rh_run {
  struct rm_rcu_hash h;
  struct rm_rcu_hash_node *nodes; /* items nodes, key i in nodes[i] */
  uint64_t items;
  size_t buckets;
  int resizing;
  int go, stop;
  /* written by the resizer only (its synchronize wrapper) */
  uint64_t *sync_ns;
  size_t nsync, capsync;
  int growing; /* the resize in progress grows the table */
  uint64_t grow_ns, grow_n, shrink_ns, shrink_n, resizes;
};

struct rh_thread {
  struct rh_run *run;
  uint64_t seed, lookups, misses;
} __attribute__((aligned(128)));

/* The run in progress: synchronize wrappers are called with no argument. */
static struct rh_run *rh_cur;

static inline uint64_t rh_prng(uint64_t *s) { /* xorshift64* */
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1Dull;
}

static void rh_wait_go(struct rh_run *r) {
  unsigned k = 0;
  while (!__atomic_load_n(&r->go, __ATOMIC_ACQUIRE))
    if (++k % 64 == 0) sched_yield();
    else rm_cpu_relax();
}

/* Times one grace period of the resizer (the only caller). */
static void rh_record(uint64_t ns) {
  struct rh_run *r = rh_cur;
  if (r->nsync == r->capsync) {
    r->capsync = r->capsync ? r->capsync * 2 : 4096;
    r->sync_ns = (uint64_t *)realloc(r->sync_ns, r->capsync * sizeof *r->sync_ns);
    if (!r->sync_ns) abort();
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
    struct rh_thread *c = (struct rh_thread *)a;                                          \
    struct rh_run *r = c->run;                                                            \
    uint64_t s = c->seed, n = 0, miss = 0, items = r->items;                              \
    REG();                                                                                \
    rh_wait_go(r);                                                                        \
    while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {                                \
      for (int i = 0; i < 64; i++) {                                                      \
        uint64_t k = rh_prng(&s) % items;                                                 \
        RL();                                                                             \
        miss += ID##_h_lookup(&r->h, k) == NULL;                                          \
        RU();                                                                             \
      }                                                                                   \
      QS();                                                                               \
      n += 64;                                                                            \
    }                                                                                     \
    UNREG();                                                                              \
    c->lookups = n;                                                                       \
    c->misses = miss;                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
  static void *ID##_resizer(void *a) {                                                    \
    struct rh_run *r = (struct rh_run *)a;                                                \
    rh_wait_go(r);                                                                        \
    /* Not registered (it never reads): grow, shrink, grow, ... */                       \
    r->growing = 0;                                                                       \
    while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {                                \
      r->growing = !r->growing;                                                           \
      if (ID##_h_resize(&r->h, r->growing ? r->buckets * 2 : r->buckets) != 0) abort();   \
      r->resizes++;                                                                       \
    }                                                                                     \
    return NULL;                                                                          \
  }

static void nothing(void) {}

#ifdef RM_BENCH_HAVE_URCU
RH_FLAVOR(rh_memb, urcu_memb_read_lock, urcu_memb_read_unlock, urcu_memb_synchronize_rcu,
          urcu_memb_register_thread, urcu_memb_unregister_thread, nothing)
RH_FLAVOR(rh_mb, urcu_mb_read_lock, urcu_mb_read_unlock, urcu_mb_synchronize_rcu,
          urcu_mb_register_thread, urcu_mb_unregister_thread, nothing)
RH_FLAVOR(rh_signal, urcu_signal_read_lock, urcu_signal_read_unlock,
          urcu_signal_synchronize_rcu, urcu_signal_register_thread,
          urcu_signal_unregister_thread, nothing)
/* QSBR: empty read-side calls; readers are online from registration and
 * announce a quiescent state between batches of lookups. */
RH_FLAVOR(rh_qsbr, urcu_qsbr_read_lock, urcu_qsbr_read_unlock, urcu_qsbr_synchronize_rcu,
          urcu_qsbr_register_thread, urcu_qsbr_unregister_thread, urcu_qsbr_quiescent_state)
#endif

struct rh_impl {
  const char *name;
  int (*init)(struct rm_rcu_hash *, size_t);
  int (*insert)(struct rm_rcu_hash *, uint64_t, struct rm_rcu_hash_node *);
  void (*destroy)(struct rm_rcu_hash *, rm_rcu_hash_free_fn *, void *);
  void *(*reader)(void *);
  void *(*resizer)(void *);
};
#define RH_IMPL(NAME, ID) {NAME, ID##_h_init, ID##_h_insert, ID##_h_destroy, ID##_reader, ID##_resizer}

static const struct rh_impl rh_impls[] = {
#ifdef RM_BENCH_HAVE_URCU
    RH_IMPL("urcu-memb", rh_memb),
    RH_IMPL("urcu-mb", rh_mb),
    RH_IMPL("urcu-signal", rh_signal),
    RH_IMPL("urcu-qsbr", rh_qsbr),
#endif
    {NULL, NULL, NULL, NULL, NULL, NULL}};

/* ---- options and output ------------------------------------------------- */

#define RH_MAX 64
static struct {
  const struct rh_impl *impl[RH_MAX];
  int nimpl;
  int threads[RH_MAX];
  int nthreads;
  double duration;
  int reps;
  const char *modes;
  uint64_t items;
  size_t buckets;
  FILE *csv;
} RO;

static void rh_emit(const char *impl, int threads, const char *par, int rep, const char *metric,
                    double value, const char *unit) {
  char row[512];
  snprintf(row, sizeof row, "rcu_hash,%s,%d,%s,%d,%s,%.6g,%s\n", impl, threads, par, rep, metric,
           value, unit);
  fputs(row, stdout);
  fflush(stdout);
  if (RO.csv) {
    fputs(row, RO.csv);
    fflush(RO.csv);
  }
}

static void rh_describe(FILE *f) {
  char model[256] = "unknown";
  FILE *ci = fopen("/proc/cpuinfo", "r");
  if (ci) {
    char line[512];
    while (fgets(line, sizeof line, ci))
      if (strncmp(line, "model name", 10) == 0) {
        char *p = strchr(line, ':');
        if (p) {
          p += 2;
          p[strcspn(p, "\n")] = 0;
          snprintf(model, sizeof model, "%s", p);
        }
        break;
      }
    fclose(ci);
  }
  struct utsname u;
  uname(&u);
  time_t now = time(NULL);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
  fprintf(f, "# machine: %s; %ld online CPUs; kernel %s %s; date %s\n", model,
          sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.release, date);
  fprintf(f, "# rcu_hash: %llu items, %zu buckets (resizing: %zu <-> %zu), threads unpinned\n",
          (unsigned long long)RO.items, RO.buckets, RO.buckets, RO.buckets * 2);
}

static int rh_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static uint64_t rh_pct(const uint64_t *v, size_t n, double p) {
  size_t i = (size_t)(p * (double)(n - 1) + 0.5);
  return v[i < n ? i : n - 1];
}

/* One measurement: T readers (+ the resizer), one impl, one mode. */
static void rh_measure(const struct rh_impl *im, int nreaders, int resizing, int rep) {
  struct rh_run *r = (struct rh_run *)calloc(1, sizeof *r);
  if (!r) abort();
  r->items = RO.items;
  r->buckets = RO.buckets;
  r->resizing = resizing;
  r->nodes = (struct rm_rcu_hash_node *)calloc(r->items, sizeof *r->nodes);
  if (!r->nodes || im->init(&r->h, r->buckets) != 0) abort();
  for (uint64_t k = 0; k < r->items; k++)
    if (im->insert(&r->h, k, &r->nodes[k]) != 0) abort();
  rh_cur = r;
  struct rh_thread *c = (struct rh_thread *)aligned_alloc(128, sizeof *c * (size_t)nreaders);
  pthread_t *th = (pthread_t *)calloc((size_t)nreaders + 1, sizeof *th);
  if (!c || !th) abort();
  memset(c, 0, sizeof *c * (size_t)nreaders);
  for (int i = 0; i < nreaders; i++) {
    c[i].run = r;
    c[i].seed = (0x9E3779B97F4A7C15ull * (uint64_t)(i + 1)) ^ rm_now_ns();
    if (!c[i].seed) c[i].seed = 1;
    if (pthread_create(&th[i], NULL, im->reader, &c[i])) abort();
  }
  if (resizing && pthread_create(&th[nreaders], NULL, im->resizer, r)) abort();
  usleep(2000);
  uint64_t t0 = rm_now_ns();
  __atomic_store_n(&r->go, 1, __ATOMIC_RELEASE);
  struct timespec d = {(time_t)RO.duration,
                       (long)((RO.duration - (double)(time_t)RO.duration) * 1e9)};
  while (nanosleep(&d, &d) == -1 && errno == EINTR) {
  }
  __atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
  uint64_t t1 = rm_now_ns();
  for (int i = 0; i < nreaders + resizing; i++) pthread_join(th[i], NULL);
  double secs = (double)(t1 - t0) / 1e9;

  uint64_t lookups = 0, misses = 0;
  for (int i = 0; i < nreaders; i++) {
    lookups += c[i].lookups;
    misses += c[i].misses;
  }
  if (misses) {
    fprintf(stderr, "rcu_hash: %s: %llu lookups of present keys missed\n", im->name,
            (unsigned long long)misses);
    exit(1);
  }
  const char *par = resizing ? "mode=resizing" : "mode=fixed";
  rh_emit(im->name, nreaders, par, rep, "lookups_per_sec", (double)lookups / secs, "ops/s");
  if (resizing && r->nsync) {
    uint64_t sum = 0;
    for (size_t i = 0; i < r->nsync; i++) sum += r->sync_ns[i];
    qsort(r->sync_ns, r->nsync, sizeof *r->sync_ns, rh_cmp);
    rh_emit(im->name, nreaders, par, rep, "resize_sync_ns", (double)sum / (double)r->nsync, "ns");
    rh_emit(im->name, nreaders, par, rep, "resize_sync_p50_ns",
            (double)rh_pct(r->sync_ns, r->nsync, 0.5), "ns");
    rh_emit(im->name, nreaders, par, rep, "resize_sync_p99_ns",
            (double)rh_pct(r->sync_ns, r->nsync, 0.99), "ns");
    rh_emit(im->name, nreaders, par, rep, "resize_sync_max_ns",
            (double)r->sync_ns[r->nsync - 1], "ns");
    if (r->grow_n)
      rh_emit(im->name, nreaders, par, rep, "grow_sync_ns",
              (double)r->grow_ns / (double)r->grow_n, "ns");
    if (r->shrink_n)
      rh_emit(im->name, nreaders, par, rep, "shrink_sync_ns",
              (double)r->shrink_ns / (double)r->shrink_n, "ns");
    if (r->resizes) {
      rh_emit(im->name, nreaders, par, rep, "syncs_per_resize",
              (double)r->nsync / (double)r->resizes, "1");
      rh_emit(im->name, nreaders, par, rep, "resizes_per_sec", (double)r->resizes / secs, "1/s");
    }
  }
  /* Nodes live in one array: nothing to free per node. */
  im->destroy(&r->h, NULL, NULL);
  rh_cur = NULL;
  free(r->sync_ns);
  free(r->nodes);
  free(r);
  free(c);
  free(th);
}

static const struct rh_impl *rh_find(const char *name) {
  for (const struct rh_impl *im = rh_impls; im->name; im++)
    if (strcmp(im->name, name) == 0) return im;
  return NULL;
}

static int rh_usage(FILE *f, int rc) {
  fprintf(f,
          "usage: readmostly-bench rcu_hash [--impl a,b,...] [--threads 1,2,...]\n"
          "         [--duration S] [--reps N] [--csv FILE] [--param mode=fixed,resizing]\n"
          "         [--param items=N] [--param buckets=B (power of two)]\n"
          "implementations:");
  for (const struct rh_impl *im = rh_impls; im->name; im++) fprintf(f, " %s", im->name);
  fprintf(f, "%s\n", rh_impls[0].name ? "" : " none (built without liburcu-dev)");
  return rc;
}

int rmb_rcu_hash_main(int argc, char **argv) {
  RO.duration = 1.0;
  RO.reps = 3;
  RO.threads[0] = 1;
  RO.threads[1] = 2;
  RO.threads[2] = 4;
  RO.nthreads = 3;
  RO.modes = "fixed,resizing";
  RO.items = 65536;
  RO.buckets = 8192;
  char *implarg = NULL;
  const char *csvpath = NULL;
  for (int i = 2; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) return rh_usage(stdout, 0);
    if (!v) {
      fprintf(stderr, "readmostly-bench: %s needs a value\n", a);
      return 2;
    }
    if (!strcmp(a, "--impl")) implarg = argv[i + 1];
    else if (!strcmp(a, "--threads")) {
      RO.nthreads = 0;
      char *save = NULL;
      for (char *t = strtok_r(argv[i + 1], ",", &save); t && RO.nthreads < RH_MAX;
           t = strtok_r(NULL, ",", &save)) {
        long n = strtol(t, NULL, 10);
        if (n < 1 || n > 1024) {
          fprintf(stderr, "readmostly-bench: bad --threads (1..1024, comma-separated)\n");
          return 2;
        }
        RO.threads[RO.nthreads++] = (int)n;
      }
    } else if (!strcmp(a, "--duration")) {
      RO.duration = strtod(v, NULL);
      if (!(RO.duration > 0 && RO.duration < 3600)) {
        fprintf(stderr, "readmostly-bench: bad --duration\n");
        return 2;
      }
    } else if (!strcmp(a, "--reps")) {
      RO.reps = atoi(v);
      if (RO.reps < 1 || RO.reps > 1000) {
        fprintf(stderr, "readmostly-bench: bad --reps\n");
        return 2;
      }
    } else if (!strcmp(a, "--csv")) csvpath = v;
    else if (!strcmp(a, "--pin")) {
      /* accepted for the driver's sake; rcu_hash threads are never pinned
       * (the resizer must share CPUs with the readers) */
    } else if (!strcmp(a, "--param")) {
      if (!strncmp(v, "mode=", 5)) RO.modes = v + 5;
      else if (!strncmp(v, "items=", 6)) RO.items = strtoull(v + 6, NULL, 10);
      else if (!strncmp(v, "buckets=", 8)) RO.buckets = (size_t)strtoull(v + 8, NULL, 10);
      else {
        fprintf(stderr, "readmostly-bench: rcu_hash: unknown --param %s\n", v);
        return 2;
      }
    } else {
      fprintf(stderr, "readmostly-bench: rcu_hash: unknown option %s\n", a);
      return rh_usage(stderr, 2);
    }
  }
  if (RO.items == 0 || !rm_rcu_hash__size_ok(RO.buckets) ||
      !rm_rcu_hash__size_ok(RO.buckets * 2)) {
    fprintf(stderr, "readmostly-bench: rcu_hash: items must be > 0, buckets a power of two\n");
    return 2;
  }
  int want_fixed = 0, want_resizing = 0;
  {
    char *m = strdup(RO.modes), *save = NULL;
    for (char *t = strtok_r(m, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (!strcmp(t, "fixed")) want_fixed = 1;
      else if (!strcmp(t, "resizing")) want_resizing = 1;
      else {
        fprintf(stderr, "readmostly-bench: rcu_hash: mode is fixed or resizing, not %s\n", t);
        free(m);
        return 2;
      }
    }
    free(m);
  }
  if (implarg) {
    char *save = NULL;
    for (char *t = strtok_r(implarg, ",", &save); t && RO.nimpl < RH_MAX;
         t = strtok_r(NULL, ",", &save)) {
      const struct rh_impl *im = rh_find(t);
      if (!im) {
        fprintf(stderr, "readmostly-bench: rcu_hash: unknown implementation '%s'\n", t);
        return rh_usage(stderr, 2);
      }
      RO.impl[RO.nimpl++] = im;
    }
  } else {
    for (const struct rh_impl *im = rh_impls; im->name && RO.nimpl < RH_MAX; im++)
      RO.impl[RO.nimpl++] = im;
  }
  if (RO.nimpl == 0) {
    fprintf(stderr, "readmostly-bench: rcu_hash: no implementation built in\n");
    return rh_usage(stderr, 2);
  }
  if (csvpath) {
    RO.csv = fopen(csvpath, "w");
    if (!RO.csv) {
      fprintf(stderr, "readmostly-bench: %s: %s\n", csvpath, strerror(errno));
      return 1;
    }
  }
  const char *hdr = "experiment,impl,threads,param,rep,metric,value,unit\n";
  rh_describe(stdout);
  fputs(hdr, stdout);
  if (RO.csv) {
    rh_describe(RO.csv);
    fputs(hdr, RO.csv);
  }
  /* Repetitions interleaved across implementations, as the driver does. */
  for (int mode = 0; mode < 2; mode++) {
    if (mode == 0 ? !want_fixed : !want_resizing) continue;
    for (int ti = 0; ti < RO.nthreads; ti++)
      for (int rep = 1; rep <= RO.reps; rep++)
        for (int i = 0; i < RO.nimpl; i++) rh_measure(RO.impl[i], RO.threads[ti], mode, rep);
  }
  if (RO.csv) fclose(RO.csv);
  return 0;
}
