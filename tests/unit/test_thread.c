/* Thread registry: registration on first use, removal at exit, counters
 * retired on exit, explicit unregister, hooks, and state after fork(). */
#include "test.h"
#include <readmostly/thread.h>
#include <sys/wait.h>
#include <unistd.h>

static int exits_seen;
static int fork_hook_ran;
static void on_exit_hook(struct rm_thread *t) {
  (void)t;
  __atomic_fetch_add(&exits_seen, 1, __ATOMIC_RELAXED);
}
static void on_fork_hook(void) { fork_hook_ran = 1; }

static pthread_barrier_t bar;

static void worker(void *arg, int i) {
  (void)arg;
  struct rm_thread *t = rm_thread_self();
  CHECK(t != NULL);
  CHECK(rm_thread_self() == t);
  rm_thread_stat_add(RM_STAT_BRAVO_WRITE, (uint64_t)i + 1);
  pthread_barrier_wait(&bar); /* all registered at once */
  pthread_barrier_wait(&bar); /* main counted them */
}

static void child_worker(void *arg, int i) {
  (void)arg; (void)i;
  if (rm_thread_self() == NULL || rm_thread_count() != 2) _exit(5);
}

static void id_collector(struct rm_thread *t, void *arg) {
  uint64_t *maxid = (uint64_t *)arg;
  if (t->id > *maxid) *maxid = t->id;
}

int main(void) {
  static const struct rm_thread_hooks hooks = {on_exit_hook, on_fork_hook};
  CHECK_ERR(rm_thread_add_hooks(&hooks), 0);
  CHECK_ERR(rm_thread_add_hooks(NULL), EINVAL);
  rm_thread_stats_reset();
  size_t base = rm_thread_count();

  CHECK_ERR(rm_thread_register(), 0);
  CHECK_ERR(rm_thread_register(), 0); /* idempotent */
  struct rm_thread *me = rm_thread_self();
  CHECK(me != NULL);
  CHECK(((uintptr_t)me % RM_CACHE_SECTOR) == 0);
  CHECK_EQ(rm_thread_count(), base + 1);

  /* 6 threads (more than the cores) register on first use. */
  enum { N = 6 };
  CHECK_EQ(pthread_barrier_init(&bar, NULL, N + 1), 0);
  pthread_t th[N];
  struct test_thread_arg_ a[N];
  for (int i = 0; i < N; i++) {
    a[i] = (struct test_thread_arg_){worker, NULL, i};
    CHECK_EQ(pthread_create(&th[i], NULL, test_thread_main_, &a[i]), 0);
  }
  pthread_barrier_wait(&bar);
  CHECK_EQ(rm_thread_count(), base + 1 + N);
  uint64_t maxid = 0;
  rm_thread_foreach(id_collector, &maxid);
  CHECK(maxid >= N + 1);
  pthread_barrier_wait(&bar);
  for (int i = 0; i < N; i++) pthread_join(th[i], NULL);

  /* Removed at exit, counters retired (1+2+...+6 = 21), hooks ran. */
  CHECK_EQ(rm_thread_count(), base + 1);
  CHECK_EQ(rm_thread_stats_sum(RM_STAT_BRAVO_WRITE), 21);
  CHECK_EQ(__atomic_load_n(&exits_seen, __ATOMIC_RELAXED), N);

  /* fork: the child has exactly its own record; hooks ran. */
  CHECK_EQ(pthread_barrier_init(&bar, NULL, 2), 0);
  pthread_t bg;
  struct test_thread_arg_ ba = {worker, NULL, 0};
  CHECK_EQ(pthread_create(&bg, NULL, test_thread_main_, &ba), 0);
  pthread_barrier_wait(&bar); /* bg is registered while we fork */
  CHECK_EQ(rm_thread_count(), base + 2);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    int ok = rm_thread_count() == 1 && rm_thread_self() == me && fork_hook_ran &&
             me->tid == (uint32_t)getpid();
    /* The registry works in the child: a new thread registers and leaves. */
    if (!TEST_UNDER_TSAN) {
      pthread_t ct;
      struct test_thread_arg_ ca = {child_worker, NULL, 0};
      if (pthread_create(&ct, NULL, test_thread_main_, &ca) != 0) _exit(4);
      pthread_join(ct, NULL);
    }
    ok = ok && rm_thread_count() == 1;
    _exit(ok ? 0 : 3);
  }
  int status = 0;
  CHECK_EQ(waitpid(pid, &status, 0), pid);
  CHECK(WIFEXITED(status));
  CHECK_EQ(WEXITSTATUS(status), 0);
  pthread_barrier_wait(&bar);
  pthread_join(bg, NULL);

  /* Explicit unregister. */
  rm_thread_unregister();
  CHECK_EQ(rm_thread_count(), base);
  rm_thread_unregister(); /* harmless twice */
  CHECK(rm_thread_self() != NULL); /* re-registers */
  CHECK_EQ(rm_thread_count(), base + 1);
  TEST_MAIN_END();
}
