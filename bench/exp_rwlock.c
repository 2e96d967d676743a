/*
 * bench/exp_rwlock.c - the lock experiments: the BRAVO paper's section 5
 * (sized for small machines) and the FCP paper's Table 3.
 *
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
 *                 BRAVO-2D-BA on its shared table runs beside them, with
 *                 its ratio over the same private reference.
 *   test_rwlock   1 writer (10 loops inside, 1000 outside) and T readers
 *                 (10 loops inside); ops_per_sec (section 5.3).
 *   rwbench       T threads; write with probability P (--param
 *                 P=9/10,1/2,1/10,1/100,1/1000,1/10000), 10 PRNG steps
 *                 inside, uniform [0,200) steps outside; ops_per_sec (5.4).
 *   hashtable     a chained hash map under one lock: one eraser, one
 *                 inserter, T readers looking up random keys; ops_per_ms
 *                 (section 5.6).
 *   cs_efficiency thread 0 times its own lock+unlock pairs among N busy
 *                 readers (FCP paper, Table 3).
 *   revoke_tail   BRAVO only (bravo-ba, bravo2d-ba, and bravo-ba as in
 *                 Listing 1, "bravo-ba-listing1": the writer scans holding
 *                 A, so arriving readers wait for the scan): T readers time
 *                 every read pair while one writer writes every
 *                 --param period_us=100 microseconds (N = 0: every write
 *                 revokes).  Metrics read_p99_ns, read_p999_ns,
 *                 read_p9999_ns, read_max_ns (log-linear
 *                 histogram, 1/8-octave buckets: the upper bound of the
 *                 bucket), revocations_per_sec; and over the reads that
 *                 met a write (began or ended with a writer inside its
 *                 write lock call, or saw one begin): read_during_p50_ns,
 *                 _p99_ns, _p999_ns, _max_ns, reads_during_writes.  Also
 *                 bravowm-ba / bravowm-pthread (the writer-mutex variant,
 *                 readmostly/bravo_wm.h) and bravo-pthread.  --param
 *                 writers=W: W writer threads.
 *   dyn_table     BRAVO over the resizable table (readmostly/bravo_dyn.h),
 *                 whatever --impl says: T readers each hold --param hold=8
 *                 locks of a pool of 64 at once, a writer revokes every
 *                 --param period_us=1000; per table size --param
 *                 slots=16,...,0 (0: start at 16 with the sizing policy
 *                 on): reads_per_sec, collision_share, fast_read_share,
 *                 ns_per_revocation, final_slots, grows, shrinks.
 *   revocation    BRAVO only (bravo-ba, bravo2d-ba, bravo-pthread,
 *                 bravo2d-pthread): one thread reads (a slow read, which
 *                 turns the bias on: N = 0) then writes (which revokes), so
 *                 every write revokes.  Each lock has a private table of
 *                 --param slots=4096,16384,65536 slots (flat, or 2D with a
 *                 row per CPU), so one run can vary the size.  Metrics:
 *                 ns_per_revocation (the read+write iteration minus the
 *                 same iteration with the bias kept off, N = 10^6; no
 *                 row when the difference is not positive),
 *                 ns_per_iteration (the revoking iteration itself),
 *                 scan_share (time inside the revocation's scan over the
 *                 revoking iteration, from BRAVO's counters),
 *                 ns_per_revoke_phase (that time per revocation: from the
 *                 writer counting itself in to the end of its scan).  With
 *                 --iterations N and --param part=revoke (or base) only
 *                 that loop runs, N times: for callgrind.
 *
 * Each body is written once as an always-inline function taking the lock's
 * functions as arguments and instantiated per lock (RW_INSTANTIATE): after
 * inlining every call is direct, so A and BRAVO-A run the same loop.
 */
#include "locks.h"

#include <readmostly/bravo.h>
#include <readmostly/bravo2d.h>
#include <readmostly/bravo_dyn.h>

#include <stdlib.h>
#include <string.h>

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


/* revocation: each iteration a read pair (the slow path, which turns the
 * bias on when N = 0) and a write pair (which revokes it). */
AI double rev_body(void *l, uint64_t iters, double secs, rl_fn rl, ru_fn ru, wl_fn wl,
                   wl_fn wu) {
  rm_token_t t;
  for (int i = 0; i < 100; i++) { rl(l, &t); ru(l, t); wl(l); wu(l); }
  uint64_t n = 0, t0 = rm_now_ns(), t1;
  if (iters) {
    for (uint64_t i = 0; i < iters; i++) { rl(l, &t); ru(l, t); wl(l); wu(l); }
    n = iters;
    t1 = rm_now_ns();
  } else {
    uint64_t end = t0 + (uint64_t)(secs * 1e9);
    do {
      for (int i = 0; i < 256; i++) { rl(l, &t); ru(l, t); wl(l); wu(l); }
      n += 256;
      t1 = rm_now_ns();
    } while (t1 < end);
  }
  return (double)(t1 - t0) / (double)n;
}

/* The revocation experiment's locks: private tables of rev_slots slots. */
static size_t rev_slots = 4096;
RM_BRAVO_DEFINE_PRIVATE(rvt_ba, rm_ba_t, rm_ba, rev_slots)
RM_BRAVO2D_DEFINE_PRIVATE(rvt2d_ba, rm_ba_t, rm_ba, rev_slots)
RM_BRAVO_DEFINE_PRIVATE(rvt_pth, rm_pthread_t, rm_pthread, rev_slots)
RM_BRAVO2D_DEFINE_PRIVATE(rvt2d_pth, rm_pthread_t, rm_pthread, rev_slots)
ADAPT_TOKEN(rev_ba, rvt_ba_t, rvt_ba)
ADAPT_TOKEN(rev2d_ba, rvt2d_ba_t, rvt2d_ba)
ADAPT_TOKEN(rev_pth, rvt_pth_t, rvt_pth)
ADAPT_TOKEN(rev2d_pth, rvt2d_pth_t, rvt2d_pth)
#define REV_LOCKS(X)                       \
  X(rev_ba, "bravo-ba", rvt_ba_t)          \
  X(rev2d_ba, "bravo2d-ba", rvt2d_ba_t)    \
  X(rev_pth, "bravo-pthread", rvt_pth_t)   \
  X(rev2d_pth, "bravo2d-pthread", rvt2d_pth_t)
