/*
 * test_rcu_calls.c - call_rcu data objects, rm_rcu_barrier and fork at
 * their edges (readmostly/rcu.h, "Callbacks", "fork()"):
 *
 *  - a barrier never holds a lock across a grace period: a fork inside a
 *    read section, and object creation, per-CPU setting and batching set
 *    from a read section or from a callback, while another thread's
 *    barrier waits, all return (before, each deadlocked);
 *  - the barrier's markers are not on the waiting thread's stack: a fork
 *    while it waits leaves the child a working barrier even when a new
 *    thread in the child reuses that stack;
 *  - a barrier concurrent with rm_rcu_call_data_free() still waits for the
 *    callbacks queued on that object (before, it returned early);
 *  - rm_rcu_call_before_fork() lets a callback that runs on a worker finish
 *    before fork(), so the child does not lose it;
 *  - per-CPU objects: filling after a set, EEXIST over a set entry, EINVAL
 *    out of range, and rm_rcu_call() does not register an unregistered
 *    caller (which would cost every later grace period a membarrier);
 *  - a batch delay of UINT64_MAX does not make the worker spin;
 *  - careless calls inside a read section never run callbacks without a
 *    grace period: rm_rcu_call_data_free (EDEADLK), rm_rcu_call_data_free_
 *    per_cpu (EDEADLK), rm_rcu_defer when no node can be allocated
 *    (EDEADLK); a callback that returns inside a section has it ended for
 *    it; release builds say so in one line that names the function called.
 *
 * Each case runs in a child process under an alarm, so that a deadlock
 * fails the case instead of hanging the run.  Checks the library makes
 * with an assertion abort in builds with assertions (SIGABRT expected
 * there); CTest runs this file again over a library built with NDEBUG
 * (unit.rcu_calls.release), where they return the error.
 */
#include "test.h"
#include <readmostly/rcu.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(RM_TEST_RELEASE_LIB) || defined(NDEBUG)
#define LIB_ASSERTS 0
#else
#define LIB_ASSERTS 1
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TEST_SANITIZED 1
#endif
#endif
#ifndef TEST_SANITIZED
#define TEST_SANITIZED 0
#endif

static int failures;

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Run fn in a child under an alarm; expect exit 0, or SIGABRT when
 * `aborts` (a check the library makes with an assertion). */
static void run_case(const char *name, bool aborts, void (*fn)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    alarm(30);
    if (aborts && !freopen("/dev/null", "w", stderr)) _exit(9); /* the expected message */
    fn();
    _exit(0);
  }
  int st = 0;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  bool ok = aborts ? (WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT)
                   : (WIFEXITED(st) && WEXITSTATUS(st) == 0);
  if (!ok) {
    fprintf(stderr, "FAIL %s: expected %s, got %s %d%s\n", name, aborts ? "SIGABRT" : "exit 0",
            WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
            WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? " (a deadlock: the alarm fired)" : "");
    failures++;
  } else {
    printf("ok %s\n", name);
  }
  CHECK(true);
}

/* Wait for a child of a case; it must exit 0. */
static void child_ok(pid_t pid) {
  int st = 0;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st), 0);
}

/* ---- a barrier that waits, and what runs beside it ------------------------- */

/* A callback that holds its worker for `slow_ms`, so that a barrier behind
 * it waits that long. */
static int slow_started, slow_finished;
static long slow_ms = 300;
static void slow_cb(struct rm_rcu_head *h) {
  (void)h;
  __atomic_store_n(&slow_started, 1, __ATOMIC_RELEASE);
  sleep_ms(slow_ms);
  __atomic_fetch_add(&slow_finished, 1, __ATOMIC_RELEASE);
}

