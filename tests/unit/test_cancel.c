/* No lock call is a cancellation point (POSIX lists none of the rwlock
 * calls; glibc's do not act on a request).  For every lock of the
 * operations table and every way a lock call can block, a thread blocked
 * in it is cancelled (deferred): it must still get the lock, return from
 * the call, and act on the request at its next cancellation point, where a
 * cleanup handler releases the lock.  The blocking paths covered:
 *  - a writer behind a write hold (futex waits, BA's and Cohort-RW's
 *    queues and spin-then-sleep waits);
 *  - a reader behind a write hold;
 *  - a writer behind a read hold: for BRAVO-A over a fast (table) hold, the
 *    revocation's wait for the slot, which sleeps once it has waited long.
 * A wait that sleeps with nanosleep() (a cancellation point) fails this
 * test: the thread unwinds inside the lock call, its cleanup handler finds
 * no lock to release (or BA's queue keeps its dead stack node), and the
 * checks below see it. */
#include "test.h"
#include <readmostly/bravo.h>
#include <readmostly/rwlock.h>
#include <signal.h>
#include <unistd.h>

static const struct rm_rwlock_ops *ops;
static const char *what = "setup";

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_cancel: timed out (a lock hung): ";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(2);
  if (write(2, ops ? ops->name : "?", strlen(ops ? ops->name : "?")) < 0) _exit(2);
  if (write(2, " ", 1) < 0 || write(2, what, strlen(what)) < 0) _exit(2);
  if (write(2, "\n", 1) < 0) _exit(2);
  _exit(1);
}

struct victim {
  void *l;
  int write;
  rm_token_t tok;
  int state;   /* 1: about to block in the lock call; 2: returned with the lock */
  int cleaned; /* the cleanup handler released it */
};

static void victim_cleanup(void *p) {
  struct victim *v = (struct victim *)p;
  if (__atomic_load_n(&v->state, __ATOMIC_ACQUIRE) != 2) return;
  CHECK_ERR(v->write ? ops->write_unlock(v->l) : ops->read_unlock(v->l, v->tok), 0);
  __atomic_store_n(&v->cleaned, 1, __ATOMIC_RELEASE);
}

static void *victim_main(void *p) {
  struct victim *v = (struct victim *)p;
  pthread_cleanup_push(victim_cleanup, v);
  __atomic_store_n(&v->state, 1, __ATOMIC_RELEASE);
  int e = v->write ? ops->write_lock(v->l) : ops->read_lock(v->l, &v->tok);
  CHECK_ERR(e, 0);
  __atomic_store_n(&v->state, 2, __ATOMIC_RELEASE);
  for (;;) test_sleep_ms(10); /* nanosleep: a cancellation point */
  pthread_cleanup_pop(0);
  return NULL;
}

static void *new_lock(void) {
  size_t al = ops->align < 16 ? 16 : ops->align;
  size_t sz = (ops->size + al - 1) / al * al;
  void *l = aligned_alloc(al, sz);
  CHECK(l != NULL);
  CHECK_ERR(ops->init(l), 0);
  return l;
}

/* A fast read hold of a BRAVO lock (bias on), taken by this thread. */
static rm_token_t fast_read(void *l) {
  for (int k = 0; k < 1000; k++) {
    rm_token_t t;
    CHECK_ERR(ops->read_lock(l, &t), 0);
    if (t != RM_TOKEN_NONE) return t;
    CHECK_ERR(ops->read_unlock(l, t), 0);
  }
  CHECK(!"no fast read hold after 1000 tries");
  return 0;
}

/* holder: 'w' write hold, 'r' read hold, 'f' fast read hold (BRAVO). */
static void one_case(char holder, int victim_writes) {
  void *l = new_lock();
  rm_token_t ht = RM_TOKEN_NONE;
  if (holder == 'w') CHECK_ERR(ops->write_lock(l), 0);
  else if (holder == 'r') CHECK_ERR(ops->read_lock(l, &ht), 0);
  else ht = fast_read(l);
  struct victim v = {l, victim_writes, 0, 0, 0};
  pthread_t th;
  CHECK_EQ(pthread_create(&th, NULL, victim_main, &v), 0);
  while (__atomic_load_n(&v.state, __ATOMIC_ACQUIRE) == 0) test_sleep_ms(1);
  /* Long enough for spinning waits to reach their sleeping phase (the
   * back-off sleeps after a few hundred rounds, well under a millisecond). */
  test_sleep_ms(100);
  CHECK_EQ(pthread_cancel(th), 0);
  test_sleep_ms(50);
  /* Still blocked: it did not return from the call, with or without the
   * lock (the cancel did not act inside it). */
  CHECK_EQ(__atomic_load_n(&v.state, __ATOMIC_ACQUIRE), 1);
  if (holder == 'w') CHECK_ERR(ops->write_unlock(l), 0);
  else CHECK_ERR(ops->read_unlock(l, ht), 0);
  void *r;
  CHECK_EQ(pthread_join(th, &r), 0);
  CHECK(r == PTHREAD_CANCELED);
  CHECK_EQ(v.state, 2);   /* the call returned with the lock ... */
  CHECK_EQ(v.cleaned, 1); /* ... and the cleanup handler released it */
  /* Nothing is left behind: the lock is free, for writers and readers. */
  CHECK_ERR(ops->write_lock(l), 0);
  CHECK_ERR(ops->write_unlock(l), 0);
  rm_token_t t;
  CHECK_ERR(ops->read_lock(l, &t), 0);
  CHECK_ERR(ops->read_unlock(l, t), 0);
  CHECK_ERR(ops->destroy(l), 0);
  free(l);
}

/* test_cancel [lock-name]: all locks, or one. */
int main(int argc, char **argv) {
  signal(SIGALRM, on_alarm);
  CHECK_ERR(rm_bravo_set_inhibit_multiplier(0), 0); /* the bias comes back at once */
  for (const struct rm_rwlock_ops *const *p = rm_rwlock_ops_all(); *p; p++) {
    ops = *p;
    if (argc > 1 && strcmp(argv[1], ops->name) != 0) continue;
    /* ThreadSanitizer's interceptors lose track of a glibc rwlock that a
     * cancelled thread's cleanup handler unlocks (it then reports the next
     * lock as a "double lock"); glibc's locks are checked without it. */
    if (TEST_UNDER_TSAN && strstr(ops->name, "pthread")) continue;
    fprintf(stderr, "%s\n", ops->name);
    alarm(60);
    what = "writer behind a write hold";
    one_case('w', 1);
    what = "reader behind a write hold";
    one_case('w', 0);
    what = "writer behind a read hold";
    one_case('r', 1);
    if (ops->flags & RM_RWLOCK_BIASED) {
      what = "writer revoking, waiting for a fast read hold";
      one_case('f', 1);
    }
    alarm(0);
  }
  TEST_MAIN_END();
}
