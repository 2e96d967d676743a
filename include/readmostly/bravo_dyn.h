/*
 * readmostly/bravo_dyn.h - BRAVO over a visible-readers table that grows
 * when readers collide and shrinks when revocation scans cost more than
 * they save.
 *
 * SYNOPSIS
 *   #include <readmostly/bravo_dyn.h>
 *
 *   static rm_bravodyn_ba_t lock = RM_BRAVODYN_BA_INITIALIZER;
 *   rm_token_t tok;
 *   rm_bravodyn_ba_read_lock(&lock, &tok);  ... rm_bravodyn_ba_read_unlock(&lock, tok);
 *   rm_bravodyn_ba_write_lock(&lock);       ... rm_bravodyn_ba_write_unlock(&lock);
 *
 *   RM_BRAVODYN_DEFINE(my_bravodyn, my_t, my)        // over your own lock
 *   RM_BRAVODYN_DEFINE_TIMED(my_bravodyn, my_t, my)
 *
 *   // Optional, before the first BRAVO-dyn lock turns its bias on:
 *   struct rm_bravo_dyn_attr a;
 *   rm_bravo_dyn_attr_init(&a);
 *   a.min_slots = 1024;
 *   rm_bravo_dyn_configure(&a);          // 0, EINVAL, EBUSY, ENOMEM
 *   rm_bravo_dyn_resize(65536);          // at any time: 0, EINVAL, EBUSY, ENOMEM
 *
 * DESCRIPTION
 *   The first of the BRAVO paper's future directions (Dice and Kogan,
 *   USENIX ATC 2019, section 7): "dynamic sizing of the visible readers
 *   table based on collisions.  Large tables will have reduced collision
 *   rates but larger scan revocation overheads."  Locks of these types are
 *   plain BRAVO locks (readmostly/bravo.h: bias word, inhibit window,
 *   revocation without A, try and timed rules, tokens) over a table of
 *   their own, rm_bravo_dyn, whose size changes while the program runs.
 *   Plain BRAVO's fixed table stays the default; nothing here touches it.
 *
 *   Readers hash (lock, thread) into the current table, `cur`, exactly as
 *   plain BRAVO does into its table; the only difference is one more load
 *   (the pointer to the current table) on the fast path.  A resize maps
 *   (or reuses) a table of the new size and makes it current; the previous
 *   one becomes `old` and is closed: every empty slot of it is set, by
 *   CAS, to RM_BRAVO_SLOT_CLOSED, which no reader's CAS from 0 can take.
 *   A slot that still holds a reader is closed once that reader unlocks.
 *   A revoking writer scans `cur` and, while there is one, `old`.
 *
 * WHY A READER PUBLISHED IN THE OLD TABLE IS FOUND
 *   Invariant: every table with an empty (0) slot that a reader may have a
 *   pointer to is `cur` or `old`.  (A fresh table gets its first reader
 *   only after it is `cur`; a table stops being `old` only once all its
 *   slots are CLOSED; a reused table is made `cur` before its slots are
 *   reopened.)  `cur` and `old` are loaded and stored seq_cst, so they take
 *   part in the single order S of the Dekker argument of bravo.h:
 *   a reader that entered (its re-check R2 saw the bias) loaded `cur`, then
 *   CASed its slot (R1), then R2; a writer clears the bias (W1), then loads
 *   `cur`, then `old`, then scans.  R2 precedes W1 in S, so the writer's
 *   load of `cur` reads the reader's table T or a later one; when later,
 *   T was made `old` first, and the writer's load of `old` reads T, or a
 *   value stored after T's closing completed.  Closing completed means the
 *   sweep's CAS found the reader's slot 0 after the reader's release store
 *   (R3), so the reader's section happened before; or the sweep closed it
 *   first and the reader's CAS failed (it never entered through T).  At
 *   most two tables are live: a resize waits (returns EBUSY) while `old`
 *   is still closing.
 *   (Model: models/bravo_dyn.pml, with its mutants; docs/models-bravo.md.)
 *
 *   Tables are mapped once per size (a power of two) and never unmapped:
 *   a reader preempted between loading `cur` and its CAS may touch a
 *   table long after it stopped being current.  A table reused later is
 *   made `cur` before its CLOSED slots are reset to 0 (seq_cst stores), so
 *   a late reader that takes a reopened slot is in a table writers scan.
 *
 * THE SIZING POLICY
 *   Counted outside the fast path: a reader whose CAS finds its slot
 *   holding another lock (an inter-lock or inter-thread collision; a slot
 *   holding the same lock may be the thread's own recursive hold, which no
 *   size cures, and is not counted) adds to a per-thread count, handed to
 *   a global counter every 16; revoking writers add the slots they scan,
 *   and the scan time is estimated from them (0.22 ns a slot with AVX2,
 *   0.4 with SSE2, 2 in plain C: a revocation's measured time is mostly
 *   its wait for readers, which no size changes).  At most every 10 ms,
 *   with the counts of that interval:
 *     grow (double) when  collisions x RM_BRAVO_DYN_COLLISION_NS > 4 x scan time
 *                         and collisions >= 64;
 *     shrink (halve) when scan time > 4 x collisions x RM_BRAVO_DYN_COLLISION_NS
 *                         and at least one revocation scanned;
 *   within [min_slots, max_slots].  Doubling roughly halves the collisions
 *   of a well-spread hash and doubles the scans, so it pays when half the
 *   collisions' cost exceeds the scans' (we ask for twice that, and the
 *   same on the way down, so that the size does not oscillate).  The
 *   evaluation and the resize never wait: they run in a collision's slow
 *   path or after a revocation's scan, holding no lock, under a try-lock.
 *
 * ATTRIBUTES AND ENVIRONMENT
 *   struct rm_bravo_dyn_attr {
 *     size_t slots;          initial slots (0: READMOSTLY_BRAVO_DYN_SLOTS,
 *                            else plain BRAVO's default size)
 *     size_t min_slots;      0: 1024 (near collisions, false sharing in
 *                            one sector, are not counted: the floor
 *                            keeps them rare)
 *     size_t max_slots;      0: 2^20
 *     int auto_resize;       1 (default, or READMOSTLY_BRAVO_DYN_AUTO=1/0):
 *                            the policy above; 0: only rm_bravo_dyn_resize()
 *   };
 *   All sizes powers of two, 16 to 2^24, min <= slots <= max.
 *   rm_bravo_dyn_configure(a) must come before the table exists (the
 *   first slow read of a BRAVO-dyn lock makes it with the defaults): EBUSY
 *   afterwards.  rm_bravo_dyn_resize(n) resizes now: EINVAL when n is not
 *   a power of two in [min, max], EBUSY while the previous old table still
 *   holds a reader (or another thread resizes), ENOMEM.
 *   rm_bravo_dyn_set_auto(on) turns the policy on or off at run time.
 *   rm_bravo_dyn_get(out) reports the sizes and counters.
 *
 * FORK
 *   As for plain BRAVO, in both tables: the forking thread's slots stay,
 *   slots of locks whose bias is off are cleared, CLOSED slots stay closed.
 *   A resize interrupted by the fork is left as it was; its try-lock is
 *   released in the child.
 *
 * FOOTPRINT
 *   Per lock as plain BRAVO.  Tables: 8 bytes a slot, one mapping per size
 *   ever used (at most the sum of the powers of two up to max_slots).
 */
