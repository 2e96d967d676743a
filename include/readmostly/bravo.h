/*
 * readmostly/bravo.h - BRAVO: biased reader-writer locks over any rwlock.
 *
 * SYNOPSIS
 *   #include <readmostly/bravo_locks.h>   // BRAVO over the bundled locks
 *
 *   static rm_bravo_ba_t lock = RM_BRAVO_BA_INITIALIZER;
 *   rm_token_t tok;
 *   rm_bravo_ba_read_lock(&lock, &tok);   ... read ...   rm_bravo_ba_read_unlock(&lock, tok);
 *   rm_bravo_ba_write_lock(&lock);        ... write ...  rm_bravo_ba_write_unlock(&lock);
 *
 *   // BRAVO over your own lock type my_t with functions my_read_lock(my_t*) ...:
 *   RM_BRAVO_DEFINE(my_bravo, my_t, my)            // no timed variants
 *   RM_BRAVO_DEFINE_TIMED(my_bravo, my_t, my)      // also my_read_timedlock ...
 *
 * DESCRIPTION
 *   BRAVO (Dice and Kogan, "BRAVO - Biased Locking for Reader-Writer Locks",
 *   USENIX ATC 2019, Listing 1) turns any reader-writer lock A into BRAVO-A
 *   by adding two fields: RBias (readers may use the fast path) and
 *   InhibitUntil (the earliest time slow readers may set RBias again).
 *
 *   A reader whose lock has RBias set hashes (lock address, thread identity)
 *   to a slot of one process-wide visible-readers table and installs the lock
 *   address there with one CAS; if RBias is still set afterwards it holds the
 *   lock without having written to the lock itself.  Readers of one lock
 *   therefore write to different cache lines, and a read-mostly lock scales.
 *   Otherwise (bias off, slot taken, or a writer revoked in between) the
 *   reader takes A's read lock (the slow path) and, holding it, re-enables
 *   RBias when the current time is past InhibitUntil.
 *
 *   A writer takes A's write lock; if RBias is set it revokes: clears RBias,
 *   scans the whole table and waits (politely: spin, yield, then sleep) until
 *   no slot holds this lock, then sets InhibitUntil = now + N x (time the
 *   revocation took).  With N = 9 (the default, rm_bravo_set_inhibit_
 *   multiplier()) revocation can cost writers at most about 1/(N+1) = 10 % of
 *   their time: "first, do no harm".  Preference, fairness and write
 *   performance are those of A.
 *
 *   Unlike Listing 1, the blocking and timed write locks never wait for fast
 *   readers while they hold A: a writer that finds the bias on (or a
 *   revocation unfinished) under A gives A back, revokes holding nothing,
 *   and takes A again (the paper's section 7 names this change).  Readers
 *   that arrive meanwhile take A's read lock instead of waiting for the
 *   revocation, and a thread that holds a fast read lock and read-locks
 *   again (the bias now off, so through A) is never stuck behind a writer
 *   that waits for its first hold.  So BRAVO-A supports recursive read
 *   locking exactly when A does: over a reader-preference A (glibc's
 *   default kind, RM_FUTEXRW_READER_PREF_INITIALIZER) a thread may read-lock
 *   a lock it read-holds while writers come and go; over a writer-preference
 *   A such a read can wait for a queued writer, which waits for the first
 *   hold: a deadlock, as with A alone.  While a writer revokes, the bias
 *   stays off (the count in the bias word, below), so no new fast reader
 *   can start behind it.  write_trylock still revokes under A, but never
 *   waits there.
 *
 *   One addition to the paper: the scan is not the whole cost of a
 *   revocation.  Readers that arrive meanwhile wait for A's write lock, and
 *   over a blocking A they park in the kernel, which costs several times the
 *   scan.  So when a revocation finds that the bias was on for less than
 *   N x (revocation time) since the last window ended (it served almost no
 *   reader), the next window doubles, up to 2^10 times; each revocation that
 *   finds the bias lived longer halves it again.  Read-mostly locks keep
 *   the paper's window; write-heavy ones stop paying for revocations.
 *
 *   A second one: reading the clock can cost as much as the rest of a slow
 *   read, so a thread that found a window still open reads the clock again
 *   only at every 8th (RM_BRAVO_CLOCK_EVERY) slow read of that same window;
 *   a different window value is tested at once.  The bias may thus return
 *   up to 7 slow reads of a thread late; speed only, never correctness.
 *
 *   The slot travels from lock to unlock in a token: the read lock stores it
 *   in *tok and the read unlock takes it back.  The slot is never recomputed
 *   at unlock: a thread could have two read locks of different locks hashing
 *   to one slot, in which case only one of them went through the table.
 *   Tokens are nonzero; RM_TOKEN_NONE means "slow path".  A read unlock
 *   with token 0 (what a failed lock returns) or with a slot that does not
 *   hold this lock (a second unlock of a fast hold, another lock's token)
 *   returns EPERM and changes nothing; debug builds (no NDEBUG) abort with
 *   a message instead.  A second unlock of a slow hold (RM_TOKEN_NONE) is
 *   A's read unlock, checked or not as A's header says.
 *
 *   Try and timed locks follow section 3 of the paper.  read_trylock tries
 *   the fast path, then A's read trylock; if A's write lock is held while
 *   this thread holds the lock by the fast path (a recursive read), that
 *   writer cannot enter and gives A back, so read_trylock tries A again
 *   until it can (spinning, then yielding) rather than fail with EBUSY.
 *   write_trylock takes A's write
 *   trylock and, if bias is set, revokes without waiting: if a fast reader is
 *   still in the table it releases A and returns EBUSY (bias stays revoked, so
 *   the reader drains and the next attempt is cheap).  Timed variants wait
 *   for fast readers only until the deadline, then release A and return
 *   ETIMEDOUT.
 *
 * THE TABLE
 *   One table per process, shared by every BRAVO lock and thread, defined
 *   once with default visibility in libreadmostly (a table duplicated across
 *   shared objects would let a writer scan the wrong one).  It has
 *   max(4096, 32 x CPUs) slots rounded up to a power of two, is mapped on its
 *   own pages (no unrelated data shares its lines) and on explicit huge
 *   pages when the system has them reserved.  READMOSTLY_BRAVO_TABLE_SLOTS=n
 *   in the environment sets another power of two (tests use tiny tables to
 *   force collisions).  It is allocated on first use by a slow-path reader.
 *
 * FORK
 *   In the child every lock keeps the state it had at the fork.  Read and
 *   write holds of the forking thread are the child's; holds of other
 *   threads remain held forever, as with glibc.  A slot left by a reader that
 *   was between its CAS and its failed re-check (it held nothing) is cleared
 *   by a fork handler, so it never blocks a lock no one held: see
 *   docs/bravo.md.
 *
 * STATISTICS
 *   rm_bravo_stats_enable(true) (or READMOSTLY_STATS=1 at start-up) counts,
 *   per thread, fast reads, slow reads by cause, writes, revocations and time
 *   spent revoking; rm_bravo_stats_get() sums them.  When disabled the fast
 *   path pays one predictable branch on a flag in the table's cache line.
 *
 * RETURN VALUES
 *   0 on success, else the error of A (EBUSY from trylocks, ETIMEDOUT and
 *   EINVAL from timed locks, ENOMEM from the first slow read when the table
 *   cannot be allocated: the read lock is then still taken, without bias).
 *   Timed locks check the timeout before anything else (rm_timeout_check):
 *   EINVAL for a NULL abstime, a bad clock or tv_nsec, even when the fast
 *   path would have let the reader in.  EPERM from read_unlock for a token
 *   that holds nothing (above); write_unlock is A's.
 *
 * FOOTPRINT
 *   16 bytes in front of A (RBias, padding, InhibitUntil); the table is
 *   8 bytes per slot, 32 KiB at 4096 slots.
 */
