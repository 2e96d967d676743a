/*
 * readmostly/pft.h - PF-T, the phase-fair ticket reader-writer lock
 * (Brandenburg and Anderson, "Spin-based reader-writer synchronization for
 * multiprocessor real-time systems", Real-Time Systems 46(1), 2010).
 *
 * SYNOPSIS
 *   #include <readmostly/pft.h>
 *   static rm_pft_t l = RM_PFT_INITIALIZER;     // all zero
 *   rm_pft_read_lock(&l);  ... rm_pft_read_unlock(&l);
 *   rm_pft_write_lock(&l); ... rm_pft_write_unlock(&l);
 *
 * DESCRIPTION
 *   Phase-fair: reader phases and writer phases alternate; a reader waits
 *   for at most one writer phase and a writer for at most one reader phase
 *   plus the writers ahead of it.  Readers announce themselves in rin and
 *   leave through rout; writers take tickets (win/wout) and, when first in
 *   line, set their writer bits in rin and wait until every reader counted
 *   before them has left.  Waiting readers spin on rin (global spinning);
 *   writers spin on wout and rout.  A spin lock: do not sleep while holding.
 *
 *   rin:   bits 8-31 readers arrived (mod 2^24)  | bit 1 PRES | bit 0 PHID
 *   rout:  bits 8-31 readers departed (mod 2^24)
 *   win, wout: writer tickets taken / served.
 *
 *   PRES says a writer is present or waiting for readers to drain.  PHID is
 *   the phase id: every writer that enters flips it (one atomic xor sets PRES
 *   and flips PHID), and the write unlock clears PRES only.  A reader that
 *   arrived during a writer phase waits until the low bits differ from what
 *   it saw, i.e. until that writer left (PRES clear) or the next writer
 *   entered (PHID flipped).  The paper derives PHID from the ticket's low
 *   bit; we flip it per entering writer instead, because a failed write
 *   trylock consumes a ticket without entering: two consecutive writer
 *   phases would then carry the same id, and a reader that slept through the
 *   gap would wait for a writer that waits for it.
 *
 *   Ordering: (A) reader's fetch_add on rin, acquire/release, pairs with the
 *   writer's (C): a reader that counted itself before the writer's bits went
 *   in is waited for; one that counted itself after sees the bits and waits.
 *   (B) reader's departure on rout, release, pairs with the writer's acquire
 *   load of rout.  (D) writer clears its bits in rin, release, pairs with
 *   waiting readers' acquire loads.  (E) wout++, release, pairs with the next
 *   writer's acquire load of wout.
 *
 * RETURN VALUES
 *   0; EBUSY from trylocks and from destroy of a held lock; EINVAL for NULL.
 *
 * ERRORS OF MISUSE
 *   rm_pft_write_unlock returns EPERM, and changes nothing, when no writer
 *   holds or is draining the lock (PRES clear); debug builds (no NDEBUG
 *   where the call is compiled) abort with a message instead.  An unlock by
 *   another thread than the writer is not detected.  rm_pft_read_unlock is
 *   not checked, as in BA (readmostly/ba.h): the check would take the
 *   read pair from 10 to 17 instructions; a read unlock without a read hold corrupts the
 *   count and writers then wait for ever.
 *
 * FOOTPRINT
 *   16 bytes.
 */
#ifndef READMOSTLY_PFT_H
#define READMOSTLY_PFT_H

#include <errno.h>
#include <readmostly/platform.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RM_PFT_RINC 0x100u
#define RM_PFT_WBITS 0x3u
#define RM_PFT_PRES 0x2u
#define RM_PFT_PHID 0x1u

typedef struct rm_pft {
  uint32_t rin, rout, win, wout;
} rm_pft_t;

#define RM_PFT_INITIALIZER {0, 0, 0, 0}

RM_INLINE int rm_pft_init(rm_pft_t *l) {
  if (!l) return EINVAL;
  l->rin = l->rout = l->win = l->wout = 0;
  return 0;
}

