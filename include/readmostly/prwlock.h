/*
 * readmostly/prwlock.h - the passive reader-writer lock (prwlock) on the FCP
 * consensus core.
 *
 * SYNOPSIS
 *   #include <readmostly/prwlock.h>
 *   static rm_prwlock_t l = RM_PRWLOCK_INITIALIZER;   // default domain
 *   rm_prwlock_read_lock(&l);   ...  rm_prwlock_read_unlock(&l);
 *   rm_prwlock_read_lock_active(&l); ... may sleep ... rm_prwlock_read_unlock(&l);
 *   rm_prwlock_write_lock(&l);  ...  rm_prwlock_write_unlock(&l);
 *   rm_prwlock_downgrade(&l);   rm_prwlock_upgrade(&l);
 *
 * DESCRIPTION
 *   Readers are passive: a read lock stores the lock's address in the calling
 *   thread's record of the lock's domain and reads the lock's writer word; a
 *   read unlock clears the record and reports the domain version.  No atomic
 *   read-modify-write, no fence on x86 (when membarrier is available; see
 *   readmostly/fcp.h), no shared cache line written.  A writer takes the
 *   writer word, then reaches consensus with the readers (rm_fcp_begin /
 *   rm_fcp_wait: usually no system call, one membarrier when some thread has
 *   not reported), then waits for active readers.
 *
 *   Active readers increment a shared counter instead.  Use
 *   rm_prwlock_read_lock_active() for a read section that may sleep or block
 *   for long (I/O, a condition variable): a passive reader that blocks keeps
 *   writers waiting on a futex for it, while an active one is counted like
 *   in a classic rwlock.  A thread holds at most one passive read lock per
 *   domain at a time (its record has one slot); a read lock of another lock
 *   of the same domain while holding one is taken actively, automatically.
 *   A recursive read lock of the lock held passively only counts (never
 *   blocks, even while a writer waits); a recursive read of a lock held
 *   actively can deadlock against a waiting writer, as with glibc's
 *   writer-nonrecursive kind.
 *
 *   Preference: writers.  A writer sets the writer word at once, so readers
 *   arriving after it wait; a writer that unlocks while writers wait passes
 *   the lock to one of them without a new consensus (nobody could have
 *   entered in between).  Waiting readers spin briefly, then park on one of
 *   RM_PRWLOCK_WAKE_GROUPS futex words chosen by their CPU; the unlocking
 *   writer wakes one reader per group and each wakes its own group
 *   (parallel wake-up, the paper's section 6), or, with
 *   RM_PRWLOCK_BROADCAST_WAKE, wakes every parked reader itself.
 *
 *   Domains: a lock belongs to the domain given at rm_prwlock_init_domain()
 *   (default: the process-wide default domain).  Writers of locks of one
 *   domain share its version and its record list; a writer waits only for
 *   records holding its own lock, so unrelated locks never wait for each
 *   other, but every write bumps the shared version, so a busy writer of one
 *   lock makes readers of the others report more often.  The inline read
 *   path serves locks of the default domain; a lock of another domain is
 *   marked RM_PRWLOCK_DOMAIN in its writer word and its reads and read
 *   unlocks take one out-of-line call (docs/fcp.md, "Footprint and costs").
 *   A record marks a recursive hold in bit 0 of the lock's address
 *   (RM_FCP_NESTED), which the type's alignment keeps free.
 *
 * FOOTPRINT
 *   64 bytes per lock (aligned to 64), all zero = unlocked in the default
 *   domain; 128 bytes per thread per domain it has used.
 *
 * RETURN VALUES
 *   0 on success.  EBUSY from trylocks, from upgrade when another writer holds
 *   or waits (the read hold is kept: blocking would deadlock), and from
 *   destroy of a held lock.  ETIMEDOUT, and EINVAL (NULL abstime, clock or
 *   tv_nsec, checked first: rm_timeout_check) from timed variants.  EDEADLK from upgrade when the caller holds the lock passively
 *   more than once, and from write locks when the caller holds it passively
 *   (an active read hold of the caller is not known: that deadlocks, as with
 *   glibc).  EPERM from read unlock when the caller holds no read lock
 *   of it (active count zero).  EINVAL from init for NULL.
 *
 * FORK, THREAD EXIT
 *   See readmostly/fcp.h and docs/fcp.md: a thread that exits inside a
 *   passive read section gives that hold up; active holds and write holds
 *   remain, as with glibc.
 */
