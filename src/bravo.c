/*
 * bravo.c - the out-of-line half of BRAVO (Dice and Kogan, USENIX ATC 2019):
 * the process-wide visible-readers table, revocation, statistics and the
 * fork handler.  The fast paths and the generator are in readmostly/bravo.h;
 * the ordering table is in docs/bravo.md.
 * Model: models/bravo.pml (x86-TSO; docs/models-bravo.md).
 *
 * Invariants:
 *  1. A slot holds 0 or the address of a lock's struct rm_bravo_bias.  Only
 *     the reader that installed an address (by CAS from 0) clears it, except
 *     the fork handler in a single-threaded child (see bravo_fork_child()).
 *     With shared slots (the preload library, bravo.h "Slots that other
 *     threads' unlocks may mark") another thread may also remove a nesting
 *     level or set RM_BRAVO_SLOT_RELEASED, by CAS; the owner then clears the
 *     marked slot, by CAS or (after seeing the mark) by a store.
 *  2. A lock's address is in a slot and that reader re-checked the bias
 *     (R2) => no writer of that lock has finished revoking since: the writer
 *     is either before W1 or waiting in the scan for this slot.
 *  3. The bias goes on only by a CAS of the whole bias word from 0, by a
 *     reader holding A's read lock; it goes off only by writers (under A's
 *     write lock, or by the read-modify-write that counts a writer in).  So
 *     while a writer holds A or is counted in, the bias stays off once off.
 *  4. revoke_pending == 0 and the bias off, seen by a writer holding A =>
 *     no fast read hold exists (bravo.h, struct rm_bravo_bias).
 *  5. rm_bravo_table.slots/mask never change once set (the global table is
 *     never freed: locks may live until exit).
 */
#define _GNU_SOURCE
#include <readmostly/bravo.h>
#include <readmostly/bravo2d.h>
#include <readmostly/thread.h>

#include "env.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>
#if defined(__has_include)
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#define RM_HAVE_GLIBC_RSEQ 1
#endif
#endif

/* Defined once, here, with default visibility: every shared object that
 * links libreadmostly sees this one table. */
RM_API struct rm_bravo_table rm_bravo_table = {NULL, 0, 0, 9, 0, 0, 0, 0, 0};
/* The BRAVO-2D table (bravo2d.h), allocated on first use like the flat one. */
RM_API struct rm_bravo_table rm_bravo2d_table = {NULL, 0, 0, 9, 0, 0, 0, 0, 0};
RM_API __thread struct rm_bravo_clock_skip rm_bravo_tls_skip
    __attribute__((tls_model("initial-exec")));

