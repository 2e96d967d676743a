/*
 * rcu_internal.h - what rcu.c shares with urcu.c and rcu_qsbr.c (internal:
 * not installed).
 *
 * rm_rcu_synchronize_as(name) and rm_rcu_barrier_as(name) are
 * rm_rcu_synchronize() and rm_rcu_barrier() whose release-build message
 * for a call inside a read section names `name`: the function the
 * program called (liburcu's synchronize_rcu through readmostly/urcu.h,
 * say), not ours.
 */
#ifndef READMOSTLY_RCU_INTERNAL_H
#define READMOSTLY_RCU_INTERNAL_H

#include <readmostly/rcu.h>

int rm_rcu_synchronize_as(const char *name);
int rm_rcu_barrier_as(const char *name);

/* Grace periods shared by concurrent callers, for every flavor (rcu.c,
 * invariant 2: gp_seq is even between grace periods, odd during one, and
 * changes only under the flavor's gp_lock).
 *
 * rm_rcu_gp_snapshot() is the gp_seq value that shows the end of a grace
 * period that begins after the call.  It is an RMW (adding 0), not a load:
 * every RMW of gp_seq reads the latest value, so the grace period the
 * caller ends up relying on, whose start (an RMW) comes after this one in
 * gp_seq's order, reads from the release sequence this RMW belongs to: the
 * caller's updates, made before, happen before its version bump and so
 * before every section that sees that version.  seq_cst also places the
 * snapshot before that start in the single total order, so a section that
 * began before the call is one that grace period waits for.
 *
 * rm_rcu_gp_wait() runs grace periods under *lock until gp_seq reaches s:
 * under the lock gp_seq is even and s is at most gp_seq + 2, so one at
 * most, and none when another caller's grace period covered this one.
 * True when this caller ran one. */
static inline uint64_t rm_rcu_gp_snapshot(uint64_t *gp_seq) {
  return (rm_atomic_fetch_add_seq_cst(gp_seq, (uint64_t)0) + 3) & ~(uint64_t)1;
}
static inline bool rm_rcu_gp_wait(uint64_t *gp_seq, pthread_mutex_t *lock, uint64_t s,
                                  void (*run)(void)) {
  bool ran = false;
  if ((int64_t)(rm_atomic_load_acquire(gp_seq) - s) < 0) {
    pthread_mutex_lock(lock);
    while ((int64_t)(rm_atomic_load_acquire(gp_seq) - s) < 0) {
      run();
      ran = true;
    }
    pthread_mutex_unlock(lock);
  }
  return ran;
}

#endif /* READMOSTLY_RCU_INTERNAL_H */