#ifndef READMOSTLY_BRAVO_H
#define READMOSTLY_BRAVO_H

#include <errno.h>
#include <sched.h>
#include <readmostly/platform.h>
#include <readmostly/rwlock.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The process-wide table.  `slots` and `mask` are written once, before any
 * lock's RBias is first set (release), and read by fast-path readers after
 * they load RBias (acquire).  `stats_on` sits in the same line so the fast
 * path touches one read-mostly line besides its slot.
 */
struct rm_bravo_table {
  uintptr_t *slots;   /* each slot: 0 or the address of a lock's bias word */
  uintptr_t mask;     /* slots - 1 */
  uint32_t stats_on;  /* counters enabled */
  uint32_t n;         /* inhibit multiplier N */
  /* BRAVO-2D geometry (readmostly/bravo2d.h), written with mask before the
   * table is published; all 0 in a flat table.  row_shift: log2 of the
   * slots in a row (0: the table is flat); row_mask: rows - 1; probe_mask:
   * with the second probe, the slots of a probe group - 1
   * (RM_BRAVO2D_PROBE_GROUP - 1): a reader may install in the column XOR
   * any j <= probe_mask (0: no second probe, the column alone); rseq_off:
   * the offset of glibc's rseq area from the thread pointer (0: the CPU
   * number comes from sched_getcpu()). */
  uint32_t row_shift;
  uint32_t row_mask;
  uint32_t probe_mask;
  uint32_t dynamic; /* 1: the resizable family's (readmostly/bravo_dyn.h);
                     * its slots and mask are not used for indexing */
  intptr_t rseq_off;
  /* BRAVO-2D NUMA sectors (bravo2d.h), written with the geometry: when
   * cpu_row is not NULL, a reader on CPU c takes row
   * cpu_row[c & cpu_row_mask] (rows of one node side by side, node_rows
   * of them a node), else row c & row_mask. */
  const uint32_t *cpu_row;
  uint32_t cpu_row_mask;
  uint32_t node_rows;
} RM_ALIGNED;

extern RM_API struct rm_bravo_table rm_bravo_table;

/*
 * The two fields BRAVO adds to A, placed first in every BRAVO lock.  The
 * address of this struct is what readers publish in the table.
 *
 *   rbias (the bias word)
 *   bit  0      RM_BRAVO_BIAS: readers may publish themselves in the table
 *   bits 1-31   writers keeping the bias off (a count in units of
 *               RM_BRAVO_REVOKER): each is revoking without holding A, or
 *               (preload library) waiting for A with readers held out
 *
 *   word        | meaning
 *   ------------+-------------------------------------------------------
 *   0           | readers take A; a slow reader may set RM_BRAVO_BIAS
 *               | once rm_ticks() >= inhibit_until
 *   BIAS        | readers may publish themselves in the table
 *   count > 0   | readers take A, and no reader may set the bias
 *
 * The bias is set only by a slow reader holding A's read lock, with a CAS
 * from the whole word being 0 (so never while a writer is counted), and
 * cleared only by writers: under A's write lock, or by the read-modify-
 * write that counts a writer in.  Since both are read-modify-writes of one
 * word, a writer that counted itself in can be sure no fast read lock
 * starts until it leaves.
 *
 * revoke_pending is 1 while fast holds may remain although the bias is
 * off: a writer sets it right after the RMW that clears the bias to revoke
 * without A (rm_bravo_count_in says why after), and a try or timed
 * revocation that gives up leaves it set.  A writer that
 * completes a scan of the table while the bias stayed off from before the
 * scan to its end (it holds A's write lock, so no slow reader can set the
 * bias, or it is counted in) clears it.  So: a writer holding A that sees
 * nothing in the bias word (neither the bias nor a writer counted in) and
 * no revoke_pending knows that no fast read hold exists.
 *
 * inhibit_until (rm_ticks() units) and backoff (the exponent of the
 * inhibit back-off, see docs/bravo.md) are written by writers that hold A's
 * write lock and read by slow readers that hold A's read lock, so A orders
 * them; the accesses are relaxed atomics all the same (see bravo.c).
 */
struct rm_bravo_bias {
  uint32_t rbias;
  uint16_t revoke_pending;
  uint16_t backoff;
  uint64_t inhibit_until;
};
#define RM_BRAVO_BIAS_INITIALIZER {0, 0, 0, 0}
/* What RM_BRAVO_BIAS_INITIALIZER gives, at run time (the generated _init
 * functions). */
RM_INLINE void rm_bravo_bias_init(struct rm_bravo_bias *b) {
  b->rbias = 0;
  b->revoke_pending = 0;
  b->backoff = 0;
  b->inhibit_until = 0;
}
#define RM_BRAVO_BIAS 1u
#define RM_BRAVO_REVOKER 2u
/* Largest inhibit back-off exponent: the window grows to at most
 * 2^RM_BRAVO_BACKOFF_MAX times N x (revocation time). */
#define RM_BRAVO_BACKOFF_MAX 10
/* The least revocation cost the inhibit back-off assumes, in ns: a bias
 * that lived less than N times this (or N x the revocation's measured time,
 * if longer) since the last window ended did not pay for its revocation,
 * and the next window doubles.  Besides its scan, every revocation moves
 * the bias word's cache line between CPUs several times (the slow reader's
 * re-bias, the writer's count-in and count-out) and sends the readers that
 * arrive meanwhile through A; a scan of a few slots (BRAVO-2D's column)
 * times none of that (docs/bravo.md, "The inhibit back-off"). */
