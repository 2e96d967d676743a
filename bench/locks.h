/*
 * bench/locks.h - the locks of impls.h as one implementation set of the
 * harness, for the families that measure locks (exp_rwlock.c, exp_fcp.c).
 *
 * bench_locks lists them in ALL_IMPLS order; a family instantiates its
 * always-inline bodies once per lock (X-macro over ALL_IMPLS) into an array
 * of the same order, so that O.impl[i].idx indexes both.  Locks are
 * allocated on their own 128-byte sectors (lock_new).
 */
#ifndef READMOSTLY_BENCH_LOCKS_H
#define READMOSTLY_BENCH_LOCKS_H

#include "harness.h"
#include "impls.h"

#define LOCK_COUNT1(ID, NAME, T, FL) +1
enum { NLOCKS = 0 ALL_IMPLS(LOCK_COUNT1) };

typedef void (*rl_fn)(void *, rm_token_t *);
typedef void (*ru_fn)(void *, rm_token_t);
typedef void (*wl_fn)(void *);

extern const struct bench_impl_set bench_locks;

/* A lock of implementation idx (bench_locks order), initialized. */
void *lock_new(size_t idx);
void lock_free(size_t idx, void *l);
/* The index of a lock by name, or exit(1) when it is not built in. */
size_t lock_index(const char *name);

/* readers: cs = 0; test_rwlock's readers: cs = 10 loops inside.  The stop
 * flag is read once per 64 acquisitions. */
AI void *readers_body(struct tctx *c, rl_fn rl, ru_fn ru, unsigned cs) {
  void *l = c->lock;
  uint64_t n = 0;
  wait_go();
  while (!stopped()) {
    for (int i = 0; i < 64; i++) {
      rm_token_t t;
      rl(l, &t);
      spin_work(cs);
      ru(l, t);
    }
    n += 64;
  }
  c->count = n;
  return NULL;
}

#endif
