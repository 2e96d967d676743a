/*
 * urcu_abi.c - liburcu's memb contract, through its functions.
 *
 * Built against liburcu's headers WITHOUT _LGPL_SOURCE (every urcu_memb_*
 * name is a call) and linked with -lurcu; run once on liburcu alone (which
 * proves the test right) and once with LD_PRELOAD=libreadmostly-urcu.so
 * (EXPECT_URCU_ABI=1 checks that the library serves the calls).  Built
 * with -DLGPL (and _LGPL_SOURCE) it is the refusal test: the library must
 * see the inlined read side, say so, and forward every call to liburcu
 * (EXPECT_URCU_ABI=2).
 *
 *   urcu_abi [seconds]   (torture duration, default 1)
 */
#define _GNU_SOURCE
#ifdef LGPL
#define _LGPL_SOURCE
#endif
#include <urcu/urcu-memb.h>
#include <urcu/call-rcu.h>
#include <urcu/defer.h>
#include <urcu/flavor.h>
#include <urcu/pointer.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(c)                                                           \
  do {                                                                     \
    if (!(c)) {                                                            \
      fprintf(stderr, "urcu_abi: %s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

struct obj {
  long a, b; /* a == b while reachable; poisoned when freed */
  struct rcu_head rh;
};
static struct obj *gp;
static volatile int stop;
static long freed;

static void free_obj(struct rcu_head *h) {
  struct obj *o = caa_container_of(h, struct obj, rh);
  o->a = -1; /* a reader that still sees it fails */
  o->b = -2;
  __atomic_fetch_add(&freed, 1, __ATOMIC_RELAXED);
  free(o);
}

static struct obj *new_obj(long v) {
  struct obj *o = malloc(sizeof *o);
  CHECK(o);
  o->a = o->b = v;
  return o;
}

/* ---- the contract --------------------------------------------------------- */

static volatile int in_section, reader_done;
static void *holder(void *arg) {
  (void)arg;
  urcu_memb_register_thread();
  urcu_memb_read_lock();
  __atomic_store_n(&in_section, 1, __ATOMIC_SEQ_CST);
  usleep(200 * 1000);
  __atomic_store_n(&reader_done, 1, __ATOMIC_SEQ_CST);
  urcu_memb_read_unlock();
  urcu_memb_unregister_thread();
  return NULL;
}

static long deferred;
static void defer_fn(void *p) { __atomic_fetch_add(&deferred, (long)(intptr_t)p, __ATOMIC_RELAXED); }

static void contract(void) {
  urcu_memb_register_thread();
  CHECK(!urcu_memb_read_ongoing());
  urcu_memb_read_lock();
  CHECK(urcu_memb_read_ongoing());
  urcu_memb_read_lock(); /* nesting */
  urcu_memb_read_unlock();
  CHECK(urcu_memb_read_ongoing());
  urcu_memb_read_unlock();
  CHECK(!urcu_memb_read_ongoing());

  /* A grace period waits for a section that began before it. */
  pthread_t t;
  CHECK(pthread_create(&t, NULL, holder, NULL) == 0);
  while (!__atomic_load_n(&in_section, __ATOMIC_SEQ_CST)) usleep(1000);
  urcu_memb_synchronize_rcu();
  CHECK(__atomic_load_n(&reader_done, __ATOMIC_SEQ_CST));
  pthread_join(t, NULL);

  /* Pointers through the *_sym functions. */
  struct obj *a = new_obj(1), *b = new_obj(2);
  rcu_assign_pointer(gp, a);
  urcu_memb_read_lock();
  CHECK(rcu_dereference(gp) == a);
  urcu_memb_read_unlock();
  CHECK(rcu_xchg_pointer(&gp, b) == a);
  CHECK(rcu_cmpxchg_pointer(&gp, a, a) == b); /* fails: gp is b */
  CHECK(rcu_cmpxchg_pointer(&gp, b, a) == b); /* succeeds */
  CHECK(gp == a);
  free(b);

  /* call_rcu and rcu_barrier; a private call_rcu data object. */
  long before = freed;
  urcu_memb_call_rcu(&rcu_xchg_pointer(&gp, NULL)->rh, free_obj);
  urcu_memb_barrier();
  CHECK(freed == before + 1);
  struct call_rcu_data *crd = urcu_memb_create_call_rcu_data(0, -1);
  CHECK(crd);
  CHECK(urcu_memb_get_call_rcu_thread(crd) != 0);
  urcu_memb_set_thread_call_rcu_data(crd);
  CHECK(urcu_memb_get_thread_call_rcu_data() == crd);
  CHECK(urcu_memb_get_call_rcu_data() == crd);
  for (int i = 0; i < 100; i++) urcu_memb_call_rcu(&new_obj(i)->rh, free_obj);
  urcu_memb_barrier();
  CHECK(freed == before + 101);
  urcu_memb_set_thread_call_rcu_data(NULL);
  urcu_memb_call_rcu_data_free(crd);
  CHECK(urcu_memb_get_default_call_rcu_data() != NULL);

  /* defer_rcu. */
  CHECK(urcu_memb_defer_register_thread() == 0);
  for (int i = 1; i <= 10; i++) urcu_memb_defer_rcu(defer_fn, (void *)(intptr_t)i);
  urcu_memb_defer_barrier();
  CHECK(deferred == 55);
  urcu_memb_defer_unregister_thread();

  /* The flavor table reaches the same functions. */
  const struct rcu_flavor_struct *f = &urcu_memb_flavor;
  f->read_lock();
  CHECK(f->read_ongoing());
  f->read_unlock();
  f->update_synchronize_rcu();
  f->update_call_rcu(&new_obj(7)->rh, free_obj);
  f->barrier();
  CHECK(freed == before + 102);

  /* fork with liburcu's protocol: the child can synchronize and call. */
  urcu_memb_call_rcu(&new_obj(8)->rh, free_obj);
  urcu_memb_call_rcu_before_fork();
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    urcu_memb_call_rcu_after_fork_child(); /* still registered: the forking thread */
    urcu_memb_read_lock();
    urcu_memb_read_unlock();
    urcu_memb_synchronize_rcu();
    urcu_memb_call_rcu(&new_obj(9)->rh, free_obj);
    urcu_memb_barrier();
    _exit(freed >= before + 103 ? 0 : 3);
  }
  urcu_memb_call_rcu_after_fork_parent();
  int st;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  urcu_memb_barrier();
  CHECK(freed == before + 103);
  urcu_memb_unregister_thread();
}

/* ---- torture: readers check the invariant while writers replace -------------- */

static long reads;
static void *reader(void *arg) {
  (void)arg;
  urcu_memb_register_thread();
  long n = 0;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
    urcu_memb_read_lock();
    struct obj *o = rcu_dereference(gp);
    if (o) {
      long x = o->a;
      if (n % 64 == 0) sched_yield(); /* preempted inside a section */
      CHECK(x >= 0 && x == o->b);
    }
    if (n % 16 == 0) { /* nested */
      urcu_memb_read_lock();
      struct obj *p = rcu_dereference(gp);
      if (p) CHECK(p->a == p->b && p->a >= 0);
      urcu_memb_read_unlock();
    }
    urcu_memb_read_unlock();
    n++;
  }
  urcu_memb_unregister_thread();
  __atomic_fetch_add(&reads, n, __ATOMIC_RELAXED);
  return NULL;
}

static void *writer(void *arg) {
  long id = (long)(intptr_t)arg, i = 0;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
    struct obj *o = new_obj(id * 1000000 + i++);
    struct obj *old = rcu_xchg_pointer(&gp, o);
    if (!old) continue;
    if (i % 2) {
      urcu_memb_synchronize_rcu();
      free_obj(&old->rh);
    } else {
      urcu_memb_call_rcu(&old->rh, free_obj);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 1.0;
  const char *expect = getenv("EXPECT_URCU_ABI");
  int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "readmostly_urcu_active");
  if (expect && *expect) {
    CHECK(active != NULL);
    CHECK(active() == atoi(expect));
  }
  contract();

  enum { R = 4, W = 2 }; /* 6 threads on 2 cores */
  pthread_t r[R], w[W];
  for (int i = 0; i < R; i++) CHECK(pthread_create(&r[i], NULL, reader, NULL) == 0);
  for (int i = 0; i < W; i++) CHECK(pthread_create(&w[i], NULL, writer, (void *)(intptr_t)(i + 1)) == 0);
  struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
  nanosleep(&ts, NULL);
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < R; i++) pthread_join(r[i], NULL);
  for (int i = 0; i < W; i++) pthread_join(w[i], NULL);
  struct obj *last = rcu_xchg_pointer(&gp, NULL);
  if (last) urcu_memb_call_rcu(&last->rh, free_obj);
  urcu_memb_barrier();
  CHECK(reads > 0);
  printf("urcu_abi: ok (%s, %ld reads, %ld objects freed)\n",
         active ? (active() == 1 ? "readmostly-urcu" : "forwarded to liburcu") : "liburcu",
         reads, freed);
  return 0;
}