struct rev_lock {
  const char *name;
  size_t size;
  void (*init)(void *), (*fini)(void *);
  double (*run)(void *, uint64_t, double);
};
#define REV_FN(ID, NAME, T)                                         \
  static double ID##_rev(void *l, uint64_t it, double s) {          \
    return rev_body(l, it, s, ID##_rl, ID##_ru, ID##_wl, ID##_wu);  \
  }
REV_LOCKS(REV_FN)
#define REV_ENTRY(ID, NAME, T) {NAME, sizeof(T), ID##_init, ID##_fini, ID##_rev},
static const struct rev_lock rev_locks[] = {REV_LOCKS(REV_ENTRY)};

/* revoke_tail: the read latency histogram, 8 buckets per power of two of
 * nanoseconds (bucket b covers [2^(b/8) .. 2^((b+1)/8)) roughly). */
#define TAIL_BUCKETS (8 * 40)
struct tail_hist {
  uint64_t n[TAIL_BUCKETS];
};
AI unsigned tail_bucket(uint64_t ns) {
  if (ns < 16) return (unsigned)ns; /* exact below 16 ns */
  unsigned lg = 63u - (unsigned)__builtin_clzll(ns);
  unsigned frac = (unsigned)((ns >> (lg - 3)) & 7u);
  unsigned b = lg * 8u + frac - 16u; /* lg >= 4: b >= 16 */
  return b < TAIL_BUCKETS ? b : TAIL_BUCKETS - 1;
}
static double tail_bucket_top(unsigned b) {
  if (b < 16) return (double)b;
  unsigned lg = (b + 16u) / 8u, frac = (b + 16u) % 8u;
  return (double)(1ull << lg) * (1.0 + (double)(frac + 1) / 8.0);
}
/* Where readers learn that a write is under way: writers inside their
 * write lock call (revocation included) up to their unlock, and how many
 * writes began.  A read that began or ended with a writer inside, or
 * during which a write began, is a read "during a write"; its own
 * histogram (metrics read_during_*) shows what a revocation does to the
 * readers it meets, which the all-reads quantiles dilute. */
static struct tail_writes {
  uint32_t inside;
  uint32_t begun;
} __attribute__((aligned(128))) tail_w;
AI void *tail_reader_body(struct tctx *c, rl_fn rl, ru_fn ru) {
  struct tail_hist *h = (struct tail_hist *)calloc(2, sizeof *h);
  if (!h) bench_fatal("out of memory");
  void *l = c->lock;
  uint64_t n = 0;
  wait_go();
  while (!stopped()) {
    rm_token_t t;
    /* Relaxed loads kept in place by compiler barriers (rdtsc is an asm
     * statement without a memory clobber): a classification, not a
     * synchronisation. */
    uint32_t i0 = __atomic_load_n(&tail_w.inside, __ATOMIC_RELAXED);
    uint32_t b0 = __atomic_load_n(&tail_w.begun, __ATOMIC_RELAXED);
    rm_compiler_barrier();
    uint64_t t0 = rm_ticks();
    rl(l, &t);
    ru(l, t);
    uint64_t t1 = rm_ticks();
    rm_compiler_barrier();
    uint32_t i1 = __atomic_load_n(&tail_w.inside, __ATOMIC_RELAXED);
    uint32_t b1 = __atomic_load_n(&tail_w.begun, __ATOMIC_RELAXED);
    unsigned b = tail_bucket(rm_ticks_to_ns(t1 - t0));
    h[0].n[b]++;
    if ((i0 | i1) != 0 || b0 != b1) h[1].n[b]++;
    n++;
  }
  c->count = n;
  c->shared = h;
  return NULL;
}
AI void *tail_writer_body(struct tctx *c, wl_fn wl, wl_fn wu) {
  void *l = c->lock;
  uint64_t n = 0;
  struct timespec d = {0, (long)c->arg};
  wait_go();
  while (!stopped()) {
    nanosleep(&d, NULL);
    __atomic_fetch_add(&tail_w.begun, 1u, __ATOMIC_RELAXED);
    __atomic_fetch_add(&tail_w.inside, 1u, __ATOMIC_RELAXED);
    wl(l);
    wu(l);
    __atomic_fetch_sub(&tail_w.inside, 1u, __ATOMIC_RELAXED);
    n++;
  }
  c->count = n;
  return NULL;
}

/* BRAVO-BA as in Listing 1: the writer revokes holding A's write lock, so
 * readers that arrive during the scan wait for it (bravo.h explains why
 * our writers give A back while they revoke). */
static inline void l1_wl(void *l) {
  rm_bravo_ba_t *b = (rm_bravo_ba_t *)l;
  if (rm_ba_write_lock(&b->under) != 0) abort();
  rm_bravo_write_acquired(&b->bias, &rm_bravo_table, RM_BRAVO_REVOKE_WAIT, 0, NULL);
}
#define TAIL_LOCKS(X)                                              \
  X(bravo_ba, "bravo-ba", bravo_ba_wl, rm_bravo_ba_t)              \
  X(bravo2d_ba, "bravo2d-ba", bravo2d_ba_wl, rm_bravo2d_ba_t)      \
  X(bravo_ba, "bravo-ba-listing1", l1_wl, rm_bravo_ba_t)          \
  X(bravowm_ba, "bravowm-ba", bravowm_ba_wl, rm_bravowm_ba_t)      \
  X(bravo_pthread, "bravo-pthread", bravo_pthread_wl, rm_bravo_pthread_t) \
  X(bravowm_pthread, "bravowm-pthread", bravowm_pthread_wl, rm_bravowm_pthread_t)