static size_t pow2_at_least(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

static size_t default_slots(void) {
  size_t want = (size_t)rm_cpu_count() * 32u;
  /* 1 to 2^24 slots, rounded up to a power of two (src/env.h says so). */
  return rm_env_pow2("READMOSTLY_BRAVO_TABLE_SLOTS", 1, (size_t)1 << 24,
                     pow2_at_least(want < 4096 ? 4096 : want));
}

/* Map a zeroed table on its own pages: explicit huge pages when reserved,
 * else normal pages.  Returns NULL on failure. */
static uintptr_t *map_table(size_t slots, size_t *bytes, int *huge) {
  size_t len = slots * sizeof(uintptr_t);
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t huge_len = (len + (2u << 20) - 1) & ~((size_t)(2u << 20) - 1);
  void *p = MAP_FAILED;
#ifdef MAP_HUGETLB
  if (len >= (64u << 10) || rm_env_flag("READMOSTLY_BRAVO_HUGETLB")) {
    p = mmap(NULL, huge_len, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (p != MAP_FAILED) {
      *bytes = huge_len;
      *huge = 1;
      return (uintptr_t *)p;
    }
  }
#endif
  len = (len + page - 1) & ~(page - 1);
  p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  *bytes = len;
  *huge = 0;
  return (uintptr_t *)p;
}

/* Allocate the global table.  No lock: racing first callers each map a
 * table and one CAS decides (the losers unmap theirs), so a fork() in the
 * middle leaves nothing locked in the child.  Cancellation is off for the
 * duration: a message about a bad READMOSTLY_BRAVO_TABLE_SLOTS goes to
 * stderr, and stdio may act on a cancellation request, which must not
 * happen inside a lock call. */
RM_API int rm_bravo_table_init_slowpath(void) {
  if (rm_atomic_load_acquire(&rm_bravo_table.slots)) return 0;
  int cs;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
  size_t slots = default_slots(), bytes;
  int huge, r = 0;
  uintptr_t *s = map_table(slots, &bytes, &huge);
  if (!s) {
    r = ENOMEM;
  } else {
    /* Every caller computes the same size, so the mask may be stored by
     * all of them; the release CAS below publishes it with the slots to
     * readers that load slots with acquire. */
    rm_atomic_store_relaxed(&rm_bravo_table.mask, (uintptr_t)(slots - 1));
    uintptr_t *none = NULL;
    if (!rm_atomic_cas_acq_rel(&rm_bravo_table.slots, &none, s)) munmap(s, bytes);
  }
  pthread_setcancelstate(cs, NULL);
  return r;
}

/* ---- the BRAVO-2D table ---------------------------------------------------
 * Allocated once, by rm_bravo2d_configure() or by the first slow reader of a
 * BRAVO-2D lock.  The geometry must be whole before any reader sees the
 * slots, and one allocation must win even when a configure call races a
 * first slow read, so a state word decides who allocates (0 none, 1 being
 * allocated, 2 done) instead of the flat table's race of whole tables.  A
 * thread that finds 1 does not wait: a slow reader stays unbiased this
 * time (EAGAIN), a configure call gets EBUSY.  The fork handler resets 1
 * to 0 in the child (the allocating thread does not exist there). */
static uint32_t t2d_state;

/* The rseq area's offset from the thread pointer, or 0 when glibc did not
 * register one (tunable glibc.pthread.rseq=0, an old kernel) or we have no
 * reader for it on this architecture. */
static intptr_t rseq_offset(void) {
#if defined(RM_HAVE_GLIBC_RSEQ) && (defined(__x86_64__) || defined(__aarch64__))
  /* __rseq_size is 0 when the registration failed or was disabled; the
   * cpu_id field (after cpu_id_start) is negative when this thread is not
   * registered. */
  if (__rseq_size < 8 || __rseq_offset == 0) return 0;
  const volatile int32_t *area =
      (const volatile int32_t *)((char *)__builtin_thread_pointer() + __rseq_offset);
  if (area[1] < 0) return 0;
  return (intptr_t)__rseq_offset;
#else
  return 0;
#endif
}

RM_API unsigned rm_bravo2d_cpu_slowpath(void) {
  int c = sched_getcpu();
  return c < 0 ? 0u : (unsigned)c;
}

static unsigned log2_pow2(size_t p) {
  unsigned s = 0;
  while (((size_t)1 << s) < p) s++;
  return s;
}

static bool is_pow2(size_t v) { return v != 0 && (v & (v - 1)) == 0; }

static const char *const cpu_sources[] = {"auto", "rseq", "getcpu", NULL};

RM_API int rm_bravo2d_attr_init(struct rm_bravo2d_attr *a) {
  if (!a) return EINVAL;
  memset(a, 0, sizeof *a);
  return 0;
}

/* Resolve the defaults of *a (from the environment and the machine) and
 * check it: 0, EINVAL or ENOTSUP; *slots, *rows, *off (rseq offset, 0 for
 * sched_getcpu) and *probe2 (the second column's XOR, 0 for none) are the
 * geometry. */
static int t2d_resolve(const struct rm_bravo2d_attr *a, size_t *slots, unsigned *rows,
                       intptr_t *off, uint32_t *probe2) {
  if (a->rows > 65536u || (a->rows != 0 && !is_pow2(a->rows))) return EINVAL;
  if (a->slots != 0 && (!is_pow2(a->slots) || a->slots > ((size_t)1 << 24))) return EINVAL;
  if (a->second_probe > 1u || a->cpu_source > RM_BRAVO2D_CPU_GETCPU) return EINVAL;
  unsigned r = a->rows ? a->rows : (unsigned)pow2_at_least(rm_cpu_count());
  size_t n = a->slots;
  if (n == 0) {
    n = rm_env_pow2("READMOSTLY_BRAVO2D_TABLE_SLOTS", 1, (size_t)1 << 24, default_slots());
    /* A default too small for the rows grows to one sector a row. */
    if (n < (size_t)r * RM_BRAVO2D_ROW_MIN) n = (size_t)r * RM_BRAVO2D_ROW_MIN;
  }
  if (n / r < RM_BRAVO2D_ROW_MIN) return EINVAL;
  unsigned src = a->cpu_source;
  if (src == RM_BRAVO2D_CPU_AUTO)
    src = (unsigned)rm_env_choice("READMOSTLY_BRAVO2D_CPU", cpu_sources, 0);
  intptr_t o = 0;
  if (src != RM_BRAVO2D_CPU_GETCPU) {
    o = rseq_offset();
    if (o == 0 && src == RM_BRAVO2D_CPU_RSEQ) return ENOTSUP;
  }
  bool p2 = a->second_probe || rm_env_flag("READMOSTLY_BRAVO2D_PROBE2");
  *slots = n;
  *rows = r;
  *off = o;
  /* The second column: the first XOR half a row, in another cache sector
   * of the same row (rows have 16 slots or more). */
  *probe2 = p2 ? (uint32_t)(n / r / 2u) : 0u;
  return 0;
}

static int t2d_init(const struct rm_bravo2d_attr *a, bool configuring) {
  if (rm_atomic_load_acquire(&rm_bravo2d_table.slots)) return configuring ? EBUSY : 0;
  struct rm_bravo2d_attr dflt;
  rm_bravo2d_attr_init(&dflt);
  if (!a) a = &dflt;
  int cs;
  /* The environment checks may print (see rm_bravo_table_init_slowpath). */
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
  size_t slots = 0, bytes;
  unsigned rows = 0;
  intptr_t off = 0;
  uint32_t probe2 = 0;
  int r = t2d_resolve(a, &slots, &rows, &off, &probe2);
  uint32_t none = 0;
  /* Acquire on failure: a thread that finds 2 (done) also sees the slots
   * and geometry stored before the release store of 2 below.  Acquire on
   * success orders nothing we need; the table is ours to fill. */
  if (r == 0 && !__atomic_compare_exchange_n(&t2d_state, &none, 1u, false, __ATOMIC_ACQUIRE,
                                              __ATOMIC_ACQUIRE))
    r = configuring ? EBUSY : (none == 2u ? 0 : EAGAIN);
  else if (r == 0) {
    int huge;
    uintptr_t *s = map_table(slots, &bytes, &huge);
    if (!s) {
      r = ENOMEM;
      __atomic_store_n(&t2d_state, 0u, __ATOMIC_RELEASE);
    } else {
      unsigned rs = log2_pow2(slots / rows);
      rm_atomic_store_relaxed(&rm_bravo2d_table.mask, (uintptr_t)(slots - 1));
      rm_atomic_store_relaxed(&rm_bravo2d_table.row_shift, (uint32_t)rs);
      rm_atomic_store_relaxed(&rm_bravo2d_table.row_mask, (uint32_t)(rows - 1));
      rm_atomic_store_relaxed(&rm_bravo2d_table.probe2_xor, probe2);
      rm_atomic_store_relaxed(&rm_bravo2d_table.rseq_off, off);
      /* stats_on is not ours to write: rm_bravo_stats_enable() sets it in
       * both tables, and other threads read it (plainly) while we
       * allocate. */
      /* Release: the geometry above is visible to every thread that loads
       * the slots with acquire (slow readers before they set a bias,
       * writers before they scan). */
      rm_atomic_store_release(&rm_bravo2d_table.slots, s);
      __atomic_store_n(&t2d_state, 2u, __ATOMIC_RELEASE);
    }
  }
  pthread_setcancelstate(cs, NULL);
  return r;
}

RM_API int rm_bravo2d_configure(const struct rm_bravo2d_attr *a) {
  if (!a) return EINVAL;
  return t2d_init(a, true);
}

RM_API int rm_bravo2d_get_attr(struct rm_bravo2d_attr *out) {
  if (!out) return EINVAL;
  int e = t2d_init(NULL, false);
  /* EAGAIN: another thread is allocating; wait for it (it never blocks). */
  while (e == EAGAIN) {
    sched_yield();
    e = t2d_init(NULL, false);
  }
  if (e) return e;
  unsigned rs = rm_atomic_load_relaxed(&rm_bravo2d_table.row_shift);
  out->rows = rm_atomic_load_relaxed(&rm_bravo2d_table.row_mask) + 1u;
  out->slots = (size_t)out->rows << rs;
  out->second_probe = rm_atomic_load_relaxed(&rm_bravo2d_table.probe2_xor) != 0;
  out->cpu_source = rm_atomic_load_relaxed(&rm_bravo2d_table.rseq_off) != 0
                        ? RM_BRAVO2D_CPU_RSEQ
                        : RM_BRAVO2D_CPU_GETCPU;
  return 0;
}

RM_API int rm_bravo2d_table_private_init(struct rm_bravo_table *t, size_t slots, unsigned rows,
                                         unsigned second_probe) {
  if (!t || slots == 0 || slots > ((size_t)1 << 24)) return EINVAL;
  struct rm_bravo2d_attr a;
  rm_bravo2d_attr_init(&a);
  a.rows = rows;
  a.second_probe = second_probe;
  size_t n;
  unsigned r;
  intptr_t off;
  uint32_t probe2;
  a.slots = pow2_at_least(slots);
  if (a.rows == 0) a.rows = (unsigned)pow2_at_least(rm_cpu_count());
  if (a.slots < (size_t)a.rows * RM_BRAVO2D_ROW_MIN) a.slots = (size_t)a.rows * RM_BRAVO2D_ROW_MIN;
  int e = t2d_resolve(&a, &n, &r, &off, &probe2);
  if (e) return e;
  e = rm_bravo_table_private_init(t, n);
  if (e) return e;
  t->row_shift = log2_pow2(n / r);
  t->row_mask = r - 1;
  t->probe2_xor = probe2;
  t->rseq_off = off;
  return 0;
}

RM_API int rm_bravo_table_init_table(struct rm_bravo_table *t) {
  if (t == &rm_bravo_table) return rm_bravo_table_init_slowpath();
  if (t == &rm_bravo2d_table) return t2d_init(NULL, false);
  /* A private table is allocated by its lock's init. */
  return rm_atomic_load_acquire(&t->slots) ? 0 : ENOMEM;
}

RM_API size_t rm_bravo_table_size(void) {
  if (rm_bravo_table_init_slowpath() != 0) return 0;
  return (size_t)rm_bravo_table.mask + 1;
}

RM_API int rm_bravo_table_private_init(struct rm_bravo_table *t, size_t slots) {
  if (!t || slots == 0) return EINVAL;
  slots = pow2_at_least(slots);
  void *p = aligned_alloc(RM_CACHE_SECTOR, slots * sizeof(uintptr_t) < RM_CACHE_SECTOR
                                               ? RM_CACHE_SECTOR
                                               : slots * sizeof(uintptr_t));
  if (!p) return ENOMEM;
  memset(p, 0, slots * sizeof(uintptr_t));
  t->slots = (uintptr_t *)p;
  t->mask = slots - 1;
  t->row_shift = 0; /* flat */
  t->row_mask = 0;
  t->probe2_xor = 0;
  t->reserved = 0;
  t->rseq_off = 0;
  t->stats_on = rm_bravo_table.stats_on;
  t->n = rm_bravo_table.n;
  return 0;
}

RM_API void rm_bravo_table_private_destroy(struct rm_bravo_table *t) {
  if (!t) return;
  free(t->slots);
  t->slots = NULL;
  t->mask = 0;
}

/* ---- configuration ------------------------------------------------------ */

RM_API int rm_bravo_set_inhibit_multiplier(unsigned n) {
  if (n > 1000000u) return EINVAL;
  rm_atomic_store_relaxed(&rm_bravo_table.n, n);
  return 0;
}

RM_API unsigned rm_bravo_inhibit_multiplier(void) {
  return rm_atomic_load_relaxed(&rm_bravo_table.n);
}

RM_API void rm_bravo_stats_enable(bool on) {
  if (on) rm_thread_self(); /* make sure the enabling thread has a record */
  rm_atomic_store_relaxed(&rm_bravo_table.stats_on, on ? 1u : 0u);
  rm_atomic_store_relaxed(&rm_bravo2d_table.stats_on, on ? 1u : 0u);
}

RM_API void rm_bravo_stats_get(struct rm_bravo_stats *out) {
  if (!out) return;
  out->fast_reads = rm_thread_stats_sum(RM_STAT_BRAVO_FAST_READ);
  out->slow_bias_off = rm_thread_stats_sum(RM_STAT_BRAVO_SLOW_BIAS_OFF);
  out->slow_collision = rm_thread_stats_sum(RM_STAT_BRAVO_SLOW_COLLISION);
  out->slow_raced = rm_thread_stats_sum(RM_STAT_BRAVO_SLOW_RACED);
  out->writes = rm_thread_stats_sum(RM_STAT_BRAVO_WRITE);
  out->revocations = rm_thread_stats_sum(RM_STAT_BRAVO_REVOKE);
  out->revoke_ns = rm_thread_stats_sum(RM_STAT_BRAVO_REVOKE_NS);
}

RM_API void rm_bravo_stats_reset(void) { rm_thread_stats_reset(); }

RM_API void rm_bravo_stat_slowpath(int which, uint64_t v) {
  /* The enum rm_bravo_path values and 4 (write) map one to one onto the
   * first counters of enum rm_stat. */
  rm_thread_stat_add((enum rm_stat)which, v);
}

RM_API RM_COLD void rm_bravo_bad_unlock(const void *lock, rm_token_t tok) {
  uintptr_t seen = (tok && tok != RM_TOKEN_NONE) ? *(const uintptr_t *)tok : 0;
  fprintf(stderr,
          "readmostly: BRAVO read unlock of lock %p with a bad token %#lx: %s "
          "(slot holds %#lx, expected %p)\n",
          lock, (unsigned long)tok,
          tok == 0 ? "token 0 was never returned by a read lock"
                   : "the token does not belong to this lock",
          (unsigned long)seen, lock);
  abort();
}

/* ---- revocation --------------------------------------------------------- */

/* Wait until slot s no longer holds b (W2, W3).  0; EBUSY (try: it holds
 * b); ETIMEDOUT (timed: abstime passed first). */
static RM_COLD int wait_slot_held(uintptr_t *s, struct rm_bravo_bias *b, int mode, int clk,
                                   const struct timespec *abstime) {
  if (mode == RM_BRAVO_REVOKE_TRY) return EBUSY;
  rm_backoff_t bo = RM_BACKOFF_INIT;
  unsigned polls = 0;
  /* (W3) acquire: once the slot no longer holds this lock, the reader's
   * critical section is over as far as we can observe (pairs with its
   * release store R3).  A reader that loaded the bias before W1 may
   * still CAS this lock into some slot after we passed it, but its
   * re-check R2 then follows W1 in S, sees the bias off, and it backs
   * out without entering: we need not look back.  The back-off sleeps
   * with a raw system call: not a cancellation point. */
  while (rm_bravo_slot_holds(rm_atomic_load_acquire(s), b)) {
    if (mode == RM_BRAVO_REVOKE_TIMED && (++polls & 63u) == 0 &&
        rm_timespec_expired(clk, abstime))
      return ETIMEDOUT;
    rm_backoff_wait(&bo);
  }
  return 0;
}
RM_INLINE int wait_slot(uintptr_t *s, struct rm_bravo_bias *b, int mode, int clk,
                        const struct timespec *abstime) {
  /* (W2) seq_cst load: sees any reader's slot that R2 did not beat. */
  if (RM_LIKELY(!rm_bravo_slot_holds(rm_atomic_load_seq_cst(s), b))) return 0;
  return wait_slot_held(s, b, mode, clk, abstime);
}

/* ---- the flat table's scan ---------------------------------------------------
 * A revoking writer of a flat table must look at every slot, and the table
 * is almost always nearly empty.  So the scan first looks for nonzero slots
 * a cache line or a sector at a time (SIMD: OR the slots together, test
 * for zero) and gives each nonzero slot to wait_slot(), which reads it
 * again with the ordering of W2/W3.
 *
 * Ordering of the SIMD loads (x86-64 only).  A slot that the vector load
 * sees as 0 is skipped, so that load stands for W2: it must not miss a
 * reader whose re-check R2 saw the bias on.  x86-64 orders every ordinary
 * load, vector loads included (not the non-temporal ones, which we do not
 * use), after an earlier locked instruction or MFENCE, and loads after
 * loads; W1 is a locked RMW followed by a full fence (rm_fence_store_load),
 * so every vector load reads memory after W1 is visible to all CPUs, which
 * is all the Dekker argument of bravo.h needs from a seq_cst load.  Each
 * aligned 8-byte slot inside a 16- or 32-byte aligned load is read whole.
 * W3 (acquire) is what a load of 0 after the reader's release store R3
 * needs to order its section before ours: x86 loads are acquire loads in
 * hardware, and the compiler barrier after the scan (an acquire fence,
 * which is no instruction on x86) keeps the compiler from moving our later
 * accesses above it.  The C11 model has no words for mixed-size atomics,
 * so this is the one place where the argument is x86-TSO's rather than
 * C11's; ThreadSanitizer builds, and other architectures, use the plain C
 * scan (seq_cst loads, one slot at a time).
 */
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RM_BRAVO_NO_SIMD 1
#endif
#endif
#ifndef RM_BRAVO_NO_SIMD
#define RM_BRAVO_SIMD 1
#include <immintrin.h>
#endif
#endif

/* First index >= i of a nonzero slot in s[0..n), or n. */
static size_t scan_plain(const uintptr_t *s, size_t i, size_t n) {
  for (; i < n; i++)
    if (rm_atomic_load_seq_cst((uintptr_t *)&s[i]) != 0) return i; /* (W2) */
  return i;
}

#ifdef RM_BRAVO_SIMD
/* 8 slots (one 64-byte line) a step; s is page-aligned, so the steps from
 * an index that is a multiple of 8 are line-aligned. */
static size_t scan_sse2(const uintptr_t *s, size_t i, size_t n) {
  while (i < n && (i & 7u)) {
    if (s[i]) return i;
    i++;
  }
  const __m128i zero = _mm_setzero_si128();
  for (; i + 8 <= n; i += 8) {
    const __m128i *p = (const __m128i *)(const void *)&s[i];
    __m128i v = _mm_or_si128(_mm_or_si128(_mm_load_si128(p), _mm_load_si128(p + 1)),
                             _mm_or_si128(_mm_load_si128(p + 2), _mm_load_si128(p + 3)));
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero)) != 0xFFFF) break;
  }
  for (; i < n; i++)
    if (s[i]) break;
  /* Acquire (a compiler barrier on x86): see above. */
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return i;
}

