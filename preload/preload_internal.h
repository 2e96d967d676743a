/*
 * preload_internal.h - what the files of libreadmostly-preload.so share.
 *
 *   preload.c          the exported pthread_rwlock* functions, the mode
 *                      switch (READMOSTLY_RWLOCK), glibc's functions for
 *                      the passthrough, thread ids, the constructor
 *   mode_bravo.c       READMOSTLY_RWLOCK=bravo (the default): BRAVO over
 *                      futexrw, fast read holds in BRAVO's table; and
 *                      READMOSTLY_RWLOCK=bravo2d, the same over a BRAVO-2D
 *                      table of the library's own (pl_t2d)
 *   mode_prwlock.c     READMOSTLY_RWLOCK=prwlock: passive readers on the
 *                      FCP consensus, over the same futexrw
 *   stats.c            READMOSTLY_STATS=1: the per-lock table and the
 *                      summary printed at exit
 *   preload_internal.h this file: the lock-word layout, the mode, thread
 *                      ids, the held list (the nesting table of BRAVO
 *                      mode), the statistics' counters, the futexrw steps
 *                      both modes take, and each mode's fast path, inlined
 *                      into the exported functions
 *
 * The contract between the preload and the core, stated in the core's
 * headers and only referred to here:
 *   BRAVO mode    bravo.h, "Slots that other threads' unlocks may mark":
 *                 the slot bits (lock, nesting, RM_BRAVO_SLOT_RELEASED),
 *                 who may change a slot, the token (the slot's address)
 *                 and rm_bravo_release_foreign()
 *   prwlock mode  fcp.h, "HOLDS RELEASED BY ANOTHER THREAD": exit holds,
 *                 rm_fcp_release_foreign(), rm_fcp_nest_add/drop and
 *                 rm_fcp_unlock_own()
 *
 * The lock lives in the caller's pthread_rwlock_t (56 bytes on x86-64):
 * BRAVO's 16-byte header (struct rm_bravo_bias) followed by the compact
 * futex lock rm_futexrw_t (40 bytes), whose `kind` falls on byte 48, where
 * glibc keeps __flags.  All zero bytes (PTHREAD_RWLOCK_INITIALIZER) are an
 * unlocked reader-preference lock; PTHREAD_RWLOCK_WRITER_NONRECURSIVE_
 * INITIALIZER_NP sets kind 2, which futexrw reads as writer preference.
 * Nothing is kept anywhere else about a lock (the statistics table exists
 * only with READMOSTLY_STATS=1).  prwlock mode leaves bytes 0-15 zero.
 *
 * Fields of rm_futexrw_t reserved for us:
 *   owner        id of the thread holding the write lock (0: none); ids are
 *                per-thread numbers kept in TLS, so the forking thread keeps
 *                its id (and its write holds) in the child
 *   reserved[0]  PL_NOBIAS: another thread released a fast read hold of
 *                this lock; bias is never turned on again for it
 *
 * Shared functions are static inline here (each file gets the same code it
 * had when they were one file) or hidden (no GOT or PLT between the files).
 * See docs/preload.md for recursion during revocation, unlocks by another
 * thread, fork and process-shared locks.
 */
#ifndef READMOSTLY_PRELOAD_INTERNAL_H
#define READMOSTLY_PRELOAD_INTERNAL_H

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <readmostly/bravo.h>
#include <readmostly/bravo2d.h>
#include <readmostly/fcp.h>
#include <readmostly/futexrw.h>

#include "../src/env.h" /* the library's reader of READMOSTLY_* variables */

/* Everything declared from here on is internal to the library: direct
 * accesses and calls between its files. */
#pragma GCC visibility push(hidden)

#define PL_EXPORT __attribute__((visibility("default")))
/* Thread-local state in the initial-exec model: a plain %fs-relative access
 * instead of a __tls_get_addr call per lock operation (which cost ~2% of
 * kccachetest's time).  The library is loaded at start-up by LD_PRELOAD, so
 * its TLS is in the static block; a dlopen() of it later still works while
 * glibc's surplus static TLS has room (these variables take ~180 bytes). */
#define PL_TLS __thread __attribute__((tls_model("initial-exec")))

/* ---- the lock word ---------------------------------------------------------- */

