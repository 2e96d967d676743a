/*
 * bravo_dyn.c - the resizable visible-readers table of readmostly/bravo_dyn.h
 * (the BRAVO paper's "dynamic sizing of the visible readers table based on
 * collisions"): tables, resize, closing sweep, the revocation scan over
 * both live tables, and the sizing policy.  The fast path and the ordering
 * argument are in the header; docs/bravo-dynamic.md has the design.
 *
 * Invariants:
 *  1. At most two tables are live: cur (readers publish there) and old
 *     (being closed), old != cur.  Every other table that was ever
 *     published has all its slots RM_BRAVO_SLOT_CLOSED.
 *  2. A slot goes 0 -> lock only by a reader's CAS (R1), lock -> 0 by its
 *     owner (R3 or the back-out), 0 -> CLOSED only by a sweep's CAS, and
 *     CLOSED -> 0 only when its table is made cur again (reopened), after
 *     the seq_cst store of cur.  A CLOSED slot is never taken by a reader.
 *  3. old is set to NULL only after a sweep found every slot of it CLOSED.
 *  4. cur and old are stored only by a thread holding `busy` (a try-lock),
 *     seq_cst; tables are never unmapped.
 */
#define _GNU_SOURCE
#include <readmostly/bravo_dyn.h>
#include <readmostly/thread.h>

#include "bravo_internal.h"
#include "env.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

RM_API struct rm_bravo_dyn rm_bravo_dyn = {NULL, NULL};
/* Only stats_on, n, dynamic and (as "allocated") slots are used. */
RM_API struct rm_bravo_table rm_bravo_dyn_table = {.n = 9, .dynamic = 1};

#define DYN_LOG_MAX 24
#define DYN_EVAL_NS 10000000ull /* the policy looks at most every 10 ms */
#define DYN_MIN_COLLISIONS 64u
#define DYN_TLS_BATCH 16u

/* One table per size, mapped on first use, never unmapped. */
static struct rm_bravo_dtab classes[DYN_LOG_MAX + 1] RM_ALIGNED;

static struct {
  uint32_t busy;  /* try-lock: resizes, sweeps, evaluations */
  uint32_t state; /* RM_TABLE_NONE, _BUSY, _DONE (bravo_internal.h) */
  size_t init, min, max;
  int auto_resize;
  uint64_t eval_ticks; /* DYN_EVAL_NS in rm_ticks() units */
  uint64_t last_eval;
  uint64_t collisions, scanned, scans; /* since the last evaluation */
  uint64_t total_collisions, grows, shrinks, resizes;
} dyn RM_ALIGNED; /* its counters change often: away from what readers load */

static __thread uint32_t tls_collisions __attribute__((tls_model("initial-exec")));

static bool is_pow2(size_t v) { return v != 0 && (v & (v - 1)) == 0; }
static unsigned log2_of(size_t p) {
  unsigned s = 0;
  while (((size_t)1 << s) < p) s++;
  return s;
}

RM_API int rm_bravo_dyn_attr_init(struct rm_bravo_dyn_attr *a) {
  if (!a) return EINVAL;
  memset(a, 0, sizeof *a);
  a->auto_resize = 1;
  return 0;
}

static bool size_ok(size_t n) { return is_pow2(n) && n >= 16u && n <= ((size_t)1 << DYN_LOG_MAX); }

/* Defaults filled in and checked: 0 or EINVAL. */
static int resolve(const struct rm_bravo_dyn_attr *a, size_t *init, size_t *mn, size_t *mx,
                   int *au) {
  size_t lo = a->min_slots ? a->min_slots : 1024u;
  size_t hi = a->max_slots ? a->max_slots : ((size_t)1 << 20);
  if (!size_ok(lo) || !size_ok(hi) || lo > hi) return EINVAL;
  if (a->auto_resize != 0 && a->auto_resize != 1) return EINVAL;
  size_t n = a->slots;
  if (n) {
    if (!size_ok(n) || n < lo || n > hi) return EINVAL;
  } else {
    n = rm_env_pow2("READMOSTLY_BRAVO_DYN_SLOTS", 16, (size_t)1 << DYN_LOG_MAX,
                    rm_bravo_default_slots());
    if (n < lo) n = lo;
    if (n > hi) n = hi;
  }
  *init = n;
  *mn = lo;
  *mx = hi;
  *au = a->auto_resize && rm_env_int("READMOSTLY_BRAVO_DYN_AUTO", 0, 1, 1) != 0;
  return 0;
}

/* The table of n slots, mapped if needed (caller holds busy, or is the
 * allocating first caller).  NULL on ENOMEM. */
