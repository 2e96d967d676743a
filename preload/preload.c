/*
 * preload.c - libreadmostly-preload.so: BRAVO for unmodified programs.
 *
 *   LD_PRELOAD=libreadmostly-preload.so program
 *
 * Every pthread_rwlock_* call of the program lands here.  The lock lives in
 * the caller's pthread_rwlock_t (56 bytes on x86-64): BRAVO's 16-byte header
 * (struct rm_bravo_bias) followed by the compact futex lock rm_futexrw_t
 * (40 bytes), whose `kind` falls on byte 48, where glibc keeps __flags.  All
 * zero bytes (PTHREAD_RWLOCK_INITIALIZER) are an unlocked reader-preference
 * lock; PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP sets kind 2, which
 * futexrw reads as writer preference.  Nothing is kept anywhere else about a
 * lock (the statistics table exists only with READMOSTLY_STATS=1).
 *
 * Fields of rm_futexrw_t reserved for us:
 *   owner        id of the thread holding the write lock (0: none); ids are
 *                per-thread numbers kept in TLS, so the forking thread keeps
 *                its id (and its write holds) in the child
 *   reserved[0]  PL_NOBIAS: another thread released a fast read hold of
 *                this lock; bias is never turned on again for it
 *
 * A read hold taken through the BRAVO table (fast) is remembered in the
 * thread's held list (lock, slot); the slot's high bits count the thread's
 * recursive holds (RM_BRAVO_SLOT_NEST_*).  Slow holds are counts in futexrw
 * and need no entry.  See docs/preload.md for recursion during revocation,
 * unlocks by another thread, fork and process-shared locks.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <readmostly/bravo.h>
#include <readmostly/fcp.h>
#include <readmostly/futexrw.h>

#include "../src/env.h" /* the library's reader of READMOSTLY_* variables */

#define PL_EXPORT __attribute__((visibility("default")))
/* Thread-local state in the initial-exec model: a plain %fs-relative access
 * instead of a __tls_get_addr call per lock operation (which cost ~2% of
 * kccachetest's time).  The library is loaded at start-up by LD_PRELOAD, so
 * its TLS is in the static block; a dlopen() of it later still works while
 * glibc's surplus static TLS has room (these variables take ~180 bytes). */
#define PL_TLS __thread __attribute__((tls_model("initial-exec")))

struct pl_lock {
  struct rm_bravo_bias bias;
  rm_futexrw_t fx;
};
RM_STATIC_ASSERT(sizeof(struct pl_lock) == sizeof(pthread_rwlock_t),
                 "the lock must fill pthread_rwlock_t exactly");
RM_STATIC_ASSERT(offsetof(struct pl_lock, fx.kind) == 48,
                 "kind must sit where glibc keeps __flags");
RM_STATIC_ASSERT(_Alignof(pthread_rwlock_t) >= _Alignof(struct pl_lock),
                 "pthread_rwlock_t must be aligned for the lock");

/* glibc's attribute object: struct pthread_rwlockattr { int lockkind; int
 * pshared; } in the first 8 bytes of pthread_rwlockattr_t.  We keep it so
 * attributes made by either side mean the same thing. */
struct pl_attr {
  int lockkind;
  int pshared;
};
RM_STATIC_ASSERT(sizeof(struct pl_attr) <= sizeof(pthread_rwlockattr_t), "attribute layout");

#define PL_NOBIAS 1u
#define PL(l) ((struct pl_lock *)(void *)(l))

/* Exported so tests (and users) can tell the interposer is active. */
PL_EXPORT const int readmostly_preload_active = 1;

/* ---- implementation choice ------------------------------------------------- */

enum { PL_BRAVO = 1, PL_PASSTHROUGH = 2, PL_PRWLOCK = 3 };
static int pl_mode_v; /* 0: not read yet */