/* 16 slots (one 128-byte sector) a step. */
__attribute__((target("avx2"))) static size_t scan_avx2(const uintptr_t *s, size_t i,
                                                        size_t n) {
  while (i < n && (i & 15u)) {
    if (s[i]) return i;
    i++;
  }
  for (; i + 16 <= n; i += 16) {
    const __m256i *p = (const __m256i *)(const void *)&s[i];
    __m256i v = _mm256_or_si256(_mm256_or_si256(_mm256_load_si256(p), _mm256_load_si256(p + 1)),
                                _mm256_or_si256(_mm256_load_si256(p + 2), _mm256_load_si256(p + 3)));
    if (!_mm256_testz_si256(v, v)) break;
  }
  for (; i < n; i++)
    if (s[i]) break;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return i;
}
#endif

typedef size_t (*scan_fn)(const uintptr_t *, size_t, size_t);
/* The method in use (RM_BRAVO_SCAN_*); chosen at start-up. */
static int scan_method = RM_BRAVO_SCAN_PLAIN;

static bool scan_supported(int m) {
  if (m == RM_BRAVO_SCAN_PLAIN) return true;
#ifdef RM_BRAVO_SIMD
  if (m == RM_BRAVO_SCAN_SSE2) return true;
  if (m == RM_BRAVO_SCAN_AVX2) return __builtin_cpu_supports("avx2");
#endif
  return false;
}

