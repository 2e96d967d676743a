/*
 * rwlock_ops.c - run-time operations tables for every bundled lock.  Each
 * entry is a one-line wrapper of the typed (inline) function, so the table
 * and direct callers run the same code.  See readmostly/rwlock.h.
 */
#include <readmostly/ba.h>
#include <readmostly/bravo_locks.h>
#include <readmostly/bravo_dyn.h>
#include <readmostly/bravo_wm.h>
#include <readmostly/cohort.h>
#include <readmostly/percpu.h>
#include <readmostly/prwlock.h>
#include <readmostly/rwlock.h>

#include <pthread.h>
#include <string.h>
#include <time.h>

/* Locks whose read side has no token (A of BRAVO-A). */
#define OPS_PLAIN_CORE(ID, T, P)                                                      \
  static int ID##_init(void *l) { return P##_init((T *)l); }                          \
  static int ID##_destroy(void *l) { return P##_destroy((T *)l); }                    \
  static int ID##_rl(void *l, rm_token_t *tok) {                                      \
    int e = P##_read_lock((T *)l);                                                    \
    if (!e) *tok = RM_TOKEN_NONE;                                                     \
    return e;                                                                         \
  }                                                                                   \
  static int ID##_rtl(void *l, rm_token_t *tok) {                                     \
    int e = P##_read_trylock((T *)l);                                                 \
    if (!e) *tok = RM_TOKEN_NONE;                                                     \
    return e;                                                                         \
  }                                                                                   \
  static int ID##_ru(void *l, rm_token_t tok) {                                       \
    (void)tok;                                                                        \
    return P##_read_unlock((T *)l);                                                   \
  }                                                                                   \
  static int ID##_wl(void *l) { return P##_write_lock((T *)l); }                      \
  static int ID##_wtl(void *l) { return P##_write_trylock((T *)l); }                  \
  static int ID##_wu(void *l) { return P##_write_unlock((T *)l); }

#define OPS_PLAIN_TIMED(ID, T, P)                                                     \
  static int ID##_rtm(void *l, rm_token_t *tok, int clk, const struct timespec *a) {  \
    int e = P##_read_timedlock((T *)l, clk, a);                                       \
    if (!e) *tok = RM_TOKEN_NONE;                                                     \
    return e;                                                                         \
  }                                                                                   \
  static int ID##_wtm(void *l, int clk, const struct timespec *a) {                   \
    return P##_write_timedlock((T *)l, clk, a);                                       \
  }

/* Locks whose read side returns a token. */
#define OPS_TOKEN_CORE(ID, T, P)                                                      \
  static int ID##_init(void *l) { return P##_init((T *)l); }                          \
  static int ID##_destroy(void *l) { return P##_destroy((T *)l); }                    \
  static int ID##_rl(void *l, rm_token_t *tok) { return P##_read_lock((T *)l, tok); } \
  static int ID##_rtl(void *l, rm_token_t *tok) { return P##_read_trylock((T *)l, tok); } \
  static int ID##_ru(void *l, rm_token_t tok) { return P##_read_unlock((T *)l, tok); } \
  static int ID##_wl(void *l) { return P##_write_lock((T *)l); }                      \
  static int ID##_wtl(void *l) { return P##_write_trylock((T *)l); }                  \
  static int ID##_wu(void *l) { return P##_write_unlock((T *)l); }

#define OPS_TOKEN_TIMED(ID, T, P)                                                     \
  static int ID##_rtm(void *l, rm_token_t *tok, int clk, const struct timespec *a) {  \
    return P##_read_timedlock((T *)l, tok, clk, a);                                   \
  }                                                                                   \
  static int ID##_wtm(void *l, int clk, const struct timespec *a) {                   \
    return P##_write_timedlock((T *)l, clk, a);                                       \
  }

#define OPS_ENTRY(ID, NAME, T, FLAGS, RTM, WTM)                                       \
  static const struct rm_rwlock_ops ID##_ops = {                                      \
      NAME, sizeof(T), _Alignof(T), FLAGS, ID##_init, ID##_destroy, ID##_rl,          \
      ID##_rtl, ID##_ru, ID##_wl, ID##_wtl, ID##_wu, RTM, WTM};