struct pl_real {
  int (*init)(pthread_rwlock_t *, const pthread_rwlockattr_t *);
  int (*destroy)(pthread_rwlock_t *);
  int (*rdlock)(pthread_rwlock_t *);
  int (*tryrdlock)(pthread_rwlock_t *);
  int (*timedrdlock)(pthread_rwlock_t *, const struct timespec *);
  int (*clockrdlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
  int (*wrlock)(pthread_rwlock_t *);
  int (*trywrlock)(pthread_rwlock_t *);
  int (*timedwrlock)(pthread_rwlock_t *, const struct timespec *);
  int (*clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
  int (*unlock)(pthread_rwlock_t *);
};
static struct pl_real real;

static void pl_resolve_real(void) {
  /* dlsym(RTLD_NEXT) finds glibc's default versions (GLIBC_2.34 in libc.so.6
   * on glibc 2.36). */
#define PL_SYM(f, n) real.f = (__typeof__(real.f))dlsym(RTLD_NEXT, n)
  PL_SYM(init, "pthread_rwlock_init");
  PL_SYM(destroy, "pthread_rwlock_destroy");
  PL_SYM(rdlock, "pthread_rwlock_rdlock");
  PL_SYM(tryrdlock, "pthread_rwlock_tryrdlock");
  PL_SYM(timedrdlock, "pthread_rwlock_timedrdlock");
  PL_SYM(clockrdlock, "pthread_rwlock_clockrdlock");
  PL_SYM(wrlock, "pthread_rwlock_wrlock");
  PL_SYM(trywrlock, "pthread_rwlock_trywrlock");
  PL_SYM(timedwrlock, "pthread_rwlock_timedwrlock");
  PL_SYM(clockwrlock, "pthread_rwlock_clockwrlock");
  PL_SYM(unlock, "pthread_rwlock_unlock");
#undef PL_SYM
}

/* Read READMOSTLY_RWLOCK once, on first use (a constructor of another
 * library may lock before ours runs).  Racing first calls compute the same
 * answer. */
static RM_NOINLINE int pl_mode_init(void) {
  /* In the order of PL_BRAVO, PL_PASSTHROUGH, PL_PRWLOCK (1, 2, 3). */
  static const char *const modes[] = {"bravo", "passthrough", "prwlock", NULL};
  int m = 1 + rm_env_choice("READMOSTLY_RWLOCK", modes, 0);
  /* Before any record exists: a thread that exits holding a read lock keeps
   * it, as with glibc. */
  if (m == PL_PRWLOCK) {
    rm_fcp_domain_keep_exit_holds(rm_fcp_default_domain(), true);
    /* Programs keep threads that hold a record but rarely report (idle
     * pools, threads busy elsewhere); when writers need a membarrier more
     * often than this, readers start fencing instead (docs/preload.md). */
    rm_fcp_auto_fence((unsigned)rm_env_int("READMOSTLY_PRWLOCK_FENCE_AT", 0, 1000000000, 1000));
  }
  if (m == PL_PASSTHROUGH) {
    pl_resolve_real();
    if (!real.rdlock || !real.wrlock || !real.unlock) {
      fprintf(stderr, "readmostly-preload: glibc's rwlock functions not found, using bravo\n");
      m = PL_BRAVO;
    }
  }
  rm_atomic_store_release(&pl_mode_v, m);
  return m;
}
RM_INLINE int pl_mode(void) {
  int m = rm_atomic_load_acquire(&pl_mode_v);
  return RM_LIKELY(m) ? m : pl_mode_init();
}
#define PASSTHROUGH() RM_UNLIKELY(pl_mode() == PL_PASSTHROUGH)
#define PRW() RM_UNLIKELY(pl_mode() == PL_PRWLOCK)

/* ---- per-thread state --------------------------------------------------------- */

/* A thread's id for `owner`: nonzero, unique in the process, kept by the
 * forking thread in the child (it lives in TLS). */
static uint32_t pl_next_id;
static PL_TLS uint32_t pl_id;
static RM_NOINLINE uint32_t pl_id_init(void) {
  uint32_t v;
  do v = rm_atomic_fetch_add_relaxed(&pl_next_id, 1u) + 1u;
  while (v == 0);
  pl_id = v;
  return v;
}
RM_INLINE uint32_t pl_self_private(void) { return RM_LIKELY(pl_id) ? pl_id : pl_id_init(); }

/* Process-shared locks are seen by threads of several processes, whose
 * private ids collide: they record the kernel thread id instead (unique in
 * the system; a child's thread has a new one, see docs/preload.md). */
static PL_TLS uint32_t pl_tid;
static RM_NOINLINE uint32_t pl_tid_init(void) { return pl_tid = (uint32_t)gettid(); }
static void pl_atfork_child(void) { pl_tid = 0; }
RM_INLINE uint32_t pl_owner_id(const struct pl_lock *l) {
  if (RM_UNLIKELY(l->fx.pshared)) return RM_LIKELY(pl_tid) ? pl_tid : pl_tid_init();
  return pl_self_private();
}

/* The held list: one entry per fast read hold (lock, slot).  Eight inline
 * entries, then a heap array that grows by doubling. */
struct pl_held {
  struct pl_lock *l;
  uintptr_t *slot;
};
#define PL_INLINE_HELD 8
static PL_TLS struct pl_held pl_inl[PL_INLINE_HELD];
static PL_TLS struct pl_held *pl_heap;
static PL_TLS size_t pl_n, pl_cap;
static pthread_key_t pl_key;
static int pl_key_ok;

RM_INLINE struct pl_held *pl_at(size_t i) {
  return i < PL_INLINE_HELD ? &pl_inl[i] : &pl_heap[i - PL_INLINE_HELD];
}

static struct pl_held *pl_find(const struct pl_lock *l) {
  for (size_t i = pl_n; i-- > 0;) {
    struct pl_held *h = pl_at(i);
    if (h->l == l) return h;
  }
  return NULL;
}

static void pl_remove(struct pl_held *h) {
  struct pl_held *last = pl_at(pl_n - 1);
  *h = *last;
  pl_n--;
}

/* Thread exit: free the array and forget it, so that a lock taken by a
 * later destructor of this thread starts a fresh one. */
static void pl_heap_free(void *p) {
  free(p);
  pl_heap = NULL;
  pl_cap = 0;
  if (pl_n > PL_INLINE_HELD) pl_n = PL_INLINE_HELD;
}

/* Add an entry; false when memory ran out (the caller then takes A). */
static bool pl_add(struct pl_lock *l, uintptr_t *slot) {
  if (pl_n >= PL_INLINE_HELD && pl_n - PL_INLINE_HELD >= pl_cap) {
    size_t ncap = pl_cap ? pl_cap * 2 : 32;
    struct pl_held *p = (struct pl_held *)realloc(pl_heap, ncap * sizeof *p);
    if (!p) return false;
    if (pl_key_ok) pthread_setspecific(pl_key, p); /* freed at thread exit */
    pl_heap = p;
    pl_cap = ncap;
  }
  struct pl_held *h = pl_at(pl_n++);
  h->l = l;
  h->slot = slot;
  return true;
}

/* ---- statistics (READMOSTLY_STATS=1 only) ------------------------------------ */

enum { PS_FAST, PS_BIAS_OFF, PS_COLLISION, PS_RACED, PS_WRITE, PS_REVOKE, PS_REVOKE_NS, PS_N };
struct pl_stat {
  uintptr_t lock;
  uint64_t v[PS_N];
};
#define PL_STAT_SLOTS 4096u
static struct pl_stat *pl_stats;     /* open addressing on the lock address */
static struct pl_stat pl_stat_other; /* locks beyond the table */

static struct pl_stat *pl_stat_of(const void *l) {
  struct pl_stat *t = pl_stats;
  if (!t) return &pl_stat_other;
  uintptr_t key = (uintptr_t)l;
  uint32_t h = rm_bravo_hash(l, 0);
  for (uint32_t k = 0; k < 64; k++) {
    struct pl_stat *e = &t[(h + k) & (PL_STAT_SLOTS - 1)];
    uintptr_t cur = rm_atomic_load_acquire(&e->lock);
    if (cur == key) return e;
    if (cur == 0 && rm_atomic_cas_acq_rel(&e->lock, &cur, key)) return e;
    if (cur == key) return e;
  }
  return &pl_stat_other;
}
static RM_NOINLINE void pl_count(const void *l, int which, uint64_t v) {
  rm_atomic_fetch_add_relaxed(&pl_stat_of(l)->v[which], v);
}
#define PL_STATS_ON() RM_UNLIKELY(rm_bravo_table.stats_on)

static int pl_stat_cmp(const void *a, const void *b) {
  const struct pl_stat *x = (const struct pl_stat *)a, *y = (const struct pl_stat *)b;
  uint64_t sx = 0, sy = 0;
  for (int i = 0; i <= PS_WRITE; i++) {
    sx += x->v[i];
    sy += y->v[i];
  }
  return sx < sy ? 1 : sx > sy ? -1 : 0;
}

static void pl_stats_print(void) {
  if (!pl_stats) return;
  if (pl_mode() == PL_PASSTHROUGH) { /* glibc's locks: nothing was counted */
    fprintf(stderr, "readmostly-preload: impl=passthrough pid=%d: glibc's locks, no statistics\n",
            (int)getpid());
    return;
  }
  struct pl_stat *copy = (struct pl_stat *)malloc(sizeof(struct pl_stat) * (PL_STAT_SLOTS + 1));
  if (!copy) return;
  size_t n = 0;
  uint64_t tot[PS_N] = {0};
  for (uint32_t i = 0; i < PL_STAT_SLOTS; i++)
    if (rm_atomic_load_acquire(&pl_stats[i].lock)) {
      for (int k = 0; k < PS_N; k++) copy[n].v[k] = rm_atomic_load_relaxed(&pl_stats[i].v[k]);
      copy[n].lock = pl_stats[i].lock;
      n++;
    }
  size_t nlocks = n;
  if (pl_stat_other.v[PS_FAST] + pl_stat_other.v[PS_BIAS_OFF] + pl_stat_other.v[PS_WRITE]) {
    copy[n] = pl_stat_other;
    n++;
  }
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < PS_N; k++) tot[k] += copy[i].v[k];
  qsort(copy, n, sizeof *copy, pl_stat_cmp);
  if (pl_mode() == PL_PRWLOCK) {
    /* reads_fast: passive holds; reads_slow: futexrw holds (a writer was
     * there, or the thread's record held another lock). */
    rm_fcp_domain_t *d = rm_fcp_default_domain();
    fprintf(stderr,
            "readmostly-preload: impl=prwlock pid=%d locks=%zu reads_fast=%llu reads_slow=%llu "
            "writes=%llu consensus_fast=%llu consensus_membarrier=%llu consensus_fenced=%llu "
            "writer_parks=%llu mode=%s\n",
            (int)getpid(), nlocks, (unsigned long long)tot[PS_FAST],
            (unsigned long long)(tot[PS_COLLISION] + tot[PS_RACED]),
            (unsigned long long)tot[PS_WRITE],
            (unsigned long long)rm_atomic_load_relaxed(&d->consensus_fast),
            (unsigned long long)rm_atomic_load_relaxed(&d->consensus_membarrier),
            (unsigned long long)rm_atomic_load_relaxed(&d->consensus_fenced),
            (unsigned long long)rm_atomic_load_relaxed(&d->writer_parks),
            rm_fcp_membarrier_mode() ? "membarrier"
            : (rm_atomic_load_relaxed(&rm_fcp_mode) & RM_FCP_SWITCHED) ? "fence(switched)"
                                                                       : "fence");
    for (size_t i = 0; i < n && i < 10; i++) {
      const struct pl_stat *e = &copy[i];
      fprintf(stderr,
              "readmostly-preload: lock=%#lx reads_fast=%llu slow_record_busy=%llu "
              "slow_writer=%llu writes=%llu\n",
              (unsigned long)e->lock, (unsigned long long)e->v[PS_FAST],
              (unsigned long long)e->v[PS_COLLISION], (unsigned long long)e->v[PS_RACED],
              (unsigned long long)e->v[PS_WRITE]);
    }
    free(copy);
    return;
  }
  fprintf(stderr,
          "readmostly-preload: impl=bravo pid=%d locks=%zu reads_fast=%llu reads_slow=%llu "
          "writes=%llu revocations=%llu revoke_us=%llu\n",
          (int)getpid(), nlocks, (unsigned long long)tot[PS_FAST],
          (unsigned long long)(tot[PS_BIAS_OFF] + tot[PS_COLLISION] + tot[PS_RACED]),
          (unsigned long long)tot[PS_WRITE], (unsigned long long)tot[PS_REVOKE],
          (unsigned long long)(rm_ticks_to_ns(tot[PS_REVOKE_NS]) / 1000u));
  for (size_t i = 0; i < n && i < 10; i++) {
    const struct pl_stat *e = &copy[i];
    char name[32];
    if (e->lock) snprintf(name, sizeof name, "%#lx", (unsigned long)e->lock);
    else snprintf(name, sizeof name, "other");
    fprintf(stderr,
            "readmostly-preload: lock=%s reads_fast=%llu slow_bias_off=%llu slow_collision=%llu "
            "slow_raced=%llu writes=%llu revocations=%llu revoke_us=%llu\n",
            name, (unsigned long long)e->v[PS_FAST], (unsigned long long)e->v[PS_BIAS_OFF],
            (unsigned long long)e->v[PS_COLLISION], (unsigned long long)e->v[PS_RACED],
            (unsigned long long)e->v[PS_WRITE], (unsigned long long)e->v[PS_REVOKE],
            (unsigned long long)(rm_ticks_to_ns(e->v[PS_REVOKE_NS]) / 1000u));
  }
  free(copy);
}

__attribute__((constructor(110))) static void pl_ctor(void) {
  if (pthread_key_create(&pl_key, pl_heap_free) == 0) pl_key_ok = 1;
  pthread_atfork(NULL, NULL, pl_atfork_child);
  if (rm_env_flag("READMOSTLY_STATS")) {
    pl_stats = (struct pl_stat *)calloc(PL_STAT_SLOTS, sizeof *pl_stats);
    rm_bravo_stats_enable(pl_stats != NULL);
    if (pl_stats) atexit(pl_stats_print);
  } else {
    /* The library's own READMOSTLY_STATS handling may have turned it on. */
    rm_bravo_stats_enable(false);
  }
  pl_mode();
}

/* ---- the lock ---------------------------------------------------------------- */

static int pl_check_timeout(clockid_t clk, const struct timespec *abs) {
  /* glibc 2.36 validates clock and timeout before trying the lock; so does
   * every readmostly timed lock, with this same check. */
  return rm_timeout_check((int)clk, abs);
}

/* futexrw's read and write lock by mode (0 block, 1 try, 2 timed). */
static int pl_futex_read(struct pl_lock *l, int mode, clockid_t clk, const struct timespec *abs) {
  return mode == 1 ? rm_futexrw_read_trylock(&l->fx)
       : mode == 2 ? rm_futexrw_read_timedlock(&l->fx, (int)clk, abs)
                   : rm_futexrw_read_lock(&l->fx);
}
static int pl_futex_write(struct pl_lock *l, int mode, clockid_t clk, const struct timespec *abs) {
  return mode == 1 ? rm_futexrw_write_trylock(&l->fx)
       : mode == 2 ? rm_futexrw_write_timedlock(&l->fx, (int)clk, abs)
                   : rm_futexrw_write_lock(&l->fx);
}

/* ---- releasing holds -------------------------------------------------------- */

/* Release one slow read hold if there is one: a futexrw read unlock that
 * refuses to go below zero. */
RM_INLINE bool pl_release_slow(struct pl_lock *l) {
  uint64_t s = rm_atomic_load_relaxed(&l->fx.state);
  while ((s & RM_FUTEXRW_WRITER) == 0 && (s & RM_FUTEXRW_READERS_MAX) != 0) {
    /* Release, as rm_futexrw_read_unlock's (B). */
    if (__atomic_compare_exchange_n(&l->fx.state, &s, s - RM_FUTEXRW_READER, false,
                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
      if ((s & RM_FUTEXRW_READERS_MAX) == 1 && (s & RM_FUTEXRW_WWAIT_MASK))
        rm_futexrw_read_unlock_slowpath(&l->fx, s);
      return true;
    }
  }
  return false;
}

/* Release a fast read hold of another thread (bravo.h, "Slots that other
 * threads' unlocks may mark", point 2), and never bias this lock again:
 * later holds are slow ones, which any thread can release (the count is
 * the truth). */
static bool pl_release_foreign_fast(struct pl_lock *l) {
  if (!rm_bravo_release_foreign(&l->bias, &rm_bravo_table, NULL)) return false;
  rm_atomic_fetch_or_acq_rel(&l->fx.reserved[0], PL_NOBIAS);
  return true;
}

/* Our reader backed out of a slot that another thread's unlock had marked
 * (point 4 of the contract; models/bravo.pml with SHARED checks it): that
 * unlock meant to release a real hold and took our transient slot for it.  Release one in its place, as it would
 * have: a slow hold, else another thread's fast one.  Returns the reason
 * the read goes to the slow path. */
static RM_NOINLINE int pl_pass_release(struct pl_lock *l) {
  if (!pl_release_slow(l)) (void)pl_release_foreign_fast(l);
  return RM_BRAVO_SLOW_RACED;
}

/* Give back a slot we installed but cannot keep (no memory for its entry),
 * by CAS for the same reason as the fast path's back-out. */
static void pl_give_back(struct pl_lock *l, uintptr_t *slot) {
  uintptr_t v = (uintptr_t)l;
  if (__atomic_compare_exchange_n(slot, &v, (uintptr_t)0, false, __ATOMIC_RELEASE,
                                  __ATOMIC_RELAXED))
    return;
  rm_atomic_store_release(slot, (uintptr_t)0);
  pl_pass_release(l);
}

/* A held-list entry whose slot no longer holds l (v, just loaded): another
 * thread released the hold and marked the slot (point 5: we clear it), or
 * it is already clear.  Forget the entry. */
static void pl_drop_dead(struct pl_held *h, const struct pl_lock *l, uintptr_t v) {
  if (v == ((uintptr_t)l | RM_BRAVO_SLOT_RELEASED))
    __atomic_compare_exchange_n(h->slot, &v, (uintptr_t)0, false, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
  pl_remove(h);
}

/* pl_rdlock_fast's answer when it did not try (see below). */
#define PL_UNTRIED (-1)

/* ---- the common read lock and unlock, inlined into the exported functions ---- *
 *
 * pthread_rwlock_rdlock/tryrdlock try this before anything else: a lock the
 * thread holds no fast hold of yet (at most PL_INLINE_HELD entries, all
 * inline), with bias on.  No EDEADLK check is needed: while rbias is set no
 * thread holds the lock for writing (a writer clears it before its section
 * begins and only slow readers, which hold A for reading, set it again), so
 * in particular not this one; rbias is never set on a process-shared lock.
 * Returns RM_BRAVO_FAST with the hold taken, the reason it was not taken
 * (the general path then goes straight to A), or PL_UNTRIED if it did not
 * try. */
RM_INLINE int pl_rdlock_fast(struct pl_lock *l) {
  size_t n = pl_n;
  if (RM_UNLIKELY(n >= PL_INLINE_HELD)) return PL_UNTRIED;
  /* pl_find() over the inline entries only (n < PL_INLINE_HELD here). */
  for (size_t i = 0; i < n; i++)
    if (pl_inl[i].l == l) return PL_UNTRIED; /* recursive: counted in our slot */
  rm_token_t tok;
  int why = rm_bravo_read_fast_shared(&l->bias, &rm_bravo_table, &tok);
  if (RM_LIKELY(why == RM_BRAVO_FAST)) {
    pl_inl[n].l = l;
    pl_inl[n].slot = (uintptr_t *)tok;
    pl_n = n + 1;
    if (PL_STATS_ON()) pl_count(l, PS_FAST, 1);
    return why;
  }
  if (RM_UNLIKELY(why == RM_BRAVO_SLOW_RACED_MARKED)) why = pl_pass_release(l);
  return why;
}

/* The unlock of the thread's most recent fast hold, not recursive: one CAS
 * of the slot from exactly l to 0.  A CAS and not a store because another
 * thread's unlock may mark the slot released at the same moment (see
 * pl_release_foreign_fast); a failed CAS leaves everything to pl_unlock.
 * A thread with a live fast hold cannot hold the write lock too (its own
 * revocation would wait for its slot), so the write-owner check of
 * pl_unlock is not needed here. */
RM_INLINE bool pl_unlock_fast(struct pl_lock *l) {
  size_t n = pl_n;
  if (RM_UNLIKELY(n - 1 >= PL_INLINE_HELD)) return false; /* none, or beyond the inline ones */
  struct pl_held *h = &pl_inl[n - 1];
  uintptr_t v = (uintptr_t)l;
  /* Release: the critical section happens before a writer that sees the
   * slot change (the reader's R3). */
  if (h->l != l || !__atomic_compare_exchange_n(h->slot, &v, (uintptr_t)0, false,
                                                __ATOMIC_RELEASE, __ATOMIC_RELAXED))
    return false;
  pl_n = n - 1;
  return true;
}

/* After a read hold taken through futexrw on a private lock: count it, and
 * let BRAVO turn the bias on again once the inhibit window is over (unless
 * another thread once released one of this lock's fast holds). */
static RM_NOINLINE void pl_slow_read_done_stats(struct pl_lock *l, int why) {
  pl_count(l, why, 1);
  if (!(rm_atomic_load_relaxed(&l->fx.reserved[0]) & PL_NOBIAS))
    rm_bravo_read_slow_done(&l->bias, &rm_bravo_table, why);
}
RM_INLINE void pl_slow_read_done(struct pl_lock *l, int why) {
  /* With statistics off, no call on the common path (the clock read needs
   * none where the TSC is usable), so callers save no registers for it. */
  if (PL_STATS_ON()) {
    pl_slow_read_done_stats(l, why);
    return;
  }
  if (RM_LIKELY(!(rm_atomic_load_relaxed(&l->fx.reserved[0]) & PL_NOBIAS)))
    rm_bravo_read_slow_bias(&l->bias, &rm_bravo_table);
}

/* The read lock when pl_rdlock_fast found the bias off (or lost its slot):
 * one attempt at futexrw's reader entry, inlined, for the write-heavy
 * locks whose bias stays off.  It is what pl_rdlock would do next with the
 * same answer, minus the checks the attempt makes redundant: a thread that
 * write-holds l finds WRITER set and goes to pl_rdlock, which reports
 * EDEADLK; pl_rdlock_fast already found no fast hold of l in the thread's
 * list (it answered >= 0).  false: nothing taken; pl_rdlock decides (it
 * blocks, retries, or fails as the mode says).  A try-lock that loses the
 * CAS to another reader also ends up there, and does not fail for it. */
RM_INLINE bool pl_rdlock_futex_fast(struct pl_lock *l, int why) {
  uint64_t s = rm_atomic_load_relaxed(&l->fx.state);
  /* (A) of futexrw: acquire, pairs with the last writer's release. */
  if (!rm_futexrw_reader_may_enter(&l->fx, s) ||
      (s & RM_FUTEXRW_READERS_MAX) == RM_FUTEXRW_READERS_MAX ||
      !rm_atomic_cas_acquire(&l->fx.state, &s, s + RM_FUTEXRW_READER))
    return false;
  if (RM_LIKELY(!l->fx.pshared)) pl_slow_read_done(l, why); /* shared: never biased */
  return true;
}

/* A recursive read of a fast hold never touches the lock: the slot we
 * already own keeps every writer out (a revoking writer waits for it), so
 * we only count the extra hold in the slot's nesting bits.  Only this
 * thread adds nesting; another thread's unlock may remove it, hence CAS.
 * PL_NESTED: counted.  PL_NEST_FULL: 32767 extra holds already (take A like
 * a new reader).  PL_NOT_HELD: no live fast hold of l. */
enum { PL_NESTED, PL_NEST_FULL, PL_NOT_HELD };
static int pl_nest(struct pl_lock *l) {
  struct pl_held *h = pl_n ? pl_find(l) : NULL;
  if (!h) return PL_NOT_HELD;
  uintptr_t v = rm_atomic_load_relaxed(h->slot);
  while (rm_bravo_slot_holds(v, l)) {
    if ((v & RM_BRAVO_SLOT_NEST_MASK) == RM_BRAVO_SLOT_NEST_MASK) return PL_NEST_FULL;
    if (rm_atomic_cas_acq_rel(h->slot, &v, v + RM_BRAVO_SLOT_NEST_ONE)) return PL_NESTED;
  }
  pl_drop_dead(h, l, v); /* another thread released this hold */
  return PL_NOT_HELD;
}

/* A new fast hold of l, for a thread that has none: RM_BRAVO_FAST with
 * the entry added, or why the read must take futexrw. */
static int pl_take_fast(struct pl_lock *l) {
  rm_token_t tok;
  int why = rm_bravo_read_fast_shared(&l->bias, &rm_bravo_table, &tok);
  if (RM_LIKELY(why == RM_BRAVO_FAST)) {
    if (RM_LIKELY(pl_add(l, (uintptr_t *)tok))) {
      if (PL_STATS_ON()) pl_count(l, PS_FAST, 1);
      return why;
    }
    pl_give_back(l, (uintptr_t *)tok); /* no memory for the entry */
    return RM_BRAVO_SLOW_COLLISION;
  }
  return why == RM_BRAVO_SLOW_RACED_MARKED ? pl_pass_release(l) : why;
}

/* The general read lock.  mode: 0 block, 1 try, 2 timed.  why: PL_UNTRIED,
 * or the reason pl_rdlock_fast gave for not taking a fast hold (it then
 * also found no hold of l in the thread's list, so there is nothing to
 * nest and no new fast hold to try). */
static RM_NOINLINE int pl_rdlock(struct pl_lock *l, int mode, clockid_t clk,
                                 const struct timespec *abs, int why) {
  uint32_t me = pl_owner_id(l);
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&l->fx.owner) == me)) return EDEADLK;
  if (mode == 2) {
    int e = pl_check_timeout(clk, abs);
    if (e) return e;
  }
  if (RM_UNLIKELY(l->fx.pshared)) /* never biased: the table is per process */
    return pl_futex_read(l, mode, clk, abs);
  if (why == PL_UNTRIED) {
    switch (pl_nest(l)) {
      case PL_NESTED: return 0;
      case PL_NEST_FULL: why = RM_BRAVO_SLOW_COLLISION; break;
      default:
        why = pl_take_fast(l);
        if (why == RM_BRAVO_FAST) return 0;
    }
  }
  int e = pl_futex_read(l, mode, clk, abs);
  if (e) return e;
  pl_slow_read_done(l, why);
  return 0;
}

