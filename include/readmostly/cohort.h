/*
 * readmostly/cohort.h - Cohort-RW: the C-RW-WP NUMA-aware reader-writer
 * lock with writer preference (Calciu, Dice, Lev, Luchangco, Marathe and
 * Shavit, "NUMA-Aware Reader-Writer Locks", PPoPP 2013), the "Cohort-RW"
 * baseline of the BRAVO paper (Dice and Kogan, USENIX ATC 2019).
 *
 * SYNOPSIS
 *   #include <readmostly/cohort.h>
 *
 *   static rm_cohort_t l = RM_COHORT_INITIALIZER;  // allocates on first use
 *
 *   int rm_cohort_init(rm_cohort_t *l);                 // NUMA nodes of the machine
 *   int rm_cohort_init_nodes(rm_cohort_t *l, unsigned nodes);  // 1..64
 *   int rm_cohort_destroy(rm_cohort_t *l);
 *   int rm_cohort_read_lock(rm_cohort_t *l, rm_token_t *tok);
 *   int rm_cohort_read_trylock(rm_cohort_t *l, rm_token_t *tok);
 *   int rm_cohort_read_unlock(rm_cohort_t *l, rm_token_t tok);
 *   int rm_cohort_write_lock(rm_cohort_t *l);
 *   int rm_cohort_write_trylock(rm_cohort_t *l);
 *   int rm_cohort_write_unlock(rm_cohort_t *l);
 *
 * DESCRIPTION
 *   The read indicator is split per NUMA node: node i has an ingress and an
 *   egress counter, the pair alone on a 128-byte sector, so readers of one
 *   node never write a line that readers of another node write.  A reader
 *   increments its node's ingress, then looks at the writer-active flag; if
 *   it is clear the reader is in.  If it is set the reader backs out (egress
 *   += 1), waits for the flag to clear, and tries again.  A reader leaves by
 *   incrementing egress of the node it arrived on; that node travels in the
 *   token (node + 1), because the thread may have migrated meanwhile.
 *
 *   Writers serialize on a writer mutex, then raise the flag and wait until
 *   ingress == egress on every node.  The paper's writer mutex is a full
 *   cohort lock (one sub-lock per node plus a global lock, so that the lock
 *   is passed between writers of one node before it migrates); this
 *   implementation uses a FIFO ticket lock instead.  On a machine with one
 *   node the two behave the same (a cohort lock with one cohort is its
 *   global lock), and the read side, which is what this library is about,
 *   is identical.  A writer that hands the mutex straight to a queued writer
 *   leaves the flag up, so readers do not slip in between queued writers.
 *
 *   A reader's node is rm_current_cpu() * nodes / rm_cpu_count(): it
 *   assumes CPUs are numbered node by node.  Where the numbering interleaves
 *   nodes, readers of two nodes may share an indicator; that costs locality,
 *   never correctness.  rm_cohort_init_nodes() lets tests and benchmarks
 *   choose more indicators than the machine has nodes.
 *
 *   All waiting spins with rm_cpu_relax(), then sched_yield()s, then sleeps
 *   up to 1 ms at a time (rm_backoff_wait); nothing parks in the kernel and
 *   there are no timed variants.  Do not hold the lock across a sleep you
 *   expect other threads to wait out cheaply.
 *
 * PREFERENCE
 *   Writer preference: once a writer holds the mutex, arriving readers wait
 *   until it (and every writer queued behind it) has finished.  A steady
 *   stream of writers starves readers.  Reader-side recursion deadlocks if a
 *   writer arrives in between (the inner read lock waits for the writer, the
 *   writer for the outer read lock).  Writers are served FIFO.
 *
 * RETURN VALUES
 *   0 on success.  EBUSY from the trylocks, and from destroy when the lock
 *   is visibly held or a writer waits.  EINVAL from the inits for NULL and
 *   from rm_cohort_init_nodes for 0 or more than RM_COHORT_MAX_NODES nodes.
 *   ENOMEM from the inits, and from any lock call on a lock set up with
 *   RM_COHORT_INITIALIZER whose first use cannot allocate the indicators
 *   (a later call retries).
 *
 * ERRORS OF MISUSE
 *   EPERM, changing nothing, from read_unlock with a token that names no
 *   node of this lock (0 from a failed lock, or out of range), and from
 *   write_unlock when no writer holds the lock or waits for it (the flag
 *   is down).  Debug builds (no NDEBUG where the call is compiled) abort
 *   with a message instead.  Not detected: a second read unlock with a
 *   valid token (checking the node's count would add a load and a CAS loop
 *   to the one fetch_add, as in BA, readmostly/ba.h; it corrupts the count
 *   and writers wait for ever), and a write unlock by another thread than
 *   the writer (the lock does not record it).
 *
 * FOOTPRINT
 *   sizeof(rm_cohort_t) is 128 bytes (the central state: indicator pointer,
 *   node count, writer flag and ticket lock, on one sector), plus one
 *   128-byte sector per node allocated on the heap: 256 bytes on a
 *   one-node machine.  The paper's version is 896 bytes for two nodes.
 */