struct tail_lock {
  const char *name;
  size_t size;
  void (*init)(void *), (*fini)(void *);
  bench_thread_fn reader, writer;
};
#define TAIL_FN(ID, NAME, WL, T)                                                         \
  static void *WL##_tail_r(void *a) { return tail_reader_body((struct tctx *)a, ID##_rl, ID##_ru); } \
  static void *WL##_tail_w(void *a) { return tail_writer_body((struct tctx *)a, WL, ID##_wu); }
TAIL_LOCKS(TAIL_FN)
#define TAIL_ENTRY(ID, NAME, WL, T) {NAME, sizeof(T), ID##_init, ID##_fini, WL##_tail_r, WL##_tail_w},
static const struct tail_lock tail_locks[] = {TAIL_LOCKS(TAIL_ENTRY)};

/* ---- instantiation ------------------------------------------------------ */
struct rw_fns {
  double (*lat)(void *, int, uint64_t, double);
  bench_thread_fn readers, alternator, interference, trw_reader, trw_writer, rwbench, ht_reader,
      ht_eraser, ht_inserter, cse;
};

#define RW_INSTANTIATE(ID, NAME, T, FL)                                                        \
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
  }
ALL_IMPLS(RW_INSTANTIATE)

#define RW_ENTRY(ID, NAME, T, FL)                                                                 \
  {ID##_lat,        ID##_readers,   ID##_alternator, ID##_interference, ID##_trw_reader,          \
   ID##_trw_writer, ID##_rwbench,   ID##_ht_reader,  ID##_ht_eraser,    ID##_ht_inserter, ID##_cse},
static const struct rw_fns rw_fns[] = {ALL_IMPLS(RW_ENTRY)};
_Static_assert(sizeof rw_fns / sizeof rw_fns[0] == NLOCKS, "one entry per lock");

/* ---- experiments --------------------------------------------------------- */
static void exp_latency(const struct bench_exp *e) {
  (void)e;
  const char *op = bench_param("op");
  bool both = strcmp(op, "both") == 0;
  bool rd = both || !strcmp(op, "read"), wr = both || !strcmp(op, "write");
  bool off = both || !strcmp(op, "bias_off");
  for (int rep = 1; rep <= O.reps; rep++)
    for (int i = 0; i < O.nimpl; i++) {
      size_t k = O.impl[i].idx;
      const char *name = O.impl[i].name;
      bool ro = bench_locks.v[k].flags & BENCH_IMPL_READ_ONLY;
      void *l = lock_new(k);
      if (rd) emit(name, 1, "", rep, "ns_per_read_pair", rw_fns[k].lat(l, 0, O.iterations, O.duration), "ns");
      if (wr && !ro)
        emit(name, 1, "", rep, "ns_per_write_pair", rw_fns[k].lat(l, 1, O.iterations, O.duration), "ns");
      if (off && !ro) {
        /* Writes keep BRAVO's bias off: N large enough that no window ends
         * during the run (10^6 x revocation time, about a second). */
        unsigned n = rm_bravo_inhibit_multiplier();
        rm_bravo_set_inhibit_multiplier(1000000u);
        emit(name, 1, "", rep, "ns_per_read_pair_bias_off", rw_fns[k].lat(l, 2, O.iterations, O.duration),
             "ns");
        rm_bravo_set_inhibit_multiplier(n);
      }
      lock_free(k, l);
    }
}

static void exp_simple(const struct bench_exp *e) { /* arg 0: readers, 1: alternator */
  int kind = e->arg;
  for (int ti = 0; ti < O.nthreads; ti++) {
    int n = O.threads[ti];
    for (int rep = 1; rep <= O.reps; rep++)
      for (int i = 0; i < O.nimpl; i++) {
        size_t k = O.impl[i].idx;
        void *l = lock_new(k);
        struct tctx *c = ctx_new(n, l);
        bench_thread_fn fns[MAXLIST * 4];
        struct ring_slot *ring = NULL;
        if (kind == 1) {
          ring = (struct ring_slot *)aligned_alloc(128, sizeof *ring * (size_t)n);
          if (!ring) bench_fatal("out of memory");
          memset(ring, 0, sizeof *ring * (size_t)n);
          ring[0].seq = 1;
        }
        for (int j = 0; j < n; j++) {
          fns[j] = kind == 0 ? rw_fns[k].readers : rw_fns[k].alternator;
          c[j].shared = ring;
        }
        double secs = bench_run(n, c, fns);
        uint64_t total = ctx_sum(c, 0, n);
        if (kind == 0) emit(O.impl[i].name, n, "", rep, "ops_per_sec", (double)total / secs, "ops/s");
        else
          emit(O.impl[i].name, n, "", rep, "ns_per_handoff", total ? secs * 1e9 / (double)total : 0,
               "ns");
        free(ring);
        free(c);
        lock_free(k, l);
      }
  }
}

static void exp_interference(const struct bench_exp *e) {
  (void)e;
  /* The subjects on their shared tables, then the private reference. */
  size_t ks[3] = {lock_index("bravo-ba"), lock_index("bravo2d-ba"), lock_index("bravo-ba-private")};
  uint64_t nls[MAXLIST];
  int nnl = bench_param_uints("locks", nls, MAXLIST);
  for (int ti = 0; ti < O.nthreads; ti++) {
    int n = O.threads[ti];
    for (int li = 0; li < nnl; li++) {
      uint64_t nl = nls[li];
      char par[64];
      snprintf(par, sizeof par, "locks=%llu", (unsigned long long)nl);
      for (int rep = 1; rep <= O.reps; rep++) {
        double ops[3];
        for (int w = 0; w < 3; w++) {
          size_t k = ks[w];
          void **locks = (void **)calloc(nl, sizeof *locks);
          if (!locks) bench_fatal("out of memory");
          for (uint64_t j = 0; j < nl; j++) locks[j] = lock_new(k);
          struct tctx *c = ctx_new(n, NULL);
          bench_thread_fn fns[MAXLIST * 4];
          for (int j = 0; j < n; j++) {
            fns[j] = rw_fns[k].interference;
            c[j].locks = locks;
            c[j].nlocks = nl;
          }
          double secs = bench_run(n, c, fns);
          ops[w] = (double)ctx_sum(c, 0, n) / secs;
          emit(bench_locks.v[k].name, n, par, rep, "ops_per_sec", ops[w], "ops/s");
          for (uint64_t j = 0; j < nl; j++) lock_free(k, locks[j]);
          free(locks);
          free(c);
        }
        for (int w = 0; w < 2; w++)
          emit(bench_locks.v[ks[w]].name, n, par, rep, "ratio", ops[2] > 0 ? ops[w] / ops[2] : 0,
               "1");
      }
    }
  }
}

static void exp_test_rwlock(const struct bench_exp *e) {
  (void)e;
  for (int ti = 0; ti < O.nthreads; ti++) {
    int nr = O.threads[ti], n = nr + 1;
    for (int rep = 1; rep <= O.reps; rep++)
      for (int i = 0; i < O.nimpl; i++) {
        size_t k = O.impl[i].idx;
        void *l = lock_new(k);
        struct tctx *c = ctx_new(n, l);
        bench_thread_fn fns[MAXLIST * 4];
        fns[0] = rw_fns[k].trw_writer;
        for (int j = 1; j < n; j++) fns[j] = rw_fns[k].trw_reader;
        double secs = bench_run(n, c, fns);
        emit(O.impl[i].name, nr, "", rep, "ops_per_sec", (double)ctx_sum(c, 0, n) / secs, "ops/s");
        emit(O.impl[i].name, nr, "", rep, "writes_per_sec", (double)c[0].count / secs, "ops/s");
        free(c);
        lock_free(k, l);
      }
  }
}

static void exp_rwbench(const struct bench_exp *e) {
  (void)e;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", bench_param("P"));
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    double p;
    if (!bench_parse_prob(tok, &p)) bench_usage_error("bad probability P=%s", tok);
    char par[64];
    snprintf(par, sizeof par, "P=%s", tok);
    uint64_t th = p >= 1.0 ? UINT64_MAX : (uint64_t)(p * 18446744073709551616.0);
    for (int ti = 0; ti < O.nthreads; ti++) {
      int n = O.threads[ti];
      for (int rep = 1; rep <= O.reps; rep++)
        for (int i = 0; i < O.nimpl; i++) {
          size_t k = O.impl[i].idx;
          void *l = lock_new(k);
          struct tctx *c = ctx_new(n, l);
          bench_thread_fn fns[MAXLIST * 4];
          for (int j = 0; j < n; j++) {
            fns[j] = rw_fns[k].rwbench;
            c[j].wthresh = th;
          }
          stats_begin();
          double secs = bench_run(n, c, fns);
          emit(O.impl[i].name, n, par, rep, "ops_per_sec", (double)ctx_sum(c, 0, n) / secs, "ops/s");
          stats_emit(O.impl[i].name, n, par, rep, secs);
          free(c);
          lock_free(k, l);
        }
    }
  }
}

