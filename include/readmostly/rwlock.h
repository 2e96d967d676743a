/*
 * readmostly/rwlock.h - what every readmostly reader-writer lock has in
 * common, and the operations table for choosing a lock at run time.
 *
 * THE LOCK CONTRACT
 *   Each lock has a prefix P (rm_ba, rm_pft, rm_pthread, rm_futexrw,
 *   rm_percpu, rm_cohort, and rm_bravo_<A> for BRAVO over lock A), a type
 *   P_t, a static initializer P_INITIALIZER, and these functions, all
 *   returning 0 or a POSIX error code:
 *
 *     P_init(l)                 EINVAL for NULL, ENOMEM where it allocates
 *     P_destroy(l)              EBUSY when the lock is visibly held
 *     P_read_lock(l[, &tok])    shared acquisition
 *     P_read_trylock(l[, &tok]) EBUSY instead of waiting
 *     P_read_unlock(l[, tok])   EPERM when the lock sees no such hold
 *     P_write_lock(l)           exclusive acquisition
 *     P_write_trylock(l)        EBUSY instead of waiting
 *     P_write_unlock(l)         EPERM when the lock is not write-held
 *   and, for the blocking locks (pthread, futexrw, prwlock and BRAVO over
 *   them):
 *     P_read_timedlock(l[, &tok], clk, abstime)
 *     P_write_timedlock(l, clk, abstime)
 *                               ETIMEDOUT once abstime (absolute, on
 *                               CLOCK_MONOTONIC or CLOCK_REALTIME) passed;
 *                               EINVAL for a NULL abstime, another clock or
 *                               tv_nsec outside [0, 1e9), checked before
 *                               the lock is looked at (rm_timeout_check in
 *                               readmostly/platform.h), as glibc 2.36 does.
 *
 *   Unlocking what one does not hold is a bug; each lock returns EPERM and
 *   leaves itself intact where it can tell at no real cost, and says in
 *   its header (ERRORS OF MISUSE) which cases it cannot tell: no lock here
 *   records which threads read, so a thread that unlocks a hold it does
 *   not have while other threads hold the lock is never detected, and BA,
 *   PF-T and the counts of Per-CPU and Cohort-RW do not check read unlocks
 *   at all.  Debug builds (no NDEBUG where the call is compiled; the
 *   checks are inline) abort with a message instead of returning EPERM.
 *   prwlock's write lock also returns EDEADLK when the caller holds the lock
 *   passively (it knows; the other locks would wait or time out).
 *
 *   Locks whose read side must remember where it went (BRAVO: the table slot;
 *   Per-CPU and Cohort-RW: the sub-lock or node) hand the caller a token at
 *   read lock time, which the caller passes back to the matching read unlock.
 *   The token is never recomputed at unlock: a thread may migrate, and a
 *   recomputed BRAVO slot could belong to another reader.  A token is
 *   never 0, so a forgotten token is caught by a debug assertion.
 *
 *   Every lock is work-conserving for readers: while no writer holds or
 *   waits, a reader that arrives while another reader holds the lock enters.
 *
 * THE OPERATIONS TABLE
 *   struct rm_rwlock_ops describes one lock with function pointers over void*
 *   so that a program can pick the lock by name at run time (the torture
 *   tests, the preload library).  Its functions are one-line wrappers of the
 *   inline bodies, so both paths run the same code.  Benchmarks that compare
 *   A with BRAVO-A call the typed functions directly instead: no indirect
 *   call on either side.
 */
#ifndef READMOSTLY_RWLOCK_H
#define READMOSTLY_RWLOCK_H

#include <readmostly/platform.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Passed from a read lock to its unlock; never 0 for a held lock. */
typedef uintptr_t rm_token_t;
/* Token of locks that do not need one. */
#define RM_TOKEN_NONE ((rm_token_t)1)

/* rm_rwlock_ops.flags */
#define RM_RWLOCK_BLOCKING 0x1u      /* waiters park in the kernel */
#define RM_RWLOCK_TIMED 0x2u         /* has timed variants */
#define RM_RWLOCK_BIASED 0x4u        /* BRAVO-A */
#define RM_RWLOCK_PREFER_READER 0x10u
#define RM_RWLOCK_PREFER_WRITER 0x20u
#define RM_RWLOCK_PHASE_FAIR 0x40u
#define RM_RWLOCK_RECURSIVE_READ 0x80u /* a reader may re-lock while a writer waits */

struct rm_rwlock_ops {
  const char *name;  /* "ba", "bravo-ba", ... as in readmostly-bench */
  size_t size;       /* bytes to allocate for one lock */
  size_t align;      /* alignment to allocate it with */
  unsigned flags;
  int (*init)(void *l);
  int (*destroy)(void *l);
  int (*read_lock)(void *l, rm_token_t *tok);
  int (*read_trylock)(void *l, rm_token_t *tok);
  int (*read_unlock)(void *l, rm_token_t tok);
  int (*write_lock)(void *l);
  int (*write_trylock)(void *l);
  int (*write_unlock)(void *l);
  /* NULL unless flags & RM_RWLOCK_TIMED */
  int (*read_timedlock)(void *l, rm_token_t *tok, int clk, const struct timespec *abstime);
  int (*write_timedlock)(void *l, int clk, const struct timespec *abstime);
};

/* The table for `name`, or NULL. */
RM_API const struct rm_rwlock_ops *rm_rwlock_ops_find(const char *name);
/* All tables, NULL-terminated. */
RM_API const struct rm_rwlock_ops *const *rm_rwlock_ops_all(void);

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_RWLOCK_H */