static scan_fn scan_of(int m) {
#ifdef RM_BRAVO_SIMD
  if (m == RM_BRAVO_SCAN_SSE2) return scan_sse2;
  if (m == RM_BRAVO_SCAN_AVX2) return scan_avx2;
#endif
  (void)m;
  return scan_plain;
}

static int scan_best(void) {
  if (scan_supported(RM_BRAVO_SCAN_AVX2)) return RM_BRAVO_SCAN_AVX2;
  if (scan_supported(RM_BRAVO_SCAN_SSE2)) return RM_BRAVO_SCAN_SSE2;
  return RM_BRAVO_SCAN_PLAIN;
}

RM_API int rm_bravo_set_scan(int method) {
  if (method < RM_BRAVO_SCAN_AUTO || method > RM_BRAVO_SCAN_AVX2) return EINVAL;
  if (method == RM_BRAVO_SCAN_AUTO) method = scan_best();
  if (!scan_supported(method)) return ENOTSUP;
  rm_atomic_store_relaxed(&scan_method, method);
  return 0;
}

RM_API int rm_bravo_scan(void) { return rm_atomic_load_relaxed(&scan_method); }

RM_API size_t rm_bravo_scan_nonzero(const uintptr_t *slots, size_t from, size_t n, int method) {
  if (method == RM_BRAVO_SCAN_AUTO) method = rm_bravo_scan();
  if (!slots || !scan_supported(method)) return n;
  return scan_of(method)(slots, from, n);
}

