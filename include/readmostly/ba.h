/*
 * readmostly/ba.h - BA, the Brandenburg-Anderson phase-fair queue
 * reader-writer lock (PF-Q of Brandenburg and Anderson, "Spin-based
 * reader-writer synchronization for multiprocessor real-time systems",
 * Real-Time Systems 46(1), 2010).
 *
 * SYNOPSIS
 *   #include <readmostly/ba.h>
 *
 *   static rm_ba_t l = RM_BA_INITIALIZER;           // all zero
 *
 *   int rm_ba_init(rm_ba_t *l);
 *   int rm_ba_destroy(rm_ba_t *l);
 *   int rm_ba_read_lock(rm_ba_t *l);
 *   int rm_ba_read_trylock(rm_ba_t *l);
 *   int rm_ba_read_unlock(rm_ba_t *l);
 *   int rm_ba_write_lock(rm_ba_t *l);
 *   int rm_ba_write_trylock(rm_ba_t *l);
 *   int rm_ba_write_unlock(rm_ba_t *l);
 *
 * DESCRIPTION
 *   Readers are counted centrally, as in PF-T (readmostly/pft.h): a reader
 *   adds itself to rin, whose low byte also carries the writer bits PRES
 *   (a writer is present) and PHID (the phase id), and leaves through rout.
 *   When the rin value it replaced has PRES clear the reader is in: the
 *   uncontended read lock and read unlock are one atomic add each.  When
 *   PRES is set, the reader pushes a node on its stack onto the reader queue
 *   of that writer phase, rq[PHID], and spins on its own node only (local
 *   spinning), until the writer that owns the phase leaves.  The leaving
 *   writer clears PRES, closes rq[PHID] by swapping in a "closed" mark, and
 *   releases the whole group it took off the queue; a reader that reaches a
 *   closed queue knows its writer phase is over and enters at once.
 *
 *   Writers queue in an MCS list (wtail).  The queue node lives on the
 *   writer's stack only while it waits: once at the head, the writer moves
 *   its successor link into the lock (wnext) and marks the tail "held"
 *   (K42 style), so write_unlock needs no node.  The head writer reopens
 *   the reader queue of the phase it is about to start, sets PRES and flips
 *   PHID in rin with one xor, and waits until every reader counted in rin
 *   before that xor has left (rout catches up).  PHID is flipped per
 *   entering writer, not taken from a ticket's parity: a failed write
 *   trylock never touches rin, so two consecutive writer phases never carry
 *   the same id (the PF-T pitfall, see readmostly/pft.h).
 *
 *   All waiting spins with rm_cpu_relax(), then sched_yield()s, then sleeps
 *   up to 1 ms at a time (rm_backoff_wait), so that more threads than cores
 *   still make progress.  A spin lock: do not sleep while holding it.
 *
 *   rin:   bits 8-31 readers arrived (mod 2^24)  | bit 1 PRES | bit 0 PHID
 *   rout:  bits 8-31 readers departed (mod 2^24)
 *   wtail: NULL (free), RM_BA_WHELD (held, no waiter) or the last waiter
 *   wnext: the holder's successor in the writer queue, or NULL
 *   rq[p]: waiting readers of writer phase p (a LIFO list of stack nodes),
 *          or RM_BA_RCLOSED once that phase is over
 *
 * PREFERENCE
 *   Phase-fair: reader phases and writer phases alternate.  A reader waits
 *   for at most one writer phase (the one it arrived in); a writer waits
 *   for at most one reader phase (the readers counted before its xor) plus
 *   the writers queued ahead of it.  Writers are served FIFO.  Read-side
 *   recursion deadlocks if a writer sets PRES between the two read locks.
 *
 * RETURN VALUES
 *   0 on success.  EBUSY from the trylocks, and from rm_ba_destroy when the
 *   lock is visibly held or a writer waits.  EINVAL from rm_ba_init and
 *   rm_ba_destroy for NULL.
 *
 * ERRORS OF MISUSE
 *   rm_ba_write_unlock returns EPERM, and changes nothing, when no writer
 *   holds or is entering the lock (PRES clear); debug builds (no NDEBUG
 *   where the call is compiled) abort with a message instead.  The lock
 *   does not record which thread writes, so an unlock by another thread
 *   than the writer is not detected.
 *   rm_ba_read_unlock is not checked and returns 0: a check needs rin next
 *   to rout and a CAS loop in place of the one fetch_add, which took the
 *   read pair from 10 to 17 instructions (callgrind; docs/locks.md), and BA
 *   is the baseline BRAVO is measured against.  A read unlock without a
 *   read hold corrupts the count, and writers then wait for ever.
 *
 * FOOTPRINT
 *   40 bytes on LP64 (rin, rout, two writer-queue pointers and two reader
 *   queue heads); a waiting thread uses a 16-byte node on its own stack.
 *
 * ORDERING POINTS
 *   (A) Reader arrival: fetch_add on rin, acq_rel.  Pairs with the writer's
 *       xor (C), both read-modify-writes of one word: a reader whose add
 *       precedes the xor is counted in `arrived` and waited for; one whose
 *       add follows it reads PRES and waits.  Its acquire also pairs with
 *       (D): a reader that reads PRES clear sees the last writer's section.
 *   (B) Reader departure: fetch_add on rout, release.  Pairs with the
 *       draining writer's acquire loads of rout: the reader's section
 *       happens before the writer's.
 *   (C) Writer entry: fetch_xor on rin (or CAS in trylock), acq_rel.  Its
 *       release orders the reopening of rq[p] (F) before any reader's
 *       acquire (A) that reads PRES with phase p.
 *   (D) Writer exit: fetch_and on rin clearing PRES, release.  Pairs with
 *       (A) of later readers.
 *   (E) Writer queue: CAS of wtail acq_rel (the enqueuer's release
 *       publishes its initialized node, the holder's release orders its
 *       wnext store before the tail becomes RM_BA_WHELD); link stores to
 *       prev->next / wnext release, loaded with acquire; hand-off store of
 *       the successor's wait word release, pairs with its acquire spin, so
 *       one writer's section happens before the next one's.
 *   (F) Reopen: relaxed store rq[p] = NULL by the head writer, before (C).
 *   (G) Reader queue: the reader's CAS pushing its node, acq_rel, pairs with
 *       the exiting writer's exchange of rq[p] with RM_BA_RCLOSED, acq_rel:
 *       the writer reads every pushed node's link; a reader that loads the
 *       closed mark (acquire) sees the writer's section.
 *   (H) Reader wake-up: store node->wait = 0, release, after loading
 *       node->next; pairs with the reader's acquire spin on its node.
 */
