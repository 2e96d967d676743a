/*
 * readmostly-bench - the benchmark driver.
 *
 *   readmostly-bench EXPERIMENT --impl a,b,... --threads 1,2,... --duration S
 *                    --reps N [--param key=value ...] [--csv FILE]
 *                    [--iterations N]
 *   readmostly-bench list
 *
 * Prints the machine description ('#' lines), then one CSV row per
 * measurement: experiment,impl,threads,param,rep,metric,value,unit.
 * Repetitions are interleaved (rep 1 of every implementation, then rep 2,
 * ...) so that drift of the machine hits all implementations alike; compare
 * implementations within one run, as ratios of medians.
 *
 * Experiments (BRAVO paper, section 5, sized for small machines):
 *   latency       one thread; read and write lock+unlock pairs.  With
 *                 --iterations N exactly N pairs (for callgrind); --param
 *                 op=read|write|bias_off|both.  Metrics ns_per_read_pair,
 *                 ns_per_write_pair (BRAVO: the write pair with bias off),
 *                 ns_per_read_pair_bias_off (a write pair every 4096 read
 *                 pairs, BRAVO's inhibit multiplier at 10^6: BRAVO-A's slow
 *                 read path; other locks' plain read pair).
 *   readers       T threads read-lock and unlock one lock; ops_per_sec.
 *   alternator    a ring of T threads passing a notification; each reads
 *                 the lock once per turn; ns_per_handoff (section 5.2).
 *   interference  T threads read random locks of a pool of N (--param
 *                 locks=1,2,...,8192), 20 PRNG steps inside, 100 outside;
 *                 BRAVO-BA on the shared table over BRAVO-BA with a private
 *                 4096-slot table per lock; metric ratio (section 5.1).
 *   test_rwlock   1 writer (10 loops inside, 1000 outside) and T readers
 *                 (10 loops inside); ops_per_sec (section 5.3).
 *   rwbench       T threads; write with probability P (--param
 *                 P=9/10,1/2,1/10,1/100,1/1000,1/10000), 10 PRNG steps
 *                 inside, uniform [0,200) steps outside; ops_per_sec (5.4).
 *   hashtable     a chained hash map under one lock: one eraser, one
 *                 inserter, T readers looking up random keys; ops_per_ms
 *                 (section 5.6).
 */
#define _GNU_SOURCE
#include "exp_rcu_hash.h"
#include "impls.h"

#include <errno.h>
#include <gnu/libc-version.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

typedef void (*rl_fn)(void *, rm_token_t *);
typedef void (*ru_fn)(void *, rm_token_t);
typedef void (*wl_fn)(void *);

#define AI static inline __attribute__((always_inline))

/* ---- shared state of one measurement ---------------------------------- */
static int g_go, g_stop;
AI bool stopped(void) { return __atomic_load_n(&g_stop, __ATOMIC_RELAXED) != 0; }

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
} __attribute__((aligned(128)));

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

static void wait_go(void) {
  unsigned k = 0;
  while (!__atomic_load_n(&g_go, __ATOMIC_ACQUIRE))
    if (++k % 64 == 0) sched_yield();
    else rm_cpu_relax();
}

/* ---- experiment bodies (instantiated per implementation) --------------- */

/* mode 0: read pairs; 1: write pairs; 2: read pairs with one write pair
 * every 4096 reads (the caller raises BRAVO's inhibit multiplier, so the
 * writes keep the bias off: BRAVO-A's slow read path against A's read). */
AI double lat_body(void *l, int mode, uint64_t iters, double secs, rl_fn rl, ru_fn ru, wl_fn wl,
                   wl_fn wu) {
  rm_token_t t;
  /* Warm up; for a write pair (and mode 2) this also revokes BRAVO's bias. */
  for (int i = 0; i < 1000; i++) {
    if (mode != 1) { rl(l, &t); ru(l, t); }
    if (mode != 0) { wl(l); wu(l); }
  }
  uint64_t n = 0, t0 = rm_now_ns(), t1;
  if (iters) {
    if (mode == 1)
      for (uint64_t i = 0; i < iters; i++) { wl(l); wu(l); }
    else
      for (uint64_t i = 0; i < iters; i++) {
        rl(l, &t); ru(l, t);
        if (mode == 2 && (i & 4095u) == 4095u) { wl(l); wu(l); }
      }
    n = iters;
    t1 = rm_now_ns();
  } else {
    uint64_t end = t0 + (uint64_t)(secs * 1e9);
    do {
      if (mode == 1)
        for (int i = 0; i < 4096; i++) { wl(l); wu(l); }
      else
        for (int i = 0; i < 4096; i++) { rl(l, &t); ru(l, t); }
      if (mode == 2) { wl(l); wu(l); }
      n += 4096;
      t1 = rm_now_ns();
    } while (t1 < end);
  }
  return (double)(t1 - t0) / (double)n;
}

/* readers: cs = 0; test_rwlock's readers: cs = 10 loops inside.  The stop
 * flag is read once per 64 acquisitions. */
AI void *readers_body(struct tctx *c, rl_fn rl, ru_fn ru, unsigned cs) {
  void *l = c->lock;
  uint64_t n = 0;
  wait_go();
  while (!stopped()) {
    for (int i = 0; i < 64; i++) {
      rm_token_t t;
      rl(l, &t);
      spin_work(cs);
      ru(l, t);
    }
    n += 64;
  }
  c->count = n;
  return NULL;
}

/* One notification word per thread, alone on its sector.  Only the left
 * neighbour writes it (a new sequence number), only its owner reads it: a
 * hand-off moves exactly one line between caches, so what the lock adds
 * shows. */
struct ring_slot {
  uint64_t seq;
} __attribute__((aligned(128)));