static int barrier_done;
static void *barrier_thread(void *p) {
  (void)p;
  CHECK_ERR(rm_rcu_barrier(), 0);
  __atomic_store_n(&barrier_done, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* Start a barrier in another thread that waits behind a slow callback. */
static pthread_t start_waiting_barrier(void) {
  static struct rm_rcu_head h;
  rm_rcu_call(&h, slow_cb);
  while (!__atomic_load_n(&slow_started, __ATOMIC_ACQUIRE)) sleep_ms(1);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, barrier_thread, NULL), 0);
  sleep_ms(50); /* it is in its wait now, unless the machine is very slow */
  /* The barrier never returns before the callback it waits for has run
   * (on a loaded machine both may be done by now: no failure). */
  if (__atomic_load_n(&barrier_done, __ATOMIC_ACQUIRE))
    CHECK_EQ(__atomic_load_n(&slow_finished, __ATOMIC_ACQUIRE), 1);
  return t;
}

/* fork() inside a read section while another thread's barrier waits: the
 * fork handlers must not need what the barrier holds. */
static void fork_in_section_during_barrier(void) {
  pthread_t t = start_waiting_barrier();
  rm_rcu_read_lock();
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    rm_rcu_read_unlock();
    CHECK_ERR(rm_rcu_synchronize(), 0);
    CHECK_ERR(rm_rcu_barrier(), 0);
    _exit(0);
  }
  rm_rcu_read_unlock();
  child_ok(pid);
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK_EQ(__atomic_load_n(&slow_finished, __ATOMIC_ACQUIRE), 1);
}

/* Object creation, per-CPU setting and batching from a read section while
 * another thread's barrier waits. */
static void calls_in_section_during_barrier(void) {
  pthread_t t = start_waiting_barrier();
  rm_rcu_read_lock();
  struct rm_rcu_call_data *c = NULL;
  CHECK_ERR(rm_rcu_call_data_create(&c), 0);
  CHECK_ERR(rm_rcu_call_data_set_cpu(0, c), 0);
  CHECK_ERR(rm_rcu_call_set_batch(NULL, 1, 1000000), 0);
  rm_rcu_read_unlock();
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK_ERR(rm_rcu_call_data_set_cpu(0, NULL), 0);
  CHECK_ERR(rm_rcu_synchronize(), 0);
  CHECK_ERR(rm_rcu_call_data_free(c), 0);
}

/* The same from a callback (on the worker) while a barrier waits for that
 * worker. */
static int cb_calls_done;
static struct rm_rcu_call_data *cb_made;
static void calls_cb(struct rm_rcu_head *h) {
  (void)h;
  CHECK_ERR(rm_rcu_call_data_create(&cb_made), 0);
  CHECK_ERR(rm_rcu_call_set_batch(NULL, 1, 1000000), 0);
  CHECK_ERR(rm_rcu_call_data_set_cpu(0, cb_made), 0);
  CHECK_ERR(rm_rcu_call_data_set_cpu(0, NULL), 0);
  __atomic_store_n(&cb_calls_done, 1, __ATOMIC_RELEASE);
}
static void calls_in_callback_during_barrier(void) {
  static struct rm_rcu_head h1, h2;
  slow_ms = 100;
  rm_rcu_call(&h1, slow_cb);
  rm_rcu_call(&h2, calls_cb);
  while (!__atomic_load_n(&slow_started, __ATOMIC_ACQUIRE)) sleep_ms(1);
  CHECK_ERR(rm_rcu_barrier(), 0); /* pushed while the slow one runs, before calls_cb */
  CHECK(__atomic_load_n(&cb_calls_done, __ATOMIC_ACQUIRE));
  CHECK_ERR(rm_rcu_synchronize(), 0);
  CHECK_ERR(rm_rcu_call_data_free(cb_made), 0);
}

/* A thread of the child that takes a stack glibc kept from a thread of
 * the parent (the barrier's), and writes all over it. */
static void *scribble(void *p) {
  (void)p;
  volatile unsigned char buf[64 * 1024];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = 0xA5;
  return NULL;
}

/* fork() (outside any section) while another thread's barrier waits: in
 * the child that thread does not exist, its stack may be handed to a new
 * thread, and the child's barrier must still work. */