static struct rm_bravo_dtab *table_of(size_t n) {
  struct rm_bravo_dtab *d = &classes[log2_of(n)];
  if (!d->slots) {
    uintptr_t *s = rm_bravo_map_slots(n);
    if (!s) return NULL;
    /* Relaxed: published to readers by the seq_cst store of cur. */
    rm_atomic_store_relaxed(&d->mask, (uintptr_t)(n - 1));
    rm_atomic_store_relaxed(&d->slots, s);
  }
  return d;
}

static int dyn_setup(const struct rm_bravo_dyn_attr *a, bool configuring) {
  if (__atomic_load_n(&dyn.state, __ATOMIC_ACQUIRE) == RM_TABLE_DONE) return configuring ? EBUSY : 0;
  struct rm_bravo_dyn_attr dflt;
  rm_bravo_dyn_attr_init(&dflt);
  if (!a) a = &dflt;
  int cs;
  /* The environment checks may print (stdio may act on a cancellation). */
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
  size_t init = 0, mn = 0, mx = 0;
  int au = 0;
  int r = resolve(a, &init, &mn, &mx, &au);
  /* One thread allocates (rm_table_claim(), bravo_internal.h); the others
   * never wait. */
  uint32_t found = r == 0 ? rm_table_claim(&dyn.state) : RM_TABLE_NONE;
  if (found != RM_TABLE_NONE) {
    r = configuring ? EBUSY : (found == RM_TABLE_DONE ? 0 : EAGAIN);
  } else if (r == 0) {
    struct rm_bravo_dtab *d = table_of(init);
    if (!d) {
      r = ENOMEM;
      rm_table_settle(&dyn.state, false);
    } else {
      dyn.init = init;
      dyn.min = mn;
      dyn.max = mx;
      rm_atomic_store_relaxed(&dyn.auto_resize, au);
      dyn.eval_ticks = rm_ns_to_ticks(DYN_EVAL_NS);
      /* (cur) seq_cst, a release: the table's mask and slots first. */
      rm_atomic_store_seq_cst(&rm_bravo_dyn.cur, d);
      /* Release: a slow reader that loads slots with acquire before it
       * turns a bias on (S1) sees cur; fast readers acquire S1 (R0). */
      rm_atomic_store_release(&rm_bravo_dyn_table.slots, d->slots);
      rm_table_settle(&dyn.state, true);
    }
  }
  pthread_setcancelstate(cs, NULL);
  return r;
}

int rm_bravo_dyn_init(void) { return dyn_setup(NULL, false); }

RM_API int rm_bravo_dyn_configure(const struct rm_bravo_dyn_attr *a) {
  if (!a) return EINVAL;
  return dyn_setup(a, true);
}

static int ensure_table(void) { return rm_table_wait(rm_bravo_dyn_init); }

/* ---- closing and resizing (caller holds busy) ------------------------------ */

/* One pass over t: every empty slot becomes CLOSED (seq_cst CAS; reading
 * a reader's release store R3 of 0 orders that reader's section before
 * us, and so before the store of old = NULL that follows a complete
 * sweep).  true when every slot is CLOSED. */
static bool sweep(struct rm_bravo_dtab *t) {
  uintptr_t *s = t->slots, n = t->mask + 1;
  bool done = true;
  for (uintptr_t i = 0; i < n; i++) {
    uintptr_t v = rm_atomic_load_relaxed(&s[i]);
    if (v == RM_BRAVO_SLOT_CLOSED) continue;
    if (v == 0) {
      uintptr_t z = 0;
      RM_DEBUG_YIELD();
      if (__atomic_compare_exchange_n(&s[i], &z, RM_BRAVO_SLOT_CLOSED, false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_RELAXED))
        continue;
    }
    done = false; /* a reader holds it (or just took it) */
  }
  return done;
}

/* Try to finish closing old: true when no old table remains. */
static bool finish_old(void) {
  struct rm_bravo_dtab *o = rm_atomic_load_seq_cst(&rm_bravo_dyn.old);
  if (!o) return true;
  if (!sweep(o)) return false;
  /* Invariant 3; seq_cst: a writer that loads old after this store reads
   * NULL, and every reader of o left before (see sweep). */
  rm_atomic_store_seq_cst(&rm_bravo_dyn.old, (struct rm_bravo_dtab *)NULL);
  return true;
}

/* Make the table of n slots current.  0, EBUSY (old still holds a
 * reader), ENOMEM. */