/* pthread_rwlock_rdlock (mode 0) and tryrdlock (1) after pl_rdlock_fast
 * took no fast hold: first the inlined futexrw attempt, when it tried.  Out
 * of line, so that the exported function's fast path saves no registers
 * for it. */
static RM_NOINLINE int pl_rdlock_other(struct pl_lock *l, int mode, int why) {
  if (why != PL_UNTRIED && pl_rdlock_futex_fast(l, why)) return 0;
  return pl_rdlock(l, mode, CLOCK_REALTIME, NULL, why);
}

/* ---- a writer that waits for read holds gives way to parked readers ------- *
 *
 * Reader preference (the default kind, and PREFER_WRITER, which glibc treats
 * the same) lets a reader in whenever no writer holds the lock.  Our writers
 * take futexrw's write bit first and only then wait for the read holds that
 * futexrw does not count (BRAVO's slots, prwlock's passive records); a
 * reader of another thread that comes meanwhile finds the bit and parks,
 * where glibc would have let it in.  A thread that read-holds the lock and
 * waits for another thread's read lock would deadlock against a writer
 * between the two.  So such a writer waits in slices (1 ms, doubling up to
 * 64 ms); at the end of a slice, if readers are parked on futexrw, it gives
 * the write bit back (which wakes them), waits for the holds it was waiting
 * for while holding nothing, and starts again.  As with glibc's reader
 * preference, a writer may wait as long as read holds keep overlapping.  The
 * nonrecursive writer-preference kind keeps new readers out while a writer
 * waits; its writers never give way.  A try-lock never waits, so never gives
 * way either; a tryrdlock during such a wait fails with EBUSY (the read lock
 * would have waited for the next slice's end). */