static void exp_hashtable(const struct bench_exp *e) {
  (void)e;
  uint64_t nkeys = bench_param_uint("keys");
  if (nkeys < 2) nkeys = 2;
  uint64_t nb = 1;
  while (nb < nkeys) nb <<= 1;
  for (int ti = 0; ti < O.nthreads; ti++) {
    int nr = O.threads[ti], n = nr + 2;
    for (int rep = 1; rep <= O.reps; rep++)
      for (int i = 0; i < O.nimpl; i++) {
        size_t k = O.impl[i].idx;
        struct hmap m;
        m.nkeys = nkeys;
        m.nbuckets = nb;
        m.buckets = (struct hnode **)calloc(nb, sizeof *m.buckets);
        m.pool = (struct hnode *)calloc(nkeys, sizeof *m.pool);
        if (!m.buckets || !m.pool) bench_fatal("out of memory");
        m.free = NULL;
        for (uint64_t j = 0; j < nkeys; j++) {
          m.pool[j].next = m.free;
          m.free = &m.pool[j];
        }
        for (uint64_t j = 0; j < nkeys; j += 2) hmap_insert(&m, j); /* half full */
        void *l = lock_new(k);
        struct tctx *c = ctx_new(n, l);
        bench_thread_fn fns[MAXLIST * 4];
        fns[0] = rw_fns[k].ht_eraser;
        fns[1] = rw_fns[k].ht_inserter;
        for (int j = 0; j < n; j++) {
          if (j >= 2) fns[j] = rw_fns[k].ht_reader;
          c[j].shared = &m;
        }
        double secs = bench_run(n, c, fns);
        emit(O.impl[i].name, nr, "", rep, "ops_per_ms", (double)ctx_sum(c, 0, n) / secs / 1000.0,
             "ops/ms");
        free(c);
        lock_free(k, l);
        free(m.buckets);
        free(m.pool);
      }
  }
}

static void exp_cs_efficiency(const struct bench_exp *e) {
  (void)e;
  uint64_t rs[MAXLIST];
  int nr = bench_param_uints("readers", rs, MAXLIST);
  for (int ri = 0; ri < nr; ri++) {
    int N = (int)rs[ri];
    char par[64];
    snprintf(par, sizeof par, "readers=%d", N);
    for (int rep = 1; rep <= O.reps; rep++)
      for (int i = 0; i < O.nimpl; i++) {
        size_t k = O.impl[i].idx;
        const char *name = O.impl[i].name;
        /* w = 0: a reader among N readers (N >= 1); w = 1: a writer with N
         * busy readers. */
        for (int w = 0; w < 2; w++) {
          if (!w && N == 0) continue;
          int n = w ? N + 1 : N;
          void *l = lock_new(k);
          struct tctx *c = ctx_new(n, l);
          bench_thread_fn fns[MAXLIST * 4];
          fns[0] = rw_fns[k].cse;
          c[0].arg = (uint64_t)w;
          for (int j = 1; j < n; j++) fns[j] = rw_fns[k].readers;
          stats_begin();
          double secs = bench_run(n, c, fns);
          if (w) stats_emit(name, N, par, rep, secs);
          const char *m = w ? "writer_ns" : "reader_ns";
          /* A writer starved for the whole run (reader preference under
           * busy readers) finished one pair after the stop: its latency is
           * at least the run. */
          double cnt = c[0].count ? (double)c[0].count : 1.0;
          emit(name, N, par, rep, m, (double)c[0].ns / cnt, "ns");
          if (rm_platform.tsc_ok)
            emit(name, N, par, rep, w ? "writer_cycles" : "reader_cycles", (double)c[0].ticks / cnt,
                 "cycles");
          free(c);
          lock_free(k, l);
        }
      }
  }
}