#ifndef READMOSTLY_PRWLOCK_H
#define READMOSTLY_PRWLOCK_H

#include <errno.h>
#include <readmostly/fcp.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RM_PRWLOCK_WAKE_GROUPS 8
/* rm_prwlock_init_domain flags */
#define RM_PRWLOCK_BROADCAST_WAKE 0x1u

/* wstate */
#define RM_PRWLOCK_LOCKED 0x1u  /* a writer holds the lock or owns its consensus */
#define RM_PRWLOCK_HANDOFF 0x2u /* passed to a waiting writer, not yet taken */
#define RM_PRWLOCK_DOMAIN 0x4u  /* of a domain other than the default (set at init, kept) */
#define RM_PRWLOCK_WAITER 0x8u  /* one registered waiting writer (a count from here up) */

typedef struct rm_prwlock {
  uint32_t wstate;                        /* writer word (readers read it) */
  uint32_t wseq;                          /* futex: parked writers */
  uint32_t active;                        /* active readers inside */
  uint32_t awake;                         /* a writer is parked on `active` */
  uint32_t rmask;                         /* wake groups with parked readers */
  uint32_t flags;                         /* RM_PRWLOCK_BROADCAST_WAKE */
  struct rm_fcp_domain *domain;           /* NULL: the default domain */
  uint32_t rseq[RM_PRWLOCK_WAKE_GROUPS];  /* futexes: parked readers, by group */
} __attribute__((aligned(64))) rm_prwlock_t;

#define RM_PRWLOCK_INITIALIZER {0, 0, 0, 0, 0, 0, NULL, {0}}

RM_API int rm_prwlock_init(rm_prwlock_t *l);
RM_API int rm_prwlock_init_domain(rm_prwlock_t *l, rm_fcp_domain_t *d, unsigned flags);
RM_API int rm_prwlock_destroy(rm_prwlock_t *l);

RM_API int rm_prwlock_read_slowpath(rm_prwlock_t *l, struct rm_fcp_reader *r, int published,
                                    int mode, int clk, const struct timespec *abstime);
RM_API int rm_prwlock_read_lock_active(rm_prwlock_t *l);
RM_API int rm_prwlock_active_unlock(rm_prwlock_t *l);
RM_API int rm_prwlock_read_unlock_slowpath(rm_prwlock_t *l);
RM_API int rm_prwlock_write_slowpath(rm_prwlock_t *l, int mode, int clk,
                                     const struct timespec *abstime);
RM_API int rm_prwlock_write_consensus(rm_prwlock_t *l, int mode, int clk,
                                      const struct timespec *abstime);
RM_API int rm_prwlock_write_unlock(rm_prwlock_t *l);
RM_API int rm_prwlock_downgrade(rm_prwlock_t *l);
RM_API int rm_prwlock_upgrade(rm_prwlock_t *l);

RM_INLINE rm_fcp_domain_t *rm_prwlock_domain(const rm_prwlock_t *l) {
  rm_fcp_domain_t *d = l->domain;
  return d ? d : &rm_fcp_default;
}

/* Passive fast path: R1 (publish, in rm_fcp_enter), then R2: the writer
 * word, acquire, so the section sees the last writer's stores (that writer
 * released the word).  See rm_fcp_enter for why R1 before R2 holds.
 *
 * The record used is always the thread's record of the default domain (or
 * rm_fcp_unregistered, whose `passive` is never NULL, when the thread has
 * none yet): the lock's domain is not looked at.  A lock of another domain
 * carries RM_PRWLOCK_DOMAIN in its writer word for good, so R2 sends its
 * readers to the slow path, which withdraws from the default record (no
 * writer of the default domain waits for this lock, so the short
 * publication held nobody up) and uses the domain's record.  That keeps the
 * common path to one thread-local load and three tests. */