AI void *alternator_body(struct tctx *c, rl_fn rl, ru_fn ru) {
  struct ring_slot *ring = (struct ring_slot *)c->shared;
  struct ring_slot *me = &ring[c->idx], *next = &ring[(c->idx + 1) % c->n];
  void *l = c->lock;
  uint64_t n = 0, seen = 0;
  wait_go();
  while (!stopped()) {
    unsigned k = 0;
    uint64_t s;
    /* Acquire, pairing with the left neighbour's release store of our
     * word: its read unlock happens before our read lock. */
    while ((s = __atomic_load_n(&me->seq, __ATOMIC_ACQUIRE)) == seen) {
      if (stopped()) goto out;
      /* Busy-wait as the paper does; yield now and then, because with more
       * threads than cores the next thread may need our CPU. */
      if (++k % 256 == 0) sched_yield();
      else rm_cpu_relax();
    }
    seen = s;
    rm_token_t t;
    rl(l, &t);
    ru(l, t);
    n++;
    /* Hand-off number s + 1: every slot sees increasing values (with one
     * thread, next == me and our own store is the next notification). */
    __atomic_store_n(&next->seq, s + 1, __ATOMIC_RELEASE); /* pairs with its acquire */
  }
out:
  c->count = n;
  return NULL;
}

AI void *interference_body(struct tctx *c, rl_fn rl, ru_fn ru) {
  uint64_t n = 0, nl = c->nlocks;
  wait_go();
  while (!stopped()) {
    for (int i = 0; i < 16; i++) {
      void *l = c->locks[prng(&c->seed) % nl];
      rm_token_t t;
      rl(l, &t);
      prng_steps(c, 20);
      ru(l, t);
      prng_steps(c, 100);
    }
    n += 16;
  }
  c->count = n;
  return NULL;
}

AI void *trw_writer_body(struct tctx *c, wl_fn wl, wl_fn wu) {
  void *l = c->lock;
  uint64_t n = 0;
  wait_go();
  while (!stopped()) {
    wl(l);
    spin_work(10);
    wu(l);
    spin_work(1000);
    n++;
  }
  c->count = n;
  return NULL;
}

AI void *rwbench_body(struct tctx *c, rl_fn rl, ru_fn ru, wl_fn wl, wl_fn wu) {
  void *l = c->lock;
  uint64_t n = 0, th = c->wthresh;
  wait_go();
  while (!stopped()) {
    if (prng(&c->seed) < th) {
      wl(l);
      prng_steps(c, 10);
      wu(l);
    } else {
      rm_token_t t;
      rl(l, &t);
      prng_steps(c, 10);
      ru(l, t);
    }
    prng_steps(c, (unsigned)(prng(&c->seed) % 200u));
    n++;
  }
  c->count = n;
  return NULL;
}

/* cs_efficiency (FCP paper Table 3): thread 0 times its own lock+unlock
 * pairs (reads, or writes when c->arg) while the others read. */
AI void *cse_body(struct tctx *c, rl_fn rl, ru_fn ru, wl_fn wl, wl_fn wu) {
  void *l = c->lock;
  uint64_t n = 0;
  bool write = c->arg != 0;
  wait_go();
  uint64_t t0 = rm_ticks(), ns0 = rm_now_ns();
  while (!stopped()) {
    if (write)
      for (int i = 0; i < 16; i++) { wl(l); wu(l); }
    else
      for (int i = 0; i < 16; i++) { rm_token_t t; rl(l, &t); ru(l, t); }
    n += 16;
  }
  c->ticks = rm_ticks() - t0;
  c->ns = rm_now_ns() - ns0;
  c->count = n;
  return NULL;
}

/* Busy-wait d nanoseconds (the writer's delay between writes), on the
 * cheap clock so that reading the time does not become the delay. */
AI void delay_ns(uint64_t d) {
  if (!d) return;
  uint64_t ticks = rm_platform.tsc_ok ? (uint64_t)((double)d / rm_platform.ns_per_tick) : d;
  uint64_t end = rm_ticks() + ticks;
  while (rm_ticks() < end) rm_cpu_relax();
}

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

/* The hash map: chained buckets of preallocated nodes (so malloc's own
 * scalability does not mask the lock's), a free list used only under the
 * write lock. */
struct hnode {
  uint64_t key, value;
  struct hnode *next;
};
struct hmap {
  uint64_t nkeys, nbuckets;
  struct hnode **buckets;
  struct hnode *pool, *free;
};
AI struct hnode *hmap_find(struct hmap *m, uint64_t key) {
  struct hnode *p = m->buckets[key & (m->nbuckets - 1)];
  while (p && p->key != key) p = p->next;
  return p;
}
AI void hmap_insert(struct hmap *m, uint64_t key) {
  if (hmap_find(m, key) || !m->free) return;
  struct hnode *nd = m->free;
  m->free = nd->next;
  nd->key = key;
  nd->value = key * 3;
  struct hnode **b = &m->buckets[key & (m->nbuckets - 1)];
  nd->next = *b;
  *b = nd;
}
AI void hmap_erase(struct hmap *m, uint64_t key) {
  struct hnode **pp = &m->buckets[key & (m->nbuckets - 1)];
  while (*pp && (*pp)->key != key) pp = &(*pp)->next;
  if (!*pp) return;
  struct hnode *nd = *pp;
  *pp = nd->next;
  nd->next = m->free;
  m->free = nd;
}

AI void *ht_reader_body(struct tctx *c, rl_fn rl, ru_fn ru) {
  struct hmap *m = (struct hmap *)c->shared;
  void *l = c->lock;
  uint64_t n = 0, found = 0;
  wait_go();
  while (!stopped()) {
    uint64_t k = prng(&c->seed) % m->nkeys;
    rm_token_t t;
    rl(l, &t);
    struct hnode *p = hmap_find(m, k);
    if (p) found += p->value;
    ru(l, t);
    n++;
  }
  c->sink += found;
  c->count = n;
  return NULL;
}