/* Wait until no slot of t holds b.  A flat table: every slot.  A BRAVO-2D
 * table: the lock's column in every row (and the second probe's column),
 * the only slots a reader of b ever installs b in, whatever CPU it ran on
 * (bravo2d.h). */
static int scan_table(struct rm_bravo_bias *b, struct rm_bravo_table *t, int mode, int clk,
                      const struct timespec *abstime) {
  /* Acquire, pairing with the table's publication (release of slots
   * after the geometry): the mask and rows we read belong to these slots. */
  uintptr_t *slots = rm_atomic_load_acquire(&t->slots);
  if (!slots) return 0;
  uint32_t rs = rm_atomic_load_relaxed(&t->row_shift);
  if (rs != 0) {
    uintptr_t rows = (uintptr_t)rm_atomic_load_relaxed(&t->row_mask) + 1;
    uint32_t col = rm_bravo2d_column(b, rs);
    uint32_t x = rm_atomic_load_relaxed(&t->probe2_xor);
    for (uintptr_t r = 0; r < rows; r++) {
      uintptr_t *row = slots + (r << rs);
      int e = wait_slot(row + col, b, mode, clk, abstime);
      if (!e && x) e = wait_slot(row + (col ^ x), b, mode, clk, abstime);
      if (e) return e;
    }
    return 0;
  }
  uintptr_t n = rm_atomic_load_relaxed(&t->mask) + 1;
  /* Any method finds every nonzero slot (see above); changing it while a
   * scan runs is harmless. */
  scan_fn next = scan_of(rm_atomic_load_relaxed(&scan_method));
  for (size_t i = next(slots, 0, n); i < n; i = next(slots, i + 1, n)) {
    int e = wait_slot(&slots[i], b, mode, clk, abstime);
    if (e) return e;
  }
  return 0;
}

