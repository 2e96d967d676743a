/*
 * rcu_signal_points - a read section in a signal handler at every race
 * point of the thread's own RCU code, deterministically.
 *
 * Built over the debug-yield library, whose race points (RM_DEBUG_YIELD,
 * in the inline read side and the slow paths) call a hook instead of
 * yielding (rm_debug_set_yield_hook).  The hook raises SIGUSR1, whose
 * handler runs at once, on this thread, at that point: it reads inside 1
 * to 3 nested sections, and its own race points raise the signal again,
 * one level deeper (handlers two deep).  The main thread walks through
 * what a thread does with RCU: nested sections, offline and online, a
 * section while offline, quiescent states, synchronize, call_rcu and
 * barrier, unregister and register.  Checks:
 *  - inside every section (the handlers' and the thread's), the thread's
 *    record is its own (not given back), in flight and not offline, so a
 *    grace period would wait for it (readmostly/rcu.h, "Signal handlers");
 *  - a handler leaves rm_rcu_read_ongoing() as it found it, and after each
 *    step of the walk the thread's state is what the step leaves (depth
 *    0, its own record, outside any section, online or offline);
 *  - a grace period run after the walk returns (no record left in flight).
 * In both consensus modes (unit.rcu_signal_points and .fence).
 */
#include "test.h"
#include <readmostly/rcu.h>
#include <signal.h>

static __thread int handler_depth;
static __thread int raising; /* no hook while the hook itself runs */
static uint64_t handlers_run;

static void check_protected(void) {
  struct rm_rcu_thread *t = &rm_rcu_tls;
  CHECK(rm_rcu_read_ongoing());
  CHECK(t->own != NULL);
  CHECK(rm_atomic_load_relaxed(&t->own->in_use) == 1); /* not a record given back */
  CHECK(rm_atomic_load_relaxed(&t->own->passive) == (const void *)&rm_rcu_in_flight);
  CHECK(rm_atomic_load_relaxed(&t->own->seen) != RM_RCU_SEEN_OFFLINE);
}

static void on_signal(int sig) {
  (void)sig;
  int saved = errno;
  handler_depth++;
  __atomic_fetch_add(&handlers_run, 1, __ATOMIC_RELAXED);
  bool before = rm_rcu_read_ongoing();
  int depth = 1 + (int)(handlers_run % 3);
  for (int i = 0; i < depth; i++) rm_rcu_read_lock();
  check_protected();
  for (int i = 0; i < depth; i++) rm_rcu_read_unlock();
  CHECK_EQ(rm_rcu_read_ongoing(), before);
  handler_depth--;
  errno = saved;
}

static void hook(void) {
  if (raising || handler_depth >= 2) return;
  raising = 1;
  raise(SIGUSR1); /* the handler has run when raise() returns */
  raising = 0;
}

/* The thread's state between steps. */
static void check_outside(bool offline) {
  struct rm_rcu_thread *t = &rm_rcu_tls;
  CHECK(!rm_rcu_read_ongoing());
  CHECK_EQ(t->depth, 0);
  CHECK(t->own != NULL);
  CHECK(t->rec == t->own);
  CHECK(rm_atomic_load_relaxed(&t->own->passive) == NULL);
  CHECK_EQ(rm_atomic_load_relaxed(&t->own->seen) == RM_RCU_SEEN_OFFLINE, offline);
}

static void section(int depth) {
  for (int i = 0; i < depth; i++) rm_rcu_read_lock();
  check_protected();
  for (int i = 0; i < depth; i++) rm_rcu_read_unlock();
}

static int cb_ran;
static void cb(struct rm_rcu_head *h) {
  (void)h;
  __atomic_fetch_add(&cb_ran, 1, __ATOMIC_RELAXED);
}

int main(void) {
  /* ThreadSanitizer defers a signal to points of its own (a raise() inside
   * a handler runs after that handler returns): the handler would not run
   * at the race point that raised it, which is the whole test. */
  if (TEST_UNDER_TSAN) TEST_SKIP("ThreadSanitizer delivers signals at its own points");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_NODEFER | SA_RESTART; /* a handler may be interrupted by the next */
  sigemptyset(&sa.sa_mask);
  CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
  CHECK_ERR(rm_rcu_register_thread(), 0);
  /* The call_rcu worker exists before the hook is set: only this thread
   * runs race points while it is. */
  static struct rm_rcu_head heads[4];
  rm_rcu_call(&heads[0], cb);
  CHECK_ERR(rm_rcu_barrier(), 0);

  rm_debug_set_yield_hook(hook);
  for (int round = 0; round < 3; round++) {
    for (int d = 1; d <= 4; d++) section(d);
    check_outside(false);
    rm_rcu_thread_offline();
    check_outside(true);
    rm_rcu_thread_online();
    check_outside(false);
    rm_rcu_thread_offline();
    section(1 + round); /* a section while offline leaves the thread offline */
    check_outside(true);
    rm_rcu_quiescent_state(); /* offline: stays offline */
    check_outside(true);
    rm_rcu_thread_online();
    rm_rcu_quiescent_state();
    check_outside(false);
    CHECK_ERR(rm_rcu_synchronize(), 0);
    check_outside(false);
    rm_rcu_thread_offline();
    CHECK_ERR(rm_rcu_synchronize(), 0); /* offline: stays offline */
    check_outside(true);
    rm_rcu_thread_online();
    rm_rcu_call(&heads[1 + round], cb);
    CHECK_ERR(rm_rcu_barrier(), 0);
    check_outside(false);
    CHECK_ERR(rm_rcu_unregister_thread(), 0);
    CHECK(rm_rcu_tls.own == NULL || rm_rcu_tls.rec == rm_rcu_tls.own); /* a handler may register */
    CHECK_ERR(rm_rcu_register_thread(), 0);
    check_outside(false);
  }
  rm_debug_set_yield_hook(NULL);
  CHECK_EQ(cb_ran, 4);
  CHECK_ERR(rm_rcu_synchronize(), 0);
  printf("%llu handlers ran at race points\n",
         (unsigned long long)__atomic_load_n(&handlers_run, __ATOMIC_RELAXED));
  CHECK(handlers_run > 100);
  TEST_MAIN_END();
}
