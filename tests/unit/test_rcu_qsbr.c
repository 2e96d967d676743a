/*
 * test_rcu_qsbr - the contract of readmostly/rcu_qsbr.h:
 *  - a grace period waits for an online thread until it announces a
 *    quiescent state, and never for an offline, unregistered or exited one;
 *  - concurrent synchronize callers share grace periods;
 *  - an online registered thread may synchronize (it is offline meanwhile
 *    and online after); inside a counted section synchronize is refused
 *    (EDEADLK over a release library, an assertion over a debug one);
 *  - the flavors are independent: a memb section does not hold up a qsbr
 *    grace period and an online qsbr thread does not hold up a memb one;
 *  - call, barrier, defer, per-CPU objects, objects of the other flavor
 *    (EINVAL), callbacks that wait for a grace period;
 *  - fork(): the child does not wait for the parent's other threads.
 * Built over the debug library (unit.rcu_qsbr) and over the release one
 * (unit.rcu_qsbr.release, RM_TEST_RELEASE_LIB).
 */
#include "test.h"
#include <readmostly/rcu_qsbr.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(RM_TEST_RELEASE_LIB) || defined(NDEBUG)
#define LIB_ASSERTS 0
#else
#define LIB_ASSERTS 1
#endif

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool thread_online(void) {
  return __atomic_load_n(&rm_rcu_qsbr_tls.rec->seen, __ATOMIC_RELAXED) != RM_RCU_SEEN_OFFLINE;
}

/* ---- a helper thread that the main thread drives ------------------------- */

enum { H_NOTHING, H_ANNOUNCE, H_OFFLINE, H_UNREGISTER, H_EXIT, H_MEMB_SECTION };
static int h_cmd = H_NOTHING, h_done;
static int h_announcing; /* keep announcing quiescent states */

static void h_do(int cmd) {
  __atomic_store_n(&h_done, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&h_cmd, cmd, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&h_done, __ATOMIC_ACQUIRE)) test_sleep_ms(1);
}

static void *helper(void *p) {
  (void)p;
  CHECK_ERR(rm_rcu_qsbr_register_thread(), 0);
  bool in_memb = false;
  for (;;) {
    int c = __atomic_exchange_n(&h_cmd, H_NOTHING, __ATOMIC_ACQ_REL);
    if (c == H_EXIT) break;
    if (c == H_ANNOUNCE) rm_rcu_qsbr_quiescent_state();
    if (c == H_OFFLINE) rm_rcu_qsbr_thread_offline();
    if (c == H_UNREGISTER) CHECK_ERR(rm_rcu_qsbr_unregister_thread(), 0);
    if (c == H_MEMB_SECTION) {
      if (in_memb) rm_rcu_read_unlock();
      else rm_rcu_read_lock();
      in_memb = !in_memb;
    }
    if (c != H_NOTHING) __atomic_store_n(&h_done, 1, __ATOMIC_RELEASE);
    if (__atomic_load_n(&h_announcing, __ATOMIC_ACQUIRE)) rm_rcu_qsbr_quiescent_state();
    test_sleep_ms(1);
  }
  /* exits registered (online or not): the exit releases the record */
  __atomic_store_n(&h_done, 1, __ATOMIC_RELEASE);
  return NULL;
}

static int sync_done;
static void *sync_thread(void *p) {
  (void)p;
  CHECK_ERR(rm_rcu_qsbr_synchronize(), 0);
  __atomic_fetch_add(&sync_done, 1, __ATOMIC_ACQ_REL);
  return NULL;
}