#define PL_SLICE_FIRST_NS 1000000L
#define PL_SLICE_MAX_NS 64000000L

RM_INLINE bool pl_gives_way(const struct pl_lock *l) {
  return l->fx.kind != RM_FUTEXRW_PREFER_WRITER_NONRECURSIVE;
}

/* The end of the next slice: *slice ns from now, on the caller's clock for
 * a timed lock (and never past its deadline: *last says the slice ends
 * there), else on CLOCK_MONOTONIC.  Doubles *slice for the next one. */
static clockid_t pl_slice_end(int mode, clockid_t clk, const struct timespec *abs, long *slice,
                              struct timespec *end, bool *last) {
  clockid_t c = mode == 2 ? clk : CLOCK_MONOTONIC;
  clock_gettime(c, end);
  end->tv_nsec += *slice;
  end->tv_sec += end->tv_nsec / 1000000000L;
  end->tv_nsec %= 1000000000L;
  if (*slice < PL_SLICE_MAX_NS) *slice *= 2;
  *last = mode == 2 && (abs->tv_sec < end->tv_sec ||
                        (abs->tv_sec == end->tv_sec && abs->tv_nsec <= end->tv_nsec));
  if (*last) *end = *abs;
  return c;
}

/* At the end of a slice: give way?  RPARKED is set by a reader that found
 * the lock unavailable and parked (futexrw.c, invariant 3). */
