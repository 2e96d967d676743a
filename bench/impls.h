/*
 * bench/impls.h - the implementations readmostly-bench measures, each
 * behind the same five inline functions over void *:
 *
 *   ID_init(l)            ID_fini(l)
 *   ID_rl(l, &tok)        ID_ru(l, tok)       read lock / unlock
 *   ID_wl(l)              ID_wu(l)            write lock / unlock
 *
 * Experiments are written once as always-inline bodies taking these
 * functions as arguments, and instantiated per implementation (see
 * RW_INSTANTIATE in exp_rwlock.c): after inlining, every call is
 * direct and inlined, so A and BRAVO-A run the same loop with no indirect
 * call on either side.
 *
 * The peers: Concurrency Kit's ck_rwlock (centralised, writer-preferring
 * spin lock), ck_pflock (phase-fair ticket lock) and ck_brlock (big-reader
 * lock: one counter per registered reader) from Debian's libck-dev, and
 * liburcu's memb flavour read side (latency and readers only: RCU has no
 * write lock).  They are compiled in when their headers were found.
 */
#ifndef READMOSTLY_BENCH_IMPLS_H
#define READMOSTLY_BENCH_IMPLS_H

#include <readmostly/bravo_locks.h>
#include <readmostly/bravo_dyn.h>
#include <readmostly/bravo_wm.h>
#include <readmostly/cohort.h>
#include <readmostly/ba.h>
#include <readmostly/percpu.h>
#include <readmostly/prwlock.h>
#include <stdlib.h>