#define RM_BRAVO_REVOKE_FLOOR_NS 200u

/* Slot values: 0, a lock's bias address, and (preload library only) the
 * bits described in "Slots that other threads' unlocks may mark" below. */
#define RM_BRAVO_SLOT_NEST_ONE (1ull << 48)
#define RM_BRAVO_SLOT_NEST_MASK (0x7FFFull << 48)
#define RM_BRAVO_SLOT_RELEASED (1ull << 63)
#define RM_BRAVO_SLOT_LOCK(v) ((uintptr_t)(v) & ~(uintptr_t)(RM_BRAVO_SLOT_NEST_MASK | RM_BRAVO_SLOT_RELEASED))
RM_INLINE bool rm_bravo_slot_holds(uintptr_t v, const void *lock) {
  return (v & ~(uintptr_t)RM_BRAVO_SLOT_NEST_MASK) == (uintptr_t)lock;
}

/* Why a read went to the slow path (or did not). */
enum rm_bravo_path {
  RM_BRAVO_FAST = 0,
  RM_BRAVO_SLOW_BIAS_OFF = 1,
  RM_BRAVO_SLOW_COLLISION = 2,
  RM_BRAVO_SLOW_RACED = 3
};

struct rm_bravo_stats {
  uint64_t fast_reads;
  uint64_t slow_bias_off;
  uint64_t slow_collision;
  uint64_t slow_raced;
  uint64_t writes;
  uint64_t revocations;
  uint64_t revoke_ns;
};

/* ---- global configuration -------------------------------------------------- */

/* N of the inhibit policy (default 9, or READMOSTLY_BRAVO_N).  0 re-enables
 * bias right after every revocation; EINVAL above 1000000. */
RM_API int rm_bravo_set_inhibit_multiplier(unsigned n);
RM_API unsigned rm_bravo_inhibit_multiplier(void);
RM_API void rm_bravo_stats_enable(bool on);
RM_API void rm_bravo_stats_get(struct rm_bravo_stats *out);
RM_API void rm_bravo_stats_reset(void);
/* Slots in the global table (allocating it if needed, or waiting while
 * another thread does; not for signal handlers); 0 on ENOMEM. */
RM_API size_t rm_bravo_table_size(void);

/*
 * The revocation scan of a flat table (docs/bravo-future.md): it looks for
 * nonzero slots a cache line at a time with SSE2, or a 128-byte sector at a
 * time with AVX2 where the CPU has it (chosen at start-up with
 * __builtin_cpu_supports), and one slot at a time in plain C elsewhere
 * (other architectures, ThreadSanitizer builds).  Every method finds every
 * slot that holds the lock; only the speed differs.
 * rm_bravo_set_scan(m): 0; EINVAL for an unknown m; ENOTSUP when this CPU
 * or build lacks it.  RM_BRAVO_SCAN_AUTO picks the widest supported; so
 * does the start-up default, or READMOSTLY_BRAVO_SCAN=plain|sse2|avx2.
 * rm_bravo_scan() is the method in use (never AUTO).
 * rm_bravo_scan_nonzero(slots, from, n, m) is the scan itself, for the
 * benchmarks: the first index >= from of a nonzero slot of slots[0..n)
 * (slots aligned to 32 bytes), or n; n also when m is not supported.
 */
#define RM_BRAVO_SCAN_AUTO 0
#define RM_BRAVO_SCAN_PLAIN 1
#define RM_BRAVO_SCAN_SSE2 2
#define RM_BRAVO_SCAN_AVX2 3
RM_API int rm_bravo_set_scan(int method);
RM_API int rm_bravo_scan(void);
RM_API size_t rm_bravo_scan_nonzero(const uintptr_t *slots, size_t from, size_t n, int method);

/* ---- out-of-line parts (src/bravo.c) ------------------------------------------ */

/* Allocate the global table if needed.  0, ENOMEM, or EAGAIN (another
 * thread is allocating it). */
RM_API int rm_bravo_table_init_slowpath(void);
/* Allocate table t if it is one of the process-wide ones (rm_bravo_table,
 * rm_bravo2d_table) and not allocated yet.  0, ENOMEM, or EAGAIN (another
 * thread is allocating it: the caller stays unbiased this time). */
RM_API int rm_bravo_table_init_table(struct rm_bravo_table *t);
/* Private tables (one per lock, for the interference experiment). */
RM_API int rm_bravo_table_private_init(struct rm_bravo_table *t, size_t slots);
RM_API void rm_bravo_table_private_destroy(struct rm_bravo_table *t);
/*
 * Revoke bias under A: called by a writer holding A's write lock when it
 * saw the bias or revoke_pending.  mode 0 waits as long as needed (only the
 * preload library, which keeps recursive reads out of A itself, waits while
 * holding A); mode 1 (try) returns EBUSY at once if a fast reader holds a
 * slot; mode 2 (timed) returns ETIMEDOUT when abstime passes.  On error the
 * bias stays off, revoke_pending is set (the next writer scans again) and
 * the caller must release A.
 */
RM_API int rm_bravo_revoke_slowpath(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                    int mode, int clk, const struct timespec *abstime);

/*
 * Revoke bias without holding A (the blocking and timed write locks of the
 * generator).  rm_bravo_revoke_unlocked counts the writer in (the bias goes
 * off and stays off), scans the table and waits until no slot holds the
 * lock; mode RM_BRAVO_REVOKE_WAIT or RM_BRAVO_REVOKE_TIMED (ETIMEDOUT: the
 * writer is counted out again and revoke_pending stays set).  On 0 the
 * caller takes A's write lock and then calls rm_bravo_revoke_finish (sets
 * the inhibit window, clears revoke_pending, counts the writer out), or,
 * if A could not be taken, rm_bravo_revoke_abandon (counts it out).
 */
struct rm_bravo_revocation {
  uint64_t start;   /* rm_ticks() when the scan began */
  uint64_t end;     /* ... and when it found the table clear */
};
RM_API int rm_bravo_revoke_unlocked(struct rm_bravo_bias *b, struct rm_bravo_table *t, int mode,
                                    int clk, const struct timespec *abstime,
                                    struct rm_bravo_revocation *rv);