/* Primum non nocere: after a revocation that took [start, now), inhibit
 * re-biasing for N times its cost (Listing 1), times 2^backoff.  The
 * back-off adapts to costs the scan time does not show (readers parked
 * behind the writer): a complete revocation that finds the bias was on for
 * less than the base window since the previous window ended doubles the
 * next window; one that finds it lived longer halves it.  A give-up leaves
 * the exponent alone (the previous window may still be running).  The
 * arithmetic saturates: a revocation that lasted very long (or a huge N)
 * gives the longest window, never a wrapped-around short one.  Called by
 * writers holding A's write lock (A orders inhibit_until for slow readers,
 * who read it under A's read lock); relaxed atomics all the same, since
 * ThreadSanitizer does not see every acquisition of A (glibc's
 * pthread_rwlock_clockwrlock). */
static void set_inhibit_window(struct rm_bravo_bias *b, uint64_t start, uint64_t now,
                               bool complete) {
  uint64_t n_mult = rm_atomic_load_relaxed(&rm_bravo_table.n);
  uint64_t base;
  if (__builtin_mul_overflow(now - start, n_mult, &base)) base = UINT64_MAX;
  uint64_t prev_until = rm_atomic_load_relaxed(&b->inhibit_until);
  unsigned shift = rm_atomic_load_relaxed(&b->backoff);
  if (complete && prev_until != 0 && now >= prev_until) {
    if (now - prev_until < base) {
      if (shift < RM_BRAVO_BACKOFF_MAX) shift++;
    } else if (shift > 0) {
      shift--;
    }
    rm_atomic_store_relaxed(&b->backoff, (uint16_t)shift);
  }
  uint64_t window = base > (UINT64_MAX >> shift) ? UINT64_MAX : base << shift;
  /* UINT64_MAX - 1 at most: "about forever", still a finite window. */
  uint64_t until = window >= UINT64_MAX - 1 - now ? UINT64_MAX - 1 : now + window;
  rm_atomic_store_relaxed(&b->inhibit_until, until);
}

static void count_revocation(struct rm_bravo_table *t, uint64_t ticks, bool complete) {
  if (RM_LIKELY(!t->stats_on && !rm_bravo_table.stats_on)) return;
  rm_thread_stat_add(RM_STAT_BRAVO_REVOKE_NS, rm_ticks_to_ns(ticks));
  if (complete) {
    rm_thread_stat_add(RM_STAT_BRAVO_REVOKE, 1);
    rm_thread_stat_add(RM_STAT_BRAVO_WRITE, 1);
  }
}