#ifndef READMOSTLY_BRAVO_DYN_H
#define READMOSTLY_BRAVO_DYN_H

#include <readmostly/ba.h>
#include <readmostly/bravo.h>
#include <readmostly/futexrw.h>
#include <readmostly/pthread_rw.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a closed slot of a retired table holds: never a lock's address
 * (those are aligned), so readers' CAS from 0 fails on it and writers
 * never wait for it. */
#define RM_BRAVO_SLOT_CLOSED ((uintptr_t)1)

/* One table of the resizable family: mask and slots never change once the
 * table is mapped. */
struct rm_bravo_dtab {
  uintptr_t *slots;
  uintptr_t mask;
};

/* The family's state.  cur/old: see DESCRIPTION (seq_cst).  The table
 * struct `t` is what the generator passes around: its `slots` is set
 * (release) once cur exists, so the generic slow path knows the family is
 * allocated, and its `dynamic` field is 1. */
struct rm_bravo_dyn {
  struct rm_bravo_dtab *cur;
  struct rm_bravo_dtab *old;
} RM_ALIGNED;
extern RM_API struct rm_bravo_dyn rm_bravo_dyn;
extern RM_API struct rm_bravo_table rm_bravo_dyn_table;

struct rm_bravo_dyn_attr {
  size_t slots;
  size_t min_slots;
  size_t max_slots;
  int auto_resize;
};
struct rm_bravo_dyn_info {
  size_t slots;            /* current table */
  size_t old_slots;        /* the table being closed, 0 if none */
  size_t min_slots, max_slots;
  int auto_resize;
  uint64_t grows, shrinks; /* resizes made by the policy */
  uint64_t resizes;        /* all resizes */
  uint64_t collisions;     /* counted collisions (see THE SIZING POLICY) */
};
/* The cost of a collision the policy assumes: a slow read against a fast
 * one, with the shared reader counter of A contended. */
