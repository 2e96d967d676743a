/*
 * bench/sets/set.h - one interface for the concurrent sets of integer keys
 * that the set benchmarks compare (the RLU paper's lists and hash tables,
 * section 4.1-4.2): the Harris-Michael list (leaky, and with hazard
 * pointers), the RCU list and hash table, the RLU list and hash table.
 *
 * SYNOPSIS
 *   const struct rm_set_ops *ops = rm_set_find("harris-hp");
 *   struct rm_set_config cfg = {.buckets = 1};        // 1: a single list
 *   void *set = ops->create(&cfg);                    // NULL on ENOMEM
 *   void *th = ops->thread_init(set);                 // in each thread
 *   ops->insert(set, th, 42);  ops->contains(set, th, 42);  ops->remove(set, th, 42);
 *   ops->thread_fini(set, th);
 *   ops->size(set);                                   // no operation running
 *   ops->destroy(set);
 *
 * DESCRIPTION
 *   Keys are uint64_t in [1, RM_SET_KEY_MAX].  insert returns true if the
 *   key was absent (and is now present), remove true if it was present,
 *   contains whether it is present; every operation is linearizable (the
 *   RLU implementations with deferral excepted: see readmostly/rlu.h).
 *   thread_init returns the calling thread's state for this set (hazard
 *   pointer record, RLU context, ...; may be NULL for implementations
 *   that need none), passed to every operation of that thread and given
 *   back by thread_fini before the thread stops using the set.  stats, if
 *   not NULL, adds the implementation's counters to *out: with a thread's
 *   state, that thread's (RCU sets: the time its writers waited for the
 *   writer lock; call it before thread_fini); with th == NULL, the counters
 *   kept only for the whole set, accumulated since create() or the previous
 *   call with NULL (RLU: aborts, syncs, steals, membarriers).
 *
 *   size() walks the set with no synchronization: no operation may run,
 *   and under RLU deferral every thread that updated must have called
 *   thread_fini (which writes its deferred sections back).
 *
 *   The benchmark calls through these pointers: one indirect call per
 *   operation, against a traversal of hundreds of nodes, the same for every
 *   implementation.
 */
#ifndef READMOSTLY_BENCH_SET_H
#define READMOSTLY_BENCH_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RM_SET_KEY_MAX (UINT64_MAX - 1)

struct rm_set_config {
  size_t buckets; /* 1: one sorted list; more: a hash table of sorted lists */
};

struct rm_set_stats {
  uint64_t ops;
  uint64_t aborts;
  uint64_t syncs;
  uint64_t steals;
  uint64_t barriers;            /* RLU fence-free entry: membarriers issued */
  uint64_t writer_lock_wait_ns; /* time writers waited for a writer lock */
};

struct rm_set_ops {
  const char *name;
  void *(*create)(const struct rm_set_config *cfg);
  void (*destroy)(void *set);
  void *(*thread_init)(void *set);
  void (*thread_fini)(void *set, void *th);
  bool (*contains)(void *set, void *th, uint64_t key);
  bool (*insert)(void *set, void *th, uint64_t key);
  bool (*remove)(void *set, void *th, uint64_t key);
  size_t (*size)(void *set);
  void (*stats)(void *set, void *th, struct rm_set_stats *out); /* may be NULL */
};

#endif
