/*
 * readmostly/futexrw.h - a compact blocking reader-writer lock on futexes.
 *
 * SYNOPSIS
 *   #include <readmostly/futexrw.h>
 *   static rm_futexrw_t l = RM_FUTEXRW_INITIALIZER;             // writer preference
 *   static rm_futexrw_t r = RM_FUTEXRW_READER_PREF_INITIALIZER; // = all zero bytes
 *   rm_futexrw_read_lock(&l);  ...  rm_futexrw_read_unlock(&l);
 *   rm_futexrw_write_lock(&l); ...  rm_futexrw_write_unlock(&l);
 *
 * DESCRIPTION
 *   One 64-bit state word holds the number of readers inside, a writer-held
 *   bit, the number of writers waiting and a readers-parked bit; two 32-bit
 *   sequence words are the futexes parked readers and parked writers sleep
 *   on.  Uncontended read lock, read unlock, write lock and write unlock are
 *   one atomic read-modify-write each.  A thread that cannot enter spins
 *   briefly, then parks: it reads its sequence word, re-checks the state
 *   (announcing itself in it), and sleeps only while the sequence word is
 *   unchanged; whoever changes the state in a way that may let it in bumps
 *   the sequence word afterwards and wakes it, so no wakeup is lost.
 *
 *   Preference is per lock, in `kind`, with glibc's values:
 *   RM_FUTEXRW_PREFER_READER (0, glibc's default): a reader enters whenever
 *   no writer holds the lock, even while writers wait, so recursive read
 *   locking works and writers can starve.  RM_FUTEXRW_PREFER_WRITER_
 *   NONRECURSIVE (2): a reader also waits while any writer waits, so writers
 *   are not starved, and a thread that read-locks a lock it already
 *   read-holds can deadlock against a waiting writer.  Kind 1 (glibc's
 *   PREFER_WRITER) behaves as reader preference, as in glibc.
 *
 *   All-zero bytes are an unlocked, reader-preference, process-private lock,
 *   so memset() and a zero PTHREAD_RWLOCK_INITIALIZER are valid.  With
 *   pshared != 0 the lock uses shared futexes and works between processes
 *   that map it in shared memory.
 *
 * TIMEOUTS
 *   Timed variants take an absolute time on CLOCK_MONOTONIC or
 *   CLOCK_REALTIME.  The timeout is validated first, before the lock is
 *   looked at, as glibc 2.36 does (rm_timeout_check): EINVAL for a NULL
 *   abstime, another clock or tv_nsec outside [0, 1e9), whether or not the
 *   lock is free; ETIMEDOUT once the time has passed (a negative tv_sec has
 *   always passed).
 *
 * RETURN VALUES
 *   0 on success; EBUSY from trylocks and from destroy of a held lock;
 *   ETIMEDOUT, EINVAL from timed variants; EAGAIN when the reader count
 *   would exceed RM_FUTEXRW_READERS_MAX; EINVAL from init for NULL or an
 *   unknown kind.
 *
 * ERRORS OF MISUSE
 *   EPERM from read_unlock when no reader is inside (the lock is write-held
 *   or free), and from write_unlock when the lock is not write-held; the
 *   lock is left as it was.  Debug builds (no NDEBUG where the call is
 *   compiled) abort with a message instead.  The lock records neither its
 *   readers nor its writer, so an unlock by a thread that holds nothing
 *   while another thread holds the lock in that mode is not detected: it
 *   releases the other thread's hold.
 *
 * FOOTPRINT
 *   40 bytes, 8-byte aligned; `kind` at offset 32.  With BRAVO's 16 bytes in
 *   front the whole is 56 bytes and `kind` lands at byte 48, where glibc's
 *   pthread_rwlock_t keeps its own kind (__flags): see docs/futexrw.md.
 */
#ifndef READMOSTLY_FUTEXRW_H
#define READMOSTLY_FUTEXRW_H

#include <errno.h>
#include <readmostly/platform.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The state word:
 *   bits  0-30  readers inside (at most RM_FUTEXRW_READERS_MAX)
 *   bit   31    WRITER: a writer holds the lock
 *   bits 32-62  writers waiting (registered in the slow path)
 *   bit   63    RPARKED: readers may be parked on rseq
 */