static int resize_locked(size_t n) {
  if (!finish_old()) return EBUSY;
  struct rm_bravo_dtab *c = rm_atomic_load_seq_cst(&rm_bravo_dyn.cur);
  if (c->mask + 1 == n) return 0;
  struct rm_bravo_dtab *d = table_of(n);
  if (!d) return ENOMEM;
  /* old first, then cur (both seq_cst): a writer that loads the new cur
   * then loads old = c (or a value stored after c's closing completed). */
  rm_atomic_store_seq_cst(&rm_bravo_dyn.old, c);
  RM_DEBUG_YIELD();
  rm_atomic_store_seq_cst(&rm_bravo_dyn.cur, d);
  /* A table used before is all CLOSED (invariant 1): reopen it now that it
   * is cur (seq_cst CAS after the seq_cst store of cur: a reader whose CAS
   * takes a reopened slot follows that store in S, so writers that revoke
   * after it scan d). */
  uintptr_t *s = d->slots, m = d->mask;
  for (uintptr_t i = 0; i <= m; i++) {
    uintptr_t v = RM_BRAVO_SLOT_CLOSED;
    if (rm_atomic_load_relaxed(&s[i]) == RM_BRAVO_SLOT_CLOSED)
      __atomic_compare_exchange_n(&s[i], &v, (uintptr_t)0, false, __ATOMIC_SEQ_CST,
                                  __ATOMIC_RELAXED);
  }
  __atomic_fetch_add(&dyn.resizes, 1u, __ATOMIC_RELAXED);
  finish_old(); /* closes c at once if no reader is in it */
  return 0;
}