RM_API void rm_bravo_revoke_finish(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                   const struct rm_bravo_revocation *rv);
RM_API void rm_bravo_revoke_abandon(struct rm_bravo_bias *b);
RM_API void rm_bravo_stat_slowpath(int which, uint64_t v);
RM_API RM_COLD void rm_bravo_bad_unlock(const void *lock, rm_token_t tok);

/* ---- the inline core shared by every BRAVO-A ------------------------------------ */

/* Mix the lock address with the thread identity (a 64-bit finalizer in the
 * style of Mix32/MurmurHash3's fmix: every input bit affects every output
 * bit), so readers of one lock spread over the table and one thread's locks
 * do too. */
RM_INLINE uint32_t rm_bravo_hash(const void *lock, uintptr_t self) {
  uint64_t z = (uint64_t)(uintptr_t)lock ^ ((uint64_t)self * 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 33)) * 0xFF51AFD7ED558CCDull;
  z = (z ^ (z >> 33)) * 0xC4CEB9FE1A85EC53ull;
  return (uint32_t)(z >> 32) ^ (uint32_t)z;
}

/*
 * Ordering points (see docs/bravo.md for the full table; model of them,
 * with the revocations and the shared slots below: models/bravo.pml):
 *  (R1) reader: CAS slot 0 -> lock, seq_cst.     Pairs with (W2).
 *  (R2) reader: load rbias, seq_cst (re-check).  Pairs with (W1).
 *       Dekker: R1 < R2 and W1 < W2 in the single seq_cst order S.  If the
 *       writer's scan (W2) misses the reader's slot, W2 precedes R1 in S, so
 *       W1 precedes R2 and the reader sees rbias == 0 and backs out.  If the
 *       reader's re-check sees rbias == 1, R2 precedes W1, so R1 precedes W2
 *       and the writer's scan sees the slot and waits.  On x86-64 R1 is a
 *       LOCK CMPXCHG (a full fence) and R2 a plain load.
 *  (R0) reader: first load of rbias, acquire.  Pairs with (S1): a reader that
 *       sees the bias also sees the table allocated (slots, mask) and the
 *       data written by the writer before the slow reader that set it.
 *       R0 and R2 test RM_BRAVO_BIAS only; "rbias == 1" / "0" in these notes
 *       mean that bit set / clear.
 *  (R3) reader unlock: store slot = 0, release.  Pairs with (W3): the
 *       writer that sees the slot empty also sees everything the reader did
 *       in its critical section as done (no write of the writer can be read
 *       by that reader).
 *  (S1) slow reader: CAS rbias 0 -> BIAS, release (see R0).
 *  (W1) writer: clear BIAS, seq_cst (a fetch_and under A, or the read-modify-
 *       write that counts the writer in); then a full fence
 *       (rm_fence_after_rmw: on x86 the locked RMW is that fence).
 *  (W2/W3) writer: scan loads, seq_cst (acquire on each).
 */
/* rm_bravo_read_fast_shared only (see "Slots that other threads' unlocks
 * may mark" below): the reader backed out of a slot that an unlock of
 * another thread had marked RM_BRAVO_SLOT_RELEASED; that unlock meant to
 * release a real hold, and the caller must release one in its place. */
#define RM_BRAVO_SLOW_RACED_MARKED 8

/* A reader that installed b in *slot (R1) and then found the bias off (R2)
 * backs out: it never held the lock.  Returns RM_BRAVO_SLOW_RACED, or
 * RM_BRAVO_SLOW_RACED_MARKED (shared slots only, below). */
RM_INLINE int rm_bravo_back_out(uintptr_t *slot, struct rm_bravo_bias *b,
                                const bool shared_slots) {
  /* A writer revoked between R0 and R2.
   * Release: nothing of ours to publish, but a writer that sees the slot
   * empty must not see it empty "before" our CAS. */
  if (!shared_slots) {
    rm_atomic_store_release(slot, (uintptr_t)0);
    return RM_BRAVO_SLOW_RACED;
  }
  /* Shared slots: another thread's unlock may have marked this slot as a
   * hold it released (nothing else changes a slot its owner installed).  A
   * store would wipe the mark and lose that release.  Subtracting our
   * address instead leaves 0, or the mark alone (which holds no lock, so no
   * writer waits for it), and returns what was there; after a mark we clear
   * the slot and the caller passes the release on.  (A subtraction rather
   * than an exchange with 0: gcc would share that 0 with R1's and pay a
   * move on the fast path.) */
  uintptr_t was = __atomic_fetch_sub(slot, (uintptr_t)b, __ATOMIC_RELEASE);
  if (RM_LIKELY(was == (uintptr_t)b)) return RM_BRAVO_SLOW_RACED;
  RM_ASSERT(was == ((uintptr_t)b | RM_BRAVO_SLOT_RELEASED),
            "slot %p changed under its owner: %#lx", (void *)slot, (unsigned long)was);
  rm_atomic_store_release(slot, (uintptr_t)0);
  return RM_BRAVO_SLOW_RACED_MARKED;
}

RM_INLINE int rm_bravo_read_fast_body(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                      rm_token_t *tok, const bool shared_slots) {
  if (!(rm_atomic_load_acquire(&b->rbias) & RM_BRAVO_BIAS)) /* (R0) */
    return RM_BRAVO_SLOW_BIAS_OFF;
  uintptr_t *slot = &t->slots[rm_bravo_hash(b, rm_thread_identity()) & t->mask];
  uintptr_t expected = 0;
  RM_DEBUG_YIELD();
  if (!rm_atomic_cas_seq_cst(slot, &expected, (uintptr_t)b)) /* (R1) */
    return RM_BRAVO_SLOW_COLLISION;
  RM_DEBUG_PAUSE("bravo.read.installed");
  if (RM_LIKELY(rm_atomic_load_seq_cst(&b->rbias) & RM_BRAVO_BIAS)) { /* (R2) */
    *tok = (rm_token_t)slot;
    return RM_BRAVO_FAST;
  }
  return rm_bravo_back_out(slot, b, shared_slots);
}

/* The fast read path of Listing 1 (lines 9-17): 0 (RM_BRAVO_FAST) with the
 * slot in *tok, or why the caller must take A. */
RM_INLINE int rm_bravo_read_fast(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                 rm_token_t *tok) {
  return rm_bravo_read_fast_body(b, t, tok, false);
}

/*
 * Per thread: the inhibit window this thread last found still open
 * (`until`, a value of some lock's inhibit_until), and how many more slow
 * reads of a lock whose window is that same value may skip the clock.
 * Reading the clock costs as much as the rest of a slow read on some
 * machines (rdtsc is about 12 ns in the virtual machines we measure on), so
 * a thread that found a window open reads it again only every
 * RM_BRAVO_CLOCK_EVERY-th slow read of that window.  Any change of the
 * window (a new revocation, a reset to 0) compares unequal and reads the
 * clock at once.  Only the calling thread touches its copy.
 */
