/*
 * readmostly/pthread_rw.h - glibc's pthread_rwlock_t behind the readmostly
 * lock contract (readmostly/rwlock.h), so that it can be measured against,
 * and wrapped by, BRAVO ("pthread" and "BRAVO-pthread" in Dice and Kogan,
 * "BRAVO - Biased Locking for Reader-Writer Locks", USENIX ATC 2019).
 *
 * SYNOPSIS
 *   #include <readmostly/pthread_rw.h>
 *
 *   static rm_pthread_t l = RM_PTHREAD_INITIALIZER;
 *
 *   int rm_pthread_init(rm_pthread_t *l);
 *   int rm_pthread_destroy(rm_pthread_t *l);
 *   int rm_pthread_read_lock(rm_pthread_t *l);
 *   int rm_pthread_read_trylock(rm_pthread_t *l);
 *   int rm_pthread_read_timedlock(rm_pthread_t *l, int clk,
 *                                 const struct timespec *abstime);
 *   int rm_pthread_read_unlock(rm_pthread_t *l);
 *   int rm_pthread_write_lock(rm_pthread_t *l);
 *   int rm_pthread_write_trylock(rm_pthread_t *l);
 *   int rm_pthread_write_timedlock(rm_pthread_t *l, int clk,
 *                                  const struct timespec *abstime);
 *   int rm_pthread_write_unlock(rm_pthread_t *l);
 *
 * DESCRIPTION
 *   A thin adapter: every function calls the pthread_rwlock_* function of
 *   the same meaning on the wrapped pthread_rwlock_t and returns its result,
 *   so glibc's error codes pass through unchanged (EBUSY from the trylocks,
 *   ETIMEDOUT from the timed variants, EDEADLK when glibc detects that the
 *   caller already holds the write lock, EAGAIN when the reader count would
 *   overflow, EPERM/EINVAL as glibc reports them).  The lock has no token:
 *   the read side does not need to remember anything.
 *
 *   The timed variants take the clock explicitly and map to
 *   pthread_rwlock_clockrdlock / pthread_rwlock_clockwrlock (glibc >= 2.30).
 *   abstime is absolute on clk.  The adapter checks the timeout first, as
 *   every readmostly timed lock does (rm_timeout_check): EINVAL for a NULL
 *   abstime (glibc would wait without a limit), another clock or tv_nsec
 *   outside [0, 1e9), whether or not the lock is free.
 *
 *   This file contains no atomics of its own: all ordering is glibc's
 *   (a lock acquisition synchronizes with the previous release, POSIX XBD
 *   4.12), so there are no invariants or ordering points to list here.
 *
 * PREFERENCE
 *   glibc's default, PTHREAD_RWLOCK_PREFER_READER_NP: a reader enters while
 *   another reader holds the lock even if writers are waiting, so a steady
 *   stream of overlapping readers starves writers.  In exchange, recursive
 *   read locking cannot deadlock.  Waiters park in the kernel at once (no
 *   spinning).  (glibc's writer-preference kind is not used: the BRAVO paper,
 *   footnote 6, reports lost wake-ups in it, glibc bug 23861.)
 *
 * RETURN VALUES
 *   0 on success, otherwise glibc's error code; EINVAL for a NULL lock in
 *   init and destroy, and from the timed variants for a NULL abstime, a
 *   clock other than CLOCK_MONOTONIC and CLOCK_REALTIME, and tv_nsec
 *   outside [0, 1e9).
 *
 * ERRORS OF MISUSE
 *   On glibc 2.25 and later (RM_PTHREAD_CHECKS_UNLOCK is 1): EPERM from
 *   read_unlock when no reader holds or waits for the lock, and from
 *   write_unlock when no writer holds it; the lock is left as it was.
 *   (glibc itself returns 0 and corrupts its reader count: the next write
 *   lock waits for ever.)  Debug builds (no NDEBUG where the call is
 *   compiled) abort with a message instead.  glibc does not say which
 *   thread reads, and the adapter does not ask which thread it runs on (a
 *   system call), so an unlock by a thread that holds nothing while others
 *   hold the lock is not detected.  Elsewhere the unlocks are glibc's, and
 *   so they are when another library interposes pthread_rwlock_* (the
 *   preload library: the checks read glibc's fields, which it lays out
 *   differently; rm_pthread_interposed()).
 *
 * FOOTPRINT
 *   sizeof(rm_pthread_t) == sizeof(pthread_rwlock_t): 56 bytes on x86-64 and
 *   arm64 glibc.  Not padded to a cache sector (the paper measures it as is).
 */
#ifndef READMOSTLY_PTHREAD_RW_H
#define READMOSTLY_PTHREAD_RW_H

#include <errno.h>
#include <pthread.h>
#include <readmostly/platform.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GLIBC__) && !defined(__USE_GNU)
/* glibc >= 2.30 provides these but declares them only under _GNU_SOURCE;
 * the declarations match <pthread.h>, so a later _GNU_SOURCE include is
 * harmless. */
extern int pthread_rwlock_clockrdlock(pthread_rwlock_t *__rwlock, clockid_t __clockid,
                                      const struct timespec *__abstime);
