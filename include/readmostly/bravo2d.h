/*
 * readmostly/bravo2d.h - BRAVO-2D: BRAVO with a visible-readers table in
 * rows, one per CPU, and a writer that scans only its lock's column.
 *
 * SYNOPSIS
 *   #include <readmostly/bravo_locks.h>   // BRAVO-2D over the bundled locks
 *
 *   static rm_bravo2d_ba_t lock = RM_BRAVO2D_BA_INITIALIZER;
 *   rm_token_t tok;
 *   rm_bravo2d_ba_read_lock(&lock, &tok);  ... read ...  rm_bravo2d_ba_read_unlock(&lock, tok);
 *   rm_bravo2d_ba_write_lock(&lock);       ... write ... rm_bravo2d_ba_write_unlock(&lock);
 *
 *   // BRAVO-2D over your own lock type (as RM_BRAVO_DEFINE in bravo.h):
 *   RM_BRAVO2D_DEFINE(my_bravo2d, my_t, my)
 *   RM_BRAVO2D_DEFINE_TIMED(my_bravo2d, my_t, my)
 *
 *   // Optional, before the first BRAVO-2D lock is used:
 *   struct rm_bravo2d_attr a;
 *   rm_bravo2d_attr_init(&a);
 *   a.second_probe = RM_BRAVO2D_PROBE_OFF;
 *   int e = rm_bravo2d_configure(&a);     // 0, EINVAL, ENOTSUP, EBUSY, ENOMEM
 *
 * DESCRIPTION
 *   The "preferred embodiment" of section 7 of the BRAVO paper (Dice and
 *   Kogan, USENIX ATC 2019).  Everything of readmostly/bravo.h holds (the
 *   bias word, the inhibit window and its back-off, revocation without
 *   holding A, try and timed rules, tokens, EPERM on a bad unlock), with
 *   one difference: where a fast reader publishes itself, and so what a
 *   revoking writer scans.
 *
 *   The process has a second visible-readers table, rm_bravo2d_table,
 *   shared by every BRAVO-2D lock.  It is split into rows of equal length,
 *   one per CPU (rows = configured CPUs rounded up to a power of two); a
 *   row is a whole number of 128-byte cache sectors (at least 16 slots)
 *   and starts on a sector boundary.  A reader takes the row of the CPU it
 *   runs on and, in it, the column given by a hash of the lock address
 *   alone.  A revoking writer then looks at one line per row (the lock's
 *   column and, with the second probe below, the rest of its line) instead
 *   of at every slot of the table: 2 lines on a 2-CPU machine, where plain
 *   BRAVO scans 4096 slots.
 *
 *   The CPU number comes from the rseq area glibc registers for every
 *   thread (glibc 2.35 and later: its cpu_id_start field, one load from the
 *   thread pointer), else from sched_getcpu().  It is only a hint.  A
 *   reader preempted or migrated between reading it and publishing, or
 *   while it holds the lock, is still correct: the writer scans the column
 *   in every row, so a slot in another CPU's row is found all the same,
 *   and the read unlock clears the slot the lock published (the token is
 *   that slot's address, never recomputed from the CPU the unlock runs
 *   on).  A stale CPU number costs only locality.
 *
 *   Readers of one lock on one CPU would share one slot, so that while a
 *   reader preempted inside its section holds it (more threads than CPUs)
 *   the others take A's read lock (a collision).  Hence the second probe,
 *   on by default: a lock's slots in a row are its probe group, the
 *   RM_BRAVO2D_PROBE_GROUP (8) slots of the 64-byte cache line that holds
 *   its column.  A reader tries first the slot of the group that a hash of
 *   its thread picks, so threads sharing a CPU mostly start on different
 *   slots, then the others of the group, and only then takes A.  Writers
 *   scan the whole group in every row: the line they read for the column
 *   anyway, so no more cache misses than one slot a row.  The attribute
 *   second_probe = RM_BRAVO2D_PROBE_OFF (or READMOSTLY_BRAVO2D_PROBE2=0)
 *   gives each lock one slot a row, the column.  Locks whose groups
 *   coincide share their slots the same way.
 *
 *   NUMA sectors (section 7: "partition the visible readers table into
 *   contiguous sectors specified by the NUMA node of the reader"): on a
 *   machine with several nodes the rows are grouped by node, the rows of
 *   one node's CPUs side by side (a map from CPU to row replaces
 *   cpu & (rows - 1)), each group a whole number of pages, and on a real
 *   layout each group's pages are placed on its node (mbind, preferred).
 *   A writer scans the column group by group, its own node's first.  Every
 *   row is still scanned, so which row a reader took stays a hint.
 *
 * ATTRIBUTES
 *   struct rm_bravo2d_attr {
 *     size_t slots;           total slots, a power of two, 16 x rows to
 *                             2^24; 0: READMOSTLY_BRAVO2D_TABLE_SLOTS, else
 *                             max(4096, 32 x CPUs) as for the flat table
 *     unsigned rows;          a power of two, 1 to 65536; 0: the CPUs,
 *                             rounded up to a power of two
 *     unsigned second_probe;  RM_BRAVO2D_PROBE_DEFAULT (0: on unless
 *                             READMOSTLY_BRAVO2D_PROBE2=0),
 *                             RM_BRAVO2D_PROBE_ON, RM_BRAVO2D_PROBE_OFF
 *     unsigned cpu_source;    RM_BRAVO2D_CPU_AUTO (rseq if glibc registered
 *                             it, else sched_getcpu), RM_BRAVO2D_CPU_RSEQ,
 *                             RM_BRAVO2D_CPU_GETCPU
 *                             (READMOSTLY_BRAVO2D_CPU=auto|rseq|getcpu)
 *     const char *nodes;      NUMA sectors: NULL (READMOSTLY_BRAVO2D_NODES,
 *                             else "auto"); "auto": the nodes of
 *                             /sys/devices/system/node when there are
 *                             two or more; "off": rows in CPU order; or a
 *                             layout, CPU lists of the nodes separated by
 *                             ':' ("0-3,8-11:4-7,12-15"), at most 64
 *                             nodes, CPUs below 65536, each CPU in one
 *                             node (tests force a layout this way).  With
 *                             a layout of N nodes of at most C CPUs, rows
 *                             is pow2(N) x pow2(C) (the attribute rows
 *                             must be 0 or that); CPUs outside the layout
 *                             take row cpu & (rows - 1)
 *   };
 *   rm_bravo2d_attr_init(a) fills in the defaults (all 0).
 *   rm_bravo2d_configure(a) allocates the table with these attributes.  It
 *   must come before any BRAVO-2D lock turns its bias on (the first slow
 *   read allocates the table with the defaults); the geometry never
 *   changes afterwards, since readers published in a slot must be found by
 *   every later scan.  rm_bravo2d_get_attr(out) gives the attributes in
 *   use (allocating the table with the defaults if needed).
 *
 * FORK
 *   As for BRAVO, except that the forking thread's own slots cannot be told
 *   from other threads' by their place (the row was its CPU's).  So in the
 *   child a slot of a lock whose bias is off is not cleared but marked
 *   (RM_BRAVO_SLOT_RELEASED): writers no longer wait for it, and the read
 *   unlock of the forking thread, if the hold was its own, accepts the mark
 *   and clears it.  A mark left by a thread that does not exist in the
 *   child stays, costing that one slot (readers hashing there take A).
 *
 * RETURN VALUES
 *   Lock functions: as in readmostly/bravo.h.  rm_bravo2d_attr_init: 0, or
 *   EINVAL for NULL.  rm_bravo2d_configure: 0; EINVAL for NULL, a slot or
 *   row count that is not a power of two or out of range, rows of fewer
 *   than 16 slots, an unknown second_probe or cpu_source, a nodes
 *   string that does not parse; ENOTSUP for
 *   RM_BRAVO2D_CPU_RSEQ when glibc registered no rseq area (or the
 *   architecture has no reader for it); EBUSY when the table exists
 *   already (configured, or allocated by a first slow read); ENOMEM.
 *   rm_bravo2d_get_attr: 0, EINVAL for NULL, ENOMEM.
 *
 * FOOTPRINT
 *   Per lock, as BRAVO: 16 bytes in front of A.  The table: 8 bytes a slot
 *   (32 KiB at 4096 slots), mapped on its own pages like the flat one.
 */