RM_INLINE bool pl_readers_parked(struct pl_lock *l) {
  return (rm_atomic_load_relaxed(&l->fx.state) & RM_FUTEXRW_RPARKED) != 0;
}

/* The nonrecursive writer-preference kind keeps new readers out while a
 * writer waits (futexrw counts waiting writers), but fast readers do not
 * look at futexrw.  So a writer about to wait for futexrw turns the bias off
 * first: new readers take the slow path, where futexrw holds them back
 * (glibc's tst-rwlock15 and gnulib's test-rwlock1 check this; with the bias
 * on, their second reader got in).  Not the revocation: we do not hold A.
 * The writer counts itself in the bias word (rm_bravo_count_in: bias off,
 * revoke_pending = 1), so that whichever writer takes A next scans for the
 * fast holds taken before, and so that a slow reader that gets in before
 * futexrw counts us as waiting cannot turn the bias on again (a test saw
 * fast readers keep coming for 5 s that way).  The writer counts out once
 * it holds the lock, or when it gives up; while any such writer waits the
 * bias stays off, and when the last one is done the inhibit window (set by
 * the revocation under A) decides as usual. */
/* true if it counted in (the caller must count out). */
RM_INLINE bool pl_keep_readers_out(struct pl_lock *l) {
  /* Only when we are about to wait: futexrw is held (by slow readers; no
   * writer holds it while the bias is on). */
  if ((rm_atomic_load_relaxed(&l->bias.rbias) & RM_BRAVO_BIAS) && !l->fx.pshared &&
      (rm_atomic_load_relaxed(&l->fx.state) & (RM_FUTEXRW_WRITER | RM_FUTEXRW_READERS_MAX))) {
    rm_bravo_count_in(&l->bias);
    return true;
  }
  return false;
}

/* BRAVO's revocation under futexrw's write lock.  0: done; EBUSY,
 * ETIMEDOUT: gave up; EAGAIN: readers are parked behind us (the caller
 * gives way).  The revocation's give-up leaves the bias off and the
 * revocation pending, so no fast hold starts meanwhile and the next attempt
 * scans again. */
static int pl_revoke(struct pl_lock *l, int mode, clockid_t clk, const struct timespec *abs,
                     long *slice) {
  bool stats = PL_STATS_ON();
  /* Acquire, then the second load, as in rm_bravo_write_clear. */
  bool revoking = (rm_atomic_load_acquire(&l->bias.rbias) & RM_BRAVO_BIAS) != 0;
  revoking = revoking || rm_atomic_load_acquire(&l->bias.revoke_pending) != 0;
  uint64_t t0 = stats && revoking ? rm_ticks() : 0;
  int e;
  if (!revoking || mode == 1 || !pl_gives_way(l)) {
    e = rm_bravo_write_acquired(&l->bias, &rm_bravo_table,
                                mode == 1 ? RM_BRAVO_REVOKE_TRY
                                : mode == 2 ? RM_BRAVO_REVOKE_TIMED : RM_BRAVO_REVOKE_WAIT,
                                (int)clk, abs);
  } else {
    for (;;) {
      struct timespec end;
      bool last;
      clockid_t c = pl_slice_end(mode, clk, abs, slice, &end, &last);
      e = rm_bravo_write_acquired(&l->bias, &rm_bravo_table, RM_BRAVO_REVOKE_TIMED, (int)c, &end);
      if (e != ETIMEDOUT || last) break;
      if (pl_readers_parked(l)) {
        e = EAGAIN;
        break;
      }
    }
  }
  if (stats && e == 0) {
    pl_count(l, PS_WRITE, 1);
    if (revoking) {
      pl_count(l, PS_REVOKE, 1);
      pl_count(l, PS_REVOKE_NS, rm_ticks() - t0);
    }
  }
  return e;
}

/* After giving way: wait, holding nothing, until no slot of BRAVO's table
 * holds l (the fast holds the revocation waited for, and any taken since if
 * the bias came back).  Only loads: the slots' owners need nothing from us.
 * Acquire loads, as the revocation's (W3). */
static int pl_wait_fast_holds(struct pl_lock *l, int mode, clockid_t clk,
                              const struct timespec *abs) {
  uintptr_t *slots = rm_atomic_load_acquire(&rm_bravo_table.slots);
  if (!slots) return 0;
  uintptr_t n = rm_bravo_table.mask + 1;
  for (uintptr_t i = 0; i < n; i++) {
    rm_backoff_t bo = RM_BACKOFF_INIT;
    unsigned polls = 0;
    while (rm_bravo_slot_holds(rm_atomic_load_acquire(&slots[i]), &l->bias)) {
      if (mode == 2 && (++polls & 63u) == 0 && rm_timespec_expired((int)clk, abs))
        return ETIMEDOUT;
      rm_backoff_wait(&bo);
    }
  }
  return 0;
}

