/*
 * bench/sets/rcu_set.h - the RCU sorted list and hash table of the RLU
 * paper's comparison (section 4.1-4.2), written once over any RCU flavor.
 *
 * Readers traverse a bucket's list inside an RCU read-side section, with
 * no lock and no atomic instruction beyond the flavor's own.  Writers
 * serialize on their bucket's mutex (one bucket: one writer lock for the
 * whole list, as the paper's RCU list), link or unlink one node with a
 * release store (rcu_assign_pointer), release the mutex, and a remover then
 * waits for a grace period (synchronize) before it frees the node, so every
 * update that removes pays one grace period, as in the paper.  The time
 * writers spend waiting for the mutex is measured (rm_ticks around the
 * lock) and reported as writer_lock_wait_ns: it is what grows with the
 * number of writers and what RLU's fine-grained locking avoids.
 *
 * RM_RCU_SET_DEFINE(ID, NAME, READ_LOCK, READ_UNLOCK, SYNCHRONIZE,
 *                   REGISTER, UNREGISTER) defines `static const struct
 * rm_set_ops ID` over the flavor's functions (called with no arguments).
 *
 * Ordering points:
 *  (P1) writer: the new node's key and next are written, then the node is
 *       published with a release store into its predecessor's next.
 *  (P2) reader: acquire loads of every next (C11's consume, which gcc
 *       implements as acquire), pairing with P1: a reader that reaches a
 *       node sees its fields.
 *  (P3) remover: unlink (release store), then synchronize: every reader
 *       that could have loaded the node's address began its section before
 *       the grace period began and has ended it when synchronize returns,
 *       so free() cannot pull memory from under a reader.
 */
#ifndef READMOSTLY_BENCH_RCU_SET_H
#define READMOSTLY_BENCH_RCU_SET_H

#include <readmostly/platform.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "set.h"

struct rcuset_node {
  uint64_t key;
  struct rcuset_node *next;
};

struct rcuset_bucket {
  struct rcuset_node *head;
  pthread_mutex_t lock; /* writers of this bucket */
} RM_ALIGNED;

struct rcuset {
  struct rcuset_bucket *b;
  size_t buckets;
};

struct rcuset_thread {
  uint64_t ops;
  uint64_t wait_ticks;
} RM_ALIGNED;

static inline struct rcuset_bucket *rcuset_bucket(struct rcuset *s, uint64_t key) {
  return &s->b[s->buckets == 1 ? 0 : (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) % s->buckets];
}

/* First node with key >= key in the bucket; *pprev: the pointer that holds
 * it.  Readers and writers alike (P2). */
static inline struct rcuset_node *rcuset_search(struct rcuset_bucket *b, uint64_t key,
                                                struct rcuset_node ***pprev) {
  struct rcuset_node **prev = &b->head;
  struct rcuset_node *n = __atomic_load_n(prev, __ATOMIC_ACQUIRE);
  while (n && n->key < key) {
    prev = &n->next;
    n = __atomic_load_n(prev, __ATOMIC_ACQUIRE);
  }
  if (pprev) *pprev = prev;
  return n;
}

static inline void rcuset_lock(struct rcuset_bucket *b, struct rcuset_thread *t) {
  uint64_t t0 = rm_ticks();
  pthread_mutex_lock(&b->lock);
  t->wait_ticks += rm_ticks() - t0;
  t->ops++;
}

static void *rcuset_create(const struct rm_set_config *cfg) {
  struct rcuset *s = (struct rcuset *)calloc(1, sizeof *s);
  if (!s) return NULL;
  s->buckets = cfg->buckets ? cfg->buckets : 1;
  s->b = (struct rcuset_bucket *)aligned_alloc(RM_CACHE_SECTOR, s->buckets * sizeof *s->b);
  if (!s->b) {
    free(s);
    return NULL;
  }
  for (size_t i = 0; i < s->buckets; i++) {
    s->b[i].head = NULL;
    pthread_mutex_init(&s->b[i].lock, NULL);
  }
  return s;
}