struct pl_lock {
  struct rm_bravo_bias bias;
  rm_futexrw_t fx;
};
RM_STATIC_ASSERT(sizeof(struct pl_lock) == sizeof(pthread_rwlock_t),
                 "the lock must fill pthread_rwlock_t exactly");
RM_STATIC_ASSERT(offsetof(struct pl_lock, fx.kind) == 48,
                 "kind must sit where glibc keeps __flags");
RM_STATIC_ASSERT(_Alignof(pthread_rwlock_t) >= _Alignof(struct pl_lock),
                 "pthread_rwlock_t must be aligned for the lock");

#define PL_NOBIAS 1u
#define PL(l) ((struct pl_lock *)(void *)(l))

/* ---- implementation choice (preload.c) -------------------------------------- */

enum { PL_BRAVO = 1, PL_PASSTHROUGH = 2, PL_PRWLOCK = 3, PL_BRAVO2D = 4 };
extern int pl_mode_v; /* 0: not read yet */
RM_NOINLINE int pl_mode_init(void);
RM_INLINE int pl_mode(void) {
  int m = rm_atomic_load_acquire(&pl_mode_v);
  return RM_LIKELY(m) ? m : pl_mode_init();
}

/* READMOSTLY_RWLOCK=bravo2d: BRAVO mode over a BRAVO-2D table of the
 * library's own (rows per CPU; docs/bravo-preload2d.md), created by
 * pl_mode_init before the mode is published.  Every path of mode_bravo.c
 * but the inlined read lock works on either table through pl_table(). */
extern struct rm_bravo_table pl_t2d;
RM_INLINE struct rm_bravo_table *pl_table(void) {
  /* Relaxed: the caller went through pl_mode() (acquire) already. */
  return rm_atomic_load_relaxed(&pl_mode_v) == PL_BRAVO2D ? &pl_t2d : &rm_bravo_table;
}

/* ---- thread ids for `owner` (preload.c) ------------------------------------- */

/* A thread's id: nonzero, unique in the process, kept by the forking thread
 * in the child (it lives in TLS). */
extern PL_TLS uint32_t pl_id;
RM_NOINLINE uint32_t pl_id_init(void);
RM_INLINE uint32_t pl_self_private(void) { return RM_LIKELY(pl_id) ? pl_id : pl_id_init(); }

/* Process-shared locks are seen by threads of several processes, whose
 * private ids collide: they record the kernel thread id instead (unique in
 * the system; a child's thread has a new one, see docs/preload.md). */
extern PL_TLS uint32_t pl_tid;
RM_NOINLINE uint32_t pl_tid_init(void);
RM_INLINE uint32_t pl_owner_id(const struct pl_lock *l) {
  if (RM_UNLIKELY(l->fx.pshared)) return RM_LIKELY(pl_tid) ? pl_tid : pl_tid_init();
  return pl_self_private();
}

/* ---- the held list: BRAVO mode's nesting table ------------------------------ */

/* One entry per fast read hold of the thread (lock, slot); the slot's high
 * bits count the thread's recursive holds (RM_BRAVO_SLOT_NEST_*).  Slow
 * holds are counts in futexrw and need no entry.  Eight inline entries,
 * then a heap array that grows by doubling (freed at thread exit through
 * pl_key, see preload.c). */
struct pl_held {
  struct pl_lock *l;
  uintptr_t *slot;
};
#define PL_INLINE_HELD 8
extern PL_TLS struct pl_held pl_inl[PL_INLINE_HELD];
extern PL_TLS struct pl_held *pl_heap;
extern PL_TLS size_t pl_n, pl_cap;
extern pthread_key_t pl_key;
extern int pl_key_ok;

RM_INLINE struct pl_held *pl_at(size_t i) {
  return i < PL_INLINE_HELD ? &pl_inl[i] : &pl_heap[i - PL_INLINE_HELD];
}

static inline struct pl_held *pl_find(const struct pl_lock *l) {
  for (size_t i = pl_n; i-- > 0;) {
    struct pl_held *h = pl_at(i);
    if (h->l == l) return h;
  }
  return NULL;
}

static inline void pl_remove(struct pl_held *h) {
  struct pl_held *last = pl_at(pl_n - 1);
  *h = *last;
  pl_n--;
}