static int pl_wrlock(struct pl_lock *l, int mode, clockid_t clk, const struct timespec *abs) {
  uint32_t me = pl_owner_id(l);
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&l->fx.owner) == me)) return EDEADLK;
  if (mode == 2) {
    int e = pl_check_timeout(clk, abs);
    if (e) return e;
  }
  /* We read-hold it through the table: we would wait for ourselves forever
   * (glibc hangs here; we say so).  Unless another thread released that
   * hold meanwhile (marked our slot): then the entry is dead, and the lock
   * is ours to take as with glibc. */
  if (pl_n && mode != 1) {
    struct pl_held *h = pl_find(l);
    if (h) {
      uintptr_t v = rm_atomic_load_relaxed(h->slot);
      if (rm_bravo_slot_holds(v, l)) return EDEADLK;
      pl_drop_dead(h, l, v);
    }
  }
  bool held_out = RM_UNLIKELY(l->fx.kind == RM_FUTEXRW_PREFER_WRITER_NONRECURSIVE) &&
                  mode != 1 && pl_keep_readers_out(l);
  long slice = PL_SLICE_FIRST_NS;
  int e;
  for (;;) {
    e = pl_futex_write(l, mode, clk, abs);
    if (e) break;
    if (l->fx.pshared) break;
    e = pl_revoke(l, mode, clk, abs, &slice);
    if (e == 0) break;
    rm_futexrw_write_unlock(&l->fx);
    if (e != EAGAIN) break;
    /* Gave way to parked readers (see above). */
    e = pl_wait_fast_holds(l, mode, clk, abs);
    if (e) break;
  }
  /* Done keeping readers out: we hold the lock (our revocation under A
   * cleared revoke_pending and set the inhibit window) or gave up (the
   * pending flag stays for the next writer). */
  if (held_out) rm_bravo_count_out(&l->bias);
  if (e) return e;
  /* Relaxed: read only by threads comparing it with their own id; only the
   * holder stores its own id, so a stale value never equals theirs. */
  rm_atomic_store_relaxed(&l->fx.owner, me);
  return 0;
}

static RM_NOINLINE int pl_unlock(struct pl_lock *l) {
  uint32_t me = pl_owner_id(l);
  uint64_t s = rm_atomic_load_relaxed(&l->fx.state);
  if ((s & RM_FUTEXRW_WRITER) && rm_atomic_load_relaxed(&l->fx.owner) == me) {
    rm_atomic_store_relaxed(&l->fx.owner, 0u);
    return rm_futexrw_write_unlock(&l->fx);
  }
  if (!l->fx.pshared && pl_n) {
    struct pl_held *h = pl_find(l);
    if (h) {
      uintptr_t v = rm_atomic_load_relaxed(h->slot);
      while (rm_bravo_slot_holds(v, l)) {
        uintptr_t nv = (v & RM_BRAVO_SLOT_NEST_MASK) ? v - RM_BRAVO_SLOT_NEST_ONE : 0;
        /* Release: the critical section happens before a writer that sees
         * the slot change (the reader's R3). */
        if (__atomic_compare_exchange_n(h->slot, &v, nv, false, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED)) {
          if (nv == 0) pl_remove(h);
          return 0;
        }
      }
      /* Another thread released our hold already; clean up, then treat
       * this unlock like theirs: release some other hold. */
      pl_drop_dead(h, l, v);
    }
  }
  /* A slow read hold (ours, or one another thread took: POSIX leaves that
   * undefined, glibc counts it), else another thread's fast hold. */
  if (pl_release_slow(l)) return 0;
  if (!l->fx.pshared && pl_release_foreign_fast(l)) return 0;
  /* Write-held by another thread, or not held at all. */
  return EPERM;
}

/* Every unlock but that of the thread's most recent fast hold.  First the
 * common one on locks whose bias stays off (written often): a thread with
 * no fast hold at all releases a slow hold, which is what pl_unlock would
 * come to after finding no write hold of ours (pl_release_slow sees WRITER
 * clear) and nothing in the held list.  Out of line, so that the exported
 * function's fast path saves no registers for it. */
static RM_NOINLINE int pl_unlock_other(struct pl_lock *l) {
  if (pl_n == 0 && pl_release_slow(l)) return 0;
  return pl_unlock(l);
}

/* ---- READMOSTLY_RWLOCK=prwlock: passive readers on the FCP consensus ---------- *
 *
 * The same 56 bytes, the same futexrw, but readers hold the lock passively
 * in their record of the (preload's own) default FCP domain instead of in
 * BRAVO's table: R1 publishes the lock in the record, R2 reads futexrw's
 * state word; if a writer holds it (or, for the nonrecursive writer-
 * preference kind, waits) the reader backs out and takes futexrw like any
 * other reader.  A writer takes futexrw's write lock (so writers, active
 * readers and the kinds' preferences are futexrw's), then reaches consensus
 * on the passive readers of this lock: rm_fcp_begin() / rm_fcp_wait().  The
 * futexrw CAS that sets WRITER is the writer word of docs/fcp.md; the
 * version bump that follows it is a release and a full fence.
 *
 * Records used this way keep their hold when their thread exits (glibc
 * keeps the count), another thread's unlock releases a passive hold with
 * rm_fcp_release_foreign(), and recursion counts go through
 * rm_fcp_nest_add/drop, which cooperate with it.  bytes 0-15 stay zero. */

#define PW_DOMAIN (&rm_fcp_default) /* rm_fcp_default_domain(), without the call */

/* While a thread blocks in futexrw, its record (holding nothing passively)
 * is "offline": seen = UINT64_MAX, so writers neither wait for it nor issue
 * a membarrier because of it.  Coming back costs a report and a fence, which
 * pairs with the fence in rm_fcp_begin(): a writer that skipped the record
 * as offline has its writer word visible to our next R2 (as prwlock's
 * wait_writer does, see src/prwlock.c). */
RM_INLINE struct rm_fcp_reader *pw_offline(struct rm_fcp_reader *r, int mode) {
  if (!r || mode == 1 || rm_atomic_load_relaxed(&r->passive) != NULL) return NULL;
  rm_atomic_store_release(&r->seen, UINT64_MAX);
  return r;
}
RM_INLINE void pw_online(struct rm_fcp_reader *r) {
  if (!r) return;
  rm_fcp_report(PW_DOMAIN, r);
  rm_fence_store_load();
}

/* Give up a passive hold that a reader took and must not keep (a writer
 * came).  An unlock of another thread may have taken it meanwhile, meaning
 * to release a real hold: that release is then passed on, so that the
 * count comes out as glibc's would. */
static RM_NOINLINE void pw_back_out(rm_fcp_domain_t *d, struct rm_fcp_reader *r,
                                    struct pl_lock *l) {
  if (rm_fcp_unlock_own(d, r, l)) return;
  if (!pl_release_slow(l)) (void)rm_fcp_release_foreign(d, l, r);
}

/* One passive attempt with the caller's record r (private locks only). */
enum { PW_HELD, PW_BUSY /* no record, or it holds something */, PW_RACED /* a writer: backed out */ };
RM_INLINE int pw_try_passive(struct pl_lock *l, struct rm_fcp_reader *r) {
  /* Acquire: a NULL left by a releaser that took our last hold comes with
   * its BUSY mark of `nest` (rm_fcp_unlock_own relies on it).  r is never
   * NULL: a thread without a record passes rm_fcp_unregistered, whose
   * `passive` is never NULL (PW_BUSY). */
  if (rm_atomic_load_acquire(&r->passive) != NULL) return PW_BUSY;
  rm_fcp_enter(r, l); /* (R1) */
  /* (R2) acquire: the section sees the last writer's stores (futexrw's
   * write unlock is a release of this word). */
  uint64_t st = rm_atomic_load_acquire(&l->fx.state);
  if (RM_LIKELY(rm_futexrw_reader_may_enter(&l->fx, st))) {
    if (PL_STATS_ON()) pl_count(l, PS_FAST, 1);
    return PW_HELD;
  }
  pw_back_out(PW_DOMAIN, r, l); /* (and wake the writer if it parked) */
  return PW_RACED;
}

