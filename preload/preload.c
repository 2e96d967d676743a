/*
 * preload.c - libreadmostly-preload.so: BRAVO for unmodified programs.
 *
 *   LD_PRELOAD=libreadmostly-preload.so program
 *
 * Every pthread_rwlock_* call of the program lands here and goes to the
 * mode READMOSTLY_RWLOCK chose: bravo (the default, mode_bravo.c), bravo2d
 * (the same code over a BRAVO-2D table), prwlock (mode_prwlock.c) or
 * passthrough (glibc's own functions, found with dlsym(RTLD_NEXT)).  The lock's layout in pthread_rwlock_t, and what each
 * file holds, are in preload_internal.h.  This file keeps the exported
 * functions, with each mode's fast path inlined (one load of the mode, then
 * straight into it), the mode switch, the thread ids and the constructor.
 */
#include "preload_internal.h" /* first: it defines _GNU_SOURCE */

#include <dlfcn.h>

/* Exported so tests (and users) can tell the interposer is active. */
PL_EXPORT const int readmostly_preload_active = 1;

/* ---- implementation choice ------------------------------------------------- */

int pl_mode_v; /* 0: not read yet */

/* glibc's functions, for the passthrough (resolved only in that mode). */
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

/* READMOSTLY_RWLOCK=bravo2d's table (preload_internal.h), created once
 * before the mode is published: one thread creates it (a CAS on the state:
 * 0 none, 1 being created, 2 done), any other waits for it, yielding (the
 * creation never blocks).  It uses the READMOSTLY_BRAVO2D_* variables as
 * the library's shared table does.  Creation may fail (no memory, a
 * refused attribute): the table then has no slots, and no lock is ever
 * biased (rm_bravo_read_slow_bias finds no table), which is correct. */
struct rm_bravo_table pl_t2d;
static uint32_t pl_t2d_state;
static void pl_t2d_create(void) {
  uint32_t none = 0;
  /* Acquire on failure: whoever finds 2 sees the table created. */
  if (__atomic_compare_exchange_n(&pl_t2d_state, &none, 1u, false, __ATOMIC_ACQUIRE,
                                  __ATOMIC_ACQUIRE)) {
    int e = rm_bravo2d_table_create(&pl_t2d, NULL);
    if (e)
      fprintf(stderr, "readmostly-preload: no BRAVO-2D table (%s): read locks stay unbiased\n",
              strerror(e));
    /* Release: the table before the state (and the mode, stored after). */
    __atomic_store_n(&pl_t2d_state, 2u, __ATOMIC_RELEASE);
    return;
  }
  while (__atomic_load_n(&pl_t2d_state, __ATOMIC_ACQUIRE) != 2u) sched_yield();
}

/* In a fork child: the 2D table's slots of threads that do not exist there
 * (bravo.h, point 6, and the flat table's handler, bravo.c): the forking
 * thread's own slots are those of its held list, which the child keeps. */
static bool pl_own_slot(const uintptr_t *slot, void *arg) {
  (void)arg;
  for (size_t i = 0; i < pl_n; i++)
    if (pl_at(i)->slot == slot) return true;
  return false;
}
static void pl_t2d_fork_child(void) {
  if (rm_atomic_load_relaxed(&pl_mode_v) == PL_BRAVO2D)
    rm_bravo_table_fork_child(&pl_t2d, pl_own_slot, NULL);
}

/* Read READMOSTLY_RWLOCK once, on first use (a constructor of another
 * library may lock before ours runs).  Racing first calls compute the same
 * answer. */
RM_NOINLINE int pl_mode_init(void) {
  /* In the order of PL_BRAVO, PL_PASSTHROUGH, PL_PRWLOCK, PL_BRAVO2D. */
  static const char *const modes[] = {"bravo", "passthrough", "prwlock", "bravo2d", NULL};
  int m = 1 + rm_env_choice("READMOSTLY_RWLOCK", modes, 0);
  if (m == PL_BRAVO2D) pl_t2d_create();
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
#define PASSTHROUGH() RM_UNLIKELY(pl_mode() == PL_PASSTHROUGH)
#define PRW() RM_UNLIKELY(pl_mode() == PL_PRWLOCK)

/* ---- per-thread state --------------------------------------------------------- */

/* Thread ids (preload_internal.h, pl_owner_id). */
static uint32_t pl_next_id;
PL_TLS uint32_t pl_id;
RM_NOINLINE uint32_t pl_id_init(void) {
  uint32_t v;
  do v = rm_atomic_fetch_add_relaxed(&pl_next_id, 1u) + 1u;
  while (v == 0);
  pl_id = v;
  return v;
}

PL_TLS uint32_t pl_tid;
RM_NOINLINE uint32_t pl_tid_init(void) { return pl_tid = (uint32_t)gettid(); }
static void pl_atfork_child(void) {
  pl_tid = 0;
  pl_t2d_fork_child();
}

/* The held list (preload_internal.h) and its heap array's destructor. */
PL_TLS struct pl_held pl_inl[PL_INLINE_HELD];
PL_TLS struct pl_held *pl_heap;
PL_TLS size_t pl_n, pl_cap;
pthread_key_t pl_key;
int pl_key_ok;

/* Thread exit: free the array and forget it, so that a lock taken by a
 * later destructor of this thread starts a fresh one. */
static void pl_heap_free(void *p) {
  free(p);
  pl_heap = NULL;
  pl_cap = 0;
  if (pl_n > PL_INLINE_HELD) pl_n = PL_INLINE_HELD;
}

__attribute__((constructor(110))) static void pl_ctor(void) {
  if (pthread_key_create(&pl_key, pl_heap_free) == 0) pl_key_ok = 1;
  pthread_atfork(NULL, NULL, pl_atfork_child);
  pl_stats_init();
  pl_mode();
}

/* ---- the interposed functions ------------------------------------------------ */

/* glibc's attribute object: struct pthread_rwlockattr { int lockkind; int
 * pshared; } in the first 8 bytes of pthread_rwlockattr_t.  We keep it so
 * attributes made by either side mean the same thing. */
struct pl_attr {
  int lockkind;
  int pshared;
};
RM_STATIC_ASSERT(sizeof(struct pl_attr) <= sizeof(pthread_rwlockattr_t), "attribute layout");

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
  return pl_destroy(l);
}

/* The default implementation is tested first: one load of the mode. */
PL_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *rw) {
  int m = pl_mode();
  if (RM_LIKELY(m == PL_BRAVO)) {
    int why = pl_rdlock_fast(PL(rw));
    if (RM_LIKELY(why == RM_BRAVO_FAST)) return 0;
    return pl_rdlock_other(PL(rw), 0, why);
  }
  if (m == PL_BRAVO2D) return pl_rdlock2d(PL(rw), 0);
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
  } else if (m == PL_BRAVO2D) {
    e = pl_rdlock2d(PL(rw), 1);
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
  if (m == PL_BRAVO2D) { /* the default mode's unlock: the held list names the slot */
    if (RM_LIKELY(pl_unlock_fast(PL(rw)))) return 0;
    return pl_unlock_other(PL(rw));
  }
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