RM_API int rm_bravo_revoke_slowpath(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                    int mode, int clk, const struct timespec *abstime) {
  uint64_t start = rm_ticks();

  /* (W1) Clear the bias, keeping the count of writers that hold it off
   * (they do not hold A; a store would lose a concurrent count).  A
   * seq_cst RMW followed by a full fence: the fence orders the clear before
   * the scan's loads, pairing with the reader's CAS (R1) -> re-check (R2).
   * Either the reader's re-check sees the bias off and it backs out, or our
   * scan sees its slot and we wait for it. */
  __atomic_fetch_and(&b->rbias, ~RM_BRAVO_BIAS, __ATOMIC_SEQ_CST);
  rm_fence_store_load();
  RM_DEBUG_YIELD();
  int result = scan_table(b, t, mode, clk, abstime);
  uint64_t now = rm_ticks();
  set_inhibit_window(b, start, now, result == 0);
  /* Giving up (try or timeout) leaves fast readers in their slots: the bias
   * stays off, so no new reader enters by the fast path, and revoke_pending
   * makes the next writer scan even if no reader turns the bias back on.
   * A complete scan under A clears it (invariant 3: no reader could turn
   * the bias on while we hold A, so every fast hold began before W1 and
   * our scan saw it leave).  Release: a writer that reads 0 here (acquire,
   * rm_bravo_write_clear) also sees the readers' sections as done. */
  rm_atomic_store_release(&b->revoke_pending, result ? (uint16_t)1 : (uint16_t)0);
  count_revocation(t, now - start, result == 0);
  return result;
}

RM_API int rm_bravo_revoke_unlocked(struct rm_bravo_bias *b, struct rm_bravo_table *t, int mode,
                                    int clk, const struct timespec *abstime,
                                    struct rm_bravo_revocation *rv) {
  /* (W1) Count ourselves in, clearing the bias in the same RMW: no slow
   * reader can turn it on again until we count out, so once our scan
   * finds the table clear, it stays clear.  Then the full fence, as in
   * rm_bravo_revoke_slowpath. */
  rm_bravo_count_in(b);
  rm_fence_store_load();
  RM_DEBUG_PAUSE("bravo.revoke.counted");
  rv->start = rm_ticks();
  int e = scan_table(b, t, mode, clk, abstime);
  rv->end = rm_ticks();
  if (e) {
    /* Gave up: fast holds remain, revoke_pending stays set.  The inhibit
     * window is left as it was (we do not hold A); the pending flag alone
     * keeps writers correct. */
    count_revocation(t, rv->end - rv->start, false);
    rm_bravo_count_out(b);
  }
  return e;
}

RM_API void rm_bravo_revoke_finish(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                   const struct rm_bravo_revocation *rv) {
  set_inhibit_window(b, rv->start, rv->end, true);
  /* Our scan completed while we were counted in (the bias stayed off), so
   * no fast hold exists (invariant 4).  Release, as in the slowpath. */
  rm_atomic_store_release(&b->revoke_pending, (uint16_t)0);
  count_revocation(t, rv->end - rv->start, true);
  rm_bravo_count_out(b);
}

RM_API void rm_bravo_revoke_abandon(struct rm_bravo_bias *b) {
  /* The scan completed (see rm_bravo_revoke_finish), A could not be taken. */
  rm_atomic_store_release(&b->revoke_pending, (uint16_t)0);
  rm_bravo_count_out(b);
}

/* ---- slots released by another thread (bravo.h, point 2) ------------------ */

RM_API bool rm_bravo_release_foreign(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                     const uintptr_t *skip) {
  uintptr_t *slots = rm_atomic_load_acquire(&t->slots);
  if (!slots) return false;
  uintptr_t mask = rm_atomic_load_relaxed(&t->mask);
  for (uintptr_t i = 0; i <= mask; i++) {
    if (&slots[i] == skip) continue;
    uintptr_t v = rm_atomic_load_relaxed(&slots[i]);
    while (rm_bravo_slot_holds(v, b)) {
      uintptr_t nv = (v & RM_BRAVO_SLOT_NEST_MASK) ? v - RM_BRAVO_SLOT_NEST_ONE
                                                   : ((uintptr_t)b | RM_BRAVO_SLOT_RELEASED);
      RM_DEBUG_PAUSE("bravo.release_foreign.found");
      /* Release, as the owner's unlock (R3): whatever the holder did is
       * ordered before a writer that sees the slot change. */
      if (__atomic_compare_exchange_n(&slots[i], &v, nv, false, __ATOMIC_RELEASE,
                                      __ATOMIC_RELAXED))
        return true;
    }
  }
  return false;
}

/* ---- fork ----------------------------------------------------------------
 * In the child only the forking thread runs.  Its own fast read holds sit in
 * the slot its hash names, and it keeps them: it will unlock them with the
 * tokens it holds.  Every other slot holding lock L belongs to a thread that
 * does not exist in the child:
 *  - if L's bias is on it is a read hold of that thread, and stays held, as
 *    with glibc;
 *  - if L's bias is off it was left either by a reader that lost the race
 *    with a revoking writer and was about to clear it (it held nothing), by
 *    a fast reader that a revoking writer was still waiting for (that
 *    writer, not being the forking thread, never finishes in the child, so
 *    clearing changes nothing for it), or by a fast reader of a lock whose
 *    try or timed revocation gave up (revoke_pending).  We clear them all:
 *    a lock nobody held must not block, and in the last case the reader
 *    that held L does not exist in the child, so freeing its hold is safe;
 *    the one difference from glibc is that a writer in the child gets the
 *    lock instead of waiting forever (documented in docs/bravo.md);
 *  - a slot marked RM_BRAVO_SLOT_RELEASED holds nothing (preload library).
 * L may have been freed (a program that ignored the EBUSY of destroying a
 * lock with such a hold): its bias word is read with probe_read(), which
 * never faults, and an unreadable lock's slot is cleared.
 */