AI void *ht_writer_body(struct tctx *c, wl_fn wl, wl_fn wu, int insert) {
  struct hmap *m = (struct hmap *)c->shared;
  void *l = c->lock;
  uint64_t n = 0;
  wait_go();
  while (!stopped()) {
    uint64_t k = prng(&c->seed) % m->nkeys;
    wl(l);
    if (insert) hmap_insert(m, k);
    else hmap_erase(m, k);
    wu(l);
    n++;
  }
  c->count = n;
  return NULL;
}

/* ---- instantiation ------------------------------------------------------ */
struct impl {
  const char *name;
  size_t size, align;
  unsigned flags;
  void (*init)(void *);
  void (*fini)(void *);
  double (*lat)(void *, int, uint64_t, double);
  void *(*readers)(void *);
  void *(*alternator)(void *);
  void *(*interference)(void *);
  void *(*trw_reader)(void *);
  void *(*trw_writer)(void *);
  void *(*rwbench)(void *);
  void *(*ht_reader)(void *);
  void *(*ht_eraser)(void *);
  void *(*ht_inserter)(void *);
  void *(*cse)(void *);
  void *(*wf_writer)(void *);
  void *(*sleeper)(void *);
};

#define BENCH_INSTANTIATE(ID, NAME, T, FL)                                                    \
  static double ID##_lat(void *l, int w, uint64_t it, double s) {                             \
    return lat_body(l, w, it, s, ID##_rl, ID##_ru, ID##_wl, ID##_wu);                         \
  }                                                                                           \
  static void *ID##_readers(void *a) { return readers_body((struct tctx *)a, ID##_rl, ID##_ru, 0); } \
  static void *ID##_alternator(void *a) {                                                     \
    return alternator_body((struct tctx *)a, ID##_rl, ID##_ru);                               \
  }                                                                                           \
  static void *ID##_interference(void *a) {                                                   \
    return interference_body((struct tctx *)a, ID##_rl, ID##_ru);                             \
  }                                                                                           \
  static void *ID##_trw_reader(void *a) {                                                     \
    return readers_body((struct tctx *)a, ID##_rl, ID##_ru, 10);                               \
  }                                                                                           \
  static void *ID##_trw_writer(void *a) {                                                     \
    return trw_writer_body((struct tctx *)a, ID##_wl, ID##_wu);                               \
  }                                                                                           \
  static void *ID##_rwbench(void *a) {                                                        \
    return rwbench_body((struct tctx *)a, ID##_rl, ID##_ru, ID##_wl, ID##_wu);                \
  }                                                                                           \
  static void *ID##_ht_reader(void *a) {                                                      \
    return ht_reader_body((struct tctx *)a, ID##_rl, ID##_ru);                                \
  }                                                                                           \
  static void *ID##_ht_eraser(void *a) {                                                      \
    return ht_writer_body((struct tctx *)a, ID##_wl, ID##_wu, 0);                             \
  }                                                                                           \
  static void *ID##_ht_inserter(void *a) {                                                    \
    return ht_writer_body((struct tctx *)a, ID##_wl, ID##_wu, 1);                             \
  }                                                                                           \
  static void *ID##_cse(void *a) {                                                            \
    return cse_body((struct tctx *)a, ID##_rl, ID##_ru, ID##_wl, ID##_wu);                    \
  }                                                                                           \
  static void *ID##_wf_writer(void *a) { return wf_writer_body((struct tctx *)a, ID##_wl, ID##_wu); } \
  static void *ID##_sleeper(void *a) {                                                        \
    return sleeper_body((struct tctx *)a, ID##_rl, ID##_ru, ID##_rla);                        \
  }
ALL_IMPLS(BENCH_INSTANTIATE)

