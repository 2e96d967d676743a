/*
 * test_urcu_flavors.c - liburcu's flavors side by side, from readmostly's
 * compat directory (include/readmostly/urcu-compat first on the include
 * path, nothing included before <urcu.h>):
 *  - <urcu.h> then <urcu/rculist.h> alone: cds_list_del_rcu needs
 *    CMM_STORE_SHARED, which must arrive through our <urcu/pointer.h>;
 *    caa_container_of is there;
 *  - <urcu/urcu-bp.h>, <urcu/urcu-mb.h>, <urcu/urcu-signal.h> (and
 *    <urcu/urcu-qsbr.h> when the tree has the QSBR flavor) in the same
 *    file: the flavor-less names stay memb's, every prefixed name works;
 *  - a second file (urcu_prefixed_only.c) with prefixed headers only: no
 *    flavor-less name defined, and no clash at link time;
 *  - the top-level headers and the *_sym functions.
 * Readers check that a node they reach was never freed (a poison value)
 * while writers replace and free through each flavor in turn.
 */
#define _LGPL_SOURCE
#include <urcu.h>

#include <urcu/rculist.h>

#include <urcu/urcu-bp.h>
#include <urcu/urcu-mb.h>
#include <urcu/urcu-signal.h>
#if __has_include(<readmostly/rcu_qsbr.h>)
#include <urcu/urcu-qsbr.h>
#define HAVE_QSBR 1
#else
#define HAVE_QSBR 0
#endif
#include <urcu-call-rcu.h>
#include <urcu-defer.h>
#include <urcu-flavor.h>
#include <urcu-pointer.h>
#include <urcu/flavor.h>
#include <urcu/pointer.h>

#include "test.h"
#include <sched.h>

int prefixed_only_check(void); /* urcu_prefixed_only.c */

struct node {
  int key;
  int alive; /* 1 while reachable; 0xdead once retired */
  struct cds_list_head list;
  struct rcu_head rcu_head;
};

static CDS_LIST_HEAD(head);
static int stop;
static int started; /* readers that have run a section */
static int freed;

static void free_node(struct rcu_head *h) {
  struct node *n = caa_container_of(h, struct node, rcu_head);
  n->alive = 0xdead;
  free(n);
  __atomic_fetch_add(&freed, 1, __ATOMIC_RELAXED);
}

/* A bp reader: never registers (the first read lock does). */
static void *reader(void *arg) {
  (void)arg;
  long sections = 0;
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    urcu_bp_read_lock();
    CHECK(urcu_bp_read_ongoing());
    CHECK(urcu_memb_read_ongoing()); /* one domain: every flavor sees it */
    struct node *n;
    cds_list_for_each_entry_rcu(n, &head, list) CHECK_EQ(n->alive, 1);
    urcu_bp_read_unlock();
    if (sections++ == 0) __atomic_fetch_add(&started, 1, __ATOMIC_RELEASE);
  }
  CHECK(sections > 0);
  return NULL;
}

/* Replace the list's first node; retire the old one through `how`. */
static void replace(int how, int key) {
  struct node *n = (struct node *)calloc(1, sizeof *n);
  n->key = key;
  n->alive = 1;
  struct node *old = cds_list_entry(head.next, struct node, list);
  cds_list_replace_rcu(&old->list, &n->list);
  switch (how) {
  case 0: /* flavor-less: memb */
    synchronize_rcu();
    old->alive = 0xdead;
    free(old);
    __atomic_fetch_add(&freed, 1, __ATOMIC_RELAXED);
    break;
  case 1:
    urcu_mb_call_rcu(&old->rcu_head, free_node);
    break;
  case 2:
    urcu_signal_synchronize_rcu();
    free_node(&old->rcu_head);
    break;
  default:
    urcu_bp_call_rcu(&old->rcu_head, free_node);
    break;
  }
}

