/*
 * rcu_fork_points - fork() while another thread is inside the library's
 * own critical windows, held there by the debug-yield library's pauses
 * (READMOSTLY_DEBUG_PAUSE, readmostly/platform.h):
 *  - "fcp.switch": rm_fcp_switch_to_fence() has marked the process as
 *    switching (readers fence from now on) but not finished (writers still
 *    issue membarriers).  The child must be able to switch again, and its
 *    grace periods must work, although the thread that was switching does
 *    not exist there;
 *  - "urcu.atfork.nodes": liburcu's urcu_register_rculfhash_atfork() holds
 *    its list lock.  The child must be able to register too.
 * Each child runs under an alarm: a hang fails the test.
 */
#include "test.h"
#include <readmostly/urcu.h>
#include <sys/wait.h>
#include <unistd.h>

#if TEST_UNDER_TSAN
/* A child of a multi-threaded fork() has the parent's other threads in
 * ThreadSanitizer's books, never joined there: not a leak of ours. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "report_thread_leaks=0"; }
#endif

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Fork while `fn` runs in another thread (paused inside for 400 ms); the
 * child runs `child` and must exit 0 within 10 s. */
static void fork_during(void *(*fn)(void *), void (*child)(void), const char *name) {
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, fn, NULL), 0);
  sleep_ms(150);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    alarm(10);
    child();
    _exit(0);
  }
  int st = 0;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fprintf(stderr, "FAIL %s: the child %s %d%s\n", name, WIFSIGNALED(st) ? "died of signal" : "exited",
            WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
            WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? " (it hung)" : "");
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  printf("ok %s\n", name);
}

static void *switcher(void *p) {
  (void)p;
  rm_fcp_switch_to_fence();
  return NULL;
}
static void after_switch_child(void) {
  rm_fcp_switch_to_fence(); /* returns: the switch is complete here */
  CHECK(rm_atomic_load_acquire(&rm_fcp_mode) & RM_FCP_WRITERS_FENCE);
  CHECK(!rm_fcp_membarrier_mode());
  CHECK(rm_rcu_domain()->gate & RM_FCP_GATE_SHUT);
  rm_rcu_read_lock();
  rm_rcu_read_unlock();
  CHECK_ERR(rm_rcu_synchronize(), 0);
}

static struct urcu_atfork hooks[2];
static void *registrar(void *p) {
  (void)p;
  urcu_register_rculfhash_atfork(&hooks[0]);
  return NULL;
}
static void after_register_child(void) {
  urcu_register_rculfhash_atfork(&hooks[1]);
  urcu_unregister_rculfhash_atfork(&hooks[1]);
  urcu_unregister_rculfhash_atfork(&hooks[0]);
}

int main(void) {
  setenv("READMOSTLY_DEBUG_PAUSE", "fcp.switch:400000,urcu.atfork.nodes:400000", 1);
  rm_rcu_register_thread();
  rm_rcu_read_lock();
  rm_rcu_read_unlock();
  if (!rm_fcp_membarrier_mode()) TEST_SKIP("no membarrier: no switch to fence mode to interrupt");
  fork_during(registrar, after_register_child, "fork.urcu-atfork-register");
  fork_during(switcher, after_switch_child, "fork.switch-to-fence");
  TEST_MAIN_END();
}