#define RM_FUTEXRW_READER 1ull
#define RM_FUTEXRW_READERS_MAX 0x7FFFFFFFull
#define RM_FUTEXRW_WRITER (1ull << 31)
#define RM_FUTEXRW_WWAIT_ONE (1ull << 32)
#define RM_FUTEXRW_WWAIT_MASK (0x7FFFFFFFull << 32)
#define RM_FUTEXRW_RPARKED (1ull << 63)

#define RM_FUTEXRW_PREFER_READER 0
#define RM_FUTEXRW_PREFER_WRITER 1 /* glibc's name; behaves as PREFER_READER */
#define RM_FUTEXRW_PREFER_WRITER_NONRECURSIVE 2

typedef struct rm_futexrw {
  uint64_t state;     /* the word above */
  uint32_t rseq;      /* futex: parked readers */
  uint32_t wseq;      /* futex: parked writers */
  uint32_t owner;     /* reserved for the preload library (writer's tid) */
  uint32_t reserved[3];
  uint32_t kind;      /* RM_FUTEXRW_PREFER_* */
  uint32_t pshared;   /* nonzero: shared futexes */
} rm_futexrw_t;

RM_STATIC_ASSERT(sizeof(rm_futexrw_t) == 40, "rm_futexrw_t must stay 40 bytes");

#define RM_FUTEXRW_INITIALIZER {0, 0, 0, 0, {0, 0, 0}, RM_FUTEXRW_PREFER_WRITER_NONRECURSIVE, 0}
#define RM_FUTEXRW_READER_PREF_INITIALIZER {0, 0, 0, 0, {0, 0, 0}, RM_FUTEXRW_PREFER_READER, 0}

RM_API int rm_futexrw_init_kind(rm_futexrw_t *l, int kind, int pshared);
RM_API int rm_futexrw_destroy(rm_futexrw_t *l);
RM_API int rm_futexrw_read_lock_slowpath(rm_futexrw_t *l, int clk, const struct timespec *abstime);
RM_API int rm_futexrw_read_trylock_slowpath(rm_futexrw_t *l);
RM_API int rm_futexrw_write_lock_slowpath(rm_futexrw_t *l, int clk, const struct timespec *abstime);
RM_API int rm_futexrw_read_unlock_slowpath(rm_futexrw_t *l, uint64_t old);
RM_API int rm_futexrw_write_unlock_slowpath(rm_futexrw_t *l);

RM_INLINE int rm_futexrw_init(rm_futexrw_t *l) {
  return rm_futexrw_init_kind(l, RM_FUTEXRW_PREFER_WRITER_NONRECURSIVE, 0);
}

/* True when a reader may enter in state s (the writer may still be waiting
 * under reader preference). */
RM_INLINE bool rm_futexrw_reader_may_enter(const rm_futexrw_t *l, uint64_t s) {
  if (s & RM_FUTEXRW_WRITER) return false;
  if (l->kind == RM_FUTEXRW_PREFER_WRITER_NONRECURSIVE && (s & RM_FUTEXRW_WWAIT_MASK))
    return false;
  return true;
}

RM_INLINE int rm_futexrw_read_lock(rm_futexrw_t *l) {
  uint64_t s = rm_atomic_load_relaxed(&l->state);
  /* (A) acquire: pairs with the release of the last writer's unlock (D). */
  if (RM_LIKELY(rm_futexrw_reader_may_enter(l, s) &&
                (s & RM_FUTEXRW_READERS_MAX) < RM_FUTEXRW_READERS_MAX &&
                rm_atomic_cas_acquire(&l->state, &s, s + RM_FUTEXRW_READER)))
    return 0;
  return rm_futexrw_read_lock_slowpath(l, 0, NULL);
}

RM_INLINE int rm_futexrw_read_timedlock(rm_futexrw_t *l, int clk, const struct timespec *abstime) {
  int e = rm_timeout_check(clk, abstime);
  if (RM_UNLIKELY(e != 0)) return e;
  uint64_t s = rm_atomic_load_relaxed(&l->state);
  if (RM_LIKELY(rm_futexrw_reader_may_enter(l, s) &&
                (s & RM_FUTEXRW_READERS_MAX) < RM_FUTEXRW_READERS_MAX &&
                rm_atomic_cas_acquire(&l->state, &s, s + RM_FUTEXRW_READER))) /* (A) */
    return 0;
  return rm_futexrw_read_lock_slowpath(l, clk, abstime);
}

