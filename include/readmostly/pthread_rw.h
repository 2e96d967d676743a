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
 *   abstime is absolute on clk; NULL means no time limit (the plain lock is
 *   called).  The adapter itself checks clk and tv_nsec, so EINVAL comes
 *   back even when the lock is free and glibc would not look at abstime.
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
 *   init and destroy, for a clock other than CLOCK_MONOTONIC and
 *   CLOCK_REALTIME, and for tv_nsec outside [0, 1e9).
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

RM_INLINE int rm_pthread_read_unlock(rm_pthread_t *l) { return pthread_rwlock_unlock(&l->rw); }

RM_INLINE int rm_pthread_write_lock(rm_pthread_t *l) { return pthread_rwlock_wrlock(&l->rw); }

RM_INLINE int rm_pthread_write_trylock(rm_pthread_t *l) { return pthread_rwlock_trywrlock(&l->rw); }

RM_INLINE int rm_pthread_write_unlock(rm_pthread_t *l) { return pthread_rwlock_unlock(&l->rw); }

RM_INLINE int rm_pthread_read_timedlock(rm_pthread_t *l, int clk, const struct timespec *abstime) {
  int e = rm_timespec_check(clk, abstime); /* as every readmostly timed lock */
  if (e) return e;
  if (!abstime) return pthread_rwlock_rdlock(&l->rw);
  return pthread_rwlock_clockrdlock(&l->rw, (clockid_t)clk, abstime);
}

RM_INLINE int rm_pthread_write_timedlock(rm_pthread_t *l, int clk, const struct timespec *abstime) {
  int e = rm_timespec_check(clk, abstime); /* as every readmostly timed lock */
  if (e) return e;
  if (!abstime) return pthread_rwlock_wrlock(&l->rw);
  return pthread_rwlock_clockwrlock(&l->rw, (clockid_t)clk, abstime);
}

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_PTHREAD_RW_H */