static void exp_revocation(const struct bench_exp *e) {
  (void)e;
  uint64_t sl[MAXLIST];
  int nsl = bench_param_uints("slots", sl, MAXLIST);
  const char *part = bench_param("part");
  bool rev = strcmp(part, "base") != 0, base = strcmp(part, "revoke") != 0;
  bool all = rev && base;
  unsigned n_saved = rm_bravo_inhibit_multiplier();
  for (int si = 0; si < nsl; si++) {
    rev_slots = (size_t)sl[si];
    char par[64];
    snprintf(par, sizeof par, "slots=%llu", (unsigned long long)sl[si]);
    for (int rep = 1; rep <= O.reps; rep++)
      for (int i = 0; i < O.nimpl; i++) {
        const struct rev_lock *rl = NULL;
        for (size_t j = 0; j < sizeof rev_locks / sizeof rev_locks[0]; j++)
          if (!strcmp(rev_locks[j].name, O.impl[i].name)) rl = &rev_locks[j];
        if (!rl) continue; /* not BRAVO: nothing to revoke */
        void *l = aligned_alloc(128, (rl->size + 127) / 128 * 128);
        if (!l) bench_fatal("out of memory");
        rl->init(l);
        double t_rev = 0, t_base = 0, share = -1, phase = -1;
        if (rev) {
          /* N = 0: the slow read turns the bias on again at once. */
          rm_bravo_set_inhibit_multiplier(0);
          t_rev = rl->run(l, O.iterations, O.duration);
          emit(rl->name, 1, par, rep, "ns_per_iteration", t_rev, "ns");
        }
        if (all) {
          /* The scan's share, from BRAVO's counters, in a run of its own
           * (the counters' cost stays out of the other two). */
          bool was_on = rm_atomic_load_relaxed(&rm_bravo_table.stats_on) != 0;
          rm_bravo_stats_enable(true);
          rm_bravo_stats_reset();
          uint64_t s0 = rm_now_ns();
          rl->run(l, O.iterations, O.duration);
          uint64_t s1 = rm_now_ns();
          struct rm_bravo_stats st;
          rm_bravo_stats_get(&st);
          rm_bravo_stats_enable(was_on);
          share = s1 > s0 ? (double)st.revoke_ns / (double)(s1 - s0) : 0;
          /* The revocation itself, as BRAVO's counters time it: from the
           * writer counting itself in to the end of its scan. */
          if (st.revocations)
            phase = (double)st.revoke_ns / (double)st.revocations;
        }
        if (base) {
          /* N = 10^6: the first revocation keeps the bias off for the
           * rest of the run; the same reads and writes, none revoking. */
          rm_bravo_set_inhibit_multiplier(1000000u);
          t_base = rl->run(l, O.iterations, O.duration);
          emit(rl->name, 1, par, rep, "ns_per_iteration_bias_off", t_base, "ns");
        }
        if (all) {
          /* A revoking iteration timed no slower than a non-revoking one
           * (a 2D column is a few slots; two short timings on a busy
           * machine) gives no revocation cost at all: no row, rather
           * than a 0 that reads as a measurement. */
          if (t_rev > t_base)
            emit(rl->name, 1, par, rep, "ns_per_revocation", t_rev - t_base, "ns");
          emit(rl->name, 1, par, rep, "scan_share", share, "1");
          if (phase >= 0) emit(rl->name, 1, par, rep, "ns_per_revoke_phase", phase, "ns");
        }
        rm_bravo_set_inhibit_multiplier(n_saved);
        rl->fini(l);
        free(l);
      }
  }
}