/* Copy n bytes at p to out without faulting when p is not mapped.  false
 * when it is not readable. */
static bool probe_read(const void *p, void *out, size_t n) {
  struct iovec here = {out, n}, there = {(void *)(uintptr_t)p, n};
  ssize_t r = process_vm_readv(getpid(), &here, 1, &there, 1, 0);
  if (r == (ssize_t)n) return true;
  if (r >= 0 || errno == EFAULT) return false;
  /* The call is refused (seccomp, no CONFIG_CROSS_MEMORY_ATTACH): ask
   * whether the page is mapped at all (ENOMEM: it is not). */
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  unsigned char vec;
  if (mincore((void *)((uintptr_t)p & ~(page - 1)), page, &vec) != 0) return false;
  memcpy(out, p, n);
  return true;
}

static void bravo_fork_child(void) {
  uintptr_t *slots = rm_bravo_table.slots;
  if (!slots) return;
  int saved = errno;
  uintptr_t self = rm_thread_identity();
  for (uintptr_t i = 0; i <= rm_bravo_table.mask; i++) {
    uintptr_t v = slots[i], lk = RM_BRAVO_SLOT_LOCK(v);
    if (!v) continue;
    /* Our own slot (its hash names it) stays, whatever it holds. */
    if ((rm_bravo_hash((const void *)lk, self) & rm_bravo_table.mask) == i) continue;
    uint32_t word = 0;
    if (!(v & RM_BRAVO_SLOT_RELEASED) &&
        probe_read((const void *)(lk + offsetof(struct rm_bravo_bias, rbias)), &word,
                   sizeof word) &&
        (word & RM_BRAVO_BIAS))
      continue;
    slots[i] = 0;
  }
  errno = saved;
}

/* BRAVO-2D (bravo2d.h, FORK): the forking thread's slots cannot be told
 * from others by their index (the row was a CPU's), so a slot of a lock
 * whose bias is off is marked RM_BRAVO_SLOT_RELEASED rather than cleared:
 * no writer waits for a marked slot, and the forking thread's own read
 * unlock accepts the mark.  A table being allocated by another thread at
 * the fork is forgotten (that thread does not exist here). */
static void bravo2d_fork_child(void) {
  /* Relaxed: the child runs one thread. */
  if (__atomic_load_n(&t2d_state, __ATOMIC_RELAXED) == 1u)
    __atomic_store_n(&t2d_state, 0u, __ATOMIC_RELAXED);
  uintptr_t *slots = rm_bravo2d_table.slots;
  if (!slots) return;
  int saved = errno;
  for (uintptr_t i = 0; i <= rm_bravo2d_table.mask; i++) {
    uintptr_t v = slots[i], lk = RM_BRAVO_SLOT_LOCK(v);
    if (!v || (v & RM_BRAVO_SLOT_RELEASED)) continue;
    uint32_t word = 0;
    if (probe_read((const void *)(lk + offsetof(struct rm_bravo_bias, rbias)), &word,
                   sizeof word) &&
        (word & RM_BRAVO_BIAS))
      continue;
    slots[i] = v | RM_BRAVO_SLOT_RELEASED;
  }
  errno = saved;
}

static void bravo_fork_child_all(void) {
  bravo_fork_child();
  bravo2d_fork_child();
}

__attribute__((constructor(103))) static void bravo_ctor(void) {
  static const struct rm_thread_hooks hooks = {NULL, bravo_fork_child_all};
  rm_thread_add_hooks(&hooks);
  /* The range of rm_bravo_set_inhibit_multiplier(); messages: src/env.h. */
  rm_bravo_table.n = (uint32_t)rm_env_int("READMOSTLY_BRAVO_N", 0, 1000000, 9);
  /* The flat table's scan: the widest the CPU has, or
   * READMOSTLY_BRAVO_SCAN=plain|sse2|avx2 (one it lacks falls back to the
   * widest it has, with a message). */
  static const char *const scans[] = {"auto", "plain", "sse2", "avx2", NULL};
  int m = rm_env_choice("READMOSTLY_BRAVO_SCAN", scans, RM_BRAVO_SCAN_AUTO);
  if (rm_bravo_set_scan(m) != 0) {
    rm_env_report("READMOSTLY_BRAVO_SCAN", scans[m], "not supported by this CPU or build",
                  "the widest supported");
    rm_bravo_set_scan(RM_BRAVO_SCAN_AUTO);
  }
  if (rm_env_flag("READMOSTLY_STATS")) rm_bravo_stats_enable(true);
}
