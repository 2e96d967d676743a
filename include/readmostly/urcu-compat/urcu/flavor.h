/*
 * <urcu/flavor.h> (readmostly's liburcu compat directory) - liburcu 0.13's
 * flavor table, through which its data structures (liburcu-cds:
 * cds_lfht_new and friends) call the flavor's functions.
 *
 * SYNOPSIS
 *   #include <urcu.h>
 *   #include <urcu/rculfhash.h>
 *   ht = cds_lfht_new(1, 1, 0, CDS_LFHT_AUTO_RESIZE, NULL);   // over rcu_flavor
 *   const struct rcu_flavor_struct *f = &urcu_qsbr_flavor;
 *
 * DESCRIPTION
 *   struct rcu_flavor_struct and struct urcu_atfork have liburcu's layout.
 *   urcu_memb_flavor, urcu_mb_flavor, urcu_signal_flavor and
 *   urcu_bp_flavor name one table, readmostly's rm_urcu_flavor, of FCP-RCU's
 *   functions; urcu_qsbr_flavor names rm_urcu_qsbr_flavor, the QSBR
 *   flavor's.  rcu_flavor (with URCU_API_MAP) is the mapped flavor's.
 *   DEFINE_RCU_FLAVOR(x) defines a table of the flavor-less names, as
 *   liburcu's.  urcu_register_rculfhash_atfork(a) (a flavor's
 *   urcu_<flavor>_register_rculfhash_atfork) has a's hooks run by
 *   readmostly's fork handlers: before fork(), then in the parent or the
 *   child.
 */
#ifndef _URCU_FLAVOR_H
#define _URCU_FLAVOR_H

#include "call-rcu.h"

#ifdef __cplusplus
extern "C" {
#endif

struct urcu_atfork {
  void (*before_fork)(void *priv);
  void (*after_fork_parent)(void *priv);
  void (*after_fork_child)(void *priv);
  void *priv;
};

struct rcu_flavor_struct {
  void (*read_lock)(void);
  void (*read_unlock)(void);
  int (*read_ongoing)(void);
  void (*read_quiescent_state)(void);
  void (*update_call_rcu)(struct rcu_head *head, void (*func)(struct rcu_head *head));
  void (*update_synchronize_rcu)(void);
  void (*update_defer_rcu)(void (*fct)(void *p), void *p);
  void (*thread_offline)(void);
  void (*thread_online)(void);
  void (*register_thread)(void);
  void (*unregister_thread)(void);
  void (*barrier)(void);
  void (*register_rculfhash_atfork)(struct urcu_atfork *atfork);
  void (*unregister_rculfhash_atfork)(struct urcu_atfork *atfork);
};

#define DEFINE_RCU_FLAVOR(x)                                          \
  const struct rcu_flavor_struct x = {                                \
      .read_lock = rcu_read_lock,                                     \
      .read_unlock = rcu_read_unlock,                                 \
      .read_ongoing = rcu_read_ongoing,                               \
      .read_quiescent_state = rcu_quiescent_state,                    \
      .update_call_rcu = call_rcu,                                    \
      .update_synchronize_rcu = synchronize_rcu,                      \
      .update_defer_rcu = defer_rcu,                                  \
      .thread_offline = rcu_thread_offline,                           \
      .thread_online = rcu_thread_online,                             \
      .register_thread = rcu_register_thread,                         \
      .unregister_thread = rcu_unregister_thread,                     \
      .barrier = rcu_barrier,                                         \
      .register_rculfhash_atfork = urcu_register_rculfhash_atfork,    \
      .unregister_rculfhash_atfork = urcu_unregister_rculfhash_atfork, \
  }

#ifdef __cplusplus
}
#endif
#endif /* _URCU_FLAVOR_H */