extern int pthread_rwlock_clockwrlock(pthread_rwlock_t *__rwlock, clockid_t __clockid,
                                      const struct timespec *__abstime);
#endif

typedef struct rm_pthread {
  pthread_rwlock_t rw; /* glibc's lock, default attributes */
} rm_pthread_t;

#define RM_PTHREAD_INITIALIZER {PTHREAD_RWLOCK_INITIALIZER}

RM_INLINE int rm_pthread_init(rm_pthread_t *l) {
  if (!l) return EINVAL;
  return pthread_rwlock_init(&l->rw, NULL);
}

RM_INLINE int rm_pthread_destroy(rm_pthread_t *l) {
  if (!l) return EINVAL;
  /* glibc's destroy does not check for holders; report a visibly held
   * lock as the contract asks, by probing with a write trylock. */
  int e = pthread_rwlock_trywrlock(&l->rw);
  if (e) return e == EDEADLK ? EBUSY : e;
  pthread_rwlock_unlock(&l->rw);
  return pthread_rwlock_destroy(&l->rw);
}

RM_INLINE int rm_pthread_read_lock(rm_pthread_t *l) { return pthread_rwlock_rdlock(&l->rw); }

RM_INLINE int rm_pthread_read_trylock(rm_pthread_t *l) { return pthread_rwlock_tryrdlock(&l->rw); }

/*
 * glibc's pthread_rwlock_unlock of a lock the caller does not hold returns
 * 0 and wraps its reader count below zero: every later write lock waits
 * for ever.  Where the lock is glibc's (2.25 and later, the rwlock of
 * bits/struct_rwlock.h), the adapter looks first: __readers counts the
 * readers that hold or wait for the lock above its 3 state bits, and
 * __cur_writer is the thread id of the writer (0 when none).  Both are
 * relaxed loads of the line pthread_rwlock_unlock reads next.
 */
/* The check reads glibc's fields, so it holds only while pthread_rwlock_*
 * are glibc's: under an interposer (libreadmostly-preload.so, found by its
 * symbol readmostly_preload_active) the lock's bytes are laid out another
 * way and the check is skipped (the interposer makes its own).  Asked only
 * when the fields say "not held", so the unlock's common path is as
 * before. */
RM_API bool rm_pthread_interposed(void);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 25))
#define RM_PTHREAD_CHECKS_UNLOCK 1
#define RM_PTHREAD_GLIBC_READER_SHIFT 3
RM_INLINE bool rm_pthread_no_reader_(rm_pthread_t *l) {
  return (rm_atomic_load_relaxed(&l->rw.__data.__readers) >> RM_PTHREAD_GLIBC_READER_SHIFT) == 0;
}
RM_INLINE bool rm_pthread_no_writer_(rm_pthread_t *l) {
  return rm_atomic_load_relaxed(&l->rw.__data.__cur_writer) == 0;
}
#else
#define RM_PTHREAD_CHECKS_UNLOCK 0
RM_INLINE bool rm_pthread_no_reader_(rm_pthread_t *l) { (void)l; return false; }
RM_INLINE bool rm_pthread_no_writer_(rm_pthread_t *l) { (void)l; return false; }
#endif

RM_INLINE int rm_pthread_read_unlock(rm_pthread_t *l) {
  if (RM_UNLIKELY(rm_pthread_no_reader_(l)) && !rm_pthread_interposed()) {
    RM_ASSERT(0, "rm_pthread_read_unlock(%p): no reader holds the lock", (void *)l);
    return EPERM;
  }
  return pthread_rwlock_unlock(&l->rw);
}

RM_INLINE int rm_pthread_write_lock(rm_pthread_t *l) { return pthread_rwlock_wrlock(&l->rw); }

RM_INLINE int rm_pthread_write_trylock(rm_pthread_t *l) { return pthread_rwlock_trywrlock(&l->rw); }

RM_INLINE int rm_pthread_write_unlock(rm_pthread_t *l) {
  if (RM_UNLIKELY(rm_pthread_no_writer_(l)) && !rm_pthread_interposed()) {
    RM_ASSERT(0, "rm_pthread_write_unlock(%p): no writer holds the lock", (void *)l);
    return EPERM;
  }
  return pthread_rwlock_unlock(&l->rw);
}

RM_INLINE int rm_pthread_read_timedlock(rm_pthread_t *l, int clk, const struct timespec *abstime) {
  int e = rm_timeout_check(clk, abstime); /* as every readmostly timed lock */
  if (RM_UNLIKELY(e != 0)) return e;
  return pthread_rwlock_clockrdlock(&l->rw, (clockid_t)clk, abstime);
}

RM_INLINE int rm_pthread_write_timedlock(rm_pthread_t *l, int clk, const struct timespec *abstime) {
  int e = rm_timeout_check(clk, abstime); /* as every readmostly timed lock */
  if (RM_UNLIKELY(e != 0)) return e;
  return pthread_rwlock_clockwrlock(&l->rw, (clockid_t)clk, abstime);
}

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_PTHREAD_RW_H */