OPS_PLAIN_CORE(ba, rm_ba_t, rm_ba)
OPS_ENTRY(ba, "ba", rm_ba_t, RM_RWLOCK_PHASE_FAIR, NULL, NULL)
OPS_PLAIN_CORE(pft, rm_pft_t, rm_pft)
OPS_ENTRY(pft, "pft", rm_pft_t, RM_RWLOCK_PHASE_FAIR, NULL, NULL)
OPS_PLAIN_CORE(pth, rm_pthread_t, rm_pthread)
OPS_PLAIN_TIMED(pth, rm_pthread_t, rm_pthread)
OPS_ENTRY(pth, "pthread", rm_pthread_t,
          RM_RWLOCK_BLOCKING | RM_RWLOCK_TIMED | RM_RWLOCK_PREFER_READER | RM_RWLOCK_RECURSIVE_READ,
          pth_rtm, pth_wtm)
OPS_PLAIN_CORE(fut, rm_futexrw_t, rm_futexrw)
OPS_PLAIN_TIMED(fut, rm_futexrw_t, rm_futexrw)
OPS_ENTRY(fut, "futex", rm_futexrw_t,
          RM_RWLOCK_BLOCKING | RM_RWLOCK_TIMED | RM_RWLOCK_PREFER_WRITER, fut_rtm, fut_wtm)

/* The reader-preference kind of the futex lock (glibc's default). */
static int futr_init(void *l) {
  return rm_futexrw_init_kind((rm_futexrw_t *)l, RM_FUTEXRW_PREFER_READER, 0);
}
#define futr_destroy fut_destroy
#define futr_rl fut_rl
#define futr_rtl fut_rtl
#define futr_ru fut_ru
#define futr_wl fut_wl
#define futr_wtl fut_wtl
#define futr_wu fut_wu
OPS_ENTRY(futr, "futex-rpref", rm_futexrw_t,
          RM_RWLOCK_BLOCKING | RM_RWLOCK_TIMED | RM_RWLOCK_PREFER_READER | RM_RWLOCK_RECURSIVE_READ,
          fut_rtm, fut_wtm)

OPS_TOKEN_CORE(pcpu, rm_percpu_t, rm_percpu)
/* No preference flag: each sub-lock is phase-fair, but a reader may enter
 * through a sub-lock the waiting writer has not reached yet. */
OPS_ENTRY(pcpu, "percpu", rm_percpu_t, 0, NULL, NULL)
OPS_TOKEN_CORE(coh, rm_cohort_t, rm_cohort)
OPS_ENTRY(coh, "cohort", rm_cohort_t, RM_RWLOCK_PREFER_WRITER, NULL, NULL)

OPS_TOKEN_CORE(bba, rm_bravo_ba_t, rm_bravo_ba)
OPS_ENTRY(bba, "bravo-ba", rm_bravo_ba_t, RM_RWLOCK_BIASED | RM_RWLOCK_PHASE_FAIR, NULL, NULL)
OPS_TOKEN_CORE(bpft, rm_bravo_pft_t, rm_bravo_pft)
OPS_ENTRY(bpft, "bravo-pft", rm_bravo_pft_t, RM_RWLOCK_BIASED | RM_RWLOCK_PHASE_FAIR, NULL, NULL)
OPS_TOKEN_CORE(bpth, rm_bravo_pthread_t, rm_bravo_pthread)
OPS_TOKEN_TIMED(bpth, rm_bravo_pthread_t, rm_bravo_pthread)
OPS_ENTRY(bpth, "bravo-pthread", rm_bravo_pthread_t,
          RM_RWLOCK_BIASED | RM_RWLOCK_BLOCKING | RM_RWLOCK_TIMED | RM_RWLOCK_PREFER_READER |
              RM_RWLOCK_RECURSIVE_READ,
          bpth_rtm, bpth_wtm)
OPS_TOKEN_CORE(bfut, rm_bravo_futexrw_t, rm_bravo_futexrw)
OPS_TOKEN_TIMED(bfut, rm_bravo_futexrw_t, rm_bravo_futexrw)
OPS_ENTRY(bfut, "bravo-futex", rm_bravo_futexrw_t,
          RM_RWLOCK_BIASED | RM_RWLOCK_BLOCKING | RM_RWLOCK_TIMED | RM_RWLOCK_PREFER_WRITER,
          bfut_rtm, bfut_wtm)