static bool try_busy(void) {
  uint32_t z = 0;
  /* Acquire / release: one resizer at a time sees the last one's work. */
  return __atomic_compare_exchange_n(&dyn.busy, &z, 1u, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}
static void drop_busy(void) { __atomic_store_n(&dyn.busy, 0u, __ATOMIC_RELEASE); }

RM_API int rm_bravo_dyn_resize(size_t slots) {
  int e = ensure_table();
  if (e) return e;
  if (!size_ok(slots) || slots < dyn.min || slots > dyn.max) return EINVAL;
  if (!try_busy()) return EBUSY;
  e = resize_locked(slots);
  drop_busy();
  return e;
}

RM_API void rm_bravo_dyn_set_auto(bool on) {
  rm_atomic_store_relaxed(&dyn.auto_resize, on ? 1 : 0);
}

RM_API int rm_bravo_dyn_get(struct rm_bravo_dyn_info *out) {
  if (!out) return EINVAL;
  int e = ensure_table();
  if (e) return e;
  struct rm_bravo_dtab *c = rm_atomic_load_seq_cst(&rm_bravo_dyn.cur);
  struct rm_bravo_dtab *o = rm_atomic_load_seq_cst(&rm_bravo_dyn.old);
  out->slots = c->mask + 1;
  out->old_slots = o ? o->mask + 1 : 0;
  out->min_slots = dyn.min;
  out->max_slots = dyn.max;
  out->auto_resize = rm_atomic_load_relaxed(&dyn.auto_resize);
  out->grows = rm_atomic_load_relaxed(&dyn.grows);
  out->shrinks = rm_atomic_load_relaxed(&dyn.shrinks);
  out->resizes = rm_atomic_load_relaxed(&dyn.resizes);
  out->collisions = rm_atomic_load_relaxed(&dyn.total_collisions);
  return 0;
}

/* ---- the revocation scan ------------------------------------------------- */

int rm_bravo_dyn_scan(struct rm_bravo_bias *b, int mode, int clk, const struct timespec *abstime) {
  /* (Wc, Wo) seq_cst, after W1 and its fence: see bravo_dyn.h, "WHY A
   * READER PUBLISHED IN THE OLD TABLE IS FOUND".  cur before old. */
  struct rm_bravo_dtab *c = rm_atomic_load_seq_cst(&rm_bravo_dyn.cur);
  struct rm_bravo_dtab *o = rm_atomic_load_seq_cst(&rm_bravo_dyn.old);
  if (!c) return 0; /* no table yet: no bias was ever on */
  int e = rm_bravo_scan_slots(b, c->slots, c->mask + 1, mode, clk, abstime);
  if (!e && o && o != c) e = rm_bravo_scan_slots(b, o->slots, o->mask + 1, mode, clk, abstime);
  /* The policy counts slots scanned, not time: a revocation's time is
   * mostly its wait for readers to leave, which no table size changes. */
  uintptr_t n = c->mask + 1 + (o && o != c ? o->mask + 1 : 0);
  __atomic_fetch_add(&dyn.scanned, (uint64_t)n, __ATOMIC_RELAXED);
  __atomic_fetch_add(&dyn.scans, 1u, __ATOMIC_RELAXED);
  return e;
}

/* Whether the slot of table d that this thread's fast path uses for b
 * holds b (relaxed: a snapshot). */
static bool own_slot_holds(const struct rm_bravo_dtab *d, const struct rm_bravo_bias *b,
                           uintptr_t self) {
  return rm_bravo_slot_holds(rm_atomic_load_relaxed(&d->slots[rm_bravo_hash(b, self) & d->mask]),
                             b);
}

bool rm_bravo_dyn_hold_seen(const struct rm_bravo_bias *b) {
  uintptr_t self = rm_thread_identity();
  /* cur and old as the scan loads them (seq_cst, pairing with the
   * resize's stores: a table's mask and slots are published before it).
   * The answer is a snapshot for read_trylock's retry only: a table that
   * changed since our hold began makes us miss it, and read_trylock then
   * returns A's EBUSY as it did without the retry; never a wrong hold. */
  struct rm_bravo_dtab *c = rm_atomic_load_seq_cst(&rm_bravo_dyn.cur);
  struct rm_bravo_dtab *o = rm_atomic_load_seq_cst(&rm_bravo_dyn.old);
  return (c && own_slot_holds(c, b, self)) || (o && o != c && own_slot_holds(o, b, self));
}

/* ---- the sizing policy (bravo_dyn.h, THE SIZING POLICY) ---------------------- */

void rm_bravo_dyn_policy(uint64_t now) {
  /* Acquire: the limits and eval_ticks were stored before state = 2. */
  if (__atomic_load_n(&dyn.state, __ATOMIC_ACQUIRE) != RM_TABLE_DONE) return;
  bool pending = rm_atomic_load_relaxed(&rm_bravo_dyn.old) != NULL;
  bool due = rm_atomic_load_relaxed(&dyn.auto_resize) &&
             now - rm_atomic_load_relaxed(&dyn.last_eval) >= dyn.eval_ticks;
  if (!pending && !due) return;
  if (!try_busy()) return;
  bool free_to_resize = finish_old();
  if (due && now - rm_atomic_load_relaxed(&dyn.last_eval) >= dyn.eval_ticks) {
    uint64_t coll = __atomic_exchange_n(&dyn.collisions, 0u, __ATOMIC_RELAXED);
    uint64_t st = __atomic_exchange_n(&dyn.scanned, 0u, __ATOMIC_RELAXED);
    uint64_t scans = __atomic_exchange_n(&dyn.scans, 0u, __ATOMIC_RELAXED);
    rm_atomic_store_relaxed(&dyn.last_eval, now);
    /* Picoseconds a slot for each scan method (bravo-future.md, "The
     * scan alone": 4096 slots in 8.1, 1.7 and 0.9 us). */
    static const uint64_t ps_per_slot[] = {2000, 2000, 400, 220};
    int m = rm_bravo_scan();
    uint64_t cost_c = coll * RM_BRAVO_DYN_COLLISION_NS;
    uint64_t cost_s = st * ps_per_slot[m >= 0 && m <= 3 ? m : 1] / 1000u;
    size_t size = rm_atomic_load_relaxed(&rm_bravo_dyn.cur)->mask + 1;
    if (free_to_resize) {
      if (coll >= DYN_MIN_COLLISIONS && cost_c > 4 * cost_s && size < dyn.max) {
        if (resize_locked(size * 2) == 0) __atomic_fetch_add(&dyn.grows, 1u, __ATOMIC_RELAXED);
      } else if (scans > 0 && cost_s > 4 * cost_c && size > dyn.min) {
        if (resize_locked(size / 2) == 0) __atomic_fetch_add(&dyn.shrinks, 1u, __ATOMIC_RELAXED);
      }
    }
  }
  drop_busy();
}

RM_API void rm_bravo_dyn_collided(void) {
  if (++tls_collisions % DYN_TLS_BATCH != 0) return;
  __atomic_fetch_add(&dyn.collisions, DYN_TLS_BATCH, __ATOMIC_RELAXED);
  __atomic_fetch_add(&dyn.total_collisions, DYN_TLS_BATCH, __ATOMIC_RELAXED);
  /* A reader about to take A's read lock holds nothing of this lock: the
   * policy may act (it never waits). */
  rm_bravo_dyn_policy(rm_ticks());
}

/* In a fork child (bravo.c calls it before it clears the live tables'
 * slots): the thread that held busy or was allocating does not exist. */
void rm_bravo_dyn_fork_reset(void) {
  __atomic_store_n(&dyn.busy, 0u, __ATOMIC_RELAXED);
  rm_table_fork_reset(&dyn.state);
}
