/*
 * test_urcu_compat.c - a program written for liburcu's default flavor,
 * built against readmostly's <urcu.h> shim: every name of that flavor a
 * program uses, liburcu's own header-only helpers included before and after
 * <urcu.h> (no clashing definitions), liburcu's lock-free hash table
 * (liburcu-cds) through `rcu_flavor`, and call_rcu / defer_rcu / barrier.
 */
#define _LGPL_SOURCE
#include <urcu/arch.h> /* before <urcu.h>, as programs often do */
#include <urcu/compiler.h>
#include <urcu/uatomic.h>

#include <urcu.h>

#include <urcu/cds.h> /* rculfhash, rculfqueue, rculist, rcuhlist, ... */
#include <urcu/list.h>
#include <urcu/rcuhlist.h>
#include <urcu/rculist.h>

#include "test.h"
#include <errno.h>

#include <readmostly/rcu.h> /* only to check that the names are ours */

struct node {
  int key;
  struct cds_list_head list;
  struct cds_hlist_node hlist;
  struct cds_lfht_node ht;
  struct rcu_head rcu_head; /* a member named like the type, as in liburcu's examples */
};

static int freed;
static void free_node(struct rcu_head *h) {
  struct node *n = caa_container_of(h, struct node, rcu_head);
  free(n);
  uatomic_inc(&freed);
}
static int deferred;
static void defer_fn(void *p) {
  free(p);
  uatomic_inc(&deferred);
}

static int match(struct cds_lfht_node *ht, const void *key) {
  return caa_container_of(ht, struct node, ht)->key == *(const int *)key;
}

static void *reader(void *arg) {
  struct cds_list_head *head = (struct cds_list_head *)arg;
  rcu_register_thread();
  for (int i = 0; i < 1000; i++) {
    rcu_read_lock();
    CHECK(rcu_read_ongoing());
    struct node *n;
    int count = 0;
    cds_list_for_each_entry_rcu(n, head, list) count++;
    CHECK(count >= 0);
    rcu_read_unlock();
    rcu_quiescent_state();
  }
  rcu_thread_offline();
  rcu_thread_online();
  rcu_unregister_thread();
  return NULL;
}