static int bfutr_init(void *l) {
  rm_bravo_futexrw_t *b = (rm_bravo_futexrw_t *)l;
  int e = rm_bravo_futexrw_init(b);
  if (e) return e;
  return rm_futexrw_init_kind(&b->under, RM_FUTEXRW_PREFER_READER, 0);
}
#define bfutr_destroy bfut_destroy
#define bfutr_rl bfut_rl
#define bfutr_rtl bfut_rtl
#define bfutr_ru bfut_ru
#define bfutr_wl bfut_wl
#define bfutr_wtl bfut_wtl
#define bfutr_wu bfut_wu
OPS_ENTRY(bfutr, "bravo-futex-rpref", rm_bravo_futexrw_t,
          RM_RWLOCK_BIASED | RM_RWLOCK_BLOCKING | RM_RWLOCK_TIMED | RM_RWLOCK_PREFER_READER |
              RM_RWLOCK_RECURSIVE_READ,
          bfut_rtm, bfut_wtm)

OPS_TOKEN_CORE(b2ba, rm_bravo2d_ba_t, rm_bravo2d_ba)
OPS_ENTRY(b2ba, "bravo2d-ba", rm_bravo2d_ba_t, RM_RWLOCK_BIASED | RM_RWLOCK_PHASE_FAIR, NULL,
          NULL)
OPS_TOKEN_CORE(b2pth, rm_bravo2d_pthread_t, rm_bravo2d_pthread)
OPS_TOKEN_TIMED(b2pth, rm_bravo2d_pthread_t, rm_bravo2d_pthread)
OPS_ENTRY(b2pth, "bravo2d-pthread", rm_bravo2d_pthread_t,
          RM_RWLOCK_BIASED | RM_RWLOCK_BLOCKING | RM_RWLOCK_TIMED | RM_RWLOCK_PREFER_READER |
              RM_RWLOCK_RECURSIVE_READ,
          b2pth_rtm, b2pth_wtm)
OPS_TOKEN_CORE(b2fut, rm_bravo2d_futexrw_t, rm_bravo2d_futexrw)
OPS_TOKEN_TIMED(b2fut, rm_bravo2d_futexrw_t, rm_bravo2d_futexrw)
OPS_ENTRY(b2fut, "bravo2d-futex", rm_bravo2d_futexrw_t,
          RM_RWLOCK_BIASED | RM_RWLOCK_BLOCKING | RM_RWLOCK_TIMED | RM_RWLOCK_PREFER_WRITER,
          b2fut_rtm, b2fut_wtm)

/* BRAVO with a writer mutex (readmostly/bravo_wm.h).  Writers wait for each
 * other on the mutex, where A does not see them, so A's writer preference
 * or phase fairness does not carry over (no such flag); glibc's reader
 * preference does (a reader waits only while a writer holds A). */
OPS_TOKEN_CORE(wmba, rm_bravowm_ba_t, rm_bravowm_ba)
OPS_ENTRY(wmba, "bravowm-ba", rm_bravowm_ba_t, RM_RWLOCK_BIASED, NULL, NULL)
OPS_TOKEN_CORE(wmpth, rm_bravowm_pthread_t, rm_bravowm_pthread)
OPS_TOKEN_TIMED(wmpth, rm_bravowm_pthread_t, rm_bravowm_pthread)
OPS_ENTRY(wmpth, "bravowm-pthread", rm_bravowm_pthread_t,
          RM_RWLOCK_BIASED | RM_RWLOCK_BLOCKING | RM_RWLOCK_TIMED | RM_RWLOCK_PREFER_READER |
              RM_RWLOCK_RECURSIVE_READ,
          wmpth_rtm, wmpth_wtm)
OPS_TOKEN_CORE(wmfut, rm_bravowm_futexrw_t, rm_bravowm_futexrw)
OPS_TOKEN_TIMED(wmfut, rm_bravowm_futexrw_t, rm_bravowm_futexrw)
OPS_ENTRY(wmfut, "bravowm-futex", rm_bravowm_futexrw_t,
          RM_RWLOCK_BIASED | RM_RWLOCK_BLOCKING | RM_RWLOCK_TIMED, wmfut_rtm, wmfut_wtm)