#define RM_BRAVO_DYN_COLLISION_NS 100u

RM_API int rm_bravo_dyn_attr_init(struct rm_bravo_dyn_attr *a);
RM_API int rm_bravo_dyn_configure(const struct rm_bravo_dyn_attr *a);
RM_API int rm_bravo_dyn_resize(size_t slots);
RM_API void rm_bravo_dyn_set_auto(bool on);
RM_API int rm_bravo_dyn_get(struct rm_bravo_dyn_info *out);
/* A reader's CAS failed on a slot holding another lock (counted per thread,
 * the policy runs every 16th). */
RM_API void rm_bravo_dyn_collided(void);

/*
 * The fast read path: plain BRAVO's (bravo.h, R0-R2), with the table read
 * from rm_bravo_dyn.cur.  (Rc) the load of cur is seq_cst: it is ordered
 * before R1 and R2 in S, which the argument in DESCRIPTION needs; on
 * x86-64 it is a plain load.  The table's mask and slots were written
 * before cur was stored (seq_cst, a release), so this load sees them.
 */
RM_INLINE int rm_bravo_dyn_read_fast(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                     rm_token_t *tok) {
  (void)t;
  if (!(rm_atomic_load_acquire(&b->rbias) & RM_BRAVO_BIAS)) /* (R0) */
    return RM_BRAVO_SLOW_BIAS_OFF;
  struct rm_bravo_dtab *d = rm_atomic_load_seq_cst(&rm_bravo_dyn.cur); /* (Rc) */
  uintptr_t *slot = &d->slots[rm_bravo_hash(b, rm_thread_identity()) & d->mask];
  uintptr_t expected = 0;
  RM_DEBUG_YIELD();
  if (!rm_atomic_cas_seq_cst(slot, &expected, (uintptr_t)b)) { /* (R1) */
    if (expected != (uintptr_t)b && expected != RM_BRAVO_SLOT_CLOSED) rm_bravo_dyn_collided();
    return RM_BRAVO_SLOW_COLLISION;
  }
  RM_DEBUG_PAUSE("bravo_dyn.read.installed");
  if (RM_LIKELY(rm_atomic_load_seq_cst(&b->rbias) & RM_BRAVO_BIAS)) { /* (R2) */
    *tok = (rm_token_t)slot;
    return RM_BRAVO_FAST;
  }
  /* A writer revoked between R0 and R2: back out, as plain BRAVO (release:
   * a writer or a closing sweep that sees the slot empty sees it after our
   * CAS).  Nothing else writes a slot between its owner's CAS and here. */
  rm_atomic_store_release(slot, (uintptr_t)0);
  return RM_BRAVO_SLOW_RACED;
}

/* The unlock is plain BRAVO's: the token is the slot, in whichever table. */
RM_INLINE int rm_bravo_dyn_read_unlock_fast(struct rm_bravo_bias *b, rm_token_t tok) {
  return rm_bravo_read_unlock_fast(b, tok);
}

#define RM_BRAVO_DYN_TABLE(l) (&rm_bravo_dyn_table)
#define RM_BRAVODYN_DEFINE(NAME, UTYPE, UPFX)                                       \
  RM_BRAVO_DEFINE_K(NAME, UTYPE, UPFX, RM_BRAVO_DYN_TABLE, rm_bravo_dyn)
#define RM_BRAVODYN_DEFINE_TIMED(NAME, UTYPE, UPFX)                                 \
  RM_BRAVODYN_DEFINE(NAME, UTYPE, UPFX)                                             \
  RM_BRAVO_DEFINE_TIMED_PART_K(NAME, UTYPE, UPFX, RM_BRAVO_DYN_TABLE, rm_bravo_dyn)

RM_BRAVODYN_DEFINE(rm_bravodyn_ba, rm_ba_t, rm_ba)
RM_BRAVODYN_DEFINE_TIMED(rm_bravodyn_pthread, rm_pthread_t, rm_pthread)
RM_BRAVODYN_DEFINE_TIMED(rm_bravodyn_futexrw, rm_futexrw_t, rm_futexrw)
#define RM_BRAVODYN_BA_INITIALIZER {RM_BRAVO_BIAS_INITIALIZER, RM_BA_INITIALIZER}
#define RM_BRAVODYN_PTHREAD_INITIALIZER {RM_BRAVO_BIAS_INITIALIZER, RM_PTHREAD_INITIALIZER}
#define RM_BRAVODYN_FUTEXRW_INITIALIZER {RM_BRAVO_BIAS_INITIALIZER, RM_FUTEXRW_INITIALIZER}

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_BRAVO_DYN_H */