static void rcuset_destroy(void *set) {
  struct rcuset *s = (struct rcuset *)set;
  for (size_t i = 0; i < s->buckets; i++) {
    struct rcuset_node *n = s->b[i].head;
    while (n) {
      struct rcuset_node *next = n->next;
      free(n);
      n = next;
    }
    pthread_mutex_destroy(&s->b[i].lock);
  }
  free(s->b);
  free(s);
}

static size_t rcuset_size(void *set) {
  struct rcuset *s = (struct rcuset *)set;
  size_t n = 0;
  for (size_t i = 0; i < s->buckets; i++)
    for (struct rcuset_node *p = s->b[i].head; p; p = p->next) n++;
  return n;
}

static void rcuset_stats(void *set, void *th, struct rm_set_stats *out) {
  (void)set;
  struct rcuset_thread *t = (struct rcuset_thread *)th;
  if (t == NULL) return; /* no set-wide counters */
  out->writer_lock_wait_ns += rm_ticks_to_ns(t->wait_ticks);
}

#define RM_RCU_SET_DEFINE(ID, NAME, READ_LOCK, READ_UNLOCK, SYNCHRONIZE, REGISTER, UNREGISTER) \
  static void *ID##_thread_init(void *set) {                                                \
    (void)set;                                                                              \
    REGISTER();                                                                             \
    struct rcuset_thread *t =                                                               \
        (struct rcuset_thread *)aligned_alloc(RM_CACHE_SECTOR, sizeof(struct rcuset_thread)); \
    if (!t) abort();                                                                        \
    memset(t, 0, sizeof *t);                                                                \
    return t;                                                                               \
  }                                                                                         \
  static void ID##_thread_fini(void *set, void *th) {                                       \
    (void)set;                                                                              \
    free(th);                                                                               \
    UNREGISTER();                                                                           \
  }                                                                                         \
  static bool ID##_contains(void *set, void *th, uint64_t key) {                            \
    (void)th;                                                                               \
    READ_LOCK();                                                                            \
    struct rcuset_node *n = rcuset_search(rcuset_bucket((struct rcuset *)set, key), key, NULL); \
    bool found = n && n->key == key;                                                        \
    READ_UNLOCK();                                                                          \
    return found;                                                                           \
  }                                                                                         \
  static bool ID##_insert(void *set, void *th, uint64_t key) {                              \
    struct rcuset_bucket *b = rcuset_bucket((struct rcuset *)set, key);                     \
    struct rcuset_node *node = (struct rcuset_node *)malloc(sizeof *node);                  \
    if (!node) abort();                                                                     \
    node->key = key;                                                                        \
    rcuset_lock(b, (struct rcuset_thread *)th);                                             \
    struct rcuset_node **prev;                                                              \
    struct rcuset_node *n = rcuset_search(b, key, &prev);                                   \
    bool absent = !n || n->key != key;                                                      \
    if (absent) {                                                                           \
      node->next = n;                                                                       \
      __atomic_store_n(prev, node, __ATOMIC_RELEASE); /* (P1) */                            \
    }                                                                                       \
    pthread_mutex_unlock(&b->lock);                                                         \
    if (!absent) free(node);                                                                \
    return absent;                                                                          \
  }                                                                                         \
  static bool ID##_remove(void *set, void *th, uint64_t key) {                              \
    struct rcuset_bucket *b = rcuset_bucket((struct rcuset *)set, key);                     \
    rcuset_lock(b, (struct rcuset_thread *)th);                                             \
    struct rcuset_node **prev;                                                              \
    struct rcuset_node *n = rcuset_search(b, key, &prev);                                   \
    bool present = n && n->key == key;                                                      \
    if (present) __atomic_store_n(prev, n->next, __ATOMIC_RELEASE); /* unlink */            \
    pthread_mutex_unlock(&b->lock);                                                         \
    if (present) {                                                                          \
      SYNCHRONIZE(); /* (P3) */                                                             \
      free(n);                                                                              \
    }                                                                                       \
    return present;                                                                         \
  }                                                                                         \
  static const struct rm_set_ops ID = {NAME,          rcuset_create,  rcuset_destroy,       \
                                       ID##_thread_init, ID##_thread_fini, ID##_contains,  \
                                       ID##_insert,   ID##_remove,    rcuset_size,          \
                                       rcuset_stats};

#endif