static void test_waits_for_online(void) {
  pthread_t h, s;
  __atomic_store_n(&sync_done, 0, __ATOMIC_RELAXED);
  CHECK_EQ(pthread_create(&h, NULL, helper, NULL), 0);
  h_do(H_ANNOUNCE); /* registered and running */
  CHECK_EQ(pthread_create(&s, NULL, sync_thread, NULL), 0);
  test_sleep_ms(200);
  CHECK_EQ(__atomic_load_n(&sync_done, __ATOMIC_ACQUIRE), 0); /* the helper has not announced */
  h_do(H_ANNOUNCE);
  pthread_join(s, NULL);
  CHECK_EQ(__atomic_load_n(&sync_done, __ATOMIC_ACQUIRE), 1);

  /* Offline: not waited for. */
  h_do(H_OFFLINE);
  uint64_t t0 = now_ms();
  CHECK_ERR(rm_rcu_qsbr_synchronize(), 0);
  CHECK(now_ms() - t0 < 5000);
  /* Unregistered: not waited for. */
  h_do(H_UNREGISTER);
  CHECK_ERR(rm_rcu_qsbr_synchronize(), 0);
  h_do(H_EXIT);
  pthread_join(h, NULL);

  /* Exited while online: not waited for. */
  CHECK_EQ(pthread_create(&h, NULL, helper, NULL), 0);
  h_do(H_ANNOUNCE);
  h_do(H_EXIT);
  pthread_join(h, NULL);
  CHECK_ERR(rm_rcu_qsbr_synchronize(), 0);
  printf("ok waits for online, not for offline/unregistered/exited\n");
}

static void test_sharing(void) {
  pthread_t h, s[4];
  struct rm_rcu_stats a, b;
  __atomic_store_n(&sync_done, 0, __ATOMIC_RELAXED);
  CHECK_EQ(pthread_create(&h, NULL, helper, NULL), 0);
  h_do(H_ANNOUNCE);
  rm_rcu_qsbr_get_stats(&a);
  for (int i = 0; i < 4; i++) CHECK_EQ(pthread_create(&s[i], NULL, sync_thread, NULL), 0);
  test_sleep_ms(200); /* all four are waiting behind the helper */
  CHECK_EQ(__atomic_load_n(&sync_done, __ATOMIC_ACQUIRE), 0);
  __atomic_store_n(&h_announcing, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < 4; i++) pthread_join(s[i], NULL);
  __atomic_store_n(&h_announcing, 0, __ATOMIC_RELEASE);
  rm_rcu_qsbr_get_stats(&b);
  CHECK_EQ(b.sync_calls - a.sync_calls, 4);
  /* One grace period for the caller that got in first, one for the rest. */
  CHECK(b.grace_periods - a.grace_periods <= 2);
  CHECK(b.sync_shared - a.sync_shared >= 2);
  h_do(H_EXIT);
  pthread_join(h, NULL);
  printf("ok concurrent callers share (%llu grace periods for 4 calls)\n",
         (unsigned long long)(b.grace_periods - a.grace_periods));
}

/* An online registered thread synchronizes: it does not wait for itself,
 * and is online again afterwards; an announcing peer lets it through. */
static void test_sync_online(void) {
  CHECK_ERR(rm_rcu_qsbr_register_thread(), 0);
  CHECK_ERR(rm_rcu_qsbr_register_thread(), 0); /* twice: harmless */
  CHECK(thread_online());
  pthread_t h;
  CHECK_EQ(pthread_create(&h, NULL, helper, NULL), 0);
  h_do(H_ANNOUNCE);
  __atomic_store_n(&h_announcing, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < 20; i++) {
    rm_rcu_qsbr_read_lock();
    rm_rcu_qsbr_read_unlock();
    CHECK_ERR(rm_rcu_qsbr_synchronize(), 0);
    CHECK(thread_online());
  }
  CHECK_ERR(rm_rcu_qsbr_barrier(), 0);
  CHECK(thread_online());
  __atomic_store_n(&h_announcing, 0, __ATOMIC_RELEASE);
  h_do(H_EXIT);
  pthread_join(h, NULL);
  /* Offline and online again. */
  rm_rcu_qsbr_thread_offline();
  CHECK(!thread_online());
  CHECK_ERR(rm_rcu_qsbr_synchronize(), 0);
  CHECK(!thread_online()); /* stays offline */
  rm_rcu_qsbr_thread_online();
  CHECK(thread_online());
  rm_rcu_qsbr_quiescent_state();
  printf("ok synchronize from an online thread\n");
}

/* Nesting is counted (debug callers) and read_ongoing follows it. */
static void test_nesting(void) {
#ifndef NDEBUG
  CHECK(!rm_rcu_qsbr_read_ongoing());
  rm_rcu_qsbr_read_lock();
  rm_rcu_qsbr_read_lock();
  CHECK_EQ(rm_rcu_qsbr_tls.depth, 2);
  CHECK(rm_rcu_qsbr_read_ongoing());
  rm_rcu_qsbr_read_unlock();
  CHECK(rm_rcu_qsbr_read_ongoing());
  rm_rcu_qsbr_read_unlock();
  CHECK(!rm_rcu_qsbr_read_ongoing());
  printf("ok nesting\n");
#endif
}