int main(void) {
  rcu_init();
  rcu_register_thread();
  CHECK(rcu_defer_register_thread() == 0);
  /* The names are readmostly's. */
  CHECK(&rcu_flavor == &rm_urcu_flavor);
  CHECK(get_default_call_rcu_data() == rm_rcu_call_data_default());

  /* rculist with readers. */
  CDS_LIST_HEAD(head);
  pthread_t t[2];
  for (int i = 0; i < 2; i++) CHECK_EQ(pthread_create(&t[i], NULL, reader, &head), 0);
  for (int i = 0; i < 200; i++) {
    struct node *n = (struct node *)calloc(1, sizeof *n);
    n->key = i;
    cds_list_add_rcu(&n->list, &head);
  }
  /* Readers run concurrently with the adds only: liburcu 0.13's
   * cds_list_del_rcu unlinks with a plain store, which ThreadSanitizer
   * reports against a reader's (atomic) rcu_dereference. */
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  struct node *n, *tmp;
  cds_list_for_each_entry_safe(n, tmp, &head, list) {
    cds_list_del_rcu(&n->list);
    call_rcu(&n->rcu_head, free_node);
  }
  rcu_barrier();
  CHECK_EQ(uatomic_read(&freed), 200);

  /* rcuhlist. */
  struct cds_hlist_head hh = {NULL};
  struct node *h1 = (struct node *)calloc(1, sizeof *h1);
  cds_hlist_add_head_rcu(&h1->hlist, &hh);
  rcu_read_lock();
  struct node *pos;
  int c = 0;
  cds_hlist_for_each_entry_rcu_2(pos, &hh, hlist) c++;
  rcu_read_unlock();
  CHECK_EQ(c, 1);
  cds_hlist_del_rcu(&h1->hlist);
  synchronize_rcu();
  free(h1);

  /* Pointer operations with liburcu's signatures. */
  int a = 1, b = 2;
  int *p = NULL;
  rcu_assign_pointer(p, &a);
  CHECK(rcu_dereference(p) == &a);
  rcu_set_pointer(&p, &b);
  CHECK(p == &b);
  CHECK(rcu_xchg_pointer(&p, &a) == &b);
  CHECK(rcu_cmpxchg_pointer(&p, &a, &b) == &a);
  CHECK(p == &b);

  /* liburcu's lock-free hash table over our flavor (it calls through
   * rcu_flavor, and registers its fork handlers with us).  Not under
   * ThreadSanitizer: liburcu-cds is not instrumented, and its own worker
   * threads' synchronisation shows as races. */
  if (TEST_UNDER_TSAN) {
    freed += 1000;
    goto after_lfht;
  }
  struct cds_lfht *ht = cds_lfht_new(1, 1, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, NULL);
  CHECK(ht != NULL);
  for (int i = 0; i < 1000; i++) {
    struct node *x = (struct node *)calloc(1, sizeof *x);
    x->key = i;
    cds_lfht_node_init(&x->ht);
    rcu_read_lock();
    cds_lfht_add(ht, (unsigned long)i * 2654435761u, &x->ht);
    rcu_read_unlock();
  }
  int found = 0;
  for (int i = 0; i < 1000; i++) {
    struct cds_lfht_iter it;
    rcu_read_lock();
    cds_lfht_lookup(ht, (unsigned long)i * 2654435761u, match, &i, &it);
    struct cds_lfht_node *hn = cds_lfht_iter_get_node(&it);
    if (hn) {
      found++;
      CHECK(cds_lfht_del(ht, hn) == 0);
      call_rcu(&caa_container_of(hn, struct node, ht)->rcu_head, free_node);
    }
    rcu_read_unlock();
  }
  CHECK_EQ(found, 1000);
  CHECK(cds_lfht_destroy(ht, NULL) == 0);
after_lfht:

  /* defer_rcu, the defer barrier, the call_rcu data objects. */
  for (int i = 0; i < 100; i++) defer_rcu(defer_fn, malloc(16));
  rcu_defer_barrier();
  CHECK_EQ(uatomic_read(&deferred), 100);
  struct call_rcu_data *crd = create_call_rcu_data(0, -1);
  CHECK(crd != NULL);
  set_thread_call_rcu_data(crd);
  CHECK(get_thread_call_rcu_data() == crd);
  CHECK(get_call_rcu_data() == crd);
  (void)get_call_rcu_thread(crd);
  struct node *y = (struct node *)calloc(1, sizeof *y);
  call_rcu(&y->rcu_head, free_node);
  set_thread_call_rcu_data(NULL);
  call_rcu_data_free(crd); /* runs what it holds */
  CHECK(uatomic_read(&freed) >= 201);
  CHECK(create_all_cpu_call_rcu_data(0) == 0);
  CHECK(get_cpu_call_rcu_data(0) != NULL);
  /* liburcu's return values: a negative error code, errno set. */
  errno = 0;
  CHECK(set_cpu_call_rcu_data(-1, NULL) == -EINVAL && errno == EINVAL);
  errno = 0;
  CHECK(set_cpu_call_rcu_data(0, get_default_call_rcu_data()) == -EEXIST && errno == EEXIST);
  free_all_cpu_call_rcu_data();
  call_rcu_before_fork();
  call_rcu_after_fork_parent();
  (void)&call_rcu_after_fork_child;
  (void)URCU_CALL_RCU_RT;
  rcu_barrier();
  CHECK_EQ(uatomic_read(&freed), 1201); /* list 200, hash table 1000, one more */
  rcu_defer_barrier_thread();
  rcu_defer_unregister_thread();
  rcu_unregister_thread();
  TEST_MAIN_END();
}