#define BENCH_ENTRY(ID, NAME, T, FL)                                                        \
  {NAME,          sizeof(T),        _Alignof(T),       FL,               ID##_init,          \
   ID##_fini,     ID##_lat,         ID##_readers,      ID##_alternator,  ID##_interference,  \
   ID##_trw_reader, ID##_trw_writer, ID##_rwbench,     ID##_ht_reader,   ID##_ht_eraser,     \
   ID##_ht_inserter, ID##_cse,      ID##_wf_writer,    ID##_sleeper},
static const struct impl impls[] = {ALL_IMPLS(BENCH_ENTRY)};
#define NIMPLS (sizeof impls / sizeof impls[0])

static const struct impl *impl_find(const char *name) {
  for (size_t i = 0; i < NIMPLS; i++)
    if (strcmp(impls[i].name, name) == 0) return &impls[i];
  return NULL;
}

static void *lock_new(const struct impl *im) {
  size_t al = im->align < 128 ? 128 : im->align;
  size_t sz = (im->size + al - 1) / al * al;
  void *l = aligned_alloc(al, sz);
  if (!l) {
    fprintf(stderr, "readmostly-bench: out of memory\n");
    exit(1);
  }
  memset(l, 0, sz);
  im->init(l);
  return l;
}
static void lock_free(const struct impl *im, void *l) {
  im->fini(l);
  free(l);
}

/* ---- options ------------------------------------------------------------- */
#define MAXLIST 64
struct opts {
  const char *exp;
  const struct impl *impl[MAXLIST];
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
};
static struct opts O;

static const char *param(const char *key, const char *def) {
  for (int i = 0; i < O.nparam; i++)
    if (strcmp(O.pkey[i], key) == 0) return O.pval[i];
  return def;
}

static void emit(const char *impl, int threads, const char *par, int rep, const char *metric,
                 double value, const char *unit) {
  char row[512];
  snprintf(row, sizeof row, "%s,%s,%d,%s,%d,%s,%.6g,%s\n", O.exp, impl, threads, par, rep, metric,
           value, unit);
  fputs(row, stdout);
  fflush(stdout);
  if (O.csv) {
    fputs(row, O.csv);
    fflush(O.csv);
  }
}

/* With READMOSTLY_STATS=1 in the environment (which turns BRAVO's counters
 * on at start-up), experiments that call this after a run also report how
 * often BRAVO locks revoked and what a revocation cost, to explain a
 * throughput figure.  Counters are reset before each run (stats_begin). */
static int stats_wanted(void) {
  const char *s = getenv("READMOSTLY_STATS");
  return s && *s && strcmp(s, "0") != 0;
}
static uint64_t fcp_fast0, fcp_mb0, fcp_parks0;
static void stats_begin(void) {
  if (!stats_wanted()) return;
  rm_bravo_stats_reset();
  rm_fcp_domain_t *d = rm_fcp_default_domain();
  fcp_fast0 = __atomic_load_n(&d->consensus_fast, __ATOMIC_RELAXED);
  fcp_mb0 = __atomic_load_n(&d->consensus_membarrier, __ATOMIC_RELAXED);
  fcp_parks0 = __atomic_load_n(&d->writer_parks, __ATOMIC_RELAXED);
}
static void stats_emit(const char *impl, int threads, const char *par, int rep, double secs) {
  if (stats_wanted() && strcmp(impl, "prwlock") == 0) {
    /* How prwlock's writers reached consensus: from reports alone, or with
     * a membarrier; and how often one parked waiting for a reader. */
    rm_fcp_domain_t *d = rm_fcp_default_domain();
    emit(impl, threads, par, rep, "consensus_fast_per_sec",
         (double)(__atomic_load_n(&d->consensus_fast, __ATOMIC_RELAXED) - fcp_fast0) / secs, "1/s");
    emit(impl, threads, par, rep, "consensus_membarrier_per_sec",
         (double)(__atomic_load_n(&d->consensus_membarrier, __ATOMIC_RELAXED) - fcp_mb0) / secs, "1/s");
    emit(impl, threads, par, rep, "writer_parks_per_sec",
         (double)(__atomic_load_n(&d->writer_parks, __ATOMIC_RELAXED) - fcp_parks0) / secs, "1/s");
    return;
  }
  if (!stats_wanted() || strncmp(impl, "bravo-", 6) != 0) return;
  struct rm_bravo_stats s;
  rm_bravo_stats_get(&s);
  uint64_t slow = s.slow_bias_off + s.slow_collision + s.slow_raced;
  emit(impl, threads, par, rep, "revocations_per_sec", (double)s.revocations / secs, "1/s");
  emit(impl, threads, par, rep, "ns_per_revocation",
       s.revocations ? (double)s.revoke_ns / (double)s.revocations : 0.0, "ns");
  emit(impl, threads, par, rep, "fast_read_share",
       s.fast_reads + slow ? (double)s.fast_reads / (double)(s.fast_reads + slow) : 0.0, "1");
}

static void describe_machine(FILE *f) {
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
  fprintf(f, "# machine: %s; %ld online CPUs (%ld configured); %.1f GiB RAM\n", model,
          sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF),
          (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) / 1073741824.0);
  fprintf(f, "# system: %s %s %s; glibc %s; compiler %s\n", u.sysname, u.release, u.machine,
          gnu_get_libc_version(), __VERSION__);
  fprintf(f, "# bravo: table %zu slots; N = %u; threads %s; date %s\n", rm_bravo_table_size(),
          rm_bravo_inhibit_multiplier(),
          O.pin ? "pinned one per CPU when they fit (else free)" : "free (unpinned)", date);
}

/* ---- running threads ----------------------------------------------------- */
/* Start n threads (fns[i] with ctx[i]), let them run for O.duration seconds
 * from a common start, stop them; returns the measured seconds. */
static double run(int n, struct tctx *ctx, void *(**fns)(void *)) {
  pthread_t *th = (pthread_t *)calloc((size_t)n, sizeof *th);
  __atomic_store_n(&g_go, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_stop, 0, __ATOMIC_RELAXED);
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  for (int i = 0; i < n; i++) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (O.pin && n <= ncpu) {
      /* One thread per CPU: otherwise the scheduler sometimes starts two
       * spinning threads on one CPU and the run measures sched_yield. */
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(i % ncpu, &set);
      pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    }
    int e = pthread_create(&th[i], &attr, fns[i], &ctx[i]);
    pthread_attr_destroy(&attr);
    if (e) {
      fprintf(stderr, "readmostly-bench: pthread_create: %s\n", strerror(e));
      exit(1);
    }
  }
  usleep(2000);
  uint64_t t0 = rm_now_ns();
  __atomic_store_n(&g_go, 1, __ATOMIC_RELEASE);
  struct timespec d = {(time_t)O.duration, (long)((O.duration - (double)(time_t)O.duration) * 1e9)};
  while (nanosleep(&d, &d) == -1 && errno == EINTR) {
  }
  __atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
  uint64_t t1 = rm_now_ns();
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  free(th);
  return (double)(t1 - t0) / 1e9;
}

static struct tctx *ctx_new(int n, void *lock) {
  struct tctx *c = (struct tctx *)aligned_alloc(128, sizeof(struct tctx) * (size_t)n);
  memset(c, 0, sizeof(struct tctx) * (size_t)n);
  for (int i = 0; i < n; i++) {
    c[i].lock = lock;
    c[i].idx = i;
    c[i].n = n;
    c[i].seed = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1) ^ rm_now_ns();
    if (!c[i].seed) c[i].seed = 1;
  }
  return c;
}
static uint64_t ctx_sum(const struct tctx *c, int from, int to) {
  uint64_t s = 0;
  for (int i = from; i < to; i++) s += c[i].count;
  return s;
}