/* Inside a section: synchronize, barrier, offline and unregister are
 * refused (EDEADLK / EBUSY) over a release library; over a debug one the
 * library asserts (checked in a child). */
#ifndef NDEBUG /* only callers built without NDEBUG count their sections */
static void in_section_calls(void) {
  rm_rcu_qsbr_read_lock();
  CHECK_ERR(rm_rcu_qsbr_synchronize(), EDEADLK);
  CHECK_ERR(rm_rcu_qsbr_barrier(), EDEADLK);
  rm_rcu_qsbr_thread_offline(); /* refused: still online */
  CHECK(thread_online());
  CHECK_ERR(rm_rcu_qsbr_unregister_thread(), EBUSY);
  CHECK(rm_rcu_qsbr_call_data_free_per_cpu() == EDEADLK);
  rm_rcu_qsbr_read_unlock();
  CHECK_ERR(rm_rcu_qsbr_synchronize(), 0);
}
#endif

static void test_edeadlk(void) {
#ifndef NDEBUG
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    alarm(30);
    if (LIB_ASSERTS && !freopen("/dev/null", "w", stderr)) _exit(9);
    in_section_calls();
    _exit(0);
  }
  int st = 0;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  if (LIB_ASSERTS) CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
  else CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  printf("ok inside a section: %s\n", LIB_ASSERTS ? "assertion" : "EDEADLK");
#endif
}

/* The flavors do not wait for each other. */
static void test_independent(void) {
  pthread_t h;
  CHECK_EQ(pthread_create(&h, NULL, helper, NULL), 0);
  h_do(H_ANNOUNCE);
  /* The helper is online and silent: memb's grace periods ignore it. */
  CHECK_ERR(rm_rcu_synchronize(), 0);
  /* The helper is inside a memb section: qsbr's grace periods ignore it
   * once it has announced (it does, in the section: a memb section is no
   * qsbr section). */
  h_do(H_MEMB_SECTION);
  __atomic_store_n(&h_announcing, 1, __ATOMIC_RELEASE);
  CHECK_ERR(rm_rcu_qsbr_synchronize(), 0);
  __atomic_store_n(&h_announcing, 0, __ATOMIC_RELEASE);
  h_do(H_MEMB_SECTION);
  h_do(H_EXIT);
  pthread_join(h, NULL);
  printf("ok flavors independent\n");
}

/* ---- callbacks ------------------------------------------------------------ */

static int cb_runs;
static void cb(struct rm_rcu_head *h) {
  (void)h;
  __atomic_fetch_add(&cb_runs, 1, __ATOMIC_ACQ_REL);
}
static int defer_runs;
static void deferred(void *p) {
  CHECK(p == &defer_runs);
  __atomic_fetch_add(&defer_runs, 1, __ATOMIC_ACQ_REL);
}
/* A callback that reads: the worker is online and registered then. */
static void cb_reads(struct rm_rcu_head *h) {
  rm_rcu_qsbr_read_lock();
  CHECK(thread_online());
  rm_rcu_qsbr_read_unlock();
  cb(h);
}