RM_INLINE int rm_prwlock_read_mode(rm_prwlock_t *l, int mode, int clk,
                                   const struct timespec *abstime) {
  struct rm_fcp_reader *r = rm_fcp_tls_default;
  if (RM_LIKELY(rm_atomic_load_relaxed(&r->passive) == NULL)) {
    rm_fcp_enter(r, l);
    if (RM_LIKELY(!(rm_atomic_load_acquire(&l->wstate) & (RM_PRWLOCK_LOCKED | RM_PRWLOCK_DOMAIN))))
      return 0; /* (R2) */
    return rm_prwlock_read_slowpath(l, r, 1, mode, clk, abstime);
  }
  return rm_prwlock_read_slowpath(l, r, 0, mode, clk, abstime);
}

RM_INLINE int rm_prwlock_read_lock(rm_prwlock_t *l) {
  return rm_prwlock_read_mode(l, RM_FCP_WAIT, 0, NULL);
}
RM_INLINE int rm_prwlock_read_trylock(rm_prwlock_t *l) {
  return rm_prwlock_read_mode(l, RM_FCP_TRY, 0, NULL);
}
RM_INLINE int rm_prwlock_read_timedlock(rm_prwlock_t *l, int clk, const struct timespec *abstime) {
  int e = rm_timeout_check(clk, abstime);
  if (RM_UNLIKELY(e != 0)) return e;
  return rm_prwlock_read_mode(l, RM_FCP_TIMED, clk, abstime);
}

/* Fast path: the thread's default-domain record holds l exactly once
 * (`passive` == l: a recursive hold carries RM_FCP_NESTED), which can only
 * be if l is of the default domain (a record holds objects of its own
 * domain only), so neither the domain nor `nest` need be looked at.
 * Everything else (recursive levels, other domains, active holds) is the
 * slow path. */
RM_INLINE int rm_prwlock_read_unlock(rm_prwlock_t *l) {
  struct rm_fcp_reader *r = rm_fcp_tls_default; /* rm_fcp_unregistered holds nothing */
  if (RM_LIKELY(rm_atomic_load_relaxed(&r->passive) == l)) {
    rm_fcp_leave(&rm_fcp_default, r);
    return 0;
  }
  return rm_prwlock_read_unlock_slowpath(l);
}

/* The writer word of an unlocked, unwaited lock. */
RM_INLINE uint32_t rm_prwlock_idle_word(const rm_prwlock_t *l) {
  return RM_LIKELY(l->domain == NULL) ? 0u : RM_PRWLOCK_DOMAIN;
}

RM_INLINE int rm_prwlock_write_lock(rm_prwlock_t *l) {
  uint32_t s = rm_prwlock_idle_word(l);
  /* seq_cst: the writer word is set before rm_fcp_begin's version bump. */
  if (RM_LIKELY(rm_atomic_cas_seq_cst(&l->wstate, &s, s | RM_PRWLOCK_LOCKED)))
    return rm_prwlock_write_consensus(l, RM_FCP_WAIT, 0, NULL);
  return rm_prwlock_write_slowpath(l, RM_FCP_WAIT, 0, NULL);
}
RM_INLINE int rm_prwlock_write_trylock(rm_prwlock_t *l) {
  uint32_t s = rm_atomic_load_relaxed(&l->wstate);
  if (s & RM_PRWLOCK_LOCKED) return EBUSY;
  if (!rm_atomic_cas_seq_cst(&l->wstate, &s, s | RM_PRWLOCK_LOCKED)) return EBUSY;
  s = (uint32_t)rm_prwlock_write_consensus(l, RM_FCP_TRY, 0, NULL);
  return s == EDEADLK ? EBUSY : (int)s; /* a try-lock says only "not now" */
}
RM_INLINE int rm_prwlock_write_timedlock(rm_prwlock_t *l, int clk, const struct timespec *abstime) {
  int e = rm_timeout_check(clk, abstime);
  if (RM_UNLIKELY(e != 0)) return e;
  uint32_t s = rm_prwlock_idle_word(l);
  if (RM_LIKELY(rm_atomic_cas_seq_cst(&l->wstate, &s, s | RM_PRWLOCK_LOCKED)))
    return rm_prwlock_write_consensus(l, RM_FCP_TIMED, clk, abstime);
  return rm_prwlock_write_slowpath(l, RM_FCP_TIMED, clk, abstime);
}

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_PRWLOCK_H */
