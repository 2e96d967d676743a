/*
 * <urcu/map/readmostly.h> (readmostly's liburcu compat directory) -
 * liburcu's flavor-less names (rcu_read_lock, call_rcu, ...) for the flavor RM_URCU_API_FLAVOR: included by the compat
 * directory's flavor headers (readmostly/urcu-compat/urcu/urcu-*.h), once,
 * by the first one included while URCU_API_MAP is defined.  See
 * readmostly/urcu_flavor.h.  Not included directly.
 */
#ifndef READMOSTLY_URCU_MAP_H
#define READMOSTLY_URCU_MAP_H

#ifndef RM_URCU_API_FLAVOR
#error "urcu/map/readmostly.h: include <urcu.h>, <urcu-bp.h> or <urcu-qsbr.h> instead"
#endif

/* Expanded where the name is used: RM_URCU_API_FLAVOR is never redefined. */
#define RM_URCU_API(n) RM_URCU_NAME(RM_URCU_API_FLAVOR, n)

#define rcu_read_lock RM_URCU_API(read_lock)
#define _rcu_read_lock RM_URCU_API(read_lock)
#define rcu_read_unlock RM_URCU_API(read_unlock)
#define _rcu_read_unlock RM_URCU_API(read_unlock)
#define rcu_read_ongoing RM_URCU_API(read_ongoing)
#define _rcu_read_ongoing RM_URCU_API(read_ongoing)
#define rcu_quiescent_state RM_URCU_API(quiescent_state)
#define _rcu_quiescent_state RM_URCU_API(quiescent_state)
#define rcu_thread_offline RM_URCU_API(thread_offline)
#define rcu_thread_online RM_URCU_API(thread_online)
#define rcu_register_thread RM_URCU_API(register_thread)
#define rcu_unregister_thread RM_URCU_API(unregister_thread)
#define rcu_init RM_URCU_API(init)
#define rcu_exit RM_URCU_API(exit)
#define synchronize_rcu RM_URCU_API(synchronize_rcu)

#define call_rcu RM_URCU_API(call_rcu)
#define rcu_barrier RM_URCU_API(barrier)
#define create_call_rcu_data RM_URCU_API(create_call_rcu_data)
#define call_rcu_data_free RM_URCU_API(call_rcu_data_free)
#define get_default_call_rcu_data RM_URCU_API(get_default_call_rcu_data)
#define get_cpu_call_rcu_data RM_URCU_API(get_cpu_call_rcu_data)
#define get_thread_call_rcu_data RM_URCU_API(get_thread_call_rcu_data)
#define get_call_rcu_data RM_URCU_API(get_call_rcu_data)
#define get_call_rcu_thread RM_URCU_API(get_call_rcu_thread)
#define set_thread_call_rcu_data RM_URCU_API(set_thread_call_rcu_data)
#define set_cpu_call_rcu_data RM_URCU_API(set_cpu_call_rcu_data)
#define create_all_cpu_call_rcu_data RM_URCU_API(create_all_cpu_call_rcu_data)
#define free_all_cpu_call_rcu_data RM_URCU_API(free_all_cpu_call_rcu_data)
#define call_rcu_before_fork RM_URCU_API(call_rcu_before_fork)
#define call_rcu_after_fork_parent RM_URCU_API(call_rcu_after_fork_parent)
#define call_rcu_after_fork_child RM_URCU_API(call_rcu_after_fork_child)

#define defer_rcu RM_URCU_API(defer_rcu)
#define rcu_defer_register_thread RM_URCU_API(defer_register_thread)
#define rcu_defer_unregister_thread RM_URCU_API(defer_unregister_thread)
#define rcu_defer_barrier RM_URCU_API(defer_barrier)
#define rcu_defer_barrier_thread RM_URCU_API(defer_barrier_thread)
#define rcu_defer_exit RM_URCU_API(defer_exit)

#define rcu_flavor RM_URCU_API(flavor)
#define urcu_register_rculfhash_atfork RM_URCU_API(register_rculfhash_atfork)
#define urcu_unregister_rculfhash_atfork RM_URCU_API(unregister_rculfhash_atfork)

#endif /* READMOSTLY_URCU_MAP_H */