/* ---- experiments --------------------------------------------------------- */
static bool needs_writes(const char *exp) {
  /* latency measures the write pair only where there is one */
  return strcmp(exp, "readers") != 0 && strcmp(exp, "alternator") != 0 &&
         strcmp(exp, "interference") != 0 && strcmp(exp, "latency") != 0 &&
         strcmp(exp, "writer_freq") != 0 && strcmp(exp, "wakeup") != 0;
}

static void exp_latency(void) {
  const char *op = param("op", "both");
  bool both = strcmp(op, "both") == 0;
  bool rd = both || !strcmp(op, "read"), wr = both || !strcmp(op, "write");
  bool off = both || !strcmp(op, "bias_off");
  if (!rd && !wr && !off) {
    fprintf(stderr, "readmostly-bench: bad op=%s (want read, write, bias_off or both)\n", op);
    exit(2);
  }
  for (int rep = 1; rep <= O.reps; rep++)
    for (int i = 0; i < O.nimpl; i++) {
      const struct impl *im = O.impl[i];
      void *l = lock_new(im);
      if (rd)
        emit(im->name, 1, "", rep, "ns_per_read_pair", im->lat(l, 0, O.iterations, O.duration), "ns");
      if (wr && !(im->flags & IMPL_READ_ONLY))
        emit(im->name, 1, "", rep, "ns_per_write_pair", im->lat(l, 1, O.iterations, O.duration),
             "ns");
      if (off && !(im->flags & IMPL_READ_ONLY)) {
        /* Writes keep BRAVO's bias off: N large enough that no window ends
         * during the run (10^6 x revocation time, about a second). */
        unsigned n = rm_bravo_inhibit_multiplier();
        rm_bravo_set_inhibit_multiplier(1000000u);
        emit(im->name, 1, "", rep, "ns_per_read_pair_bias_off",
             im->lat(l, 2, O.iterations, O.duration), "ns");
        rm_bravo_set_inhibit_multiplier(n);
      }
      lock_free(im, l);
    }
}

static void exp_simple(int kind) { /* 0 readers, 1 alternator */
  for (int ti = 0; ti < O.nthreads; ti++) {
    int n = O.threads[ti];
    for (int rep = 1; rep <= O.reps; rep++)
      for (int i = 0; i < O.nimpl; i++) {
        const struct impl *im = O.impl[i];
        void *l = lock_new(im);
        struct tctx *c = ctx_new(n, l);
        void *(*fns[MAXLIST * 4])(void *);
        struct ring_slot *ring = NULL;
        if (kind == 1) {
          ring = (struct ring_slot *)aligned_alloc(128, sizeof *ring * (size_t)n);
          memset(ring, 0, sizeof *ring * (size_t)n);
          ring[0].seq = 1;
        }
        for (int k = 0; k < n; k++) {
          fns[k] = kind == 0 ? im->readers : im->alternator;
          c[k].shared = ring;
        }
        double secs = run(n, c, fns);
        uint64_t total = ctx_sum(c, 0, n);
        if (kind == 0) emit(im->name, n, "", rep, "ops_per_sec", (double)total / secs, "ops/s");
        else emit(im->name, n, "", rep, "ns_per_handoff", total ? secs * 1e9 / (double)total : 0, "ns");
        free(ring);
        free(c);
        lock_free(im, l);
      }
  }
}

static void exp_interference(void) {
  const struct impl *shared = impl_find("bravo-ba"), *priv = impl_find("bravo-ba-private");
  char list[512];
  snprintf(list, sizeof list, "%s", param("locks", "1,4,16,64,256,1024,4096,8192"));
  for (int ti = 0; ti < O.nthreads; ti++) {
    int n = O.threads[ti];
    char *save = NULL;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      uint64_t nl = strtoull(tok, NULL, 10);
      if (nl == 0) continue;
      char par[64];
      snprintf(par, sizeof par, "locks=%llu", (unsigned long long)nl);
      for (int rep = 1; rep <= O.reps; rep++) {
        double ops[2];
        for (int w = 0; w < 2; w++) {
          const struct impl *im = w ? priv : shared;
          void **locks = (void **)calloc(nl, sizeof *locks);
          for (uint64_t k = 0; k < nl; k++) locks[k] = lock_new(im);
          struct tctx *c = ctx_new(n, NULL);
          void *(*fns[MAXLIST * 4])(void *);
          for (int k = 0; k < n; k++) {
            fns[k] = im->interference;
            c[k].locks = locks;
            c[k].nlocks = nl;
          }
          double secs = run(n, c, fns);
          ops[w] = (double)ctx_sum(c, 0, n) / secs;
          emit(im->name, n, par, rep, "ops_per_sec", ops[w], "ops/s");
          for (uint64_t k = 0; k < nl; k++) lock_free(im, locks[k]);
          free(locks);
          free(c);
        }
        emit("bravo-ba", n, par, rep, "ratio", ops[1] > 0 ? ops[0] / ops[1] : 0, "1");
      }
    }
  }
}

static void exp_test_rwlock(void) {
  for (int ti = 0; ti < O.nthreads; ti++) {
    int nr = O.threads[ti], n = nr + 1;
    for (int rep = 1; rep <= O.reps; rep++)
      for (int i = 0; i < O.nimpl; i++) {
        const struct impl *im = O.impl[i];
        void *l = lock_new(im);
        struct tctx *c = ctx_new(n, l);
        void *(*fns[MAXLIST * 4])(void *);
        fns[0] = im->trw_writer;
        for (int k = 1; k < n; k++) fns[k] = im->trw_reader;
        double secs = run(n, c, fns);
        emit(im->name, nr, "", rep, "ops_per_sec", (double)ctx_sum(c, 0, n) / secs, "ops/s");
        emit(im->name, nr, "", rep, "writes_per_sec", (double)c[0].count / secs, "ops/s");
        free(c);
        lock_free(im, l);
      }
  }
}