static void fork_during_barrier_wait(void) {
  pthread_t t = start_waiting_barrier();
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    for (int i = 0; i < 4; i++) {
      pthread_t s;
      CHECK_EQ(pthread_create(&s, NULL, scribble, NULL), 0);
      CHECK_EQ(pthread_join(s, NULL), 0);
    }
    static struct rm_rcu_head h;
    int before = __atomic_load_n(&slow_finished, __ATOMIC_ACQUIRE);
    rm_rcu_call(&h, slow_cb);
    CHECK_ERR(rm_rcu_barrier(), 0);
    CHECK(__atomic_load_n(&slow_finished, __ATOMIC_ACQUIRE) > before);
    _exit(0);
  }
  child_ok(pid);
  CHECK_EQ(pthread_join(t, NULL), 0);
}

/* ---- a barrier beside rm_rcu_call_data_free ------------------------------------ */

static struct rm_rcu_call_data *freed;
static void *free_thread(void *p) {
  (void)p;
  CHECK_ERR(rm_rcu_call_data_free(freed), 0);
  return NULL;
}

static void barrier_during_free(void) {
  static struct rm_rcu_head h;
  CHECK_ERR(rm_rcu_call_data_create(&freed), 0);
  rm_rcu_call_data_set_thread(freed);
  rm_rcu_call(&h, slow_cb);
  rm_rcu_call_data_set_thread(NULL);
  while (!__atomic_load_n(&slow_started, __ATOMIC_ACQUIRE)) sleep_ms(1);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, free_thread, NULL), 0);
  sleep_ms(50); /* the free is draining the object */
  CHECK_ERR(rm_rcu_barrier(), 0);
  /* Queued before the barrier: it has run. */
  CHECK_EQ(__atomic_load_n(&slow_finished, __ATOMIC_ACQUIRE), 1);
  CHECK_EQ(pthread_join(t, NULL), 0);
}

/* ---- fork with rm_rcu_call_before_fork ----------------------------------------- */

/* A callback runs on its worker when the program forks, following
 * liburcu's protocol (rm_rcu_call_before_fork() quiesces the workers
 * between batches).  The callback has finished in the child. */
static void callback_running_at_fork(void) {
  static struct rm_rcu_head h;
  rm_rcu_call(&h, slow_cb);
  while (!__atomic_load_n(&slow_started, __ATOMIC_ACQUIRE)) sleep_ms(1);
  rm_rcu_call_before_fork();
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    rm_rcu_call_after_fork_child();
    CHECK_ERR(rm_rcu_barrier(), 0);
    _exit(__atomic_load_n(&slow_finished, __ATOMIC_ACQUIRE) == 1 ? 0 : 3);
  }
  rm_rcu_call_after_fork_parent();
  child_ok(pid);
  CHECK_ERR(rm_rcu_barrier(), 0);
  CHECK_EQ(__atomic_load_n(&slow_finished, __ATOMIC_ACQUIRE), 1);
  /* After the parent's resume the workers run again. */
  static struct rm_rcu_head h2;
  rm_rcu_call(&h2, slow_cb);
  CHECK_ERR(rm_rcu_barrier(), 0);
  CHECK_EQ(__atomic_load_n(&slow_finished, __ATOMIC_ACQUIRE), 2);
}

/* ---- per-CPU objects --------------------------------------------------------- */

static void per_cpu_semantics(void) {
  long ncpu = sysconf(_SC_NPROCESSORS_CONF);
  struct rm_rcu_call_data *mine = NULL, *other = NULL;
  CHECK_ERR(rm_rcu_call_data_create(&mine), 0);
  CHECK_ERR(rm_rcu_call_data_create(&other), 0);
  CHECK_ERR(rm_rcu_call_data_set_cpu(-1, mine), EINVAL);
  CHECK_ERR(rm_rcu_call_data_set_cpu((int)ncpu, mine), EINVAL);
  CHECK_ERR(rm_rcu_call_data_set_cpu(0, mine), 0);
  /* Over a set entry: EEXIST, the entry unchanged; NULL clears it. */
  CHECK_ERR(rm_rcu_call_data_set_cpu(0, other), EEXIST);
  CHECK(rm_rcu_call_data_cpu(0) == mine);
  /* Creating them all fills the CPUs that have none and keeps CPU 0's. */
  CHECK_ERR(rm_rcu_call_data_create_per_cpu(), 0);
  CHECK(rm_rcu_call_data_cpu(0) == mine);
  for (int i = 1; i < ncpu; i++) CHECK(rm_rcu_call_data_cpu(i) != NULL);
  CHECK_ERR(rm_rcu_call_data_set_cpu(0, NULL), 0);
  CHECK(rm_rcu_call_data_cpu(0) == NULL);
  CHECK_ERR(rm_rcu_call_data_create_per_cpu(), 0); /* fills CPU 0 again */
  CHECK(rm_rcu_call_data_cpu(0) != NULL && rm_rcu_call_data_cpu(0) != mine);
  CHECK_ERR(rm_rcu_call_data_free_per_cpu(), 0);
  for (int i = 0; i < ncpu; i++) CHECK(rm_rcu_call_data_cpu(i) == NULL);
  CHECK_ERR(rm_rcu_call_data_free(mine), 0);
  CHECK_ERR(rm_rcu_call_data_free(other), 0);
}