/* ---- statistics (READMOSTLY_STATS=1 only; stats.c) -------------------------- */

/* The counters of a lock, named as the fields of struct rm_bravo_stats
 * (bravo.h).  prwlock mode counts a passive hold as FAST_READS, a read that
 * found its record busy as SLOW_COLLISION and one that met a writer as
 * SLOW_RACED. */
enum {
  PS_FAST_READS,
  PS_SLOW_BIAS_OFF,
  PS_SLOW_COLLISION,
  PS_SLOW_RACED,
  PS_WRITES,
  PS_REVOCATIONS,
  PS_REVOKE_TICKS, /* printed in ns, as revoke_ns */
  PS_N
};
RM_NOINLINE void pl_count(const void *l, int which, uint64_t v);
#define PL_STATS_ON() RM_UNLIKELY(rm_bravo_table.stats_on)
/* The constructor's part: the table and the report at exit, if asked. */
void pl_stats_init(void);

/* ---- futexrw, as both modes take it ------------------------------------------ */

static inline int pl_check_timeout(clockid_t clk, const struct timespec *abs) {
  /* glibc 2.36 validates clock and timeout before trying the lock; so does
   * every readmostly timed lock, with this same check. */
  return rm_timeout_check((int)clk, abs);
}

/* futexrw's read and write lock by mode (0 block, 1 try, 2 timed). */
static inline int pl_futex_read(struct pl_lock *l, int mode, clockid_t clk,
                                const struct timespec *abs) {
  return mode == 1 ? rm_futexrw_read_trylock(&l->fx)
       : mode == 2 ? rm_futexrw_read_timedlock(&l->fx, (int)clk, abs)
                   : rm_futexrw_read_lock(&l->fx);
}
static inline int pl_futex_write(struct pl_lock *l, int mode, clockid_t clk,
                                 const struct timespec *abs) {
  return mode == 1 ? rm_futexrw_write_trylock(&l->fx)
       : mode == 2 ? rm_futexrw_write_timedlock(&l->fx, (int)clk, abs)
                   : rm_futexrw_write_lock(&l->fx);
}

/* Release one slow read hold if there is one: a futexrw read unlock that
 * refuses to go below zero. */