struct rm_bravo_clock_skip {
  uint64_t until;
  uint32_t left;
};
extern RM_API __thread struct rm_bravo_clock_skip rm_bravo_tls_skip
    __attribute__((tls_model("initial-exec")));
#define RM_BRAVO_CLOCK_EVERY 8u

/* After a slow-path read acquisition (A's read lock held):
 * rm_bravo_read_slow_done counts it (statistics on) and calls
 * rm_bravo_read_slow_bias, which re-enables bias if the inhibit period is
 * over (Listing 1, lines 25-26); callers that count elsewhere use the
 * latter alone.
 * The bias may come back up to RM_BRAVO_CLOCK_EVERY - 1 slow reads of this
 * thread after the window ends (any other thread's slow read may bring it
 * back sooner); a bias that returns late costs speed, never correctness. */
RM_INLINE void rm_bravo_read_slow_bias(struct rm_bravo_bias *b, struct rm_bravo_table *t) {
  if (rm_atomic_load_relaxed(&b->rbias)) return; /* on, or a writer keeps it off */
  /* Relaxed: written only under A's write lock, and we hold A's read lock,
   * so A orders it.  The skip state is this thread's own (no ordering). */
  uint64_t until = rm_atomic_load_relaxed(&b->inhibit_until);
  struct rm_bravo_clock_skip *skip = &rm_bravo_tls_skip;
  if (skip->left != 0 && skip->until == until) {
    skip->left--;
    return;
  }
  if (rm_ticks() < until) {
    skip->until = until;
    skip->left = RM_BRAVO_CLOCK_EVERY - 1u;
    return;
  }
  if (RM_UNLIKELY(rm_atomic_load_acquire(&t->slots) == NULL) &&
      rm_bravo_table_init_table(t) != 0)
    return; /* no table: stay unbiased, the lock still works */
  RM_DEBUG_YIELD();
  /* (S1) CAS from 0, release: fails while a writer is counted in (it
   * keeps the bias off while it revokes without A).  Release: a fast
   * reader that sees the bias (R0, acquire) sees the table and what the
   * last writer did. */
  uint32_t off = 0;
  __atomic_compare_exchange_n(&b->rbias, &off, RM_BRAVO_BIAS, false, __ATOMIC_RELEASE,
                              __ATOMIC_RELAXED);
}
RM_INLINE void rm_bravo_read_slow_done(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                       int why) {
  if (RM_UNLIKELY(t->stats_on)) rm_bravo_stat_slowpath(why, 1);
  rm_bravo_read_slow_bias(b, t);
}

RM_INLINE void rm_bravo_read_fast_done(struct rm_bravo_table *t) {
  if (RM_UNLIKELY(t->stats_on)) rm_bravo_stat_slowpath(RM_BRAVO_FAST, 1);
}

/* Release a read hold; returns 1 if it was a fast one, 0 if the caller must
 * release A's read lock, -1 (the caller returns EPERM; debug builds abort
 * with a message) if tok is no hold of this lock: 0 from a failed lock, or
 * a slot that does not hold it (a second unlock, another lock's token).
 * The check is one relaxed load of the slot the store below writes. */
RM_INLINE int rm_bravo_read_unlock_fast(struct rm_bravo_bias *b, rm_token_t tok) {
  /* One compare sends both RM_TOKEN_NONE (1) and 0 aside. */
  if (tok <= RM_TOKEN_NONE ||
      RM_UNLIKELY(rm_atomic_load_relaxed((uintptr_t *)tok) != (uintptr_t)b)) {
    if (tok == RM_TOKEN_NONE) return 0;
#ifndef NDEBUG
    rm_bravo_bad_unlock(b, tok);
#endif
    return -1;
  }
  RM_DEBUG_YIELD();
  rm_atomic_store_release((uintptr_t *)tok, (uintptr_t)0); /* (R3) */
  return 1;
}

/* Count a writer in: the bias goes off and stays off until it counts out
 * (a slow reader's CAS (S1) wants the whole word at 0).  The RMW is
 * seq_cst: it is the revocation's W1 when the writer then scans.
 *
 * revoke_pending is set AFTER the RMW, since fast holds taken before it
 * may remain.  Before it, the store could be undone: another writer whose
 * revocation finished meanwhile stores 0, a slow reader turns the bias on
 * again, a fast reader enters, and then our RMW clears that bias with
 * revoke_pending at 0; if we then gave up, nothing would tell the next
 * writer of that reader (models/bravo.pml, MIXED, mutant pending_first).
 * After the RMW, any later store of 0 comes from a scan that began after
 * the bias went off for good, so it saw every hold ours would have.  In
 * the moment between the RMW and this store, a writer holding A sees our
 * count in the word, which rm_bravo_write_clear counts as "not clear".
 * Our count_out is a release, so the store is visible by then. */