int main(void) {
  /* The flavor-less names are memb's, in this file. */
  CHECK(&rcu_read_lock == &urcu_memb_read_lock);
  CHECK(&call_rcu == &urcu_memb_call_rcu);
  CHECK(&rcu_flavor == &urcu_memb_flavor);
  CHECK(&urcu_bp_flavor == &urcu_memb_flavor && &urcu_mb_flavor == &urcu_memb_flavor &&
        &urcu_signal_flavor == &urcu_memb_flavor);
  CHECK(rcu_flavor.read_lock != NULL && rcu_flavor.update_call_rcu != NULL);
  /* liburcu's older names. */
  CHECK(&rcu_read_lock_memb == &urcu_memb_read_lock);
  CHECK(&synchronize_rcu_sig == &urcu_signal_synchronize_rcu);
  CHECK(&rcu_bp_before_fork == &urcu_bp_before_fork);
  CHECK_EQ(prefixed_only_check(), 1);

  rcu_init();
  urcu_mb_init();
  urcu_signal_init();
  urcu_bp_init();
  rcu_register_thread();

  for (int i = 0; i < 4; i++) {
    struct node *n = (struct node *)calloc(1, sizeof *n);
    n->key = i;
    n->alive = 1;
    cds_list_add_rcu(&n->list, &head);
  }
  /* More readers than cores. */
  pthread_t t[3];
  for (int i = 0; i < 3; i++) CHECK_EQ(pthread_create(&t[i], NULL, reader, NULL), 0);
  /* Retire while every reader is running sections. */
  while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < 3) sched_yield();
  for (int i = 0; i < 400; i++) replace(i % 4, 100 + i);
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < 3; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
  urcu_signal_barrier();
  urcu_bp_defer_barrier();
  CHECK_EQ(__atomic_load_n(&freed, __ATOMIC_RELAXED), 400);

  /* cds_list_del_rcu (the name that failed to link) and the defer names. */
  struct node *n, *tmp;
  cds_list_for_each_entry_safe(n, tmp, &head, list) {
    cds_list_del_rcu(&n->list);
    urcu_mb_defer_rcu(free, n);
  }
  urcu_mb_defer_barrier_thread();
  CHECK(cds_list_empty(&head));

  /* Every flavor's read side nests with the others (one domain). */
  urcu_memb_read_lock();
  urcu_mb_read_lock();
  urcu_signal_read_lock();
  CHECK(urcu_bp_read_ongoing() && rcu_read_ongoing());
  urcu_signal_read_unlock();
  urcu_mb_read_unlock();
  urcu_memb_read_unlock();
  CHECK(!urcu_memb_read_ongoing());
  urcu_memb_quiescent_state();
  urcu_signal_thread_offline();
  urcu_signal_thread_online();

  /* The pointer functions: flavor-less, bp's, and the *_sym ones. */
  int a = 1, b = 2;
  int *p = NULL;
  rcu_assign_pointer(p, &a);
  CHECK(rcu_dereference(p) == &a);
  urcu_bp_set_pointer(&p, &b);
  CHECK(urcu_bp_dereference(p) == &b);
  CHECK(urcu_bp_xchg_pointer(&p, &a) == &b);
  CHECK(urcu_bp_cmpxchg_pointer(&p, &a, &b) == &a);
  void *vp = &a;
  CHECK(rcu_dereference_sym(vp) == &a);
  CHECK(rcu_set_pointer_sym(&vp, &b) == &b && vp == &b);
  CHECK(rcu_xchg_pointer_sym(&vp, &a) == &b);
  CHECK(rcu_cmpxchg_pointer_sym(&vp, &b, &a) == &a); /* fails: returns the value held */
  CHECK(urcu_bp_cmpxchg_pointer_sym(&vp, &a, &b) == &a && vp == &b);
  CHECK(urcu_bp_dereference_sym(vp) == &b);
  CHECK(urcu_bp_xchg_pointer_sym(&vp, &a) == &b);
  CHECK(urcu_bp_set_pointer_sym(&vp, &b) == &b);

  /* call_rcu data through a prefixed flavor; errors as liburcu's. */
  struct call_rcu_data *crd = urcu_signal_create_call_rcu_data(URCU_CALL_RCU_RT, -1);
  CHECK(crd != NULL);
  urcu_signal_set_thread_call_rcu_data(crd);
  CHECK(urcu_signal_get_call_rcu_data() == crd && urcu_mb_get_thread_call_rcu_data() == crd);
  (void)urcu_signal_get_call_rcu_thread(crd);
  urcu_signal_set_thread_call_rcu_data(NULL);
  urcu_signal_call_rcu_data_free(crd);
  errno = 0;
  CHECK(urcu_mb_set_cpu_call_rcu_data(-1, NULL) == -EINVAL && errno == EINVAL);
  CHECK(urcu_bp_get_default_call_rcu_data() == get_default_call_rcu_data());
  urcu_bp_call_rcu_before_fork();
  urcu_bp_call_rcu_after_fork_parent();

#if HAVE_QSBR
  /* qsbr beside memb in one file. */
  CHECK(&urcu_qsbr_flavor != &urcu_memb_flavor);
  urcu_qsbr_register_thread();
  urcu_qsbr_read_lock();
  CHECK(urcu_qsbr_read_ongoing());
  urcu_qsbr_read_unlock();
  urcu_qsbr_quiescent_state();
  struct node *q = (struct node *)calloc(1, sizeof *q);
  q->alive = 1;
  CHECK(urcu_qsbr_read_ongoing()); /* liburcu's qsbr answer: online */
  urcu_qsbr_thread_offline();
  CHECK(!urcu_qsbr_read_ongoing());
  urcu_qsbr_synchronize_rcu();
  urcu_qsbr_thread_online();
  urcu_qsbr_call_rcu(&q->rcu_head, free_node);
  urcu_qsbr_thread_offline();
  urcu_qsbr_barrier();
  urcu_qsbr_thread_online();
  CHECK_EQ(__atomic_load_n(&freed, __ATOMIC_RELAXED), 401);
  urcu_qsbr_unregister_thread();
#endif

  rcu_unregister_thread();
  rcu_exit();
  TEST_MAIN_END();
}