RM_INLINE int rm_pft_destroy(rm_pft_t *l) {
  if (!l) return EINVAL;
  uint32_t rin = rm_atomic_load_acquire(&l->rin), rout = rm_atomic_load_acquire(&l->rout);
  if ((rin & RM_PFT_PRES) || (rin & ~0xFFu) != (rout & ~0xFFu) ||
      rm_atomic_load_relaxed(&l->win) != rm_atomic_load_relaxed(&l->wout))
    return EBUSY;
  return 0;
}

RM_INLINE int rm_pft_read_lock(rm_pft_t *l) {
  uint32_t w = rm_atomic_fetch_add_acq_rel(&l->rin, RM_PFT_RINC) & RM_PFT_WBITS; /* (A) */
  if (RM_UNLIKELY(w & RM_PFT_PRES))
    while ((rm_atomic_load_acquire(&l->rin) & RM_PFT_WBITS) == w) rm_cpu_relax(); /* (D) */
  return 0;
}

RM_INLINE int rm_pft_read_trylock(rm_pft_t *l) {
  uint32_t s = rm_atomic_load_relaxed(&l->rin);
  while (!(s & RM_PFT_PRES))
    if (rm_atomic_cas_acq_rel(&l->rin, &s, s + RM_PFT_RINC)) return 0; /* (A) */
  return EBUSY;
}

RM_INLINE int rm_pft_read_unlock(rm_pft_t *l) {
  rm_atomic_fetch_add_release(&l->rout, RM_PFT_RINC); /* (B) */
  return 0;
}

RM_INLINE int rm_pft_write_lock(rm_pft_t *l) {
  uint32_t ticket = rm_atomic_fetch_add_relaxed(&l->win, 1u);
  while (rm_atomic_load_acquire(&l->wout) != ticket) rm_cpu_relax(); /* (E) */
  /* Sets PRES (clear since the previous writer left) and flips PHID. */
  uint32_t arrived = rm_atomic_fetch_xor_acq_rel(&l->rin, RM_PFT_WBITS) & ~0xFFu; /* (C) */
  while ((rm_atomic_load_acquire(&l->rout) & ~0xFFu) != arrived) rm_cpu_relax(); /* (B) */
  return 0;
}

RM_INLINE int rm_pft_write_trylock(rm_pft_t *l) {
  uint32_t t = rm_atomic_load_relaxed(&l->win);
  if (rm_atomic_load_acquire(&l->wout) != t) return EBUSY;
  if (!rm_atomic_cas_acq_rel(&l->win, &t, t + 1u)) return EBUSY;
  /* We own the next writer turn.  Enter only if no reader is inside. */
  uint32_t r = rm_atomic_load_acquire(&l->rin);
  uint32_t out = rm_atomic_load_acquire(&l->rout);
  /* PRES is clear: the previous writer cleared it (D) before passing the
   * turn (E), which we acquired. */
  RM_ASSERT(!(r & RM_PFT_PRES), "rm_pft_write_trylock: PRES set on our turn");
  if ((r & ~0xFFu) == (out & ~0xFFu) &&
      rm_atomic_cas_acq_rel(&l->rin, &r, r ^ RM_PFT_WBITS)) /* (C) */
    return 0;
  rm_atomic_fetch_add_release(&l->wout, 1u); /* give the turn back (E) */
  return EBUSY;
}

RM_INLINE int rm_pft_write_unlock(rm_pft_t *l) {
  /* Relaxed: PRES is our own bit while we hold the lock. */
  if (RM_UNLIKELY(!(rm_atomic_load_relaxed(&l->rin) & RM_PFT_PRES))) {
    RM_ASSERT(0, "write unlock of %p, not write-held", (void *)l);
    return EPERM; /* no writer: wout stays, the next ticket is still served */
  }
  rm_atomic_fetch_and_release(&l->rin, ~RM_PFT_PRES); /* (D) */
  rm_atomic_fetch_add_release(&l->wout, 1u);           /* (E) */
  return 0;
}

#ifdef __cplusplus
}
#endif
#endif