static void exp_revoke_tail(const struct bench_exp *e) {
  (void)e;
  uint64_t period = bench_param_uint("period_us");
  int nw = (int)bench_param_uint("writers");
  unsigned n_saved = rm_bravo_inhibit_multiplier();
  char par[64];
  /* The writers appear in the parameter column only when not 1, so rows
   * of one writer read as before. */
  if (nw == 1) snprintf(par, sizeof par, "period_us=%llu", (unsigned long long)period);
  else snprintf(par, sizeof par, "period_us=%llu;writers=%d", (unsigned long long)period, nw);
  for (int ti = 0; ti < O.nthreads; ti++) {
    int nr = O.threads[ti], n = nr + nw;
    if (n > MAXLIST * 4) bench_fatal("revoke_tail: too many threads");
    for (int rep = 1; rep <= O.reps; rep++)
      for (int i = 0; i < O.nimpl; i++)
        for (size_t j = 0; j < sizeof tail_locks / sizeof tail_locks[0]; j++) {
          const struct tail_lock *tl = &tail_locks[j];
          /* bravo-ba brings its Listing 1 form along. */
          bool want = !strcmp(tl->name, O.impl[i].name) ||
                      (!strcmp(O.impl[i].name, "bravo-ba") && !strcmp(tl->name, "bravo-ba-listing1"));
          if (!want) continue;
          void *l = aligned_alloc(128, (tl->size + 127) / 128 * 128);
          if (!l) bench_fatal("out of memory");
          tl->init(l);
          rm_bravo_set_inhibit_multiplier(0);
          struct tctx *c = ctx_new(n, l);
          bench_thread_fn fns[MAXLIST * 4];
          for (int k = 0; k < nw; k++) {
            fns[k] = tl->writer;
            c[k].arg = period * 1000u;
          }
          for (int k = nw; k < n; k++) fns[k] = tl->reader;
          double secs = bench_run(n, c, fns);
          struct tail_hist all[2];
          memset(all, 0, sizeof all);
          uint64_t total[2] = {0, 0}, writes = 0;
          for (int k = 0; k < nw; k++) writes += c[k].count;
          for (int k = nw; k < n; k++) {
            struct tail_hist *h = (struct tail_hist *)c[k].shared;
            for (int a = 0; a < 2; a++)
              for (unsigned b = 0; b < TAIL_BUCKETS; b++) {
                all[a].n[b] += h[a].n[b];
                total[a] += h[a].n[b];
              }
            free(h);
          }
          /* A revocation every 100 us touches few of ~10^7 reads a
           * second: the tail beyond p99 is where it shows, or the reads
           * that met a write (a = 1). */
          static const double qs[] = {0.5, 0.99, 0.999, 0.9999};
          static const char *const qn[2][4] = {
              {NULL, "read_p99_ns", "read_p999_ns", "read_p9999_ns"},
              {"read_during_p50_ns", "read_during_p99_ns", "read_during_p999_ns", NULL}};
          static const char *const mxn[2] = {"read_max_ns", "read_during_max_ns"};
          for (int a = 0; a < 2; a++) {
            double qv[4] = {0, 0, 0, 0}, mx = 0;
            uint64_t seen = 0;
            for (unsigned b = 0; b < TAIL_BUCKETS; b++) {
              if (!all[a].n[b]) continue;
              seen += all[a].n[b];
              for (int q = 0; q < 4; q++)
                if (qv[q] == 0 && (double)seen >= qs[q] * (double)total[a]) qv[q] = tail_bucket_top(b);
              mx = tail_bucket_top(b);
            }
            if (!total[a]) continue;
            for (int q = 0; q < 4; q++)
              if (qn[a][q]) emit(tl->name, nr, par, rep, qn[a][q], qv[q], "ns");
            emit(tl->name, nr, par, rep, mxn[a], mx, "ns");
          }
          emit(tl->name, nr, par, rep, "reads_during_writes", (double)total[1], "reads");
          emit(tl->name, nr, par, rep, "revocations_per_sec", (double)writes / secs, "ops/s");
          rm_bravo_set_inhibit_multiplier(n_saved);
          free(c);
          tl->fini(l);
          free(l);
        }
  }
}

/* dyn_table: the resizable table (readmostly/bravo_dyn.h).  T readers each
 * read-lock `hold` random locks of a pool of 64 BRAVO-dyn BA locks at once
 * and release them; one writer writes a random pool lock every period_us
 * (N = 0, so every write revokes: a scan of the live tables).  Each value
 * of `slots` is a fixed table size (the policy off); "0" starts at 16
 * slots with the policy on and reports where it settles. */
#define DYN_POOL 64
struct dyn_shared {
  rm_bravodyn_ba_t *pool;
  unsigned hold;
};
static void *dyn_reader(void *a) {
  struct tctx *c = (struct tctx *)a;
  struct dyn_shared *sh = (struct dyn_shared *)c->shared;
  rm_token_t t[64];
  unsigned idx[64];
  uint64_t n = 0;
  wait_go();
  while (!stopped()) {
    /* hold distinct locks (a run from a random start): a second read
     * lock of a lock read-held through BA would wait behind a waiting
     * writer that waits for the first (BA is phase-fair). */
    unsigned start = (unsigned)(prng(&c->seed) % DYN_POOL);
    for (unsigned i = 0; i < sh->hold; i++) {
      idx[i] = (start + i * 7u) % DYN_POOL; /* 7 is prime to 64: distinct */
      if (rm_bravodyn_ba_read_lock(&sh->pool[idx[i]], &t[i]) != 0) abort();
    }
    for (unsigned i = sh->hold; i-- > 0;) rm_bravodyn_ba_read_unlock(&sh->pool[idx[i]], t[i]);
    n += sh->hold;
  }
  c->count = n;
  return NULL;
}
static void *dyn_writer(void *a) {
  struct tctx *c = (struct tctx *)a;
  struct dyn_shared *sh = (struct dyn_shared *)c->shared;
  struct timespec d = {0, (long)c->arg};
  uint64_t n = 0;
  wait_go();
  while (!stopped()) {
    nanosleep(&d, NULL);
    rm_bravodyn_ba_t *l = &sh->pool[prng(&c->seed) % DYN_POOL];
    if (rm_bravodyn_ba_write_lock(l) != 0) abort();
    rm_bravodyn_ba_write_unlock(l);
    n++;
  }
  c->count = n;
  return NULL;
}
static void exp_dyn_table(const struct bench_exp *e) {
  (void)e;
  uint64_t sl[MAXLIST];
  int nsl = bench_param_uints("slots", sl, MAXLIST);
  unsigned hold = (unsigned)bench_param_uint("hold");
  uint64_t period = bench_param_uint("period_us");
  struct rm_bravo_dyn_attr a;
  rm_bravo_dyn_attr_init(&a);
  a.slots = 16;
  a.min_slots = 16;
  a.max_slots = (size_t)1 << 16;
  a.auto_resize = 0;
  int ce = rm_bravo_dyn_configure(&a);
  if (ce != 0 && ce != EBUSY) bench_fatal("rm_bravo_dyn_configure: %d", ce);
  unsigned n_saved = rm_bravo_inhibit_multiplier();
  bool was_on = rm_atomic_load_relaxed(&rm_bravo_table.stats_on) != 0;
  rm_bravo_stats_enable(true);
  struct dyn_shared sh = {NULL, hold};
  sh.pool = (rm_bravodyn_ba_t *)aligned_alloc(128, sizeof(rm_bravodyn_ba_t) * DYN_POOL);
  if (!sh.pool) bench_fatal("out of memory");
  for (int ti = 0; ti < O.nthreads; ti++) {
    int nr = O.threads[ti], n = nr + 1;
    for (int si = 0; si < nsl; si++) {
      bool autosz = sl[si] == 0;
      char par[96];
      snprintf(par, sizeof par, "slots=%s%llu;hold=%u", autosz ? "auto:" : "",
               (unsigned long long)(autosz ? 16 : sl[si]), hold);
      for (int rep = 1; rep <= O.reps; rep++) {
        for (int k = 0; k < DYN_POOL; k++) rm_bravodyn_ba_init(&sh.pool[k]);
        int re;
        for (int w = 0; (re = rm_bravo_dyn_resize(autosz ? 16 : (size_t)sl[si])) == EBUSY && w < 1000; w++)
          rm_sleep_ns(1000000);
        if (re) bench_fatal("rm_bravo_dyn_resize(%llu): %d", (unsigned long long)sl[si], re);
        struct rm_bravo_dyn_info d0;
        rm_bravo_dyn_get(&d0);
        rm_bravo_dyn_set_auto(autosz);
        rm_bravo_set_inhibit_multiplier(0);
        rm_bravo_stats_reset();
        struct tctx *c = ctx_new(n, NULL);
        bench_thread_fn fns[MAXLIST * 4];
        fns[0] = dyn_writer;
        c[0].arg = period * 1000u;
        c[0].shared = &sh;
        for (int k = 1; k < n; k++) {
          fns[k] = dyn_reader;
          c[k].shared = &sh;
        }
        double secs = bench_run(n, c, fns);
        rm_bravo_dyn_set_auto(false);
        rm_bravo_set_inhibit_multiplier(n_saved);
        struct rm_bravo_stats st;
        rm_bravo_stats_get(&st);
        struct rm_bravo_dyn_info d1;
        rm_bravo_dyn_get(&d1);
        double reads = (double)(st.fast_reads + st.slow_bias_off + st.slow_collision + st.slow_raced);
        emit("bravodyn-ba", nr, par, rep, "reads_per_sec", (double)ctx_sum(c, 1, n) / secs, "ops/s");
        emit("bravodyn-ba", nr, par, rep, "collision_share", reads > 0 ? (double)st.slow_collision / reads : 0, "1");
        emit("bravodyn-ba", nr, par, rep, "fast_read_share", reads > 0 ? (double)st.fast_reads / reads : 0, "1");
        if (st.revocations)
          emit("bravodyn-ba", nr, par, rep, "ns_per_revocation", (double)st.revoke_ns / (double)st.revocations, "ns");
        emit("bravodyn-ba", nr, par, rep, "final_slots", (double)d1.slots, "slots");
        emit("bravodyn-ba", nr, par, rep, "grows", (double)(d1.grows - d0.grows), "1");
        emit("bravodyn-ba", nr, par, rep, "shrinks", (double)(d1.shrinks - d0.shrinks), "1");
        free(c);
        for (int k = 0; k < DYN_POOL; k++) rm_bravodyn_ba_destroy(&sh.pool[k]);
      }
    }
  }
  free(sh.pool);
  rm_bravo_stats_enable(was_on);
}