#ifndef READMOSTLY_BRAVO2D_H
#define READMOSTLY_BRAVO2D_H

#include <readmostly/bravo.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The BRAVO-2D table (geometry in the fields row_shift, row_mask,
 * probe_mask and rseq_off of struct rm_bravo_table). */
extern RM_API struct rm_bravo_table rm_bravo2d_table;

struct rm_bravo2d_attr {
  size_t slots;
  unsigned rows;
  unsigned second_probe;
  unsigned cpu_source;
  const char *nodes; /* NUMA sectors: NULL, "auto", "off" or a layout */
};
/* At most this many node groups in a layout. */
#define RM_BRAVO2D_NODES_MAX 64u
#define RM_BRAVO2D_PROBE_DEFAULT 0u
#define RM_BRAVO2D_PROBE_ON 1u
#define RM_BRAVO2D_PROBE_OFF 2u
#define RM_BRAVO2D_CPU_AUTO 0u
#define RM_BRAVO2D_CPU_RSEQ 1u
#define RM_BRAVO2D_CPU_GETCPU 2u
/* The shortest row: one cache sector of slots. */
#define RM_BRAVO2D_ROW_MIN (RM_CACHE_SECTOR / sizeof(uintptr_t))
/* The second probe's group: the slots of one 64-byte cache line, aligned
 * (a power of two, at most RM_BRAVO2D_ROW_MIN, so a group never leaves its
 * row). */