RM_INLINE int rm_futexrw_read_trylock(rm_futexrw_t *l) {
  return rm_futexrw_read_trylock_slowpath(l);
}

/* A CAS that refuses to take the reader count below zero, rather than a
 * fetch_sub: a fetch_sub from zero would borrow from the WRITER bit and the
 * waiting-writers count, and undoing it afterwards cannot be made safe (in
 * between, a write unlock could act on the borrowed state, and the undo
 * would then set WRITER on a free lock).  The load is on the line the CAS
 * writes; uncontended it costs two instructions more than the fetch_sub
 * (docs/futexrw.md). */
RM_INLINE int rm_futexrw_read_unlock(rm_futexrw_t *l) {
  uint64_t old = rm_atomic_load_relaxed(&l->state);
  do {
    if (RM_UNLIKELY((old & RM_FUTEXRW_READERS_MAX) == 0)) {
      RM_ASSERT(0, "read unlock of %p with no reader inside", (void *)l);
      return EPERM;
    }
    /* (B) release: the reader's critical section happens before a writer
     * that acquires after this (pairs with C). */
  } while (!__atomic_compare_exchange_n(&l->state, &old, old - RM_FUTEXRW_READER, false,
                                        __ATOMIC_RELEASE, __ATOMIC_RELAXED));
  /* Writers wait (rare, tested first) and we were the last reader: wake one. */
  if (RM_UNLIKELY(old & RM_FUTEXRW_WWAIT_MASK) && (old & RM_FUTEXRW_READERS_MAX) == 1)
    return rm_futexrw_read_unlock_slowpath(l, old);
  return 0;
}

RM_INLINE int rm_futexrw_write_lock(rm_futexrw_t *l) {
  uint64_t s = 0;
  /* (C) acquire: pairs with the readers' (B) and the previous writer's (D). */
  if (RM_LIKELY(rm_atomic_cas_acquire(&l->state, &s, RM_FUTEXRW_WRITER))) return 0;
  return rm_futexrw_write_lock_slowpath(l, 0, NULL);
}

RM_INLINE int rm_futexrw_write_timedlock(rm_futexrw_t *l, int clk, const struct timespec *abstime) {
  int e = rm_timeout_check(clk, abstime);
  if (RM_UNLIKELY(e != 0)) return e;
  uint64_t s = 0;
  if (RM_LIKELY(rm_atomic_cas_acquire(&l->state, &s, RM_FUTEXRW_WRITER))) return 0; /* (C) */
  return rm_futexrw_write_lock_slowpath(l, clk, abstime);
}

RM_INLINE int rm_futexrw_write_trylock(rm_futexrw_t *l) {
  uint64_t s = rm_atomic_load_relaxed(&l->state);
  while (!(s & (RM_FUTEXRW_WRITER | RM_FUTEXRW_READERS_MAX))) {
    if (rm_atomic_cas_acquire(&l->state, &s, s | RM_FUTEXRW_WRITER)) return 0; /* (C) */
  }
  return EBUSY;
}

RM_INLINE int rm_futexrw_write_unlock(rm_futexrw_t *l) {
  uint64_t s = RM_FUTEXRW_WRITER;
  /* (D) release: the writer's critical section happens before the next
   * holder's acquisition (A or C).  Fails when anyone waits, and when the
   * lock is not write-held; s then holds the state seen. */
  if (RM_LIKELY(__atomic_compare_exchange_n(&l->state, &s, 0, false, __ATOMIC_RELEASE,
                                            __ATOMIC_RELAXED)))
    return 0;
  if (RM_UNLIKELY(!(s & RM_FUTEXRW_WRITER))) {
    RM_ASSERT(0, "write unlock of %p, which is not write-held", (void *)l);
    return EPERM;
  }
  return rm_futexrw_write_unlock_slowpath(l);
}

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_FUTEXRW_H */
