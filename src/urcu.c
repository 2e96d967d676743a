/*
 * urcu.c - the out-of-line part of liburcu's names (readmostly/urcu.h):
 * the flavor object, and wrappers whose signatures differ from rm_rcu_'s.
 */
#define _GNU_SOURCE
/* The library's build never depends on liburcu-dev's headers. */
#define READMOSTLY_URCU_NO_LIBURCU 1
#include <readmostly/urcu.h>

#include "rcu_internal.h"
#include "urcu_internal.h"

#include <stdio.h>
#include <string.h>

RM_API void rm_urcu_register_thread(void) {
  int e = rm_rcu_register_thread();
  if (e) {
    fprintf(stderr, "readmostly: rcu_register_thread: %s\n", strerror(e));
    abort();
  }
}

RM_API void rm_urcu_unregister_thread(void) {
  if (rm_rcu_unregister_thread() != 0)
    fprintf(stderr, "readmostly: rcu_unregister_thread inside a read section (ignored)\n");
}

/* Inside a read section these return at once, with the library's one-line
 * message naming liburcu's function (liburcu would wait for ever). */
RM_API void rm_urcu_synchronize_rcu(void) { (void)rm_rcu_synchronize_as("synchronize_rcu"); }

RM_API void rm_urcu_barrier(void) { (void)rm_rcu_barrier_as("rcu_barrier"); }

RM_API void rm_urcu_defer_rcu(void (*fct)(void *p), void *p) {
  /* EDEADLK: inside a section with no memory for the node; fct is not
   * called (never before a grace period), and the library said so. */
  (void)rm_rcu_defer(fct, p);
}

RM_API void rm_urcu_free_all_cpu_call_rcu_data(void) { (void)rm_rcu_call_data_free_per_cpu(); }

RM_API void rm_urcu_init(void) { (void)rm_rcu_domain(); }

/* liburcu's struct urcu_atfork has no link field: keep our own node for
 * each registration (a hash table registers one). */
struct atfork_node {
  struct rm_rcu_atfork a;
  struct urcu_atfork *user;
  void (*unregister)(struct rm_rcu_atfork *a); /* the flavor's */
  struct atfork_node *next;
};
static pthread_mutex_t nodes_lock = PTHREAD_MUTEX_INITIALIZER;
static struct atfork_node *nodes;

/* The list lock is held across fork() (taken before, released in both
 * processes after), so that the child never finds it held by a thread it
 * does not have. */
static void nodes_prepare(void) { pthread_mutex_lock(&nodes_lock); }
static void nodes_release(void) { pthread_mutex_unlock(&nodes_lock); }
static pthread_once_t nodes_once = PTHREAD_ONCE_INIT;
static void nodes_init(void) { pthread_atfork(nodes_prepare, nodes_release, nodes_release); }

static void before(void *p) {
  struct urcu_atfork *u = (struct urcu_atfork *)p;
  if (u->before_fork) u->before_fork(u->priv);
}
static void parent(void *p) {
  struct urcu_atfork *u = (struct urcu_atfork *)p;
  if (u->after_fork_parent) u->after_fork_parent(u->priv);
}
static void child(void *p) {
  struct urcu_atfork *u = (struct urcu_atfork *)p;
  if (u->after_fork_child) u->after_fork_child(u->priv);
}

void rm_urcu_atfork_add(struct urcu_atfork *u, void (*reg)(struct rm_rcu_atfork *a),
                       void (*unreg)(struct rm_rcu_atfork *a)) {
  struct atfork_node *n = (struct atfork_node *)calloc(1, sizeof *n);
  if (!n) {
    fprintf(stderr, "readmostly: cannot register a fork handler (out of memory)\n");
    abort();
  }
  n->a.before_fork = before;
  n->a.after_fork_parent = parent;
  n->a.after_fork_child = child;
  n->a.priv = u;
  n->user = u;
  n->unregister = unreg;
  pthread_once(&nodes_once, nodes_init);
  pthread_mutex_lock(&nodes_lock);
  RM_DEBUG_PAUSE("urcu.atfork.nodes"); /* a fork() here: the child's lock is free */
  n->next = nodes;
  nodes = n;
  pthread_mutex_unlock(&nodes_lock);
  reg(&n->a);
}

void rm_urcu_atfork_remove(struct urcu_atfork *u) {
  pthread_mutex_lock(&nodes_lock);
  struct atfork_node *n = NULL;
  for (struct atfork_node **pp = &nodes; *pp; pp = &(*pp)->next)
    if ((*pp)->user == u) {
      n = *pp;
      *pp = n->next;
      break;
    }
  pthread_mutex_unlock(&nodes_lock);
  if (!n) return;
  n->unregister(&n->a);
  free(n);
}

RM_API void rm_urcu_register_rculfhash_atfork(struct urcu_atfork *u) {
  rm_urcu_atfork_add(u, rm_rcu_register_atfork, rm_rcu_unregister_atfork);
}

RM_API void rm_urcu_unregister_rculfhash_atfork(struct urcu_atfork *u) { rm_urcu_atfork_remove(u); }

static void flavor_read_lock(void) { rm_rcu_read_lock(); }
static void flavor_read_unlock(void) { rm_rcu_read_unlock(); }
static int flavor_read_ongoing(void) { return rm_rcu_read_ongoing(); }

RM_API const struct rcu_flavor_struct rm_urcu_flavor = {
    .read_lock = flavor_read_lock,
    .read_unlock = flavor_read_unlock,
    .read_ongoing = flavor_read_ongoing,
    .read_quiescent_state = rm_rcu_quiescent_state,
    .update_call_rcu = rm_rcu_call,
    .update_synchronize_rcu = rm_urcu_synchronize_rcu,
    .update_defer_rcu = rm_urcu_defer_rcu,
    .thread_offline = rm_rcu_thread_offline,
    .thread_online = rm_rcu_thread_online,
    .register_thread = rm_urcu_register_thread,
    .unregister_thread = rm_urcu_unregister_thread,
    .barrier = rm_urcu_barrier,
    .register_rculfhash_atfork = rm_urcu_register_rculfhash_atfork,
    .unregister_rculfhash_atfork = rm_urcu_unregister_rculfhash_atfork,
};