static bool parse_prob(const char *s, double *p) {
  char *end;
  double a = strtod(s, &end), b = 1;
  if (end == s) return false;
  if (*end == '/') {
    const char *q = end + 1;
    b = strtod(q, &end);
    if (end == q || b <= 0) return false;
  }
  if (*end) return false;
  *p = a / b;
  return *p >= 0 && *p <= 1;
}

static void exp_rwbench(void) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", param("P", "9/10,1/2,1/10,1/100,1/1000,1/10000"));
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    double p;
    if (!parse_prob(tok, &p)) {
      fprintf(stderr, "readmostly-bench: bad probability P=%s\n", tok);
      exit(2);
    }
    char par[64];
    snprintf(par, sizeof par, "P=%s", tok);
    uint64_t th = p >= 1.0 ? UINT64_MAX : (uint64_t)(p * 18446744073709551616.0);
    for (int ti = 0; ti < O.nthreads; ti++) {
      int n = O.threads[ti];
      for (int rep = 1; rep <= O.reps; rep++)
        for (int i = 0; i < O.nimpl; i++) {
          const struct impl *im = O.impl[i];
          void *l = lock_new(im);
          struct tctx *c = ctx_new(n, l);
          void *(*fns[MAXLIST * 4])(void *);
          for (int k = 0; k < n; k++) {
            fns[k] = im->rwbench;
            c[k].wthresh = th;
          }
          stats_begin();
          double secs = run(n, c, fns);
          emit(im->name, n, par, rep, "ops_per_sec", (double)ctx_sum(c, 0, n) / secs, "ops/s");
          stats_emit(im->name, n, par, rep, secs);
          free(c);
          lock_free(im, l);
        }
    }
  }
}

static void exp_hashtable(void) {
  uint64_t nkeys = strtoull(param("keys", "65536"), NULL, 10);
  if (nkeys < 2) nkeys = 2;
  uint64_t nb = 1;
  while (nb < nkeys) nb <<= 1;
  for (int ti = 0; ti < O.nthreads; ti++) {
    int nr = O.threads[ti], n = nr + 2;
    for (int rep = 1; rep <= O.reps; rep++)
      for (int i = 0; i < O.nimpl; i++) {
        const struct impl *im = O.impl[i];
        struct hmap m;
        m.nkeys = nkeys;
        m.nbuckets = nb;
        m.buckets = (struct hnode **)calloc(nb, sizeof *m.buckets);
        m.pool = (struct hnode *)calloc(nkeys, sizeof *m.pool);
        m.free = NULL;
        for (uint64_t k = 0; k < nkeys; k++) {
          m.pool[k].next = m.free;
          m.free = &m.pool[k];
        }
        for (uint64_t k = 0; k < nkeys; k += 2) hmap_insert(&m, k); /* half full */
        void *l = lock_new(im);
        struct tctx *c = ctx_new(n, l);
        void *(*fns[MAXLIST * 4])(void *);
        fns[0] = im->ht_eraser;
        fns[1] = im->ht_inserter;
        for (int k = 0; k < n; k++) {
          if (k >= 2) fns[k] = im->ht_reader;
          c[k].shared = &m;
        }
        double secs = run(n, c, fns);
        emit(im->name, nr, "", rep, "ops_per_ms", (double)ctx_sum(c, 0, n) / secs / 1000.0,
             "ops/ms");
        free(c);
        lock_free(im, l);
        free(m.buckets);
        free(m.pool);
      }
  }
}

/* A comma-separated list of non-negative integers from --param key. */
static int param_list(const char *key, const char *def, uint64_t *out, int max) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", param(key, def));
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save)) {
    char *end;
    unsigned long long v = strtoull(t, &end, 10);
    if (*end) {
      fprintf(stderr, "readmostly-bench: bad %s=%s\n", key, t);
      exit(2);
    }
    out[n++] = v;
  }
  return n;
}

static void exp_cs_efficiency(void) {
  uint64_t rs[MAXLIST];
  int nr = param_list("readers", "0,1,2,4", rs, MAXLIST);
  for (int ri = 0; ri < nr; ri++) {
    int N = (int)rs[ri];
    char par[64];
    snprintf(par, sizeof par, "readers=%d", N);
    for (int rep = 1; rep <= O.reps; rep++)
      for (int i = 0; i < O.nimpl; i++) {
        const struct impl *im = O.impl[i];
        /* w = 0: a reader among N readers (N >= 1); w = 1: a writer with N
         * busy readers. */
        for (int w = 0; w < 2; w++) {
          if (!w && N == 0) continue;
          int n = w ? N + 1 : N;
          void *l = lock_new(im);
          struct tctx *c = ctx_new(n, l);
          void *(*fns[MAXLIST * 4])(void *);
          fns[0] = im->cse;
          c[0].arg = (uint64_t)w;
          for (int k = 1; k < n; k++) fns[k] = im->readers;
          stats_begin();
          double secs = run(n, c, fns);
          if (w) stats_emit(im->name, N, par, rep, secs);
          const char *m = w ? "writer_ns" : "reader_ns";
          /* A writer starved for the whole run (reader preference under
           * busy readers) finished one pair after the stop: its latency is
           * at least the run. */
          double cnt = c[0].count ? (double)c[0].count : 1.0;
          emit(im->name, N, par, rep, m, (double)c[0].ns / cnt, "ns");
          if (rm_platform.tsc_ok)
            emit(im->name, N, par, rep, w ? "writer_cycles" : "reader_cycles",
                 (double)c[0].ticks / cnt, "cycles");
          free(c);
          lock_free(im, l);
        }
      }
  }
}

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

