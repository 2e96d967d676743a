/*
 * rcu_internal.h - what rcu.c shares with urcu.c (internal: not installed).
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

#endif /* READMOSTLY_RCU_INTERNAL_H */