#ifndef READMOSTLY_BA_H
#define READMOSTLY_BA_H

#include <errno.h>
#include <readmostly/platform.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RM_BA_RINC 0x100u
#define RM_BA_RMASK (~0xFFu)
#define RM_BA_WBITS 0x3u
#define RM_BA_PRES 0x2u
#define RM_BA_PHID 0x1u

/* A waiting thread's queue node, on its stack.  Writers and readers use the
 * same shape: the link to the next node and the word it spins on. */
typedef struct rm_ba_node {
  struct rm_ba_node *next;
  uint32_t wait; /* 1 while the owner must wait */
} rm_ba_node_t;

/* wtail value: held, nobody queued (the K42 "lock as node" mark). */
#define RM_BA_WHELD ((struct rm_ba_node *)(uintptr_t)1)
/* rq[p] value: writer phase p is over, do not wait. */
#define RM_BA_RCLOSED ((struct rm_ba_node *)(uintptr_t)1)

typedef struct rm_ba {
  uint32_t rin, rout;
  struct rm_ba_node *wtail;
  struct rm_ba_node *wnext;
  struct rm_ba_node *rq[2];
} rm_ba_t;

#define RM_BA_INITIALIZER {0, 0, 0, 0, {0, 0}}

RM_STATIC_ASSERT(sizeof(rm_ba_t) <= 64, "rm_ba_t must stay within 64 bytes");