/* The common read lock, inlined into pthread_rwlock_rdlock/tryrdlock.  No
 * EDEADLK check is needed: if this thread held the write lock, futexrw's
 * WRITER bit would send it back (PW_RACED), and pw_rdlock checks. */
RM_INLINE int pw_rdlock_fast(struct pl_lock *l) {
  if (RM_UNLIKELY(l->fx.pshared)) return PW_BUSY;
  return pw_try_passive(l, rm_fcp_tls_default);
}

/* tried: pw_rdlock_fast's answer (PW_BUSY when it was not called). */
static RM_NOINLINE int pw_rdlock(struct pl_lock *l, int mode, clockid_t clk,
                                 const struct timespec *abs, int tried) {
  uint32_t me = pl_owner_id(l);
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&l->fx.owner) == me)) return EDEADLK;
  if (mode == 2) {
    int e = pl_check_timeout(clk, abs);
    if (e) return e;
  }
  if (RM_UNLIKELY(l->fx.pshared)) return pl_futex_read(l, mode, clk, abs);
  struct rm_fcp_reader *r = rm_fcp_self(PW_DOMAIN); /* claims a record on first use */
  if (RM_UNLIKELY(r == NULL)) r = &rm_fcp_unregistered; /* no memory: futexrw only */
  while (tried != PW_RACED) {
    tried = pw_try_passive(l, r);
    if (tried == PW_HELD) return 0;
    if (tried == PW_RACED || rm_atomic_load_acquire(&r->passive) != l) break;
    /* Recursive: count it; never blocks, even while a writer waits for us. */
    if (rm_fcp_nest_add(r, l)) return 0;
    /* The count is full (take futexrw), or another thread released our
     * hold meanwhile (try again). */
    if (rm_atomic_load_relaxed(&r->passive) == l) break;
  }
  int why = tried == PW_RACED ? PS_RACED : PS_COLLISION; /* record missing or busy */
  struct rm_fcp_reader *off = pw_offline(r, mode);
  int e = pl_futex_read(l, mode, clk, abs);
  pw_online(off);
  if (e == 0 && PL_STATS_ON()) pl_count(l, why, 1);
  return e;
}

/* The writer's consensus on the passive readers of l, after futexrw's write
 * lock and rm_fcp_begin().  0: none left; EBUSY, ETIMEDOUT: gave up; EAGAIN:
 * readers are parked behind us and the kind prefers readers (the caller
 * gives way, see pl_gives_way).  The common case is the first, untimed
 * call: no reader inside, or one that leaves within the spin, and no clock
 * read. */
static int pw_consensus(struct pl_lock *l, rm_fcp_domain_t *d, uint64_t v,
                        struct rm_fcp_reader *r, int mode, clockid_t clk,
                        const struct timespec *abs, long *slice) {
  if (mode == 1 || !pl_gives_way(l))
    return rm_fcp_wait(d, v, l, r, mode == 1 ? RM_FCP_TRY : mode == 2 ? RM_FCP_TIMED : RM_FCP_WAIT,
                       (int)clk, abs);
  int e = rm_fcp_wait(d, v, l, r, RM_FCP_TRY, 0, NULL);
  while (e == EBUSY) {
    struct timespec end;
    bool last;
    clockid_t c = pl_slice_end(mode, clk, abs, slice, &end, &last);
    e = rm_fcp_wait(d, v, l, r, RM_FCP_TIMED, (int)c, &end);
    if (e != ETIMEDOUT || last) return e;
    e = pl_readers_parked(l) ? EAGAIN : EBUSY;
  }
  return e;
}

static int pw_wrlock(struct pl_lock *l, int mode, clockid_t clk, const struct timespec *abs) {
  uint32_t me = pl_owner_id(l);
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&l->fx.owner) == me)) return EDEADLK;
  if (mode == 2) {
    int e = pl_check_timeout(clk, abs);
    if (e) return e;
  }
  rm_fcp_domain_t *d = PW_DOMAIN;
  struct rm_fcp_reader *r = NULL;
  if (!l->fx.pshared) {
    /* We hold it passively: we would wait for ourselves (glibc hangs). */
    r = rm_fcp_self_cached(d);
    if (r && rm_atomic_load_relaxed(&r->passive) == l) return mode == 1 ? EBUSY : EDEADLK;
  }
  long slice = PL_SLICE_FIRST_NS;
  for (;;) {
    struct rm_fcp_reader *off = pw_offline(r, mode);
    int e = pl_futex_write(l, mode, clk, abs);
    pw_online(off);
    if (e) return e;
    if (l->fx.pshared) break;
    uint64_t v = rm_fcp_begin(d);
    e = pw_consensus(l, d, v, r, mode, clk, abs, &slice);
    if (e == 0) {
      if (PL_STATS_ON()) pl_count(l, PS_WRITE, 1);
      break;
    }
    rm_futexrw_write_unlock(&l->fx);
    if (e != EAGAIN) return e;
    /* Gave way to parked readers (pl_gives_way): wait, holding nothing, for
     * the passive holds of this version (rm_fcp_wait only reads records). */
    e = rm_fcp_wait(d, v, l, r, mode == 2 ? RM_FCP_TIMED : RM_FCP_WAIT, (int)clk, abs);
    if (e) return e;
  }
  rm_atomic_store_relaxed(&l->fx.owner, me); /* as in pl_wrlock */
  return 0;
}

/* After rm_fcp_unlock_own() found no hold of the caller's (r may be
 * rm_fcp_unregistered): the write hold, else a hold taken through futexrw
 * (ours or another thread's), else another thread's passive hold (glibc
 * lets any thread release a read hold). */
static RM_NOINLINE int pw_unlock(struct pl_lock *l, struct rm_fcp_reader *r) {
  uint32_t me = pl_owner_id(l);
  uint64_t s = rm_atomic_load_relaxed(&l->fx.state);
  if ((s & RM_FUTEXRW_WRITER) && rm_atomic_load_relaxed(&l->fx.owner) == me) {
    rm_atomic_store_relaxed(&l->fx.owner, 0u);
    return rm_futexrw_write_unlock(&l->fx);
  }
  if (pl_release_slow(l)) return 0;
  if (!l->fx.pshared && rm_fcp_release_foreign(PW_DOMAIN, l, r)) return 0;
  return EPERM;
}

static int pw_destroy(struct pl_lock *l) {
  /* As pthread_rwlock_destroy's comment says: the caller's passive hold
   * (every recursive level) is dropped, another thread's gives EBUSY. */
  if (l->fx.pshared) return 0;
  struct rm_fcp_reader *r = rm_fcp_self_find(PW_DOMAIN);
  while (r && rm_fcp_obj(rm_atomic_load_relaxed(&r->passive)) == (const void *)l &&
         rm_fcp_unlock_own(PW_DOMAIN, r, l)) {
  }
  return rm_fcp_held(PW_DOMAIN, l) ? EBUSY : 0;
}

/* ---- the interposed functions ------------------------------------------------ */

PL_EXPORT int pthread_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *attr) {
  if (PASSTHROUGH()) return real.init(rw, attr);
  int kind = 0, pshared = 0;
  if (attr) {
    const struct pl_attr *a = (const struct pl_attr *)(const void *)attr;
    kind = a->lockkind;
    pshared = a->pshared;
  }
  memset(rw, 0, sizeof *rw);
  return rm_futexrw_init_kind(&PL(rw)->fx, kind, pshared == PTHREAD_PROCESS_SHARED);
}

/* Destroying a held lock is undefined in POSIX; glibc returns 0 and its own
 * tests (tst-rwlock6, 7) and the Open POSIX Test Suite's (timedrdlock and
 * timedwrlock 6-2) destroy locks that the caller, or a thread that has
 * exited, still holds.  We return 0 too, except where a hold would outlive
 * the lock outside its bytes: another thread's fast read hold (a slot of
 * BRAVO's table) or passive one (a prwlock record) names the address, and a
 * new lock made there would inherit it; that is EBUSY.  The caller's own
 * such hold is dropped (a later unlock of the destroyed lock returns EPERM);
 * holds kept in the bytes (a write hold, futexrw's reader count) go with
 * them, as in glibc. */
