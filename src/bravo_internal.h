/*
 * bravo_internal.h - what bravo.c and bravo_dyn.c (the resizable table,
 * readmostly/bravo_dyn.h) share inside the library.
 */
#ifndef READMOSTLY_BRAVO_INTERNAL_H
#define READMOSTLY_BRAVO_INTERNAL_H

#include <readmostly/bravo.h>

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

/* bravo.c: the flat scan of slots[0..n) (W2/W3 of bravo.h, SIMD where
 * chosen): 0 once no slot holds b; EBUSY (try) or ETIMEDOUT (timed). */
int rm_bravo_scan_slots(struct rm_bravo_bias *b, uintptr_t *slots, size_t n, int mode, int clk,
                        const struct timespec *abstime);
/* bravo.c: a zeroed table of `slots` slots on pages of its own (huge pages
 * where reserved), never unmapped; NULL on failure. */
uintptr_t *rm_bravo_map_slots(size_t slots);
/* bravo.c: plain BRAVO's default table size. */
size_t rm_bravo_default_slots(void);

/* The first allocation of a process-wide table (plain BRAVO's, BRAVO-2D's,
 * the resizable family's): a state word decides who allocates, so the
 * table's fields are each written once, by one thread, before anyone can
 * see them.  rm_table_claim(): RM_TABLE_NONE when the caller is to
 * allocate (it then calls rm_table_settle(state, ok) once: RM_TABLE_DONE
 * when the table is published, back to RM_TABLE_NONE when it failed);
 * otherwise the state found, RM_TABLE_BUSY (another thread is allocating:
 * the caller does not wait, a slow reader stays unbiased this time) or
 * RM_TABLE_DONE.  Acquire on failure: a thread that finds DONE sees
 * everything stored before the release store of DONE.  Acquire on success
 * orders nothing needed (the table is the caller's to fill).  A fork child
 * calls rm_table_fork_reset(): an allocation under way belonged to a
 * thread that does not exist there.  rm_table_wait(init) calls init until
 * it stops returning EAGAIN (for callers that may wait: never a lock call,
 * never a signal handler, since the allocating thread may be the one
 * interrupted). */
#define RM_TABLE_NONE 0u
#define RM_TABLE_BUSY 1u
#define RM_TABLE_DONE 2u
static inline uint32_t rm_table_claim(uint32_t *state) {
  uint32_t found = RM_TABLE_NONE;
  if (__atomic_compare_exchange_n(state, &found, RM_TABLE_BUSY, false, __ATOMIC_ACQUIRE,
                                  __ATOMIC_ACQUIRE))
    return RM_TABLE_NONE;
  return found;
}
static inline void rm_table_settle(uint32_t *state, bool published) {
  /* Release: DONE publishes what the allocating thread stored. */
  __atomic_store_n(state, published ? RM_TABLE_DONE : RM_TABLE_NONE, __ATOMIC_RELEASE);
}
static inline void rm_table_fork_reset(uint32_t *state) {
  /* Relaxed: the child runs one thread. */
  if (__atomic_load_n(state, __ATOMIC_RELAXED) == RM_TABLE_BUSY)
    __atomic_store_n(state, RM_TABLE_NONE, __ATOMIC_RELAXED);
}
static inline int rm_table_wait(int (*init)(void)) {
  int e;
  while ((e = init()) == EAGAIN) sched_yield(); /* the allocator never blocks */
  return e;
}

/* bravo_dyn.c: allocate the family's first table (0, ENOMEM, EAGAIN). */
int rm_bravo_dyn_init(void);
/* bravo_dyn.c: the revocation scan of the family (cur, then old). */
int rm_bravo_dyn_scan(struct rm_bravo_bias *b, int mode, int clk, const struct timespec *abstime);
/* rm_bravo_read_hold_seen for the resizable family: this thread's own slot
 * in the current and in the closing table. */
bool rm_bravo_dyn_hold_seen(const struct rm_bravo_bias *b);
/* bravo_dyn.c: a revoking writer that holds no lock gives the sizing
 * policy a chance to run (never waits). */
void rm_bravo_dyn_policy(uint64_t now);
/* bravo_dyn.c: in a fork child, forget a resize or an allocation that
 * another thread had under way. */
void rm_bravo_dyn_fork_reset(void);

#endif