#define RM_BRAVO2D_PROBE_GROUP 8u

RM_API int rm_bravo2d_attr_init(struct rm_bravo2d_attr *a);
RM_API int rm_bravo2d_configure(const struct rm_bravo2d_attr *a);
RM_API int rm_bravo2d_get_attr(struct rm_bravo2d_attr *out);
/* A private BRAVO-2D table (one per lock, for the benchmarks' revocation
 * experiment): `slots` slots (rounded up to a power of two, at least one
 * sector a row) in `rows` rows (0: the CPUs), the CPU number as the shared
 * table takes it, second_probe as the attribute.  0, EINVAL, ENOMEM.  Freed with
 * rm_bravo_table_private_destroy(). */
RM_API int rm_bravo2d_table_private_init(struct rm_bravo_table *t, size_t slots, unsigned rows,
                                         unsigned second_probe);
/* A process-lifetime BRAVO-2D table of its own, with attributes a (NULL:
 * the defaults, as the shared table's), mapped on its own pages like the
 * shared one and never freed (the preload library's table).  t must be
 * all zero.  0, EINVAL, ENOTSUP, ENOMEM. */
RM_API int rm_bravo2d_table_create(struct rm_bravo_table *t, const struct rm_bravo2d_attr *a);
/* The CPU number where rseq is not used: sched_getcpu(), 0 if it fails. */
RM_API unsigned rm_bravo2d_cpu_slowpath(void);
/* The shared table's NUMA sectors (allocating it with the defaults if
 * needed): the node groups in use (1: rows in CPU order), and the row a
 * reader running on CPU `cpu` takes.  -1 (rm_bravo2d_row_of_cpu) or 0
 * (rm_bravo2d_nodes) when the table cannot be allocated. */
RM_API unsigned rm_bravo2d_nodes(void);
RM_API long rm_bravo2d_row_of_cpu(unsigned cpu);

/* The column of a lock: Fibonacci hashing of its address (the top
 * row_shift bits of the product with 2^64 / golden ratio), so lock
 * addresses a few cache lines apart land in unrelated columns. */
RM_INLINE uint32_t rm_bravo2d_column(const void *lock, uint32_t row_shift) {
  return (uint32_t)(((uint64_t)(uintptr_t)lock * 0x9E3779B97F4A7C15ull) >> (64u - row_shift));
}

/* Where in the column's probe group the calling thread tries first, when
 * the table has a second probe (masked with probe_mask; 0 without it):
 * three bits of a Fibonacci hash of the thread's identity, so that threads
 * sharing a CPU start on different slots of the group and a thread
 * preempted inside its section does not make the next one's first CAS
 * fail. */
RM_INLINE uint32_t rm_bravo2d_thread_offset(void) {
  return (uint32_t)(((uint64_t)rm_thread_identity() * 0x9E3779B97F4A7C15ull) >> 61);
}

/* The CPU the caller runs on, as a hint (see DESCRIPTION): rseq's
 * cpu_id_start, which the kernel keeps current for the thread and which is
 * always a valid CPU number, read relative to the thread pointer. */
