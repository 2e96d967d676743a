/*
 * urcu_prefixed_only.c - part of test_urcu_flavors: liburcu's prefixed
 * flavor headers without URCU_API_MAP define no flavor-less name (as
 * liburcu's <urcu/map/clear.h> ensures), and two flavors' names live in one
 * file and beside another file's (no clash at link time).
 */
#include <urcu/urcu-memb.h>
#include <urcu/urcu-bp.h>
#if __has_include(<readmostly/rcu_qsbr.h>)
#include <urcu/urcu-qsbr.h>
#endif

#if defined(rcu_read_lock) || defined(call_rcu) || defined(synchronize_rcu) || \
    defined(rcu_flavor) || defined(rcu_register_thread)
#error "a prefixed flavor header defined a flavor-less name"
#endif

int prefixed_only_check(void);
int prefixed_only_check(void) {
  urcu_memb_read_lock();
  int in = urcu_memb_read_ongoing() && urcu_bp_read_ongoing();
  urcu_memb_read_unlock();
  return in && !urcu_bp_read_ongoing();
}