RM_INLINE void rm_bravo_count_in(struct rm_bravo_bias *b) {
  uint32_t w = rm_atomic_load_relaxed(&b->rbias);
  while (!__atomic_compare_exchange_n(&b->rbias, &w, (w & ~RM_BRAVO_BIAS) + RM_BRAVO_REVOKER,
                                      false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
  }
  rm_atomic_store_relaxed(&b->revoke_pending, (uint16_t)1);
}
/* Count a writer out.  Release: what it did before (a scan that saw the
 * readers leave, revoke_pending = 0) happens before a writer that reads
 * the word with acquire. */
RM_INLINE void rm_bravo_count_out(struct rm_bravo_bias *b) {
  __atomic_fetch_sub(&b->rbias, RM_BRAVO_REVOKER, __ATOMIC_RELEASE);
}

/* After A's write lock is held: true when no fast read hold can exist
 * (nothing in the bias word: neither the bias nor a writer counted in,
 * whose revocation is unfinished; and no revocation pending), and the
 * write is counted; false when the caller must revoke.  A writer counted
 * in counts as "not clear" (not only the bias bit): its revoke_pending
 * store follows its RMW (rm_bravo_count_in), and between the two only the
 * count tells us that the bias it cleared may have let readers in
 * (models/bravo.pml, MIXED, mutant clear_ignores_count).  Acquire loads:
 * a slow reader that set the bias released A before we acquired it, but a
 * writer that finished a revocation without A (revoke_pending = 0,
 * release) orders the readers' sections before ours only through these. */
RM_INLINE bool rm_bravo_write_clear(struct rm_bravo_bias *b, struct rm_bravo_table *t) {
  if (RM_UNLIKELY(rm_atomic_load_acquire(&b->rbias) |
                  rm_atomic_load_acquire(&b->revoke_pending)))
    return false;
  if (RM_UNLIKELY(t->stats_on)) rm_bravo_stat_slowpath(4, 1);
  return true;
}

/* After A's write lock is held: revoke under A if needed (mode as for
 * rm_bravo_revoke_slowpath).  The try-locks use it (they never wait), and
 * the preload library. */
RM_INLINE int rm_bravo_write_acquired(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                      int mode, int clk, const struct timespec *abstime) {
  if (RM_LIKELY(rm_bravo_write_clear(b, t))) return 0;
  return rm_bravo_revoke_slowpath(b, t, mode, clk, abstime);
}

/*
 * ---- Slots that other threads' unlocks may mark -----------------------------
 * pthread_rwlock_unlock lets any thread release a read hold (glibc only
 * counts readers), so the preload library shares the slots of its fast
 * holds with other threads' unlocks.  The native API never does; this is
 * the whole contract, and the core paths that honour it:
 *
 *   slot bits   meaning
 *   0-47        the lock's bias word address (below 2^48 on 64-bit Linux)
 *   48-62       extra (recursive) holds of the slot's owner
 *   63          RM_BRAVO_SLOT_RELEASED: another thread released this hold
 *
 * A fast hold's token is its slot's address; the preload keeps it with the
 * lock in the thread's held list (preload/preload_internal.h) and finds the
 * slot there at unlock, never by hashing again.
 *
 *  1. Only the owner installs a lock (R1, CAS from 0), adds a nesting
 *     level, and clears the slot; each of these is a CAS from the value it
 *     expects, never a plain store, so a mark is never overwritten.
 *  2. Another thread releases a hold with rm_bravo_release_foreign(): one
 *     nesting level less, or the mark, by CAS.
 *  3. Writers wait while rm_bravo_slot_holds(slot, lock): a marked slot is
 *     never waited for.
 *  4. A reader that backs out after a revocation (rm_bravo_read_fast_shared)
 *     finds a mark when a releaser took its transient slot for a real
 *     hold: it clears the slot and returns RM_BRAVO_SLOW_RACED_MARKED, and
 *     the caller releases some other hold in its place, as the releaser
 *     meant to.
 *  5. The owner that finds its slot marked clears it and forgets the hold.
 *  6. The fork handler clears every marked slot (bravo.c).
 *
 * The same contract holds in a BRAVO-2D table (readmostly/bravo2d.h; the
 * preload's READMOSTLY_RWLOCK=bravo2d): the owner still finds its slot in
 * its held list, and another thread's release looks for a hold of b only
 * where a reader of b can publish, b's column (and second column) in
 * every row, whatever CPU the holder ran on.
 */
/* rm_bravo_read_fast with point 4 above. */
RM_INLINE int rm_bravo_read_fast_shared(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                        rm_token_t *tok) {
  return rm_bravo_read_fast_body(b, t, tok, true);
}
/* Point 2: release one hold of b in some slot (a nesting level, or the hold
 * itself, marked).  Release ordering, as the owner's unlock (R3).  true if
 * a hold was found; skip (may be NULL) is a slot not to look at. */
RM_API bool rm_bravo_release_foreign(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                     const uintptr_t *skip);

/* Wait until no slot of t holds b, as a revoking writer's scan does (W2,
 * W3) but without touching the bias: every slot of a flat table, b's
 * column (its probe group, with the second probe) in every row of a
 * BRAVO-2D one.  mode RM_BRAVO_REVOKE_WAIT,
 * or RM_BRAVO_REVOKE_TIMED (ETIMEDOUT when abstime passes).  0 when done. */
RM_API int rm_bravo_wait_unheld(struct rm_bravo_bias *b, struct rm_bravo_table *t, int mode,
                                int clk, const struct timespec *abstime);
/* Whether some slot of t holds b now (relaxed loads: a snapshot; the
 * same slots as rm_bravo_wait_unheld). */
RM_API bool rm_bravo_table_holds(const struct rm_bravo_bias *b, const struct rm_bravo_table *t);
/* Whether a slot this thread's fast path could have published b in holds
 * b now: its own slot of a flat table (of the current or the closing one
 * of the resizable family), b's column(s) in every row of a 2D one (the
 * thread may have moved to another CPU since).  A relaxed snapshot, used
 * by read_trylock only to tell a writer that is passing through A (it
 * cannot finish while that hold exists) from one that holds the lock. */
RM_API bool rm_bravo_read_hold_seen(const struct rm_bravo_bias *b, const struct rm_bravo_table *t);
/* Back-off of read_trylock's retry: spin the first 64 rounds, then yield
 * the CPU (the writer that holds A may have been preempted). */
RM_INLINE void rm_bravo_busy_pause(unsigned n) {
  if (n < 64u)
    rm_cpu_relax();
  else
    sched_yield();
}
/* In a fork child (one thread): clear the slots of t that no longer hold
 * anyone, as the flat table's own handler does (bravo.c, "fork"), for a
 * table with shared slots whose owner keeps its slots in a list: own(s,
 * arg) says whether slot s is one of the forking thread's (kept whatever
 * it holds); any other slot is cleared when it is marked, or when its
 * lock's bias is off. */
RM_API void rm_bravo_table_fork_child(struct rm_bravo_table *t,
                                      bool (*own)(const uintptr_t *slot, void *arg), void *arg);

#define RM_BRAVO_REVOKE_WAIT 0
#define RM_BRAVO_REVOKE_TRY 1
#define RM_BRAVO_REVOKE_TIMED 2

/* Generated functions may go unused in the file that stamps them out. */
#define RM_GEN_INLINE RM_INLINE __attribute__((unused))

/*
 * ---- The generator --------------------------------------------------------------
 * RM_BRAVO_DEFINE(NAME, UTYPE, UPFX) defines
 *   typedef struct NAME { struct rm_bravo_bias bias; UTYPE under; } NAME##_t;
 * and NAME##_init, _destroy, _read_lock, _read_trylock, _read_unlock,
 * _write_lock, _write_trylock, _write_unlock, all static inline, calling
 * UPFX##_init(UTYPE*), UPFX##_destroy, UPFX##_read_lock, UPFX##_read_trylock,
 * UPFX##_read_unlock, UPFX##_write_lock, UPFX##_write_trylock,
 * UPFX##_write_unlock directly (no indirect calls).  The static initializer is
 * { RM_BRAVO_BIAS_INITIALIZER, <A's initializer> }.
 * RM_BRAVO_DEFINE_TIMED adds _read_timedlock and _write_timedlock over
 * UPFX##_read_timedlock(UTYPE*, int clk, const struct timespec*) and
 * UPFX##_write_timedlock.
 * The _TABLE variants take an expression of the lock `l` giving the table
 * (struct rm_bravo_table *); the plain ones use the global table.
 * RM_BRAVO_DEFINE_READ_K / _WRITE (and _READ_TIMED_K / _WRITE_TIMED) are
 * the two halves of the operations; readmostly/bravo_wm.h pairs the same
 * read half with another write half.
 */
#define RM_BRAVO_GLOBAL_TABLE(l) (&rm_bravo_table)

/* K names the fast-path family: rm_bravo (the flat table of Listing 1) or
 * rm_bravo2d (readmostly/bravo2d.h); the rest is shared. */
#define RM_BRAVO_DEFINE_CORE(NAME, UTYPE, UPFX, TABLE) \
  RM_BRAVO_DEFINE_CORE_K(NAME, UTYPE, UPFX, TABLE, rm_bravo)
#define RM_BRAVO_DEFINE_CORE_K(NAME, UTYPE, UPFX, TABLE, K)                        \
  RM_BRAVO_DEFINE_READ_K(NAME, UTYPE, UPFX, TABLE, K)                               \
  RM_BRAVO_DEFINE_WRITE(NAME, UTYPE, UPFX, TABLE)
/* The read side alone (lock, trylock, unlock): the same for every write
 * path (readmostly/bravo_wm.h generates another write path over it).  It
 * touches only l->bias and l->under. */
#define RM_BRAVO_DEFINE_READ_K(NAME, UTYPE, UPFX, TABLE, K)                        \
  RM_GEN_INLINE int NAME##_read_lock(NAME##_t *l, rm_token_t *tok) {                    \
    int why = K##_read_fast(&l->bias, TABLE(l), tok);                          \
    if (RM_LIKELY(why == RM_BRAVO_FAST)) {                                          \
      rm_bravo_read_fast_done(TABLE(l));                                            \
      return 0;                                                                     \
    }                                                                               \
    int e = UPFX##_read_lock(&l->under);                                            \
    if (e) {                                                                        \
      *tok = 0; /* no hold: a token that no unlock accepts */                       \
      return e;                                                                     \
    }                                                                               \
    *tok = RM_TOKEN_NONE;                                                           \
    rm_bravo_read_slow_done(&l->bias, TABLE(l), why);                               \
    return 0;                                                                       \
  }                                                                                 \
  RM_GEN_INLINE int NAME##_read_trylock(NAME##_t *l, rm_token_t *tok) {                 \
    int why = K##_read_fast(&l->bias, TABLE(l), tok);                          \
    if (why == RM_BRAVO_FAST) {                                                     \
      rm_bravo_read_fast_done(TABLE(l));                                            \
      return 0;                                                                     \
    }                                                                               \
    int e = UPFX##_read_trylock(&l->under);                                         \
    /* A's write lock is held, but while a fast hold of ours exists the      \
     * writer cannot enter: it gives A back and revokes (DESCRIPTION).  So   \
     * a recursive read retries until A is free, and never fails with EBUSY \
     * where A alone would not have. */                                     \
    for (unsigned n_ = 0; RM_UNLIKELY(e == EBUSY) &&                                 \
                          rm_bravo_read_hold_seen(&l->bias, TABLE(l));               \
         n_++) {                                                                    \
      rm_bravo_busy_pause(n_);                                                      \
      e = UPFX##_read_trylock(&l->under);                                           \
    }                                                                               \
    if (e) {                                                                        \
      *tok = 0; /* no hold: a token that no unlock accepts */                       \
      return e;                                                                     \
    }                                                                               \
    *tok = RM_TOKEN_NONE;                                                           \
    rm_bravo_read_slow_done(&l->bias, TABLE(l), why);                               \
    return 0;                                                                       \
  }                                                                                 \
  RM_GEN_INLINE int NAME##_read_unlock(NAME##_t *l, rm_token_t tok) {                   \
    int fast = K##_read_unlock_fast(&l->bias, tok);                            \
    if (fast) return fast > 0 ? 0 : EPERM;                                          \
    return UPFX##_read_unlock(&l->under);                                           \
  }