/* Slow paths: out of line (but still in the header), so the fast paths stay
 * small; "unused" keeps translation units that never call them quiet. */
#define RM_BA_SLOW static __attribute__((noinline, unused))

RM_INLINE int rm_ba_init(rm_ba_t *l) {
  if (!l) return EINVAL;
  /* Not concurrent with use: whoever hands the lock to other threads
   * orders these stores. */
  l->rin = l->rout = 0;
  l->wtail = l->wnext = NULL;
  l->rq[0] = l->rq[1] = NULL;
  return 0;
}

RM_INLINE int rm_ba_destroy(rm_ba_t *l) {
  if (!l) return EINVAL;
  uint32_t rin = rm_atomic_load_acquire(&l->rin);
  uint32_t rout = rm_atomic_load_acquire(&l->rout); /* (B) */
  if ((rin & RM_BA_PRES) || (rin & RM_BA_RMASK) != (rout & RM_BA_RMASK) ||
      rm_atomic_load_acquire(&l->wtail) != NULL)
    return EBUSY;
  return 0;
}

/* ---- writer queue (E) ------------------------------------------------------ */

/* Take the writer queue.  On return the caller is the head, wtail is
 * RM_BA_WHELD or a later waiter, and wnext is the successor (or NULL,
 * possibly filled in later by an enqueuer that found RM_BA_WHELD). */
RM_BA_SLOW void rm_ba_wq_acquire_(rm_ba_t *l) {
  rm_ba_node_t me;
  struct rm_ba_node *prev = rm_atomic_load_relaxed(&l->wtail);
  for (;;) {
    if (prev == NULL) {
      /* Free: take it without a node.  wnext is NULL (it is whenever wtail
       * is NULL).  (E) acquire pairs with the last holder's release CAS. */
      if (rm_atomic_cas_acq_rel(&l->wtail, &prev, RM_BA_WHELD)) return;
      continue; /* prev now holds the current tail */
    }
    rm_atomic_store_relaxed(&me.next, (struct rm_ba_node *)NULL);
    rm_atomic_store_relaxed(&me.wait, 1u);
    /* (E) release: our node's fields are initialized before anyone can
     * reach it through wtail; acquire: we see prev's node as published. */
    if (rm_atomic_cas_acq_rel(&l->wtail, &prev, &me)) break;
  }
  RM_DEBUG_YIELD();
  /* Link in behind prev.  prev == RM_BA_WHELD: the holder keeps its
   * successor in the lock.  (E) release pairs with the holder's acquire
   * load of the link; the holder only then stores to me.wait. */
  if (prev == RM_BA_WHELD)
    rm_atomic_store_release(&l->wnext, &me);
  else
    rm_atomic_store_release(&prev->next, &me);
  rm_backoff_t b = RM_BACKOFF_INIT;
  /* (E) acquire pairs with the predecessor's release hand-off below. */
  while (rm_atomic_load_acquire(&me.wait) != 0) rm_backoff_wait(&b);
  RM_DEBUG_YIELD();
  /* We are the head.  Move our successor link into the lock so that our
   * node can go away when we return. */
  struct rm_ba_node *succ = rm_atomic_load_acquire(&me.next);
  if (succ == NULL) {
    rm_atomic_store_relaxed(&l->wnext, (struct rm_ba_node *)NULL);
    struct rm_ba_node *expected = &me;
    /* (E) release orders the wnext store above before the tail reads
     * RM_BA_WHELD, so an enqueuer that then stores wnext comes after it. */
    if (rm_atomic_cas_acq_rel(&l->wtail, &expected, RM_BA_WHELD)) return;
    /* Someone swapped itself in behind us and is about to link to me.next:
     * wait for the link, our node must live until then. */
    rm_backoff_t b2 = RM_BACKOFF_INIT;
    while ((succ = rm_atomic_load_acquire(&me.next)) == NULL) rm_backoff_wait(&b2);
  }
  rm_atomic_store_relaxed(&l->wnext, succ);
}

