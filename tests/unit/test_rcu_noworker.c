/*
 * test_rcu_noworker.c - call_rcu when its worker thread cannot be created:
 * a seccomp filter makes clone() and clone3() fail with EAGAIN, as a
 * process at its thread limit sees.  rm_rcu_call outside a read section
 * then waits for a grace period and runs the callback itself; inside a
 * section it leaves the callback queued, and the next rm_rcu_barrier,
 * still without a worker, runs the queue itself.  Every callback runs
 * exactly once, none before a grace period.
 */
#include "test.h"
#include <readmostly/rcu.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_clone3
#define __NR_clone3 435
#endif

static int no_threads(void) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EAGAIN & SECCOMP_RET_DATA)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
      /* ENOSYS for clone3: glibc then falls back to clone, which fails too. */
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = (unsigned short)(sizeof f / sizeof f[0]), .filter = f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return errno;
  return 0;
}

static int ran[100];
static uint64_t gp_at_queue[100];
static int early;
struct cb {
  struct rm_rcu_head head;
  int i;
};
static struct cb cbs[100];

static void cb_fn(struct rm_rcu_head *h) {
  struct cb *c = (struct cb *)(void *)h;
  ran[c->i]++;
  struct rm_rcu_stats st;
  rm_rcu_get_stats(&st);
  if (st.grace_periods <= gp_at_queue[c->i]) early++; /* no grace period since queueing */
}

static void defer_fn(void *p) { (*(int *)p)++; }

static void queue(int i) {
  struct rm_rcu_stats st;
  rm_rcu_get_stats(&st);
  gp_at_queue[i] = st.grace_periods;
  cbs[i].i = i;
  rm_rcu_call(&cbs[i].head, cb_fn);
}

int main(void) {
  if (TEST_UNDER_TSAN) TEST_SKIP("ThreadSanitizer's runtime and a seccomp filter do not mix");
  int e = no_threads();
  if (e) TEST_SKIP("cannot install a seccomp filter here");
  pthread_t t;
  void *(*nothing)(void *) = (void *(*)(void *))(void *)free;
  CHECK(pthread_create(&t, NULL, nothing, NULL) != 0); /* the filter works */
  fprintf(stderr, "(the next line from readmostly is expected)\n");
  /* Outside a section: synchronous. */
  for (int i = 0; i < 10; i++) {
    queue(i);
    CHECK_EQ(ran[i], 1);
  }
  /* Inside a section: queued, not run (a grace period cannot end here). */
  rm_rcu_read_lock();
  for (int i = 10; i < 60; i++) queue(i);
  rm_rcu_read_unlock();
  for (int i = 10; i < 60; i++) CHECK_EQ(ran[i], 0);
  /* The barrier runs them, in this thread. */
  CHECK_ERR(rm_rcu_barrier(), 0);
  for (int i = 0; i < 60; i++) CHECK_EQ(ran[i], 1);
  CHECK_EQ(early, 0);
  /* defer_rcu takes the same path. */
  static int deferred;
  CHECK_ERR(rm_rcu_defer(defer_fn, &deferred), 0);
  CHECK_EQ(deferred, 1);
  TEST_MAIN_END();
}
