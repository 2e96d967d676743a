/*
 * readmostly/thread.h - the per-thread registry.
 *
 * SYNOPSIS
 *   #include <readmostly/thread.h>
 *   struct rm_thread *t = rm_thread_self();
 *
 * DESCRIPTION
 *   Every thread that uses a readmostly primitive needing per-thread state
 *   gets one record, allocated on first use (rm_thread_self() or an explicit
 *   rm_thread_register()), aligned to a 128-byte sector so that no two
 *   threads' records share a line, and linked into one process-wide list.
 *   The record is removed when the thread exits (a pthread key destructor)
 *   or calls rm_thread_unregister().  Records are never part of a lock's fast
 *   path; primitives reach them from slow paths, statistics and (in later
 *   primitives) consensus rounds.
 *
 *   Per-thread counters live in the record.  When a thread leaves, its
 *   counters are added to a process-wide "retired" total, so sums taken with
 *   rm_thread_stats_sum() never go backwards.
 *
 *   fork(): in the child only the forking thread exists.  A child handler
 *   removes every other record (their counters are retired), re-initialises
 *   the registry lock, keeps the forking thread's record, and then runs the
 *   fork hooks primitives registered with rm_thread_add_hooks() in
 *   registration order (BRAVO uses one to scrub the visible-readers table).
 *
 * RETURN VALUES
 *   rm_thread_register() returns 0, or ENOMEM when the record cannot be
 *   allocated (rm_thread_self() then returns NULL; callers treat that as "no
 *   per-thread state" and keep working without it).
 */
#ifndef READMOSTLY_THREAD_H
#define READMOSTLY_THREAD_H

#include <readmostly/platform.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Per-thread counters.  BRAVO's are first; later primitives append. */
enum rm_stat {
  RM_STAT_BRAVO_FAST_READ = 0,    /* read locks taken through the table */
  RM_STAT_BRAVO_SLOW_BIAS_OFF,    /* slow read: RBias was clear */
  RM_STAT_BRAVO_SLOW_COLLISION,   /* slow read: the slot was taken */
  RM_STAT_BRAVO_SLOW_RACED,       /* slow read: a writer revoked in between */
  RM_STAT_BRAVO_WRITE,            /* write locks */
  RM_STAT_BRAVO_REVOKE,           /* revocations (table scans) */
  RM_STAT_BRAVO_REVOKE_NS,        /* nanoseconds spent revoking */
  RM_STAT_MAX = 16
};

struct rm_thread {
  uint64_t id;        /* unique in the process, never reused */
  uint32_t tid;       /* kernel thread id (gettid) */
  uint32_t flags;
  uint64_t stats[RM_STAT_MAX];
  struct rm_thread *next, *prev; /* registry list, under the registry lock */
  void *ext[4];       /* for later primitives' per-thread state */
} RM_ALIGNED;

/* The caller's record, registering it on first use; NULL only on ENOMEM. */
RM_API struct rm_thread *rm_thread_self(void);
/* Register the caller explicitly.  0 or ENOMEM.  Idempotent. */
RM_API int rm_thread_register(void);
/* Remove the caller's record now (it would be removed at exit anyway). */
RM_API void rm_thread_unregister(void);
/* Number of registered threads. */
RM_API size_t rm_thread_count(void);
/* Call fn for every registered thread, under the registry lock: fn must not
 * register or unregister threads. */
RM_API void rm_thread_foreach(void (*fn)(struct rm_thread *t, void *arg), void *arg);
/* Sum of counter `which` over live threads plus retired ones. */
RM_API uint64_t rm_thread_stats_sum(enum rm_stat which);
/* Zero every thread's counters and the retired totals. */
RM_API void rm_thread_stats_reset(void);

/* Hooks primitives register once (they are never removed).
 *   on_exit(t): the thread owning t is leaving (t is still linked);
 *   on_fork_child(): in the child, after the registry is rebuilt.
 * Returns 0, or ENOSPC beyond 8 hooks. */
struct rm_thread_hooks {
  void (*on_exit)(struct rm_thread *t);
  void (*on_fork_child)(void);
};
RM_API int rm_thread_add_hooks(const struct rm_thread_hooks *hooks);

/* Add v to the caller's counter (no-op if the caller has no record). */
RM_API void rm_thread_stat_add(enum rm_stat which, uint64_t v);

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_THREAD_H */