/* Pass the writer queue on, or free it.  Called by the head. */
RM_INLINE void rm_ba_wq_release_(rm_ba_t *l) {
  struct rm_ba_node *succ = rm_atomic_load_acquire(&l->wnext); /* (E) */
  if (succ == NULL) {
    struct rm_ba_node *expected = RM_BA_WHELD;
    /* (E) release: our section happens before the next holder's acquire
     * CAS from NULL.  wnext is NULL, as it must be while wtail is NULL. */
    if (RM_LIKELY(rm_atomic_cas_acq_rel(&l->wtail, &expected, (struct rm_ba_node *)NULL)))
      return;
    /* An enqueuer found RM_BA_WHELD and is about to store wnext. */
    rm_backoff_t b = RM_BACKOFF_INIT;
    while ((succ = rm_atomic_load_acquire(&l->wnext)) == NULL) rm_backoff_wait(&b);
  }
  RM_DEBUG_YIELD();
  /* (E) release hand-off; after this store succ's node may vanish, and
   * succ itself rewrites wnext. */
  rm_atomic_store_release(&succ->wait, 0u);
}

/* ---- readers ----------------------------------------------------------------- */

/* A reader counted in rin found writer phase `phase` in progress: queue on
 * that phase's reader queue and wait until the phase ends. */
RM_BA_SLOW void rm_ba_read_wait_(rm_ba_t *l, uint32_t phase) {
  rm_ba_node_t me;
  struct rm_ba_node **q = &l->rq[phase];
  RM_DEBUG_YIELD();
  /* (G) acquire: rq[phase] was reopened (F) before the writer's xor (C),
   * which our add (A) read, so we see the reopened queue or its closing. */
  struct rm_ba_node *head = rm_atomic_load_acquire(q);
  rm_atomic_store_relaxed(&me.wait, 1u);
  for (;;) {
    if (head == RM_BA_RCLOSED) return; /* (G) the phase is over: enter */
    rm_atomic_store_relaxed(&me.next, head);
    /* (G) release publishes me.next and me.wait to the writer's exchange;
     * on failure (acquire) head is reloaded. */
    if (rm_atomic_cas_acq_rel(q, &head, &me)) break;
  }
  rm_backoff_t b = RM_BACKOFF_INIT;
  /* (H) acquire pairs with the exiting writer's release store. */
  while (rm_atomic_load_acquire(&me.wait) != 0) rm_backoff_wait(&b);
}

RM_INLINE int rm_ba_read_lock(rm_ba_t *l) {
  uint32_t w = rm_atomic_fetch_add_acq_rel(&l->rin, RM_BA_RINC) & RM_BA_WBITS; /* (A) */
  if (RM_UNLIKELY(w & RM_BA_PRES)) rm_ba_read_wait_(l, w & RM_BA_PHID);
  return 0;
}

RM_INLINE int rm_ba_read_trylock(rm_ba_t *l) {
  uint32_t s = rm_atomic_load_relaxed(&l->rin);
  while (!(s & RM_BA_PRES))
    if (rm_atomic_cas_acq_rel(&l->rin, &s, s + RM_BA_RINC)) return 0; /* (A) */
  return EBUSY;
}

RM_INLINE int rm_ba_read_unlock(rm_ba_t *l) {
  rm_atomic_fetch_add_release(&l->rout, RM_BA_RINC); /* (B) */
  return 0;
}

/* ---- writers ----------------------------------------------------------------- */

RM_BA_SLOW void rm_ba_write_drain_(rm_ba_t *l, uint32_t arrived) {
  rm_backoff_t b = RM_BACKOFF_INIT;
  /* (B) acquire pairs with each departing reader's release add. */
  while ((rm_atomic_load_acquire(&l->rout) & RM_BA_RMASK) != arrived) rm_backoff_wait(&b);
}