#ifndef READMOSTLY_COHORT_H
#define READMOSTLY_COHORT_H

#include <errno.h>
#include <readmostly/platform.h>
#include <readmostly/rwlock.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RM_COHORT_MAX_NODES 64u

/* One node's read indicator: readers arrived and readers departed (or backed
 * out).  Counters are 64-bit and never wrap in practice. */
typedef struct rm_cohort_ind {
  uint64_t ingress;
  uint64_t egress;
} RM_ALIGNED rm_cohort_ind_t;

typedef struct rm_cohort {
  rm_cohort_ind_t *ind;  /* `nodes` indicators, or NULL until first use */
  uint32_t nodes;        /* indicator count; 0 = detect at first use */
  uint32_t wactive;      /* writer-active flag, written by the mutex holder */
  uint32_t wnext;        /* writer mutex: next ticket */
  uint32_t wserving;     /* writer mutex: ticket being served */
} RM_ALIGNED rm_cohort_t;

/* nodes = 0: the machine's NUMA node count is detected at first use. */
#define RM_COHORT_INITIALIZER {NULL, 0, 0, 0, 0}

/*
 * Invariants
 *   1. For every node, egress <= ingress; ingress - egress counts the
 *      readers that arrived on the node and have not yet left or backed out.
 *   2. Only the holder of the writer mutex writes wactive.
 *   3. While a writer holds the lock, wactive == 1 and every node had
 *      ingress == egress at a moment after wactive became 1, so no reader
 *      is inside.
 *   4. A held read lock's token is node + 1, in [1, nodes]; the reader
 *      leaves through that node even if it has migrated.
 *   5. ind and nodes never change while the lock is in use; a lazily
 *      installed array is published once, by a CAS from NULL.
 *
 * Ordering points
 *   A. Reader: seq_cst fetch_add on ingress, then seq_cst load of wactive.
 *      Writer (G): seq_cst store of wactive, full store->load fence, then
 *      loads of egress and ingress.  Store->load on both sides (Dekker): the
 *      writer sees the reader's arrival, or the reader sees the flag.
 *   B. Reader departure / back-out: release fetch_add on egress, pairs with
 *      the writer's acquire load of egress in H, so the reader's critical
 *      section happens before the writer's.
 *   C. Writer release: release store of wactive = 0 pairs with the acquire
 *      load in a waiting reader (and with A's seq_cst load), so the writer's
 *      critical section happens before the reader's.
 *   D. Writer mutex: acquire on taking the ticket turn (load of wserving /
 *      CAS of wnext), release store of wserving on hand-off.
 *   E. Lazy install: acq_rel CAS of ind from NULL, after a relaxed store of
 *      nodes; readers load ind with acquire, so they see nodes and the
 *      zeroed indicators.
 */

RM_API int rm_cohort_init(rm_cohort_t *l);
RM_API int rm_cohort_init_nodes(rm_cohort_t *l, unsigned nodes);
RM_API int rm_cohort_destroy(rm_cohort_t *l);
/* Slow paths, out of line in src/cohort.c. */
RM_API int rm_cohort_install_slowpath(rm_cohort_t *l, rm_cohort_ind_t **indp);
RM_API int rm_cohort_read_lock_slowpath(rm_cohort_t *l, rm_token_t *tok);
RM_API int rm_cohort_write_lock_slowpath(rm_cohort_t *l, uint32_t my_ticket);
RM_API int rm_cohort_write_trylock_slowpath(rm_cohort_t *l);
RM_API void rm_cohort_write_release_slowpath(rm_cohort_t *l);

/* The indicator array, installing it on first use.  Returns 0 or ENOMEM. */
RM_INLINE int rm_cohort_ind_(rm_cohort_t *l, rm_cohort_ind_t **indp) {
  rm_cohort_ind_t *ind = rm_atomic_load_acquire(&l->ind); /* E: sees nodes, zeroed counters */
  if (RM_LIKELY(ind != NULL)) {
    *indp = ind;
    return 0;
  }
  return rm_cohort_install_slowpath(l, indp);
}

