/*
 * readmostly/bravo_mutex.h - BRAVO over a mutex: read-read concurrency only
 * through the fast path.
 *
 * SYNOPSIS
 *   #include <readmostly/bravo_mutex.h>
 *
 *   static rm_bravo_mutex_t lock = RM_BRAVO_MUTEX_INITIALIZER;  // _GNU_SOURCE
 *   rm_token_t tok;
 *   rm_bravo_mutex_read_lock(&lock, &tok);  ... rm_bravo_mutex_read_unlock(&lock, tok);
 *   rm_bravo_mutex_write_lock(&lock);       ... rm_bravo_mutex_write_unlock(&lock);
 *
 * DESCRIPTION
 *   A variation of section 7 of the BRAVO paper: BRAVO (readmostly/bravo.h)
 *   over a plain mutex instead of a reader-writer lock.  rm_mutexrw_t
 *   presents a pthread mutex (of the error-checking kind) as a
 *   reader-writer lock whose read lock is exclusive; BRAVO over it,
 *   rm_bravo_mutex_t, is 16 bytes plus the mutex.  While the bias is on,
 *   readers publish themselves in the visible-readers table and run
 *   concurrently; a writer revokes as always.  While the bias is off (after
 *   a revocation, for the inhibit window; on a slot collision) a reader
 *   takes the mutex, exclusively.
 *
 * CAVEAT: NOT WORK CONSERVING
 *   A reader-writer lock is expected to admit every reader when no writer
 *   holds or waits for it: "if a thread can enter, then it will enter".
 *   This lock does not.  A reader that took the slow path holds the mutex,
 *   and every other reader then waits for it (or gets EBUSY from
 *   read_trylock) although no writer is anywhere near.  A program that
 *   relies on read-read admission for progress (a reader T1 that, knowing
 *   no writer exists, waits inside its read section for a thread T2 that
 *   must itself read-lock first) can deadlock here where it cannot over a
 *   reader-writer lock.  Use it only where readers never wait for each
 *   other inside read sections; tests/unit/test_bravo_mutex.c shows the
 *   refused reader.
 *
 *   A thread must not read-lock a lock it read-holds through the slow path:
 *   the second read lock gets EDEADLK (the mutex is error-checking) unless
 *   the bias happens to be on.  There are no timed variants.
 *
 * RETURN VALUES
 *   As readmostly/bravo.h, with the mutex's errors: EBUSY from the
 *   trylocks, EDEADLK for a second slow read lock (or a write lock) by the
 *   thread that holds the mutex, EPERM for an unlock by a thread that does
 *   not hold it.
 */
#ifndef READMOSTLY_BRAVO_MUTEX_H
#define READMOSTLY_BRAVO_MUTEX_H

#include <pthread.h>
#include <readmostly/bravo.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A mutex as a reader-writer lock whose read lock is exclusive. */
typedef struct rm_mutexrw {
  pthread_mutex_t m;
} rm_mutexrw_t;
/* The static initializers need glibc's error-checking initializer
 * (_GNU_SOURCE); without it, use the _init functions. */
#ifdef PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP
#define RM_MUTEXRW_INITIALIZER {PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP}
#endif

RM_INLINE int rm_mutexrw_init(rm_mutexrw_t *l) {
  if (!l) return EINVAL;
  pthread_mutexattr_t a;
  int e = pthread_mutexattr_init(&a);
  if (e) return e;
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
  e = pthread_mutex_init(&l->m, &a);
  pthread_mutexattr_destroy(&a);
  return e;
}
RM_INLINE int rm_mutexrw_destroy(rm_mutexrw_t *l) { return pthread_mutex_destroy(&l->m); }
RM_INLINE int rm_mutexrw_read_lock(rm_mutexrw_t *l) { return pthread_mutex_lock(&l->m); }
RM_INLINE int rm_mutexrw_read_trylock(rm_mutexrw_t *l) { return pthread_mutex_trylock(&l->m); }
RM_INLINE int rm_mutexrw_read_unlock(rm_mutexrw_t *l) { return pthread_mutex_unlock(&l->m); }
RM_INLINE int rm_mutexrw_write_lock(rm_mutexrw_t *l) { return pthread_mutex_lock(&l->m); }
RM_INLINE int rm_mutexrw_write_trylock(rm_mutexrw_t *l) { return pthread_mutex_trylock(&l->m); }
RM_INLINE int rm_mutexrw_write_unlock(rm_mutexrw_t *l) { return pthread_mutex_unlock(&l->m); }

RM_BRAVO_DEFINE(rm_bravo_mutex, rm_mutexrw_t, rm_mutexrw)
#ifdef RM_MUTEXRW_INITIALIZER
#define RM_BRAVO_MUTEX_INITIALIZER {RM_BRAVO_BIAS_INITIALIZER, RM_MUTEXRW_INITIALIZER}
#endif

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_BRAVO_MUTEX_H */