RM_INLINE int rm_ba_write_lock(rm_ba_t *l) {
  struct rm_ba_node *expected = NULL;
  /* Uncontended: one CAS takes the writer queue.  (E) acquire. */
  if (!rm_atomic_cas_acq_rel(&l->wtail, &expected, RM_BA_WHELD)) rm_ba_wq_acquire_(l);
  /* Only the queue head changes the writer bits, so this relaxed load sees
   * the last writer's exit (ordered by the queue hand-off (E)). */
  uint32_t phase = (rm_atomic_load_relaxed(&l->rin) & RM_BA_PHID) ^ RM_BA_PHID;
  RM_DEBUG_YIELD();
  /* (F) reopen our phase's reader queue; (C)'s release orders this store
   * before any reader that sees our bits. */
  rm_atomic_store_relaxed(&l->rq[phase], (struct rm_ba_node *)NULL);
  /* (C) sets PRES (clear since the last writer left) and flips PHID. */
  uint32_t arrived = rm_atomic_fetch_xor_acq_rel(&l->rin, RM_BA_WBITS) & RM_BA_RMASK;
  if ((rm_atomic_load_acquire(&l->rout) & RM_BA_RMASK) != arrived) /* (B) */
    rm_ba_write_drain_(l, arrived);
  return 0;
}

RM_INLINE int rm_ba_write_trylock(rm_ba_t *l) {
  struct rm_ba_node *expected = NULL;
  if (rm_atomic_load_relaxed(&l->wtail) != NULL ||
      !rm_atomic_cas_acq_rel(&l->wtail, &expected, RM_BA_WHELD)) /* (E) */
    return EBUSY;
  /* We hold the writer queue.  Enter only if no reader is inside. */
  uint32_t r = rm_atomic_load_acquire(&l->rin);
  uint32_t out = rm_atomic_load_acquire(&l->rout); /* (B) */
  if ((r & RM_BA_RMASK) == (out & RM_BA_RMASK)) {
    RM_ASSERT(!(r & RM_BA_PRES), "rm_ba_write_trylock: PRES set under the writer queue");
    /* (F) as in write_lock.  If the CAS below fails the queue just stays
     * open and empty: no reader can be waiting on this phase id, because
     * every reader that saw it two writers ago was drained by the writer
     * in between. */
    uint32_t phase = (r & RM_BA_PHID) ^ RM_BA_PHID;
    rm_atomic_store_relaxed(&l->rq[phase], (struct rm_ba_node *)NULL);
    if (rm_atomic_cas_acq_rel(&l->rin, &r, r ^ RM_BA_WBITS)) /* (C) */
      return 0;
  }
  rm_ba_wq_release_(l); /* readers inside, or one just arrived */
  return EBUSY;
}

/* Close writer phase `phase`'s reader queue and release its readers. */
RM_BA_SLOW void rm_ba_wake_readers_(rm_ba_t *l, uint32_t phase) {
  /* (G) acq_rel: acquire reads every pushed node's link, release makes our
   * section visible to readers that find the queue closed. */
  struct rm_ba_node *n = rm_atomic_xchg_acq_rel(&l->rq[phase], RM_BA_RCLOSED);
  while (n != NULL) {
    RM_ASSERT(n != RM_BA_RCLOSED, "rm_ba: reader queue %u closed twice", (unsigned)phase);
    /* Load the link first: the node may vanish once its reader runs. */
    struct rm_ba_node *next = rm_atomic_load_relaxed(&n->next);
    rm_atomic_store_release(&n->wait, 0u); /* (H) */
    n = next;
  }
}

RM_INLINE int rm_ba_write_unlock(rm_ba_t *l) {
  uint32_t r = rm_atomic_load_relaxed(&l->rin); /* our own bits */
  if (RM_UNLIKELY(!(r & RM_BA_PRES))) { /* no writer: leave the lock alone */
    RM_ASSERT(0, "rm_ba_write_unlock of %p, not write-held", (void *)l);
    return EPERM;
  }
  /* (D) readers that arrive from now on enter at once. */
  rm_atomic_fetch_and_release(&l->rin, ~RM_BA_PRES);
  RM_DEBUG_YIELD();
  /* Readers that arrived during our phase: release the group.  An empty
   * queue (the common case) still must be closed, for a reader between its
   * add and its push. */
  rm_ba_wake_readers_(l, r & RM_BA_PHID);
  rm_ba_wq_release_(l); /* (E) */
  return 0;
}

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_BA_H */
