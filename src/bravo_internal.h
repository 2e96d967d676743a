/*
 * bravo_internal.h - what bravo.c and bravo_dyn.c (the resizable table,
 * readmostly/bravo_dyn.h) share inside the library.
 */
#ifndef READMOSTLY_BRAVO_INTERNAL_H
#define READMOSTLY_BRAVO_INTERNAL_H

#include <readmostly/bravo.h>

/* bravo.c: the flat scan of slots[0..n) (W2/W3 of bravo.h, SIMD where
 * chosen): 0 once no slot holds b; EBUSY (try) or ETIMEDOUT (timed). */
int rm_bravo_scan_slots(struct rm_bravo_bias *b, uintptr_t *slots, size_t n, int mode, int clk,
                        const struct timespec *abstime);
/* bravo.c: a zeroed table of `slots` slots on pages of its own (huge pages
 * where reserved), never unmapped; NULL on failure. */
uintptr_t *rm_bravo_map_slots(size_t slots);
/* bravo.c: plain BRAVO's default table size. */
size_t rm_bravo_default_slots(void);

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