/* The write side of Listing 1 with the revocation done holding nothing. */
#define RM_BRAVO_DEFINE_WRITE(NAME, UTYPE, UPFX, TABLE)                             \
  RM_GEN_INLINE int NAME##_write_lock(NAME##_t *l) {                                    \
    int e = UPFX##_write_lock(&l->under);                                           \
    if (e) return e;                                                                \
    if (RM_LIKELY(rm_bravo_write_clear(&l->bias, TABLE(l)))) return 0;              \
    /* Revoke holding nothing (see DESCRIPTION), then take A again. */              \
    UPFX##_write_unlock(&l->under);                                                 \
    struct rm_bravo_revocation rv;                                                  \
    rm_bravo_revoke_unlocked(&l->bias, TABLE(l), RM_BRAVO_REVOKE_WAIT, 0, NULL, &rv); \
    e = UPFX##_write_lock(&l->under);                                               \
    if (e) {                                                                        \
      rm_bravo_revoke_abandon(&l->bias);                                            \
      return e;                                                                     \
    }                                                                               \
    rm_bravo_revoke_finish(&l->bias, TABLE(l), &rv);                                \
    return 0;                                                                       \
  }                                                                                 \
  RM_GEN_INLINE int NAME##_write_trylock(NAME##_t *l) {                                 \
    int e = UPFX##_write_trylock(&l->under);                                        \
    if (e) return e;                                                                \
    e = rm_bravo_write_acquired(&l->bias, TABLE(l), RM_BRAVO_REVOKE_TRY, 0, NULL);  \
    if (e) UPFX##_write_unlock(&l->under);                                          \
    return e;                                                                       \
  }                                                                                 \
  RM_GEN_INLINE int NAME##_write_unlock(NAME##_t *l) { return UPFX##_write_unlock(&l->under); }

#define RM_BRAVO_DEFINE_TIMED_PART(NAME, UTYPE, UPFX, TABLE) \
  RM_BRAVO_DEFINE_TIMED_PART_K(NAME, UTYPE, UPFX, TABLE, rm_bravo)