static void exp_scan(const struct bench_exp *e) {
  (void)e;
  uint64_t sl[MAXLIST];
  int nsl = bench_param_uints("slots", sl, MAXLIST);
  const char *want = bench_param("method");
  static const char *const names[] = {"plain", "sse2", "avx2"};
  for (int si = 0; si < nsl; si++) {
    size_t n = (size_t)sl[si];
    uintptr_t *t = (uintptr_t *)aligned_alloc(128, n * sizeof *t < 128 ? 128 : n * sizeof *t);
    if (!t) bench_fatal("out of memory");
    memset(t, 0, n * sizeof *t);
    /* Sparse, as the table is: 4 readers published. */
    for (int k = 1; k <= 4; k++) t[n * (size_t)k / 5] = (uintptr_t)0x1000 * (uintptr_t)k;
    char par[96];
    for (int mi = 0; mi < 3; mi++) {
      if (strcmp(want, "all") != 0 && strcmp(want, names[mi]) != 0) continue;
      int m = RM_BRAVO_SCAN_PLAIN + mi;
      if (rm_bravo_scan_nonzero(t, 0, n, m) == n) continue; /* not on this CPU */
      snprintf(par, sizeof par, "slots=%zu;method=%s", n, names[mi]);
      for (int rep = 1; rep <= O.reps; rep++) {
        uint64_t iters = 0, found = 0, t0 = rm_now_ns(), t1;
        uint64_t end = t0 + (uint64_t)(O.duration * 1e9);
        do {
          size_t i = 0;
          while ((i = rm_bravo_scan_nonzero(t, i, n, m)) < n) {
            found++;
            i++;
          }
          iters++;
          t1 = rm_now_ns();
        } while (O.iterations ? iters < O.iterations : t1 < end);
        if (found != 4 * iters) bench_fatal("scan %s found %llu slots in %llu scans", names[mi],
                                            (unsigned long long)found, (unsigned long long)iters);
        emit("table", 1, par, rep, "ns_per_scan", (double)(t1 - t0) / (double)iters, "ns");
      }
    }
    free(t);
    /* method=2d: what a BRAVO-2D writer scans instead, the lock's column
     * (its probe group, with the second probe, the default) in every row
     * of a 2D table of the same size, through rm_bravo_wait_unheld (the
     * revocation's scan without its clock reads and RMWs).  4 slots hold
     * other locks, as above; none holds this one, so no scan waits. */
    if (strcmp(want, "all") != 0 && strcmp(want, "2d") != 0) continue;
    struct rm_bravo_table t2;
    memset(&t2, 0, sizeof t2);
    if (rm_bravo2d_table_private_init(&t2, n, 0, RM_BRAVO2D_PROBE_DEFAULT) != 0)
      bench_fatal("out of memory");
    size_t n2 = (size_t)t2.mask + 1;
    for (int k = 1; k <= 4; k++) t2.slots[n2 * (size_t)k / 5] = (uintptr_t)0x1000 * (uintptr_t)k;
    static struct rm_bravo_bias own; /* never published: no slot holds it */
    snprintf(par, sizeof par, "slots=%zu;method=2d", n);
    for (int rep = 1; rep <= O.reps; rep++) {
      uint64_t iters = 0, t0 = rm_now_ns(), t1;
      uint64_t end = t0 + (uint64_t)(O.duration * 1e9);
      do {
        for (int k = 0; k < 64; k++)
          if (rm_bravo_wait_unheld(&own, &t2, RM_BRAVO_REVOKE_WAIT, 0, NULL) != 0)
            bench_fatal("the 2D scan failed");
        iters += 64;
        t1 = rm_now_ns();
      } while (O.iterations ? iters < O.iterations : t1 < end);
      emit("table", 1, par, rep, "ns_per_scan", (double)(t1 - t0) / (double)iters, "ns");
    }
    rm_bravo_table_private_destroy(&t2);
  }
}