PL_EXPORT int pthread_rwlock_destroy(pthread_rwlock_t *rw) {
  if (PASSTHROUGH()) return real.destroy(rw);
  struct pl_lock *l = PL(rw);
  if (PRW()) return pw_destroy(l);
  if (!l->fx.pshared && pl_n) {
    struct pl_held *h = pl_find(l);
    if (h) {
      /* Release, as an unlock's (R3).  A RELEASED mark (another thread
       * released our hold) is cleared the same way. */
      uintptr_t v = rm_atomic_load_relaxed(h->slot);
      while (RM_BRAVO_SLOT_LOCK(v) == (uintptr_t)l &&
             !__atomic_compare_exchange_n(h->slot, &v, (uintptr_t)0, false, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED)) {
      }
      pl_remove(h);
    }
  }
  uintptr_t *slots = rm_atomic_load_acquire(&rm_bravo_table.slots);
  if (slots && !l->fx.pshared)
    for (uintptr_t i = 0; i <= rm_bravo_table.mask; i++)
      if (rm_bravo_slot_holds(rm_atomic_load_relaxed(&slots[i]), l)) return EBUSY;
  return 0;
}

/* The default implementation is tested first: one load of the mode. */
PL_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *rw) {
  int m = pl_mode();
  if (RM_LIKELY(m == PL_BRAVO)) {
    int why = pl_rdlock_fast(PL(rw));
    if (RM_LIKELY(why == RM_BRAVO_FAST)) return 0;
    return pl_rdlock_other(PL(rw), 0, why);
  }
  if (m == PL_PRWLOCK) {
    int t = pw_rdlock_fast(PL(rw));
    if (RM_LIKELY(t == PW_HELD)) return 0;
    return pw_rdlock(PL(rw), 0, CLOCK_REALTIME, NULL, t);
  }
  return real.rdlock(rw);
}

PL_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *rw) {
  int m = pl_mode(), e;
  if (RM_LIKELY(m == PL_BRAVO)) {
    int why = pl_rdlock_fast(PL(rw));
    if (RM_LIKELY(why == RM_BRAVO_FAST)) return 0;
    e = pl_rdlock_other(PL(rw), 1, why);
  } else if (m == PL_PRWLOCK) {
    int t = pw_rdlock_fast(PL(rw));
    if (RM_LIKELY(t == PW_HELD)) return 0;
    e = pw_rdlock(PL(rw), 1, CLOCK_REALTIME, NULL, t);
  } else {
    return real.tryrdlock(rw);
  }
  return e == EDEADLK ? EBUSY : e; /* glibc: a try-lock never reports EDEADLK */
}

/* The timed forms validate clock and timeout first, as glibc does, so they
 * take the general path. */
PL_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *rw, const struct timespec *abs) {
  if (PASSTHROUGH()) return real.timedrdlock(rw, abs);
  if (PRW()) return pw_rdlock(PL(rw), 2, CLOCK_REALTIME, abs, PW_BUSY);
  return pl_rdlock(PL(rw), 2, CLOCK_REALTIME, abs, PL_UNTRIED);
}

PL_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *rw, clockid_t clk,
                                         const struct timespec *abs) {
  if (PASSTHROUGH()) return real.clockrdlock(rw, clk, abs);
  if (PRW()) return pw_rdlock(PL(rw), 2, clk, abs, PW_BUSY);
  return pl_rdlock(PL(rw), 2, clk, abs, PL_UNTRIED);
}

PL_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *rw) {
  if (PASSTHROUGH()) return real.wrlock(rw);
  if (PRW()) return pw_wrlock(PL(rw), 0, CLOCK_REALTIME, NULL);
  return pl_wrlock(PL(rw), 0, CLOCK_REALTIME, NULL);
}

PL_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *rw) {
  if (PASSTHROUGH()) return real.trywrlock(rw);
  int e = PRW() ? pw_wrlock(PL(rw), 1, CLOCK_REALTIME, NULL)
              : pl_wrlock(PL(rw), 1, CLOCK_REALTIME, NULL);
  return e == EDEADLK ? EBUSY : e;
}

PL_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *rw, const struct timespec *abs) {
  if (PASSTHROUGH()) return real.timedwrlock(rw, abs);
  if (PRW()) return pw_wrlock(PL(rw), 2, CLOCK_REALTIME, abs);
  return pl_wrlock(PL(rw), 2, CLOCK_REALTIME, abs);
}

PL_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *rw, clockid_t clk,
                                         const struct timespec *abs) {
  if (PASSTHROUGH()) return real.clockwrlock(rw, clk, abs);
  if (PRW()) return pw_wrlock(PL(rw), 2, clk, abs);
  return pl_wrlock(PL(rw), 2, clk, abs);
}

/* The unlock in the other modes, out of line: the prwlock unlock needs
 * registers saved, which the default mode's paths then need not pay for. */
static RM_NOINLINE int pl_unlock_mode(pthread_rwlock_t *rw, int m) {
  if (m == PL_PRWLOCK) {
    /* Our own passive hold first: a thread that holds l passively cannot
     * hold its write lock too (pw_wrlock refuses with EDEADLK). */
    struct rm_fcp_reader *r = rm_fcp_tls_default; /* rm_fcp_unregistered holds nothing */
    if (RM_LIKELY(rm_fcp_unlock_own(PW_DOMAIN, r, PL(rw)))) return 0;
    return pw_unlock(PL(rw), r);
  }
  return real.unlock(rw);
}

PL_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *rw) {
  int m = pl_mode();
  if (RM_LIKELY(m == PL_BRAVO)) {
    if (RM_LIKELY(pl_unlock_fast(PL(rw)))) return 0;
    return pl_unlock_other(PL(rw));
  }
  return pl_unlock_mode(rw, m);
}

/* Attributes: glibc's layout and checks. */
PL_EXPORT int pthread_rwlockattr_init(pthread_rwlockattr_t *attr) {
  memset(attr, 0, sizeof *attr);
  struct pl_attr *a = (struct pl_attr *)(void *)attr;
  a->lockkind = PTHREAD_RWLOCK_DEFAULT_NP;
  a->pshared = PTHREAD_PROCESS_PRIVATE;
  return 0;
}

PL_EXPORT int pthread_rwlockattr_destroy(pthread_rwlockattr_t *attr) {
  (void)attr;
  return 0;
}

PL_EXPORT int pthread_rwlockattr_setkind_np(pthread_rwlockattr_t *attr, int kind) {
  if (kind != PTHREAD_RWLOCK_PREFER_READER_NP && kind != PTHREAD_RWLOCK_PREFER_WRITER_NP &&
      kind != PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
    return EINVAL;
  ((struct pl_attr *)(void *)attr)->lockkind = kind;
  return 0;
}

PL_EXPORT int pthread_rwlockattr_getkind_np(const pthread_rwlockattr_t *attr, int *kind) {
  *kind = ((const struct pl_attr *)(const void *)attr)->lockkind;
  return 0;
}

PL_EXPORT int pthread_rwlockattr_setpshared(pthread_rwlockattr_t *attr, int pshared) {
  if (pshared != PTHREAD_PROCESS_PRIVATE && pshared != PTHREAD_PROCESS_SHARED) return EINVAL;
  ((struct pl_attr *)(void *)attr)->pshared = pshared;
  return 0;
}

PL_EXPORT int pthread_rwlockattr_getpshared(const pthread_rwlockattr_t *attr, int *pshared) {
  *pshared = ((const struct pl_attr *)(const void *)attr)->pshared;
  return 0;
}