#ifdef RM_BENCH_HAVE_URCU
/* liburcu's writer in writer_freq: one grace period per update. */
static void *urcu_wf_writer(void *a) {
  struct tctx *c = (struct tctx *)a;
  uint64_t n = 0;
  wait_go();
  while (!stopped()) {
    c->sink++;
    rmb_urcu_update();
    n++;
    delay_ns(c->arg);
  }
  c->count = n;
  return NULL;
}
#endif

static void exp_writer_freq(void) {
  uint64_t ds[MAXLIST];
  int nd = param_list("delay_us", "1,10,100,1000", ds, MAXLIST);
  for (int di = 0; di < nd; di++) {
    char par[64];
    snprintf(par, sizeof par, "delay_us=%llu", (unsigned long long)ds[di]);
    for (int ti = 0; ti < O.nthreads; ti++) {
      int nr = O.threads[ti], n = nr + 1;
      for (int rep = 1; rep <= O.reps; rep++) {
        if (strcmp(param("ceiling", "1"), "0") != 0) {
          struct tctx *c = ctx_new(n, NULL);
          void *(*fns[MAXLIST * 4])(void *);
          fns[0] = wf_nolock_writer;
          c[0].arg = ds[di] * 1000u;
          for (int k = 1; k < n; k++) fns[k] = wf_nolock_reader;
          double secs = run(n, c, fns);
          emit("no-lock", nr, par, rep, "writer_ops_per_sec", (double)c[0].count / secs, "ops/s");
          free(c);
        }
        for (int i = 0; i < O.nimpl; i++) {
          const struct impl *im = O.impl[i];
          void *l = lock_new(im);
          struct tctx *c = ctx_new(n, l);
          void *(*fns[MAXLIST * 4])(void *);
          fns[0] = im->wf_writer;
#ifdef RM_BENCH_HAVE_URCU
          if (strcmp(im->name, "urcu-memb") == 0) fns[0] = urcu_wf_writer;
#endif
          c[0].arg = ds[di] * 1000u;
          for (int k = 1; k < n; k++) fns[k] = im->readers;
          stats_begin();
          double secs = run(n, c, fns);
          stats_emit(im->name, nr, par, rep, secs);
          emit(im->name, nr, par, rep, "reader_ops_per_sec", (double)ctx_sum(c, 1, n) / secs, "ops/s");
          emit(im->name, nr, par, rep, "writer_ops_per_sec", (double)c[0].count / secs, "ops/s");
          free(c);
          lock_free(im, l);
        }
      }
    }
  }
}