RM_INLINE uint32_t rm_bravo2d_cpu(const struct rm_bravo_table *t) {
  intptr_t off = t->rseq_off;
  if (RM_LIKELY(off != 0)) {
#if defined(__x86_64__)
    uint32_t c;
    /* volatile: the kernel rewrites the field on migration. */
    __asm__ __volatile__("movl %%fs:(%1), %0" : "=r"(c) : "r"(off));
    return c;
#elif defined(__aarch64__)
    return *(volatile uint32_t *)((char *)__builtin_thread_pointer() + off);
#endif
  }
  return rm_bravo2d_cpu_slowpath();
}

/* The row of a reader on the CPU it runs on (a hint, like the CPU): the
 * CPU's row, or with NUMA sectors the row the table's map gives it, in its
 * node's group.  Plain loads: written before the table was published (see
 * the fast path). */
RM_INLINE uint32_t rm_bravo2d_row(const struct rm_bravo_table *t) {
  uint32_t cpu = rm_bravo2d_cpu(t);
  const uint32_t *map = t->cpu_row;
  if (RM_LIKELY(map == NULL)) return cpu & t->row_mask;
  return map[cpu & t->cpu_row_mask];
}

/*
 * The fast read path.  The ordering points are those of plain BRAVO
 * (bravo.h): R0 (acquire load of the bias), R1 (seq_cst CAS of the slot
 * from 0), R2 (seq_cst re-check of the bias), paired with the writer's W1
 * (seq_cst clear of the bias, then a full fence) and W2 (its seq_cst scan
 * loads).  The Dekker argument does not care which slot R1 wrote, only
 * that the writer's scan reads it: the writer reads this lock's column in
 * every row, and, with the second probe, the rest of its probe group too,
 * so a slot in any row (whatever CPU the reader thought it was on) is
 * covered.  R1' (a CAS of the second probe) is an R1 of its own: whichever
 * CAS succeeded is ordered before R2.  (Model: models/bravo2d.pml, docs/models-bravo.md.)
 */
/* After a CAS (R1 or R1') installed b in *slot: the re-check (R2). */
RM_INLINE int rm_bravo2d_read_installed(struct rm_bravo_bias *b, uintptr_t *slot,
                                        rm_token_t *tok, const bool shared_slots) {
  RM_DEBUG_PAUSE("bravo2d.read.installed");
  if (RM_LIKELY(rm_atomic_load_seq_cst(&b->rbias) & RM_BRAVO_BIAS)) { /* (R2) */
    *tok = (rm_token_t)slot;
    return RM_BRAVO_FAST;
  }
  /* A writer revoked between R0 and R2: back out (we never held the lock).
   * Release, as R3: a writer that sees the slot empty must not see it
   * empty "before" our CAS.  A plain store, not a CAS from b: between our
   * CAS and here no other thread writes this slot (readers CAS it only
   * from 0, writers only read it, and the fork handler's mark runs in a
   * child where this thread is inside fork(), not here)
   * (models/bravo.pml, mutant backout_store).  With shared slots (the
   * preload library's table) another thread's unlock may have marked it:
   * rm_bravo_back_out passes that release on (bravo.h, point 4). */
  return rm_bravo_back_out(slot, b, shared_slots);
}

/* The first slot was taken: the second probe (R1'), when the table has
 * one: the other slots of the column's probe group, in order.  A plain
 * load first skips a slot that is visibly taken without a locked
 * operation (only the CAS installs; a stale zero only costs a failed CAS).
 * The slot it installed b in, or NULL.  Out of line, and given no pointer
 * into the caller's frame: inlined, gcc merged the two CASes' outcomes into
 * one value that it materialized after the first CAS; given the token's
 * address, it kept the token on the stack; either cost the fast read pair
 * 5% (158 against 166 M pairs a second at 1 thread). */
static RM_NOINLINE __attribute__((unused)) uintptr_t *
rm_bravo2d_read_probe2(struct rm_bravo_bias *b, const struct rm_bravo_table *t, uintptr_t *row,
                       uint32_t col) {
  uint32_t m = t->probe_mask;
  for (uint32_t j = 1; j <= m; j++) {
    uintptr_t *slot = row + (col ^ j);
    if (rm_atomic_load_relaxed(slot) != 0) continue;
    uintptr_t expected = 0;
    if (rm_atomic_cas_seq_cst(slot, &expected, (uintptr_t)b)) /* (R1') */
      return slot;
  }
  return NULL;
}