#define RM_BRAVO_DEFINE_TIMED_PART_K(NAME, UTYPE, UPFX, TABLE, K)                  \
  RM_BRAVO_DEFINE_READ_TIMED_K(NAME, UTYPE, UPFX, TABLE, K)                         \
  RM_BRAVO_DEFINE_WRITE_TIMED(NAME, UTYPE, UPFX, TABLE)
#define RM_BRAVO_DEFINE_READ_TIMED_K(NAME, UTYPE, UPFX, TABLE, K)                  \
  RM_GEN_INLINE int NAME##_read_timedlock(NAME##_t *l, rm_token_t *tok, int clk,        \
                                      const struct timespec *abstime) {             \
    if (RM_UNLIKELY(rm_timeout_check(clk, abstime) != 0)) {                         \
      *tok = 0; /* no hold: a token that no unlock accepts */                       \
      return EINVAL;                                                                \
    }                                                                               \
    int why = K##_read_fast(&l->bias, TABLE(l), tok);                          \
    if (why == RM_BRAVO_FAST) {                                                     \
      rm_bravo_read_fast_done(TABLE(l));                                            \
      return 0;                                                                     \
    }                                                                               \
    int e = UPFX##_read_timedlock(&l->under, clk, abstime);                         \
    if (e) {                                                                        \
      *tok = 0; /* no hold: a token that no unlock accepts */                       \
      return e;                                                                     \
    }                                                                               \
    *tok = RM_TOKEN_NONE;                                                           \
    rm_bravo_read_slow_done(&l->bias, TABLE(l), why);                               \
    return 0;                                                                       \
  }
#define RM_BRAVO_DEFINE_WRITE_TIMED(NAME, UTYPE, UPFX, TABLE)                       \
  RM_GEN_INLINE int NAME##_write_timedlock(NAME##_t *l, int clk,                        \
                                       const struct timespec *abstime) {            \
    if (RM_UNLIKELY(rm_timeout_check(clk, abstime) != 0)) return EINVAL;            \
    int e = UPFX##_write_timedlock(&l->under, clk, abstime);                        \
    if (e) return e;                                                                \
    if (RM_LIKELY(rm_bravo_write_clear(&l->bias, TABLE(l)))) return 0;              \
    UPFX##_write_unlock(&l->under);                                                 \
    struct rm_bravo_revocation rv;                                                  \
    e = rm_bravo_revoke_unlocked(&l->bias, TABLE(l), RM_BRAVO_REVOKE_TIMED, clk, abstime, &rv); \
    if (e) return e;                                                                \
    e = UPFX##_write_timedlock(&l->under, clk, abstime);                            \
    if (e) {                                                                        \
      rm_bravo_revoke_abandon(&l->bias);                                            \
      return e;                                                                     \
    }                                                                               \
    rm_bravo_revoke_finish(&l->bias, TABLE(l), &rv);                                \
    return 0;                                                                       \
  }

#define RM_BRAVO_DEFINE(NAME, UTYPE, UPFX)                                          \
  RM_BRAVO_DEFINE_K(NAME, UTYPE, UPFX, RM_BRAVO_GLOBAL_TABLE, rm_bravo)
/* The lock type, _init, _destroy and the operations over table TABLE with
 * fast-path family K (as RM_BRAVO_DEFINE_CORE_K; readmostly/bravo2d.h). */
#define RM_BRAVO_DEFINE_K(NAME, UTYPE, UPFX, TABLE, K)                              \
  typedef struct NAME {                                                             \
    struct rm_bravo_bias bias;                                                      \
    UTYPE under;                                                                    \
  } NAME##_t;                                                                       \
  RM_GEN_INLINE int NAME##_init(NAME##_t *l) {                                      \
    if (!l) return EINVAL;                                                          \
    rm_bravo_bias_init(&l->bias);                                                   \
    return UPFX##_init(&l->under);                                                  \
  }                                                                                 \
  RM_GEN_INLINE int NAME##_destroy(NAME##_t *l) {                                   \
    if (!l) return EINVAL;                                                          \
    return UPFX##_destroy(&l->under);                                               \
  }                                                                                 \
  RM_BRAVO_DEFINE_CORE_K(NAME, UTYPE, UPFX, TABLE, K)

#define RM_BRAVO_DEFINE_TIMED(NAME, UTYPE, UPFX)                                    \
  RM_BRAVO_DEFINE(NAME, UTYPE, UPFX)                                                \
  RM_BRAVO_DEFINE_TIMED_PART(NAME, UTYPE, UPFX, RM_BRAVO_GLOBAL_TABLE)

/* BRAVO-A with a private table of `slots` slots per lock: the idealized,
 * large-footprint variant the paper compares against in its inter-lock
 * interference experiment (section 5.1).  No static initializer: _init
 * allocates (ENOMEM), _destroy frees. */
#define RM_BRAVO_PRIVATE_TABLE(l) (&(l)->table)
#define RM_BRAVO_DEFINE_PRIVATE(NAME, UTYPE, UPFX, SLOTS)                           \
  RM_BRAVO_DEFINE_PRIVATE_K(NAME, UTYPE, UPFX, SLOTS, rm_bravo_table_private_init, rm_bravo)
/* As RM_BRAVO_DEFINE_PRIVATE, the table made by TINIT(table, SLOTS), with
 * fast-path family K. */
#define RM_BRAVO_DEFINE_PRIVATE_K(NAME, UTYPE, UPFX, SLOTS, TINIT, K)               \
  typedef struct NAME {                                                             \
    struct rm_bravo_bias bias;                                                      \
    UTYPE under;                                                                    \
    struct rm_bravo_table table;                                                    \
  } NAME##_t;                                                                       \
  RM_GEN_INLINE int NAME##_init(NAME##_t *l) {                                      \
    if (!l) return EINVAL;                                                          \
    rm_bravo_bias_init(&l->bias);                                                   \
    int e = TINIT(&l->table, (SLOTS));                                              \
    if (e) return e;                                                                \
    e = UPFX##_init(&l->under);                                                     \
    if (e) rm_bravo_table_private_destroy(&l->table);                               \
    return e;                                                                       \
  }                                                                                 \
  RM_GEN_INLINE int NAME##_destroy(NAME##_t *l) {                                   \
    if (!l) return EINVAL;                                                          \
    int e = UPFX##_destroy(&l->under);                                              \
    if (e) return e;                                                                \
    rm_bravo_table_private_destroy(&l->table);                                      \
    return 0;                                                                       \
  }                                                                                 \
  RM_BRAVO_DEFINE_CORE_K(NAME, UTYPE, UPFX, RM_BRAVO_PRIVATE_TABLE, K)

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_BRAVO_H */