#define ADAPT_PLAIN(ID, T, P)                                                   \
  static inline void ID##_init(void *l) {                                       \
    if (P##_init((T *)l) != 0) abort();                                         \
  }                   \
  static inline void ID##_fini(void *l) { P##_destroy((T *)l); }                \
  static inline __attribute__((always_inline)) void ID##_rl(void *l, rm_token_t *t) { \
    if (RM_UNLIKELY(P##_read_lock((T *)l) != 0)) abort();                     \
    *t = RM_TOKEN_NONE;                                                         \
  }                                                                             \
  static inline __attribute__((always_inline)) void ID##_ru(void *l, rm_token_t t) { \
    (void)t;                                                                    \
    P##_read_unlock((T *)l);                                                    \
  }                                                                             \
  static inline __attribute__((always_inline)) void ID##_wl(void *l) {        \
    if (RM_UNLIKELY(P##_write_lock((T *)l) != 0)) abort();                    \
  }                                                                             \
  static inline __attribute__((always_inline)) void ID##_wu(void *l) { P##_write_unlock((T *)l); } \
  static inline __attribute__((always_inline)) void ID##_rla(void *l, rm_token_t *t) { ID##_rl(l, t); }

#define ADAPT_TOKEN(ID, T, P)                                                   \
  static inline void ID##_init(void *l) {                                       \
    if (P##_init((T *)l) != 0) abort();                                         \
  }                   \
  static inline void ID##_fini(void *l) { P##_destroy((T *)l); }                \
  static inline __attribute__((always_inline)) void ID##_rl(void *l, rm_token_t *t) { \
    if (RM_UNLIKELY(P##_read_lock((T *)l, t) != 0)) abort();                  \
  }                                                                             \
  static inline __attribute__((always_inline)) void ID##_ru(void *l, rm_token_t t) { \
    P##_read_unlock((T *)l, t);                                                 \
  }                                                                             \
  static inline __attribute__((always_inline)) void ID##_wl(void *l) {        \
    if (RM_UNLIKELY(P##_write_lock((T *)l) != 0)) abort();                    \
  }                                                                             \
  static inline __attribute__((always_inline)) void ID##_wu(void *l) { P##_write_unlock((T *)l); } \
  static inline __attribute__((always_inline, unused)) void ID##_rla(void *l, rm_token_t *t) { ID##_rl(l, t); }

ADAPT_PLAIN(ba, rm_ba_t, rm_ba)
ADAPT_TOKEN(bravo_ba, rm_bravo_ba_t, rm_bravo_ba)
ADAPT_TOKEN(bravo_ba_private, rm_bravo_ba_private_t, rm_bravo_ba_private)
ADAPT_PLAIN(pft, rm_pft_t, rm_pft)
ADAPT_TOKEN(bravo_pft, rm_bravo_pft_t, rm_bravo_pft)
ADAPT_PLAIN(pthread, rm_pthread_t, rm_pthread)
ADAPT_TOKEN(bravo_pthread, rm_bravo_pthread_t, rm_bravo_pthread)
ADAPT_TOKEN(bravo2d_ba, rm_bravo2d_ba_t, rm_bravo2d_ba)
ADAPT_TOKEN(bravo2d_pthread, rm_bravo2d_pthread_t, rm_bravo2d_pthread)
/* BRAVO with a writer mutex (readmostly/bravo_wm.h): by name only. */
ADAPT_TOKEN(bravowm_ba, rm_bravowm_ba_t, rm_bravowm_ba)
ADAPT_TOKEN(bravowm_pthread, rm_bravowm_pthread_t, rm_bravowm_pthread)
/* BRAVO over the resizable table (readmostly/bravo_dyn.h): by name only. */
ADAPT_TOKEN(bravodyn_ba, rm_bravodyn_ba_t, rm_bravodyn_ba)
ADAPT_PLAIN(futex, rm_futexrw_t, rm_futexrw)
ADAPT_TOKEN(bravo_futex, rm_bravo_futexrw_t, rm_bravo_futexrw)
ADAPT_TOKEN(percpu, rm_percpu_t, rm_percpu)
ADAPT_TOKEN(cohort, rm_cohort_t, rm_cohort)

/* prwlock: passive readers; ID_rla is the read lock for sections that may
 * sleep (active readers), which the sleepers experiment uses. */
ADAPT_PLAIN(prwlock_p, rm_prwlock_t, rm_prwlock)
#define prwlock_init prwlock_p_init
#define prwlock_fini prwlock_p_fini
#define prwlock_rl prwlock_p_rl
#define prwlock_ru prwlock_p_ru
#define prwlock_wl prwlock_p_wl
#define prwlock_wu prwlock_p_wu
static inline __attribute__((always_inline)) void prwlock_rla(void *l, rm_token_t *t) {
  if (RM_UNLIKELY(rm_prwlock_read_lock_active((rm_prwlock_t *)l) != 0)) abort();
  *t = RM_TOKEN_NONE;
}

#ifdef RM_BENCH_HAVE_CK
#include <ck_brlock.h>
#include <ck_pflock.h>
#include <ck_rwlock.h>

static inline void ck_rw_init(void *l) { ck_rwlock_init((ck_rwlock_t *)l); }
static inline void ck_rw_fini(void *l) { (void)l; }
static inline __attribute__((always_inline)) void ck_rw_rl(void *l, rm_token_t *t) {
  ck_rwlock_read_lock((ck_rwlock_t *)l);
  *t = RM_TOKEN_NONE;
}
static inline __attribute__((always_inline)) void ck_rw_ru(void *l, rm_token_t t) {
  (void)t;
  ck_rwlock_read_unlock((ck_rwlock_t *)l);
}
static inline __attribute__((always_inline)) void ck_rw_wl(void *l) { ck_rwlock_write_lock((ck_rwlock_t *)l); }
static inline __attribute__((always_inline)) void ck_rw_wu(void *l) { ck_rwlock_write_unlock((ck_rwlock_t *)l); }
static inline __attribute__((always_inline)) void ck_rw_rla(void *l, rm_token_t *t) { ck_rw_rl(l, t); }

static inline void ck_pf_init(void *l) { ck_pflock_init((ck_pflock_t *)l); }
static inline void ck_pf_fini(void *l) { (void)l; }
static inline __attribute__((always_inline)) void ck_pf_rl(void *l, rm_token_t *t) {
  ck_pflock_read_lock((ck_pflock_t *)l);
  *t = RM_TOKEN_NONE;
}
static inline __attribute__((always_inline)) void ck_pf_ru(void *l, rm_token_t t) {
  (void)t;
  ck_pflock_read_unlock((ck_pflock_t *)l);
}
static inline __attribute__((always_inline)) void ck_pf_wl(void *l) { ck_pflock_write_lock((ck_pflock_t *)l); }
static inline __attribute__((always_inline)) void ck_pf_wu(void *l) { ck_pflock_write_unlock((ck_pflock_t *)l); }
static inline __attribute__((always_inline)) void ck_pf_rla(void *l, rm_token_t *t) { ck_pf_rl(l, t); }

/* ck_brlock needs one registered reader record per thread and lock.  Each
 * thread caches its records by (lock, generation); records are never freed
 * (a writer may be scanning them) -- a benchmark leaks a few per thread. */
struct ck_br {
  ck_brlock_t b;
  uint64_t gen;
};
static uint64_t ck_br_generation;
struct ck_br_cache {
  struct ck_br *lock;
  uint64_t gen;
  ck_brlock_reader_t *r;
};
static __thread struct ck_br_cache ck_br_tls[8];
static __thread unsigned ck_br_next;
static inline void ck_br_init(void *l) {
  struct ck_br *b = (struct ck_br *)l;
  ck_brlock_init(&b->b);
  b->gen = __atomic_add_fetch(&ck_br_generation, 1, __ATOMIC_RELAXED);
}
static inline void ck_br_fini(void *l) { (void)l; }
static __attribute__((noinline)) ck_brlock_reader_t *ck_br_register(struct ck_br *b) {
  ck_brlock_reader_t *r = (ck_brlock_reader_t *)aligned_alloc(128, 128);
  if (!r) abort();
  memset(r, 0, 128);
  ck_brlock_read_register(&b->b, r);
  struct ck_br_cache *c = &ck_br_tls[ck_br_next++ % 8];
  c->lock = b;
  c->gen = b->gen;
  c->r = r;
  return r;
}
static inline __attribute__((always_inline)) void ck_br_rl(void *l, rm_token_t *t) {
  struct ck_br *b = (struct ck_br *)l;
  ck_brlock_reader_t *r = NULL;
  for (unsigned i = 0; i < 8; i++)
    if (ck_br_tls[i].lock == b && ck_br_tls[i].gen == b->gen) {
      r = ck_br_tls[i].r;
      break;
    }
  if (__builtin_expect(r == NULL, 0)) r = ck_br_register(b);
  ck_brlock_read_lock(&b->b, r);
  *t = (rm_token_t)r;
}
static inline __attribute__((always_inline)) void ck_br_ru(void *l, rm_token_t t) {
  (void)l;
  ck_brlock_read_unlock((ck_brlock_reader_t *)t);
}
static inline __attribute__((always_inline)) void ck_br_wl(void *l) { ck_brlock_write_lock(&((struct ck_br *)l)->b); }
static inline __attribute__((always_inline)) void ck_br_wu(void *l) { ck_brlock_write_unlock(&((struct ck_br *)l)->b); }
static inline __attribute__((always_inline)) void ck_br_rla(void *l, rm_token_t *t) { ck_br_rl(l, t); }
#define CK_IMPLS(X)                                 \
  X(ck_rw, "ck-rwlock", ck_rwlock_t, IMPL_RW)       \
  X(ck_pf, "ck-pflock", ck_pflock_t, IMPL_RW)       \
  X(ck_br, "ck-brlock", struct ck_br, IMPL_RW)
#else
#define CK_IMPLS(X)
#endif

#ifdef RM_BENCH_HAVE_URCU
#define _LGPL_SOURCE 1
#include <urcu/urcu-memb.h>
typedef struct { int unused; } rmb_urcu_dummy_t;
static __thread int urcu_registered;
static inline void rmb_urcu_init(void *l) { (void)l; }
static inline void rmb_urcu_fini(void *l) { (void)l; }
/* Threads leave liburcu's registry when they exit (a grace period started
 * later must not look at an exited thread's state). */
static pthread_key_t rmb_urcu_key;
static pthread_once_t rmb_urcu_once = PTHREAD_ONCE_INIT;
static void rmb_urcu_exit(void *p) {
  (void)p;
  urcu_memb_unregister_thread();
}
static void rmb_urcu_key_init(void) { pthread_key_create(&rmb_urcu_key, rmb_urcu_exit); }
static __attribute__((noinline)) void rmb_urcu_reg(void) {
  pthread_once(&rmb_urcu_once, rmb_urcu_key_init);
  urcu_memb_register_thread();
  pthread_setspecific(rmb_urcu_key, (void *)1);
  urcu_registered = 1;
}
static inline __attribute__((always_inline)) void rmb_urcu_rl(void *l, rm_token_t *t) {
  (void)l;
  if (__builtin_expect(!urcu_registered, 0)) rmb_urcu_reg();
  urcu_memb_read_lock();
  *t = RM_TOKEN_NONE;
}
static inline __attribute__((always_inline)) void rmb_urcu_ru(void *l, rm_token_t t) {
  (void)l;
  (void)t;
  urcu_memb_read_unlock();
}
/* RCU has no write lock; experiments that write refuse this implementation. */
static inline void rmb_urcu_wl(void *l) { (void)l; abort(); }
static inline void rmb_urcu_wu(void *l) { (void)l; abort(); }
static inline void rmb_urcu_rla(void *l, rm_token_t *t) { rmb_urcu_rl(l, t); }
/* writer_freq: RCU's update is one grace period (synchronize_rcu), batch 1. */
static inline void rmb_urcu_update(void) { urcu_memb_synchronize_rcu(); }
#define URCU_IMPLS(X) X(rmb_urcu, "urcu-memb", rmb_urcu_dummy_t, IMPL_READ_ONLY)
#else
#define URCU_IMPLS(X)
#endif

#define IMPL_RW 0u
#define IMPL_READ_ONLY 1u
#define IMPL_HIDDEN 2u /* not in the default list (interference only) */

/* X(ID, "name", lock type, flags) */
#define ALL_IMPLS(X)                                                   \
  X(ba, "ba", rm_ba_t, IMPL_RW)                                        \
  X(bravo_ba, "bravo-ba", rm_bravo_ba_t, IMPL_RW)                      \
  X(pft, "pft", rm_pft_t, IMPL_RW)                                     \
  X(bravo_pft, "bravo-pft", rm_bravo_pft_t, IMPL_RW)                   \
  X(pthread, "pthread", rm_pthread_t, IMPL_RW)                         \
  X(bravo_pthread, "bravo-pthread", rm_bravo_pthread_t, IMPL_RW)       \
  X(bravo2d_ba, "bravo2d-ba", rm_bravo2d_ba_t, IMPL_RW)                \
  X(bravo2d_pthread, "bravo2d-pthread", rm_bravo2d_pthread_t, IMPL_RW) \
  X(futex, "futex", rm_futexrw_t, IMPL_RW)                             \
  X(bravo_futex, "bravo-futex", rm_bravo_futexrw_t, IMPL_RW)           \
  X(percpu, "percpu", rm_percpu_t, IMPL_RW)                            \
  X(cohort, "cohort", rm_cohort_t, IMPL_RW)                            \
  X(prwlock, "prwlock", rm_prwlock_t, IMPL_RW)                         \
  CK_IMPLS(X)                                                          \
  URCU_IMPLS(X)                                                        \
  X(bravo_ba_private, "bravo-ba-private", rm_bravo_ba_private_t, IMPL_RW | IMPL_HIDDEN) \
  X(bravowm_ba, "bravowm-ba", rm_bravowm_ba_t, IMPL_RW | IMPL_HIDDEN)                   \
  X(bravowm_pthread, "bravowm-pthread", rm_bravowm_pthread_t, IMPL_RW | IMPL_HIDDEN)     \
  X(bravodyn_ba, "bravodyn-ba", rm_bravodyn_ba_t, IMPL_RW | IMPL_HIDDEN)

#endif