/* The indicator of the calling CPU's node, 0-based. */
RM_INLINE unsigned rm_cohort_node_(const rm_cohort_t *l) {
  unsigned nodes = rm_atomic_load_relaxed(&l->nodes);
  if (nodes == 1) return 0;
  unsigned n = (unsigned)(((uint64_t)rm_current_cpu() * nodes) / rm_cpu_count());
  return n < nodes ? n : nodes - 1;
}

RM_INLINE int rm_cohort_read_lock(rm_cohort_t *l, rm_token_t *tok) {
  rm_cohort_ind_t *ind;
  if (RM_UNLIKELY(rm_cohort_ind_(l, &ind) != 0)) {
    *tok = 0; /* no hold: a token that no unlock accepts */
    return ENOMEM;
  }
  unsigned node = rm_cohort_node_(l);
  /* A: the arrival is ordered before the flag load below; pairs with the
   * writer's flag store + fence before it reads the counters (G). */
  rm_atomic_fetch_add_seq_cst(&ind[node].ingress, 1u);
  if (RM_LIKELY(rm_atomic_load_seq_cst(&l->wactive) == 0)) { /* A, and C's partner */
    *tok = (rm_token_t)node + 1;
    return 0;
  }
  /* B: back out, then wait for the writer(s) and retry, out of line. */
  rm_atomic_fetch_add_release(&ind[node].egress, 1u);
  return rm_cohort_read_lock_slowpath(l, tok);
}

RM_INLINE int rm_cohort_read_trylock(rm_cohort_t *l, rm_token_t *tok) {
  rm_cohort_ind_t *ind;
  *tok = 0; /* until we hold it: a token that no unlock accepts */
  if (RM_UNLIKELY(rm_cohort_ind_(l, &ind) != 0)) return ENOMEM;
  /* Cheap pre-check: do not disturb a writer's drain when it is up anyway.
   * Relaxed: A below decides. */
  if (rm_atomic_load_relaxed(&l->wactive) != 0) return EBUSY;
  unsigned node = rm_cohort_node_(l);
  rm_atomic_fetch_add_seq_cst(&ind[node].ingress, 1u); /* A, as in read_lock */
  if (RM_LIKELY(rm_atomic_load_seq_cst(&l->wactive) == 0)) { /* A */
    *tok = (rm_token_t)node + 1;
    return 0;
  }
  rm_atomic_fetch_add_release(&ind[node].egress, 1u); /* B: back out */
  return EBUSY;
}

RM_INLINE int rm_cohort_read_unlock(rm_cohort_t *l, rm_token_t tok) {
  rm_cohort_ind_t *ind = rm_atomic_load_relaxed(&l->ind); /* set: we hold the lock (inv. 5) */
  uint32_t nodes = rm_atomic_load_relaxed(&l->nodes);     /* the same line */
  if (RM_UNLIKELY(ind == NULL || tok < 1 || tok > nodes)) {
    RM_ASSERT(0, "rm_cohort_read_unlock: bad token %lu (nodes %u)", (unsigned long)tok,
              (unsigned)nodes);
    return EPERM;
  }
  /* B: the critical section is ordered before the departure; pairs with the
   * writer's acquire load of egress. */
  rm_atomic_fetch_add_release(&ind[tok - 1].egress, 1u);
  return 0;
}

RM_INLINE int rm_cohort_write_lock(rm_cohort_t *l) {
  rm_cohort_ind_t *ind;
  if (RM_UNLIKELY(rm_cohort_ind_(l, &ind) != 0)) return ENOMEM;
  /* D: taking a ticket needs no ordering; the acquire is on wserving. */
  uint32_t my = rm_atomic_fetch_add_relaxed(&l->wnext, 1u);
  return rm_cohort_write_lock_slowpath(l, my);
}

RM_INLINE int rm_cohort_write_trylock(rm_cohort_t *l) {
  rm_cohort_ind_t *ind;
  if (RM_UNLIKELY(rm_cohort_ind_(l, &ind) != 0)) return ENOMEM;
  return rm_cohort_write_trylock_slowpath(l);
}

RM_INLINE int rm_cohort_write_unlock(rm_cohort_t *l) {
  /* Relaxed: the holder's own store (invariant 2). */
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&l->wactive) != 1)) {
    RM_ASSERT(0, "rm_cohort_write_unlock: the write lock is not held");
    return EPERM; /* no writer: the ticket lock stays as it is */
  }
  rm_cohort_write_release_slowpath(l);
  return 0;
}

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_COHORT_H */