RM_INLINE bool pl_release_slow(struct pl_lock *l) {
  uint64_t s = rm_atomic_load_relaxed(&l->fx.state);
  while ((s & RM_FUTEXRW_WRITER) == 0 && (s & RM_FUTEXRW_READERS_MAX) != 0) {
    /* Release, as rm_futexrw_read_unlock's (B). */
    if (__atomic_compare_exchange_n(&l->fx.state, &s, s - RM_FUTEXRW_READER, false,
                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
      if ((s & RM_FUTEXRW_READERS_MAX) == 1 && (s & RM_FUTEXRW_WWAIT_MASK))
        rm_futexrw_read_unlock_slowpath(&l->fx, s);
      return true;
    }
  }
  return false;
}

/* ---- a writer that waits for read holds gives way to parked readers ------- *
 *
 * Reader preference (the default kind, and PREFER_WRITER, which glibc treats
 * the same) lets a reader in whenever no writer holds the lock.  Our writers
 * take futexrw's write bit first and only then wait for the read holds that
 * futexrw does not count (BRAVO's slots, prwlock's passive records); a
 * reader of another thread that comes meanwhile finds the bit and parks,
 * where glibc would have let it in.  A thread that read-holds the lock and
 * waits for another thread's read lock would deadlock against a writer
 * between the two.  So such a writer waits in slices (1 ms, doubling up to
 * 64 ms); at the end of a slice, if readers are parked on futexrw, it gives
 * the write bit back (which wakes them), waits for the holds it was waiting
 * for while holding nothing, and starts again.  As with glibc's reader
 * preference, a writer may wait as long as read holds keep overlapping.  The
 * nonrecursive writer-preference kind keeps new readers out while a writer
 * waits; its writers never give way.  A try-lock never waits, so never gives
 * way either; a tryrdlock during such a wait fails with EBUSY (the read lock
 * would have waited for the next slice's end). */
#define PL_SLICE_FIRST_NS 1000000L
#define PL_SLICE_MAX_NS 64000000L

RM_INLINE bool pl_gives_way(const struct pl_lock *l) {
  return l->fx.kind != RM_FUTEXRW_PREFER_WRITER_NONRECURSIVE;
}

/* The end of the next slice: *slice ns from now, on the caller's clock for
 * a timed lock (and never past its deadline: *last says the slice ends
 * there), else on CLOCK_MONOTONIC.  Doubles *slice for the next one. */
static inline clockid_t pl_slice_end(int mode, clockid_t clk, const struct timespec *abs,
                                     long *slice, struct timespec *end, bool *last) {
  clockid_t c = mode == 2 ? clk : CLOCK_MONOTONIC;
  clock_gettime(c, end);
  end->tv_nsec += *slice;
  end->tv_sec += end->tv_nsec / 1000000000L;
  end->tv_nsec %= 1000000000L;
  if (*slice < PL_SLICE_MAX_NS) *slice *= 2;
  *last = mode == 2 && (abs->tv_sec < end->tv_sec ||
                        (abs->tv_sec == end->tv_sec && abs->tv_nsec <= end->tv_nsec));
  if (*last) *end = *abs;
  return c;
}

/* At the end of a slice: give way?  RPARKED is set by a reader that found
 * the lock unavailable and parked (futexrw.c, invariant 3). */
RM_INLINE bool pl_readers_parked(struct pl_lock *l) {
  return (rm_atomic_load_relaxed(&l->fx.state) & RM_FUTEXRW_RPARKED) != 0;
}

/* ---- BRAVO mode (mode_bravo.c): its fast paths ------------------------------ */

/* pl_rdlock_fast's answer when it did not try. */
#define PL_UNTRIED (-1)

RM_NOINLINE int pl_pass_release(struct pl_lock *l);
RM_NOINLINE int pl_rdlock(struct pl_lock *l, int mode, clockid_t clk, const struct timespec *abs,
                          int why);
RM_NOINLINE int pl_rdlock_other(struct pl_lock *l, int mode, int why);
RM_NOINLINE int pl_unlock_other(struct pl_lock *l);
/* READMOSTLY_RWLOCK=bravo2d's rdlock (mode 0) and tryrdlock (1), out of
 * line: inlined beside the default mode's, it made the exported functions
 * save four more registers on the default path. */
RM_NOINLINE int pl_rdlock2d(struct pl_lock *l, int mode);
int pl_wrlock(struct pl_lock *l, int mode, clockid_t clk, const struct timespec *abs);
int pl_destroy(struct pl_lock *l);

/* pthread_rwlock_rdlock/tryrdlock try this before anything else: a lock the
 * thread holds no fast hold of yet (at most PL_INLINE_HELD entries, all
 * inline), with bias on.  No EDEADLK check is needed: while rbias is set no
 * thread holds the lock for writing (a writer clears it before its section
 * begins and only slow readers, which hold A for reading, set it again), so
 * in particular not this one; rbias is never set on a process-shared lock.
 * Returns RM_BRAVO_FAST with the hold taken, the reason it was not taken
 * (the general path then goes straight to A), or PL_UNTRIED if it did not
 * try. */
RM_INLINE int pl_rdlock_fast_k(struct pl_lock *l, const bool two_d) {
  size_t n = pl_n;
  if (RM_UNLIKELY(n >= PL_INLINE_HELD)) return PL_UNTRIED;
  /* pl_find() over the inline entries only (n < PL_INLINE_HELD here). */
  for (size_t i = 0; i < n; i++)
    if (pl_inl[i].l == l) return PL_UNTRIED; /* recursive: counted in our slot */
  rm_token_t tok;
  int why = two_d ? rm_bravo2d_read_fast_shared(&l->bias, &pl_t2d, &tok)
                  : rm_bravo_read_fast_shared(&l->bias, &rm_bravo_table, &tok);
  if (RM_LIKELY(why == RM_BRAVO_FAST)) {
    pl_inl[n].l = l;
    pl_inl[n].slot = (uintptr_t *)tok; /* the token is the slot's address */
    pl_n = n + 1;
    if (PL_STATS_ON()) pl_count(l, PS_FAST_READS, 1);
    return why;
  }
  if (RM_UNLIKELY(why == RM_BRAVO_SLOW_RACED_MARKED)) why = pl_pass_release(l);
  return why;
}
/* The default mode's, and READMOSTLY_RWLOCK=bravo2d's. */
RM_INLINE int pl_rdlock_fast(struct pl_lock *l) { return pl_rdlock_fast_k(l, false); }
RM_INLINE int pl_rdlock_fast2d(struct pl_lock *l) { return pl_rdlock_fast_k(l, true); }

/* The unlock of the thread's most recent fast hold, not recursive: one CAS
 * of the slot from exactly l to 0.  A CAS and not a store because another
 * thread's unlock may mark the slot released at the same moment (bravo.h's
 * contract, point 1); a failed CAS leaves everything to pl_unlock_other.
 * A thread with a live fast hold cannot hold the write lock too (its own
 * revocation would wait for its slot), so the write-owner check of
 * pl_unlock is not needed here. */
RM_INLINE bool pl_unlock_fast(struct pl_lock *l) {
  size_t n = pl_n;
  if (RM_UNLIKELY(n - 1 >= PL_INLINE_HELD)) return false; /* none, or beyond the inline ones */
  struct pl_held *h = &pl_inl[n - 1];
  uintptr_t v = (uintptr_t)l;
  /* Release: the critical section happens before a writer that sees the
   * slot change (the reader's R3). */
  if (h->l != l || !__atomic_compare_exchange_n(h->slot, &v, (uintptr_t)0, false,
                                                __ATOMIC_RELEASE, __ATOMIC_RELAXED))
    return false;
  pl_n = n - 1;
  return true;
}

/* ---- prwlock mode (mode_prwlock.c): its fast paths --------------------------- */

#define PW_DOMAIN (&rm_fcp_default) /* rm_fcp_default_domain(), without the call */

/* One passive attempt's answer. */
enum { PW_HELD, PW_BUSY /* no record, or it holds something */, PW_RACED /* a writer: backed out */ };

RM_NOINLINE void pw_back_out(struct rm_fcp_reader *r, struct pl_lock *l);
RM_NOINLINE int pw_rdlock(struct pl_lock *l, int mode, clockid_t clk, const struct timespec *abs,
                          int tried);
int pw_wrlock(struct pl_lock *l, int mode, clockid_t clk, const struct timespec *abs);
RM_NOINLINE int pw_unlock(struct pl_lock *l, struct rm_fcp_reader *r);
int pw_destroy(struct pl_lock *l);

/* One passive attempt with the caller's record r (private locks only). */
RM_INLINE int pw_try_passive(struct pl_lock *l, struct rm_fcp_reader *r) {
  /* Acquire: a NULL left by a releaser that took our last hold comes with
   * its BUSY mark of `nest` (rm_fcp_unlock_own relies on it).  r is never
   * NULL: a thread without a record passes rm_fcp_unregistered, whose
   * `passive` is never NULL (PW_BUSY). */
  if (rm_atomic_load_acquire(&r->passive) != NULL) return PW_BUSY;
  rm_fcp_enter(r, l); /* (R1) */
  /* (R2) acquire: the section sees the last writer's stores (futexrw's
   * write unlock is a release of this word). */
  uint64_t st = rm_atomic_load_acquire(&l->fx.state);
  if (RM_LIKELY(rm_futexrw_reader_may_enter(&l->fx, st))) {
    if (PL_STATS_ON()) pl_count(l, PS_FAST_READS, 1);
    return PW_HELD;
  }
  pw_back_out(r, l); /* (and wake the writer if it parked) */
  return PW_RACED;
}

/* The common read lock, inlined into pthread_rwlock_rdlock/tryrdlock.  No
 * EDEADLK check is needed: if this thread held the write lock, futexrw's
 * WRITER bit would send it back (PW_RACED), and pw_rdlock checks. */
RM_INLINE int pw_rdlock_fast(struct pl_lock *l) {
  if (RM_UNLIKELY(l->fx.pshared)) return PW_BUSY;
  return pw_try_passive(l, rm_fcp_tls_default);
}

#pragma GCC visibility pop
#endif /* READMOSTLY_PRELOAD_INTERNAL_H */