RM_INLINE int rm_bravo2d_read_fast_body(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                        rm_token_t *tok, const bool shared_slots) {
  if (!(rm_atomic_load_acquire(&b->rbias) & RM_BRAVO_BIAS)) /* (R0) */
    return RM_BRAVO_SLOW_BIAS_OFF;
  /* Plain loads of the geometry: written before the table's release
   * publication, which the slow reader that set the bias (S1, release)
   * had acquired; R0 acquires S1. */
  uint32_t rs = t->row_shift;
  uintptr_t *row = t->slots + ((uintptr_t)rm_bravo2d_row(t) << rs);
  /* The lock's column, moved inside its probe group by the thread's
   * offset when there is a second probe (the group is the same). */
  uint32_t col = rm_bravo2d_column(b, rs) ^ (rm_bravo2d_thread_offset() & t->probe_mask);
  uintptr_t *slot = row + col;
  uintptr_t expected = 0;
  RM_DEBUG_YIELD();
  if (RM_UNLIKELY(!rm_atomic_cas_seq_cst(slot, &expected, (uintptr_t)b))) { /* (R1) */
    slot = rm_bravo2d_read_probe2(b, t, row, col);
    if (slot == NULL) return RM_BRAVO_SLOW_COLLISION;
  }
  return rm_bravo2d_read_installed(b, slot, tok, shared_slots);
}

RM_INLINE int rm_bravo2d_read_fast(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                   rm_token_t *tok) {
  return rm_bravo2d_read_fast_body(b, t, tok, false);
}
/* With bravo.h's "Slots that other threads' unlocks may mark" (the
 * preload library): the back-out honours a mark. */
RM_INLINE int rm_bravo2d_read_fast_shared(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                          rm_token_t *tok) {
  return rm_bravo2d_read_fast_body(b, t, tok, true);
}

/* Release a read hold: as rm_bravo_read_unlock_fast, and a slot that a
 * fork child's handler marked (see FORK) is the forking thread's own hold:
 * it is cleared and the unlock succeeds. */
RM_INLINE int rm_bravo2d_read_unlock_fast(struct rm_bravo_bias *b, rm_token_t tok) {
  if (tok <= RM_TOKEN_NONE ||
      RM_UNLIKELY(rm_atomic_load_relaxed((uintptr_t *)tok) != (uintptr_t)b)) {
    if (tok == RM_TOKEN_NONE) return 0;
    if (tok != 0 && rm_atomic_load_relaxed((uintptr_t *)tok) ==
                        ((uintptr_t)b | (uintptr_t)RM_BRAVO_SLOT_RELEASED)) {
      /* Release, as R3 below. */
      rm_atomic_store_release((uintptr_t *)tok, (uintptr_t)0);
      return 1;
    }
#ifndef NDEBUG
    rm_bravo_bad_unlock(b, tok);
#endif
    return -1;
  }
  RM_DEBUG_YIELD();
  /* (R3) release: a writer whose scan sees the slot empty (acquire) sees
   * the whole read section as done. */
  rm_atomic_store_release((uintptr_t *)tok, (uintptr_t)0);
  return 1;
}

/* ---- the generator: as RM_BRAVO_DEFINE, over the 2D table ---------------- */
#define RM_BRAVO2D_TABLE(l) (&rm_bravo2d_table)

#define RM_BRAVO2D_DEFINE(NAME, UTYPE, UPFX)                                        \
  RM_BRAVO_DEFINE_K(NAME, UTYPE, UPFX, RM_BRAVO2D_TABLE, rm_bravo2d)

#define RM_BRAVO2D_DEFINE_TIMED(NAME, UTYPE, UPFX)                                  \
  RM_BRAVO2D_DEFINE(NAME, UTYPE, UPFX)                                              \
  RM_BRAVO_DEFINE_TIMED_PART_K(NAME, UTYPE, UPFX, RM_BRAVO2D_TABLE, rm_bravo2d)

/* BRAVO-2D with a private table of SLOTS slots per lock (benchmarks), with
 * the default geometry.  No static initializer: _init allocates (ENOMEM),
 * _destroy frees. */
RM_INLINE int rm_bravo2d_table_private_init_default(struct rm_bravo_table *t, size_t slots) {
  return rm_bravo2d_table_private_init(t, slots, 0, 0);
}
#define RM_BRAVO2D_DEFINE_PRIVATE(NAME, UTYPE, UPFX, SLOTS)                         \
  RM_BRAVO_DEFINE_PRIVATE_K(NAME, UTYPE, UPFX, SLOTS,                             \
                            rm_bravo2d_table_private_init_default, rm_bravo2d)

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_BRAVO2D_H */