/* rm_rcu_call() with per-CPU objects from a thread that is not registered
 * leaves it unregistered: it then costs grace periods nothing. */
static struct rm_rcu_head caller_heads[10];
static int caller_go, caller_done;
static void nop_cb(struct rm_rcu_head *h) { (void)h; }
static void *unregistered_caller(void *p) {
  (void)p;
  for (int i = 0; i < 10; i++) rm_rcu_call(&caller_heads[i], nop_cb);
  CHECK(rm_rcu_tls.own == NULL);
  __atomic_store_n(&caller_go, 1, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&caller_done, __ATOMIC_ACQUIRE)) sleep_ms(1);
  return NULL;
}
static void per_cpu_call_unregistered(void) {
  CHECK_ERR(rm_rcu_call_data_create_per_cpu(), 0);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, unregistered_caller, NULL), 0);
  while (!__atomic_load_n(&caller_go, __ATOMIC_ACQUIRE)) sleep_ms(1);
  CHECK_ERR(rm_rcu_barrier(), 0);
  /* The workers go offline after each batch; the caller idles. */
  uint64_t mb0 = __atomic_load_n(&rm_rcu_domain()->consensus_membarrier, __ATOMIC_RELAXED);
  for (int i = 0; i < 1000; i++) CHECK_ERR(rm_rcu_synchronize(), 0);
  uint64_t mb = __atomic_load_n(&rm_rcu_domain()->consensus_membarrier, __ATOMIC_RELAXED) - mb0;
  __atomic_store_n(&caller_done, 1, __ATOMIC_RELEASE);
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK_EQ(mb, 0);
  CHECK_ERR(rm_rcu_call_data_free_per_cpu(), 0);
}

/* ---- batching ------------------------------------------------------------------ */

/* A batch delay of UINT64_MAX: the worker sleeps until the batch fills or
 * a barrier comes (before, the deadline wrapped into the past and the
 * worker spun, about 0.9 s of CPU a second). */
static void batch_delay_max(void) {
  struct rm_rcu_call_data *c = NULL;
  CHECK_ERR(rm_rcu_call_data_create(&c), 0);
  CHECK_ERR(rm_rcu_call_set_batch(c, 1000, UINT64_MAX), 0);
  static struct rm_rcu_head h;
  static int ran;
  rm_rcu_call_data_set_thread(c);
  rm_rcu_call(&h, slow_cb);
  rm_rcu_call_data_set_thread(NULL);
  clockid_t clk;
  CHECK_EQ(pthread_getcpuclockid(rm_rcu_call_data_worker(c), &clk), 0);
  struct timespec a, b;
  CHECK_EQ(clock_gettime(clk, &a), 0);
  sleep_ms(500);
  CHECK_EQ(clock_gettime(clk, &b), 0);
  double cpu = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
  printf("  worker CPU over 0.5 s with one callback waiting: %.3f s\n", cpu);
  CHECK(cpu < 0.1); /* asleep, not spinning */
  CHECK(!__atomic_load_n(&slow_started, __ATOMIC_ACQUIRE)); /* the batch waits */
  (void)ran;
  CHECK_ERR(rm_rcu_barrier(), 0);
  CHECK_EQ(__atomic_load_n(&slow_finished, __ATOMIC_ACQUIRE), 1);
  CHECK_ERR(rm_rcu_call_data_free(c), 0);
}

