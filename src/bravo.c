/*
 * bravo.c - the out-of-line half of BRAVO (Dice and Kogan, USENIX ATC 2019):
 * the process-wide visible-readers table, revocation, statistics and the
 * fork handler.  The fast paths and the generator are in readmostly/bravo.h;
 * the ordering table is in docs/bravo.md.
 *
 * Invariants:
 *  1. A slot holds 0 or the address of a lock's struct rm_bravo_bias.  Only
 *     the reader that installed an address (by CAS from 0) clears it, except
 *     the fork handler in a single-threaded child (see fork_child()).
 *  2. A lock's address is in a slot and that reader re-checked rbias == 1
 *     (R2) => no writer of that lock has finished revoking since: the writer
 *     is either before W1 or waiting in the scan for this slot.
 *  3. rbias goes 0 -> 1 only under A's read lock, 1 -> 0 only under A's
 *     write lock; so while a writer holds A, rbias stays 0 once cleared.
 *  4. rm_bravo_table.slots/mask never change once set (the global table is
 *     never freed: locks may live until exit).
 */
#define _GNU_SOURCE
#include <readmostly/bravo.h>
#include <readmostly/thread.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Defined once, here, with default visibility: every shared object that
 * links libreadmostly sees this one table. */
RM_API struct rm_bravo_table rm_bravo_table = {NULL, 0, 0, 9};
RM_API __thread struct rm_bravo_clock_skip rm_bravo_tls_skip
    __attribute__((tls_model("initial-exec")));

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t table_bytes;
static int table_huge;