/* ---- the family ------------------------------------------------------------- */
static const struct bench_param p_latency[] = {
    {"op", BENCH_P_CHOICE, "both", 0, 0, "read|write|bias_off|both", "which pairs to time"},
    BENCH_PARAM_END};
static const struct bench_param p_interference[] = {
    {"locks", BENCH_P_UINTS, "1,4,16,64,256,1024,4096,8192", 1, 1u << 20, NULL, "locks in the pool"},
    BENCH_PARAM_END};
static const struct bench_param p_rwbench[] = {
    {"P", BENCH_P_PROBS, "9/10,1/2,1/10,1/100,1/1000,1/10000", 0, 0, NULL,
     "probability that an operation writes"},
    BENCH_PARAM_END};
static const struct bench_param p_hashtable[] = {
    {"keys", BENCH_P_UINT, "65536", 2, 1u << 26, NULL, "key range (the map is half full)"}, BENCH_PARAM_END};
static const struct bench_param p_cs_efficiency[] = {
    {"readers", BENCH_P_UINTS, "0,1,2,4", 0, 255, NULL, "busy readers beside the timed thread"},
    BENCH_PARAM_END};

static const struct bench_param p_revocation[] = {
    {"slots", BENCH_P_UINTS, "4096,16384,65536", 16, 1u << 24, NULL,
     "slots in each lock's private table"},
    {"part", BENCH_P_CHOICE, "all", 0, 0, "all|revoke|base",
     "which loops run (revoke or base alone: for callgrind)"},
    BENCH_PARAM_END};

static const struct bench_param p_revoke_tail[] = {
    {"period_us", BENCH_P_UINT, "100", 1, 1000000, NULL, "microseconds between writes"},
    {"writers", BENCH_P_UINT, "1", 1, 8, NULL, "writer threads, each writing every period_us"},
    BENCH_PARAM_END};
static const struct bench_param p_dyn_table[] = {
    {"slots", BENCH_P_UINTS, "16,64,256,1024,4096,0", 0, 1u << 16, NULL,
     "table sizes (policy off); 0: start at 16 with the sizing policy on"},
    {"hold", BENCH_P_UINT, "8", 1, 64, NULL, "read locks each reader holds at once"},
    {"period_us", BENCH_P_UINT, "1000", 1, 1000000, NULL, "microseconds between writes"},
    BENCH_PARAM_END};
static const struct bench_param p_scan[] = {
    {"slots", BENCH_P_UINTS, "4096,16384,65536", 16, 1u << 24, NULL, "slots in the table"},
    {"method", BENCH_P_CHOICE, "all", 0, 0, "all|plain|sse2|avx2|2d",
     "which scans to time (2d: a BRAVO-2D table's column, every row)"},
    BENCH_PARAM_END};

#define LOCKS {&bench_locks, NULL}
static const struct bench_exp rwlock_exps[] = {
    {"latency", "one thread: ns per read / write lock+unlock pair", LOCKS, 0, NULL, p_latency,
     false, exp_latency, 0},
    {"readers", "T readers on one lock: ops/s", LOCKS, 0, NULL, NULL, true, exp_simple, 0},
    {"alternator", "ring of T threads, one read each turn: ns/hand-off", LOCKS, 0, NULL, NULL, true,
     exp_simple, 1},
    {"interference", "shared (bravo-ba, bravo2d-ba) vs private table, pool of N locks: ratio",
     LOCKS, 0, NULL,
     p_interference, true, exp_interference, 0},
    {"test_rwlock", "1 writer + T readers: ops/s", LOCKS, BENCH_IMPL_READ_ONLY, "has no write lock",
     NULL, true, exp_test_rwlock, 0},
    {"rwbench", "T threads, write probability P: ops/s", LOCKS, BENCH_IMPL_READ_ONLY,
     "has no write lock", p_rwbench, true, exp_rwbench, 0},
    {"hashtable", "hash map, eraser + inserter + T readers: ops/ms", LOCKS, BENCH_IMPL_READ_ONLY,
     "has no write lock", p_hashtable, true, exp_hashtable, 0},
    {"cs_efficiency", "reader / writer lock+unlock latency with N busy readers (param readers=N)",
     LOCKS, BENCH_IMPL_READ_ONLY, "has no write lock", p_cs_efficiency, false, exp_cs_efficiency, 0},
    {"revocation", "BRAVO: every write revokes; ns per revocation, private table of N slots",
     LOCKS, BENCH_IMPL_READ_ONLY, "has no write lock", p_revocation, false, exp_revocation, 0},
    {"revoke_tail", "BRAVO: read p99/max while a writer revokes every period_us", LOCKS,
     BENCH_IMPL_READ_ONLY, "has no write lock", p_revoke_tail, true, exp_revoke_tail, 0},
    {"dyn_table", "BRAVO's resizable table: collisions and revocation cost by size, and the policy",
     LOCKS, 0, NULL, p_dyn_table, true, exp_dyn_table, 0},
    {"scan", "BRAVO's revocation scan alone, flat table or 2D column (4 of N slots taken): ns per scan",
     LOCKS, 0, NULL, p_scan, false, exp_scan, 0},
};
const struct bench_family bench_rwlock_family = {"rwlock", rwlock_exps,
                                                 sizeof rwlock_exps / sizeof rwlock_exps[0]};