static void exp_sleepers(void) {
  uint64_t ss[MAXLIST];
  int ns = param_list("sleepy", "0,1,2,4", ss, MAXLIST);
  uint64_t delay = strtoull(param("delay_us", "100"), NULL, 10) * 1000u;
  for (int si = 0; si < ns; si++) {
    char par[64];
    snprintf(par, sizeof par, "sleepy=%llu", (unsigned long long)ss[si]);
    for (int ti = 0; ti < O.nthreads; ti++) {
      int nr = O.threads[ti], n = nr + 1;
      if ((int)ss[si] > nr) continue;
      for (int rep = 1; rep <= O.reps; rep++)
        for (int i = 0; i < O.nimpl; i++) {
          const struct impl *im = O.impl[i];
          void *l = lock_new(im);
          struct tctx *c = ctx_new(n, l);
          void *(*fns[MAXLIST * 4])(void *);
          fns[0] = im->wf_writer;
          c[0].arg = delay;
          for (int k = 1; k < n; k++) {
            fns[k] = im->sleeper;
            c[k].arg = (uint64_t)(k <= (int)ss[si]);
          }
          double secs = run(n, c, fns);
          emit(im->name, nr, par, rep, "reader_ops_per_sec", (double)ctx_sum(c, 1, n) / secs, "ops/s");
          emit(im->name, nr, par, rep, "writer_ops_per_sec", (double)c[0].count / secs, "ops/s");
          free(c);
          lock_free(im, l);
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
static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}
static void exp_wakeup(void) {
  uint64_t ks[MAXLIST];
  int nk = param_list("readers", "1,2,4,8,16", ks, MAXLIST);
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
        qsort(lat, (size_t)K, sizeof *lat, cmp_u64);
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

static const struct {
  const char *name;
  void (*run)(void);
  void (*run1)(int);
  int arg;
  const char *what;
} experiments[] = {
    {"latency", exp_latency, NULL, 0, "one thread: ns per read / write lock+unlock pair"},
    {"readers", NULL, exp_simple, 0, "T readers on one lock: ops/s"},
    {"alternator", NULL, exp_simple, 1, "ring of T threads, one read each turn: ns/hand-off"},
    {"interference", exp_interference, NULL, 0, "shared vs private table, pool of N locks: ratio"},
    {"test_rwlock", exp_test_rwlock, NULL, 0, "1 writer + T readers: ops/s"},
    {"rwbench", exp_rwbench, NULL, 0, "T threads, write probability P: ops/s"},
    {"hashtable", exp_hashtable, NULL, 0, "hash map, eraser + inserter + T readers: ops/ms"},
    {"cs_efficiency", exp_cs_efficiency, NULL, 0,
     "reader / writer lock+unlock latency with N busy readers (param readers=N)"},
    {"writer_freq", exp_writer_freq, NULL, 0,
     "1 writer (param delay_us between writes) + T readers: reader and writer ops/s; impl "
     "no-lock, the same threads with no lock, is the ceiling (param ceiling=0: skip it)"},
    {"sleepers", exp_sleepers, NULL, 0,
     "1 writer + T readers, param sleepy=K of them yield inside sections: ops/s"},
    {"wakeup", exp_wakeup, NULL, 0,
     "prwlock: K readers parked behind a writer, parallel vs broadcast wake-up: us"},
};
#define NEXP (sizeof experiments / sizeof experiments[0])

static void usage(FILE *f) {
  fprintf(f,
          "usage: readmostly-bench EXPERIMENT [--impl a,b,...] [--threads 1,2,...]\n"
          "                        [--duration SECONDS] [--reps N] [--param key=value ...]\n"
          "                        [--csv FILE] [--iterations N] [--pin 0|1]\n"
          "       readmostly-bench list\n\nexperiments:\n");
  for (size_t i = 0; i < NEXP; i++) fprintf(f, "  %-13s %s\n", experiments[i].name, experiments[i].what);
  fprintf(f, "  %-13s %s\n", "rcu_hash",
          "resizable RCU hash table, T readers (param mode=fixed|resizing): lookups/s and "
          "synchronize latency in resizes; RCU flavors: readmostly-bench rcu_hash --help");
  fprintf(f, "implementations:");
  for (size_t i = 0; i < NIMPLS; i++)
    if (!(impls[i].flags & IMPL_HIDDEN)) fprintf(f, " %s", impls[i].name);
  fprintf(f, "\n");
}

static int parse_ints(char *s, int *out) {
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(s, ",", &save); t && n < MAXLIST; t = strtok_r(NULL, ",", &save)) {
    char *end;
    long v = strtol(t, &end, 10);
    if (*end || v < 1 || v > 1024) return -1;
    out[n++] = (int)v;
  }
  return n;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "list") == 0) {
    usage(stdout);
    return 0;
  }
  /* Experiments with their own implementation lists (bench/exp_*.c). */
  if (strcmp(argv[1], "rcu_hash") == 0) return rmb_rcu_hash_main(argc, argv);
  O.exp = argv[1];
  size_t ei = 0;
  while (ei < NEXP && strcmp(experiments[ei].name, O.exp) != 0) ei++;
  if (ei == NEXP) {
    fprintf(stderr, "readmostly-bench: unknown experiment '%s'\n", O.exp);
    usage(stderr);
    return 2;
  }
  O.duration = 1.0;
  O.reps = 3;
  O.pin = 1;
  O.threads[0] = 1;
  O.threads[1] = 2;
  O.threads[2] = 4;
  O.nthreads = 3;
  const char *csvpath = NULL;
  char *implarg = NULL;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "readmostly-bench: %s needs a value\n", a);
      return 2;
    }
    i++;
    if (strcmp(a, "--impl") == 0) implarg = argv[i];
    else if (strcmp(a, "--threads") == 0) {
      O.nthreads = parse_ints(argv[i], O.threads);
      if (O.nthreads <= 0) {
        fprintf(stderr, "readmostly-bench: bad --threads (1..1024, comma-separated)\n");
        return 2;
      }
    } else if (strcmp(a, "--duration") == 0) {
      O.duration = strtod(v, NULL);
      if (!(O.duration > 0 && O.duration < 3600)) {
        fprintf(stderr, "readmostly-bench: bad --duration\n");
        return 2;
      }
    } else if (strcmp(a, "--reps") == 0) {
      O.reps = atoi(v);
      if (O.reps < 1 || O.reps > 1000) {
        fprintf(stderr, "readmostly-bench: bad --reps\n");
        return 2;
      }
    } else if (strcmp(a, "--iterations") == 0) {
      O.iterations = strtoull(v, NULL, 10);
      if (O.iterations == 0) {
        fprintf(stderr, "readmostly-bench: bad --iterations\n");
        return 2;
      }
    } else if (strcmp(a, "--param") == 0) {
      char *eq = strchr(argv[i], '=');
      if (!eq || O.nparam == 16) {
        fprintf(stderr, "readmostly-bench: --param wants key=value\n");
        return 2;
      }
      *eq = 0;
      O.pkey[O.nparam] = argv[i];
      O.pval[O.nparam++] = eq + 1;
    } else if (strcmp(a, "--csv") == 0) csvpath = v;
    else if (strcmp(a, "--pin") == 0) {
      if (strcmp(v, "1") && strcmp(v, "0")) {
        fprintf(stderr, "readmostly-bench: --pin 0|1\n");
        return 2;
      }
      O.pin = v[0] == '1';
    }
    else {
      fprintf(stderr, "readmostly-bench: unknown option %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  bool writes = needs_writes(O.exp);
  if (implarg) {
    char *save = NULL;
    for (char *t = strtok_r(implarg, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      const struct impl *im = impl_find(t);
      if (!im) {
        fprintf(stderr, "readmostly-bench: unknown implementation '%s'%s\n", t,
                strncmp(t, "ck-", 3) == 0 ? " (built without libck-dev)"
                : strncmp(t, "urcu", 4) == 0 ? " (built without liburcu-dev)" : "");
        return 2;
      }
      if (writes && (im->flags & IMPL_READ_ONLY)) {
        fprintf(stderr, "readmostly-bench: %s has no write lock; %s needs one\n", t, O.exp);
        return 2;
      }
      if (O.nimpl == MAXLIST) break;
      O.impl[O.nimpl++] = im;
    }
  } else {
    for (size_t i = 0; i < NIMPLS; i++)
      if (!(impls[i].flags & IMPL_HIDDEN) && !(writes && (impls[i].flags & IMPL_READ_ONLY)))
        O.impl[O.nimpl++] = &impls[i];
  }
  if (csvpath) {
    O.csv = fopen(csvpath, "w");
    if (!O.csv) {
      fprintf(stderr, "readmostly-bench: %s: %s\n", csvpath, strerror(errno));
      return 1;
    }
  }
  describe_machine(stdout);
  const char *hdr = "experiment,impl,threads,param,rep,metric,value,unit\n";
  fputs(hdr, stdout);
  if (O.csv) {
    describe_machine(O.csv);
    fputs(hdr, O.csv);
  }
  if (experiments[ei].run) experiments[ei].run();
  else experiments[ei].run1(experiments[ei].arg);
  if (O.csv) fclose(O.csv);
  return 0;
}