/* BRAVO over the resizable table (readmostly/bravo_dyn.h): plain BRAVO's
 * contract, so plain BRAVO's flags. */
OPS_TOKEN_CORE(dyba, rm_bravodyn_ba_t, rm_bravodyn_ba)
OPS_ENTRY(dyba, "bravodyn-ba", rm_bravodyn_ba_t, RM_RWLOCK_BIASED | RM_RWLOCK_PHASE_FAIR, NULL,
          NULL)
OPS_TOKEN_CORE(dypth, rm_bravodyn_pthread_t, rm_bravodyn_pthread)
OPS_TOKEN_TIMED(dypth, rm_bravodyn_pthread_t, rm_bravodyn_pthread)
OPS_ENTRY(dypth, "bravodyn-pthread", rm_bravodyn_pthread_t,
          RM_RWLOCK_BIASED | RM_RWLOCK_BLOCKING | RM_RWLOCK_TIMED | RM_RWLOCK_PREFER_READER |
              RM_RWLOCK_RECURSIVE_READ,
          dypth_rtm, dypth_wtm)
OPS_TOKEN_CORE(dyfut, rm_bravodyn_futexrw_t, rm_bravodyn_futexrw)
OPS_TOKEN_TIMED(dyfut, rm_bravodyn_futexrw_t, rm_bravodyn_futexrw)
OPS_ENTRY(dyfut, "bravodyn-futex", rm_bravodyn_futexrw_t,
          RM_RWLOCK_BIASED | RM_RWLOCK_BLOCKING | RM_RWLOCK_TIMED | RM_RWLOCK_PREFER_WRITER,
          dyfut_rtm, dyfut_wtm)

OPS_PLAIN_CORE(prw, rm_prwlock_t, rm_prwlock)
OPS_PLAIN_TIMED(prw, rm_prwlock_t, rm_prwlock)
OPS_ENTRY(prw, "prwlock", rm_prwlock_t,
          RM_RWLOCK_BLOCKING | RM_RWLOCK_TIMED | RM_RWLOCK_PREFER_WRITER, prw_rtm, prw_wtm)

/* prwlock in a domain of its own (created at the first init, kept for the
 * life of the process): its readers take the other-domain path. */
static rm_fcp_domain_t *prwd_domain;
static pthread_once_t prwd_once = PTHREAD_ONCE_INIT;
static void prwd_create(void) {
  if (rm_fcp_domain_create(&prwd_domain) != 0) prwd_domain = NULL;
}
static int prwd_init(void *l) {
  pthread_once(&prwd_once, prwd_create);
  if (!prwd_domain) return ENOMEM;
  return rm_prwlock_init_domain((rm_prwlock_t *)l, prwd_domain, 0);
}
#define prwd_destroy prw_destroy
#define prwd_rl prw_rl
#define prwd_rtl prw_rtl
#define prwd_ru prw_ru
#define prwd_wl prw_wl
#define prwd_wtl prw_wtl
#define prwd_wu prw_wu
OPS_ENTRY(prwd, "prwlock-domain", rm_prwlock_t,
          RM_RWLOCK_BLOCKING | RM_RWLOCK_TIMED | RM_RWLOCK_PREFER_WRITER, prw_rtm, prw_wtm)

static const struct rm_rwlock_ops *const all_ops[] = {
    &ba_ops,   &bba_ops,  &pft_ops,  &bpft_ops,  &pth_ops,  &bpth_ops, &fut_ops,   &bfut_ops,
    &futr_ops, &bfutr_ops, &b2ba_ops, &b2pth_ops, &b2fut_ops, &pcpu_ops, &coh_ops,  &prw_ops,
    &prwd_ops, &wmba_ops, &wmpth_ops, &wmfut_ops, &dyba_ops, &dypth_ops, &dyfut_ops, NULL};

RM_API const struct rm_rwlock_ops *const *rm_rwlock_ops_all(void) { return all_ops; }

RM_API const struct rm_rwlock_ops *rm_rwlock_ops_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; all_ops[i]; i++)
    if (strcmp(all_ops[i]->name, name) == 0) return all_ops[i];
  return NULL;
}