/* ---- careless calls inside a read section ------------------------------------- */

/* Callbacks, how many ran, and whether any ran before a grace period that
 * began after it was queued (these cases run no grace period of their own
 * beside the workers', so one that completes after the queueing began
 * after it). */
static int early_ran, too_early;
static uint64_t gp_at_queue;
static uint64_t grace_periods(void) {
  struct rm_rcu_stats st;
  rm_rcu_get_stats(&st);
  return st.grace_periods;
}
static void queued_now(void) { __atomic_store_n(&gp_at_queue, grace_periods(), __ATOMIC_RELAXED); }
static void early_cb(struct rm_rcu_head *h) {
  (void)h;
  if (grace_periods() <= __atomic_load_n(&gp_at_queue, __ATOMIC_RELAXED))
    __atomic_fetch_add(&too_early, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&early_ran, 1, __ATOMIC_RELAXED);
}

/* rm_rcu_call_data_free() inside a section would wait for a grace period
 * (its worker's, or its own for an object without one): EDEADLK, and the
 * callbacks still wait for their grace period. */
static void free_in_section(void) {
  struct rm_rcu_call_data *c = NULL;
  CHECK_ERR(rm_rcu_call_data_create(&c), 0);
  CHECK_ERR(rm_rcu_call_set_batch(c, 1000, UINT64_MAX), 0);
  static struct rm_rcu_head h[3];
  rm_rcu_call_data_set_thread(c);
  for (int i = 0; i < 3; i++) rm_rcu_call(&h[i], early_cb);
  rm_rcu_call_data_set_thread(NULL);
  queued_now();
  rm_rcu_read_lock();
  CHECK_ERR(rm_rcu_call_data_free(c), EDEADLK);
  CHECK_EQ(__atomic_load_n(&early_ran, __ATOMIC_RELAXED), 0);
  rm_rcu_read_unlock();
  CHECK_ERR(rm_rcu_call_data_free(c), 0);
  CHECK_EQ(__atomic_load_n(&early_ran, __ATOMIC_RELAXED), 3);
  CHECK_EQ(__atomic_load_n(&too_early, __ATOMIC_RELAXED), 0);
}

static void free_per_cpu_in_section(void) {
  CHECK_ERR(rm_rcu_call_data_create_per_cpu(), 0);
  CHECK_ERR(rm_rcu_call_set_batch(NULL, 1000, UINT64_MAX), 0);
  static struct rm_rcu_head h[3];
  for (int i = 0; i < 3; i++) rm_rcu_call(&h[i], early_cb);
  queued_now();
  rm_rcu_read_lock();
  CHECK_ERR(rm_rcu_call_data_free_per_cpu(), EDEADLK);
  CHECK_EQ(__atomic_load_n(&early_ran, __ATOMIC_RELAXED), 0);
  rm_rcu_read_unlock();
  CHECK_ERR(rm_rcu_call_data_free_per_cpu(), 0);
  CHECK_ERR(rm_rcu_barrier(), 0);
  CHECK_EQ(__atomic_load_n(&early_ran, __ATOMIC_RELAXED), 3);
  CHECK_EQ(__atomic_load_n(&too_early, __ATOMIC_RELAXED), 0);
}

/* rm_rcu_defer() without memory for its node waits for a grace period and
 * calls the function itself; inside a section it cannot wait: EDEADLK, and
 * the function is not called. */