static void test_calls(void) {
  static struct rm_rcu_head heads[64];
  pthread_t h;
  CHECK_EQ(pthread_create(&h, NULL, helper, NULL), 0);
  h_do(H_ANNOUNCE);
  __atomic_store_n(&cb_runs, 0, __ATOMIC_RELAXED);
  /* A callback waits for the silent online helper. */
  rm_rcu_qsbr_call(&heads[0], cb);
  test_sleep_ms(200);
  CHECK_EQ(__atomic_load_n(&cb_runs, __ATOMIC_ACQUIRE), 0);
  __atomic_store_n(&h_announcing, 1, __ATOMIC_RELEASE);
  CHECK_ERR(rm_rcu_qsbr_barrier(), 0);
  CHECK_EQ(__atomic_load_n(&cb_runs, __ATOMIC_ACQUIRE), 1);
  /* Many, some reading; defer. */
  for (int i = 1; i < 32; i++) rm_rcu_qsbr_call(&heads[i], i % 2 ? cb_reads : cb);
  CHECK_ERR(rm_rcu_qsbr_defer(deferred, &defer_runs), 0);
  CHECK_ERR(rm_rcu_qsbr_barrier(), 0);
  CHECK_EQ(__atomic_load_n(&cb_runs, __ATOMIC_ACQUIRE), 32);
  CHECK_EQ(__atomic_load_n(&defer_runs, __ATOMIC_ACQUIRE), 1);
  /* Objects: own, per thread, per CPU; batching. */
  struct rm_rcu_call_data *c = NULL;
  CHECK_ERR(rm_rcu_qsbr_call_data_create(&c), 0);
  CHECK_ERR(rm_rcu_qsbr_call_set_batch(c, 4, 1000000u), 0);
  rm_rcu_qsbr_call_data_set_thread(c);
  CHECK(rm_rcu_qsbr_call_data_thread() == c);
  CHECK(rm_rcu_qsbr_call_data_current() == c);
  for (int i = 32; i < 40; i++) rm_rcu_qsbr_call(&heads[i], cb);
  CHECK_ERR(rm_rcu_qsbr_barrier(), 0);
  CHECK_EQ(__atomic_load_n(&cb_runs, __ATOMIC_ACQUIRE), 40);
  rm_rcu_qsbr_call_data_set_thread(NULL);
  CHECK_ERR(rm_rcu_qsbr_call_data_create_per_cpu(), 0);
  CHECK(rm_rcu_qsbr_call_data_cpu(0) != NULL);
  for (int i = 40; i < 64; i++) rm_rcu_qsbr_call(&heads[i], cb);
  CHECK_ERR(rm_rcu_qsbr_barrier(), 0);
  CHECK_EQ(__atomic_load_n(&cb_runs, __ATOMIC_ACQUIRE), 64);
  /* The memb flavor's objects are not ours, and ours not memb's. */
  struct rm_rcu_call_data *m = NULL;
  CHECK_ERR(rm_rcu_call_data_create(&m), 0);
  CHECK_ERR(rm_rcu_qsbr_call_data_free(m), EINVAL);
  CHECK_ERR(rm_rcu_qsbr_call_set_batch(m, 2, 0), EINVAL);
  CHECK_ERR(rm_rcu_qsbr_call_data_set_cpu(0, m), EINVAL);
  CHECK_ERR(rm_rcu_call_data_free(c), EINVAL);
  CHECK_ERR(rm_rcu_call_data_free(m), 0);
  CHECK_ERR(rm_rcu_qsbr_call_data_free_per_cpu(), 0);
  CHECK_ERR(rm_rcu_qsbr_call_data_free(c), 0);
  CHECK_ERR(rm_rcu_qsbr_call_data_free(rm_rcu_qsbr_call_data_default()), EINVAL);
  struct rm_rcu_stats st;
  rm_rcu_qsbr_get_stats(&st);
  CHECK(st.callbacks_run >= 64);
  __atomic_store_n(&h_announcing, 0, __ATOMIC_RELEASE);
  h_do(H_EXIT);
  pthread_join(h, NULL);
  printf("ok call, barrier, defer, objects\n");
}

/* fork() while another thread is online and silent: the child's grace
 * periods and callbacks do not wait for it. */
static void test_fork(void) {
  pthread_t h;
  CHECK_EQ(pthread_create(&h, NULL, helper, NULL), 0);
  h_do(H_ANNOUNCE);
  static struct rm_rcu_head hd;
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    alarm(30);
    CHECK_ERR(rm_rcu_qsbr_synchronize(), 0);
    __atomic_store_n(&cb_runs, 0, __ATOMIC_RELAXED);
    rm_rcu_qsbr_call(&hd, cb);
    CHECK_ERR(rm_rcu_qsbr_barrier(), 0);
    CHECK_EQ(__atomic_load_n(&cb_runs, __ATOMIC_ACQUIRE), 1);
    _exit(0);
  }
  int st = 0;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  h_do(H_EXIT);
  pthread_join(h, NULL);
  printf("ok fork\n");
}

int main(void) {
  test_waits_for_online();
  test_sharing();
  test_sync_online();
  test_nesting();
  test_edeadlk();
  test_independent();
  test_calls();
  test_fork();
  CHECK_ERR(rm_rcu_qsbr_unregister_thread(), 0);
  CHECK_ERR(rm_rcu_qsbr_unregister_thread(), 0);
  TEST_MAIN_END();
}