static size_t pow2_at_least(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

static size_t default_slots(void) {
  const char *env = getenv("READMOSTLY_BRAVO_TABLE_SLOTS");
  if (env && *env) {
    char *end;
    unsigned long v = strtoul(env, &end, 0);
    if (*end == '\0' && v >= 1 && v <= (1ul << 24)) return pow2_at_least(v);
    fprintf(stderr, "readmostly: ignoring READMOSTLY_BRAVO_TABLE_SLOTS=%s "
                    "(want 1..16777216)\n", env);
  }
  size_t want = (size_t)rm_cpu_count() * 32u;
  return pow2_at_least(want < 4096 ? 4096 : want);
}

/* Map a zeroed table on its own pages: explicit huge pages when reserved,
 * else normal pages.  Returns NULL on failure. */
static uintptr_t *map_table(size_t slots, size_t *bytes, int *huge) {
  size_t len = slots * sizeof(uintptr_t);
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t huge_len = (len + (2u << 20) - 1) & ~((size_t)(2u << 20) - 1);
  void *p = MAP_FAILED;
#ifdef MAP_HUGETLB
  if (len >= (64u << 10) || getenv("READMOSTLY_BRAVO_HUGETLB")) {
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

RM_API int rm_bravo_table_init_slowpath(void) {
  if (rm_atomic_load_acquire(&rm_bravo_table.slots)) return 0;
  pthread_mutex_lock(&table_lock);
  int r = 0;
  if (!rm_bravo_table.slots) {
    size_t slots = default_slots();
    uintptr_t *s = map_table(slots, &table_bytes, &table_huge);
    if (!s) {
      r = ENOMEM;
    } else {
      rm_bravo_table.mask = slots - 1;
      /* Release: a reader that loads slots != NULL (acquire) sees mask. */
      rm_atomic_store_release(&rm_bravo_table.slots, s);
    }
  }
  pthread_mutex_unlock(&table_lock);
  return r;
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

RM_API int rm_bravo_revoke_slowpath(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                    int mode, int clk, const struct timespec *abstime) {
  uint64_t start = rm_ticks();
  int result = 0;

  /* (W1) Clear the bias.  A seq_cst store followed by a full fence: the
   * fence orders this store before the scan's loads (a release store alone
   * would not), pairing with the reader's CAS (R1) -> re-check (R2).  Either
   * the reader's re-check sees 0 and it backs out, or our scan sees its slot
   * and we wait for it. */
  rm_atomic_store_seq_cst(&b->rbias, 0u);
  rm_fence_store_load();
  RM_DEBUG_YIELD();

  /* Acquire, pairing with the table's publication (release store of
   * slots after mask): the mask we read belongs to these slots.  A already
   * orders this (the reader that set rbias allocated the table before it
   * released A), but not every acquisition of A is visible to
   * ThreadSanitizer (glibc's pthread_rwlock_clockwrlock). */
  uintptr_t *slots = rm_atomic_load_acquire(&t->slots);
  uintptr_t n = t->mask + 1;
  if (slots) {
    for (uintptr_t i = 0; i < n; i++) {
      /* (W2) seq_cst load: sees any reader's slot that R2 did not beat. */
      if (RM_LIKELY(!rm_bravo_slot_holds(rm_atomic_load_seq_cst(&slots[i]), b))) continue;
      if (mode == RM_BRAVO_REVOKE_TRY) {
        result = EBUSY;
        break;
      }
      rm_backoff_t bo = RM_BACKOFF_INIT;
      unsigned polls = 0;
      /* (W3) acquire: once the slot no longer holds this lock, the reader's
       * critical section is over as far as we can observe (pairs with its
       * release store R3).  A reader that loaded rbias == 1 before W1 may
       * still CAS this lock into some slot after we passed it, but its
       * re-check R2 then follows W1 in S, sees 0, and it backs out without
       * entering: we need not look back. */
      while (rm_bravo_slot_holds(rm_atomic_load_acquire(&slots[i]), b)) {
        if (mode == RM_BRAVO_REVOKE_TIMED && (++polls & 63u) == 0 &&
            rm_timespec_expired(clk, abstime)) {
          result = ETIMEDOUT;
          break;
        }
        rm_backoff_wait(&bo);
      }
      if (result) break;
    }
  }

  /* Primum non nocere: inhibit re-biasing for N times what this cost, also
   * when we give up (Listing 1), times 2^backoff.  The back-off adapts to
   * costs the scan time does not show (readers parked behind us): a
   * complete revocation that finds the bias was on for less than the base
   * window since the previous window ended doubles the next window; one
   * that finds it lived longer halves it.  A give-up leaves the exponent
   * alone (the previous window may still be running).  Written under A's
   * write lock; inhibit_until is read by slow readers under A's read lock
   * (A orders it), backoff only by writers under A's write lock. */
  uint64_t now = rm_ticks();
  uint64_t n_mult = rm_atomic_load_relaxed(&rm_bravo_table.n);
  uint64_t base = (now - start) * n_mult;
  uint64_t prev_until = rm_atomic_load_relaxed(&b->inhibit_until);
  unsigned shift = rm_atomic_load_relaxed(&b->backoff);
  if (!result && prev_until != 0 && now >= prev_until) {
    if (now - prev_until < base) {
      if (shift < RM_BRAVO_BACKOFF_MAX) shift++;
    } else if (shift > 0) {
      shift--;
    }
    rm_atomic_store_relaxed(&b->backoff, (uint16_t)shift);
  }
  rm_atomic_store_relaxed(&b->inhibit_until, now + (base << shift));
  /* Giving up (try or timeout) leaves fast readers in their slots: the bias
   * stays off, so no new reader enters by the fast path, and revoke_pending
   * makes the next writer scan even if no reader turns the bias back on (the
   * inhibit window keeps slow readers from doing so at once, so a writer
   * retrying its trylock sees the table drain).  A complete scan clears it.
   * Written under A's write lock, read by the next writer after acquiring
   * A: A orders it.  Relaxed atomics rather than plain accesses because
   * ThreadSanitizer does not see every acquisition of A (glibc's
   * pthread_rwlock_clockwrlock). */
  rm_atomic_store_relaxed(&b->revoke_pending, result ? 1u : 0u);
  if (RM_UNLIKELY(t->stats_on || rm_bravo_table.stats_on)) {
    rm_thread_stat_add(RM_STAT_BRAVO_REVOKE_NS, rm_ticks_to_ns(now - start));
    if (!result) {
      rm_thread_stat_add(RM_STAT_BRAVO_REVOKE, 1);
      rm_thread_stat_add(RM_STAT_BRAVO_WRITE, 1);
    }
  }
  return result;
}

/* ---- fork ----------------------------------------------------------------
 * In the child only the forking thread runs.  Its own fast read holds sit in
 * the slot its hash names, and it keeps them: it will unlock them with the
 * tokens it holds.  Every other slot holding lock L belongs to a thread that
 * does not exist in the child:
 *  - if L's rbias == 1 it is a read hold of that thread, and stays held, as
 *    with glibc;
 *  - if L's rbias == 0 it was left either by a reader that lost the race
 *    with a revoking writer and was about to clear it (it held nothing), by
 *    a fast reader that a revoking writer was still waiting for (that
 *    writer, not being the forking thread, holds A's write lock in the child
 *    forever, so clearing changes nothing), or by a fast reader of a lock
 *    whose try or timed revocation gave up (revoke_pending).  We clear them
 *    all: a lock nobody held must not block, and in the last case the
 *    reader that held L does not exist in the child, so freeing its hold is
 *    safe; the one difference from glibc is that a writer in the child gets
 *    the lock instead of waiting forever (documented in docs/bravo.md).
 */
static void bravo_fork_child(void) {
  uintptr_t *slots = rm_bravo_table.slots;
  if (!slots) return;
  uintptr_t self = rm_thread_identity();
  for (uintptr_t i = 0; i <= rm_bravo_table.mask; i++) {
    uintptr_t v = slots[i], lk = RM_BRAVO_SLOT_LOCK(v);
    if (!v) continue;
    /* Our own slot (its hash names it) stays, whatever it holds. */
    if ((rm_bravo_hash((const void *)lk, self) & rm_bravo_table.mask) == i) continue;
    /* A hold another thread released (preload library) holds nothing. */
    if (!(v & RM_BRAVO_SLOT_RELEASED) && ((const struct rm_bravo_bias *)lk)->rbias != 0) continue;
    slots[i] = 0;
  }
}

__attribute__((constructor(103))) static void bravo_ctor(void) {
  static const struct rm_thread_hooks hooks = {NULL, bravo_fork_child};
  rm_thread_add_hooks(&hooks);
  const char *n = getenv("READMOSTLY_BRAVO_N");
  if (n && *n) {
    char *end;
    unsigned long v = strtoul(n, &end, 10);
    if (*end == '\0' && v <= 1000000ul) rm_bravo_table.n = (uint32_t)v;
    else fprintf(stderr, "readmostly: ignoring READMOSTLY_BRAVO_N=%s\n", n);
  }
  const char *s = getenv("READMOSTLY_STATS");
  if (s && *s && strcmp(s, "0") != 0) rm_bravo_stats_enable(true);
}