static int fail_malloc;
#if !TEST_SANITIZED
extern void *__libc_malloc(size_t n);
void *malloc(size_t n) {
  if (__atomic_load_n(&fail_malloc, __ATOMIC_RELAXED)) {
    errno = ENOMEM;
    return NULL;
  }
  return __libc_malloc(n);
}
#endif
static int deferred;
static void defer_fn(void *p) {
  (void)p;
  __atomic_fetch_add(&deferred, 1, __ATOMIC_RELAXED);
}
static void defer_oom_in_section(void) {
  CHECK_ERR(rm_rcu_register_thread(), 0);
  rm_rcu_read_lock();
  __atomic_store_n(&fail_malloc, 1, __ATOMIC_RELAXED);
  int e = rm_rcu_defer(defer_fn, NULL);
  __atomic_store_n(&fail_malloc, 0, __ATOMIC_RELAXED);
  CHECK_EQ(e, EDEADLK);
  CHECK_EQ(__atomic_load_n(&deferred, __ATOMIC_RELAXED), 0);
  rm_rcu_read_unlock();
  /* Outside a section it waits for a grace period and calls it. */
  __atomic_store_n(&fail_malloc, 1, __ATOMIC_RELAXED);
  e = rm_rcu_defer(defer_fn, NULL);
  __atomic_store_n(&fail_malloc, 0, __ATOMIC_RELAXED);
  CHECK_EQ(e, 0);
  CHECK_EQ(__atomic_load_n(&deferred, __ATOMIC_RELAXED), 1);
}

/* A callback that returns inside a read section: the section is ended for
 * it (it can never end otherwise, and every later batch of that worker
 * would wait for itself). */
static void leaky_cb(struct rm_rcu_head *h) {
  (void)h;
  rm_rcu_read_lock();
}
static void callback_left_section(void) {
  if (!freopen("/dev/null", "w", stderr)) _exit(9); /* the one-line message */
  static struct rm_rcu_head h1, h2;
  rm_rcu_call(&h1, leaky_cb);
  CHECK_ERR(rm_rcu_barrier(), 0);
  rm_rcu_call(&h2, early_cb);
  queued_now();
  CHECK_ERR(rm_rcu_barrier(), 0);
  CHECK_EQ(__atomic_load_n(&early_ran, __ATOMIC_RELAXED), 1);
  CHECK_EQ(__atomic_load_n(&too_early, __ATOMIC_RELAXED), 0);
  CHECK_ERR(rm_rcu_synchronize(), 0);
}

/* Release builds: one line on stderr naming the function the caller used. */
static void synchronize_message(void) {
  char path[] = "/tmp/rm-rcu-msg-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  unlink(path);
  CHECK(dup2(fd, 2) == 2);
  rm_rcu_read_lock();
  CHECK_ERR(rm_rcu_synchronize(), EDEADLK);
  CHECK_ERR(rm_rcu_barrier(), EDEADLK);
  rm_rcu_read_unlock();
  char buf[512] = {0};
  CHECK(pread(fd, buf, sizeof buf - 1, 0) > 0);
  CHECK(strstr(buf, "rm_rcu_synchronize") != NULL);
  CHECK(strstr(buf, "rm_rcu_barrier") != NULL);
  CHECK(strstr(buf, "synchronize_rcu") == NULL);
}

int main(void) {
  run_case("barrier.fork-in-section", false, fork_in_section_during_barrier);
  run_case("barrier.calls-in-section", false, calls_in_section_during_barrier);
  run_case("barrier.calls-in-callback", false, calls_in_callback_during_barrier);
  if (!TEST_UNDER_TSAN) run_case("barrier.fork-during-wait", false, fork_during_barrier_wait);
  run_case("barrier.during-free", false, barrier_during_free);
  if (!TEST_UNDER_TSAN) run_case("fork.callback-running", false, callback_running_at_fork);
  run_case("per-cpu.semantics", false, per_cpu_semantics);
  run_case("per-cpu.call-unregistered", false, per_cpu_call_unregistered);
  run_case("batch.delay-max", false, batch_delay_max);
  run_case("misuse.free-in-section", LIB_ASSERTS, free_in_section);
  run_case("misuse.free-per-cpu-in-section", LIB_ASSERTS, free_per_cpu_in_section);
  if (!TEST_SANITIZED) run_case("misuse.defer-oom-in-section", LIB_ASSERTS, defer_oom_in_section);
  run_case("misuse.callback-left-section", LIB_ASSERTS, callback_left_section);
  if (!LIB_ASSERTS) run_case("misuse.messages", false, synchronize_message);
  CHECK_EQ(failures, 0);
  TEST_MAIN_END();
}
