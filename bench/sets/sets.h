/*
 * bench/sets/sets.h - every set implementation (set.h) by name, as the set
 * experiments and tests name them:
 *
 *   harris, harris-hp      Harris-Michael, leaky and with hazard pointers
 *   rcu-set                the RCU list / hash table (rcu_set.h) on our
 *                          FCP-RCU (readmostly/rcu.h)
 *   urcu-set               the same code on liburcu's memb flavour, when the
 *                          includer defines RM_SETS_HAVE_URCU_MEMB (and links
 *                          -lurcu-memb); NULL in the table otherwise
 *   rlu, rlu-fence, rlu-defer, rlu-coarse   rlu_set.h
 *
 * rm_sets_all[] lists them in that order (RM_SETS_N entries, urcu-set's may
 * be NULL); rm_set_find(name) returns one or NULL.
 */
#ifndef READMOSTLY_BENCH_SETS_H
#define READMOSTLY_BENCH_SETS_H

#ifdef RM_SETS_HAVE_URCU_MEMB
#ifndef _LGPL_SOURCE
#define _LGPL_SOURCE 1 /* liburcu's inline read side, as its users build it */
#endif
#include <urcu/urcu-memb.h>
#endif
#include <readmostly/rcu.h>
#include <string.h>

#include "harris.h"
#include "rcu_set.h"
#include "rlu_set.h"

/* Our FCP-RCU. */
static inline void rm_sets_rcu_sync(void) {
  if (rm_rcu_synchronize() != 0) abort(); /* EDEADLK: never inside a section */
}
static inline void rm_sets_rcu_register(void) {
  if (rm_rcu_register_thread() != 0) abort();
}
static inline void rm_sets_rcu_unregister(void) { (void)rm_rcu_unregister_thread(); }
RM_RCU_SET_DEFINE(rm_set_rcu, "rcu-set", rm_rcu_read_lock, rm_rcu_read_unlock, rm_sets_rcu_sync,
                  rm_sets_rcu_register, rm_sets_rcu_unregister)

#ifdef RM_SETS_HAVE_URCU_MEMB
static inline void rm_sets_urcu_read_lock(void) { urcu_memb_read_lock(); }
static inline void rm_sets_urcu_read_unlock(void) { urcu_memb_read_unlock(); }
static inline void rm_sets_urcu_sync(void) { urcu_memb_synchronize_rcu(); }
static inline void rm_sets_urcu_register(void) { urcu_memb_register_thread(); }
static inline void rm_sets_urcu_unregister(void) { urcu_memb_unregister_thread(); }
RM_RCU_SET_DEFINE(rm_set_urcu, "urcu-set", rm_sets_urcu_read_lock, rm_sets_urcu_read_unlock,
                  rm_sets_urcu_sync, rm_sets_urcu_register, rm_sets_urcu_unregister)
#define RM_SETS_URCU (&rm_set_urcu)
#else
#define RM_SETS_URCU NULL
#endif

#define RM_SETS_N 8
static const char *const rm_sets_names[RM_SETS_N] = {
    "harris", "harris-hp", "rcu-set", "urcu-set", "rlu", "rlu-fence", "rlu-defer", "rlu-coarse"};
static const struct rm_set_ops *const rm_sets_all[RM_SETS_N] = {
    &rm_set_harris, &rm_set_harris_hp, &rm_set_rcu,       RM_SETS_URCU,
    &rm_set_rlu,    &rm_set_rlu_fence, &rm_set_rlu_defer, &rm_set_rlu_coarse};

static inline const struct rm_set_ops *rm_set_find(const char *name) {
  for (int i = 0; i < RM_SETS_N; i++)
    if (rm_sets_all[i] != NULL && strcmp(rm_sets_all[i]->name, name) == 0) return rm_sets_all[i];
  return NULL;
}

#endif
