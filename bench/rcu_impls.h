/*
 * bench/rcu_impls.h - the RCU flavours readmostly-bench measures, each
 * behind the same always-inline functions:
 *
 *   ID_read_lock()   ID_read_unlock()     a read-side section
 *   ID_quiescent()   what a reader does between sections now and then:
 *                    nothing, except for QSBR flavours, whose readers must
 *                    announce quiescent states or grace periods never end
 *   ID_synchronize() wait for a grace period
 *   ID_register()    ID_unregister()      per thread, around its reads
 *   ID_offline()     ID_online()          around a long idle stretch
 *
 * and listed once in RCU_FLAVORS(X): X(ID, "name", flags, env), where env
 * is NULL or an environment assignment the implementation needs to be in
 * force when the process starts ("rcu-fence" is our RCU in fence mode,
 * which is process-wide and one-way: the harness runs it in a child process
 * of its own, see harness.c).
 *
 * Experiments (exp_rcu.c) are written once as always-inline bodies taking
 * these functions as arguments and instantiated per flavour, as the lock
 * experiments are: every call is direct, nobody pays an indirect call.
 * Pointer publication and reads are the benchmark's own (a release store
 * and an acquire load, which is what rcu_assign_pointer and
 * rcu_dereference are on x86-64 in every flavour), so all flavours update
 * and read shared data the same way.
 *
 * The peers are liburcu's flavours from Debian's liburcu-dev (0.13): their
 * prefixed names (urcu_memb_*, urcu_mb_*, urcu_signal_*, urcu_qsbr_*,
 * urcu_bp_*)
 * coexist in one program; each is compiled in when bench.cmake found its
 * library (RM_BENCH_HAVE_URCU_<FLAVOR>), and listed as absent otherwise
 * (the experiments skip it with a note).  Ours (readmostly/rcu.h) is
 * compiled in whenever that header exists.
 */
#ifndef READMOSTLY_BENCH_RCU_IMPLS_H
#define READMOSTLY_BENCH_RCU_IMPLS_H

#include "harness.h"

#if defined(RM_BENCH_HAVE_URCU_MEMB) || defined(RM_BENCH_HAVE_URCU_MB) || \
    defined(RM_BENCH_HAVE_URCU_SIGNAL) || defined(RM_BENCH_HAVE_URCU_QSBR) || \
    defined(RM_BENCH_HAVE_URCU_BP)
#ifndef _LGPL_SOURCE
#define _LGPL_SOURCE 1 /* liburcu's inline read side, as its users build it */
#endif
#endif

/* Flags of an RCU flavour (bench_impl.flags, above the harness's). */
#define RCU_ABSENT BENCH_IMPL_ABSENT

/* A liburcu flavour with prefix P: every function is the flavour's own. */
#define RCU_URCU_FLAVOR(ID, P)                                 \
  AI void ID##_read_lock(void) { P##_read_lock(); }            \
  AI void ID##_read_unlock(void) { P##_read_unlock(); }        \
  AI void ID##_quiescent(void) { P##_quiescent_state(); }      \
  static inline void ID##_synchronize(void) { P##_synchronize_rcu(); } \
  static inline void ID##_register(void) { P##_register_thread(); }    \
  static inline void ID##_unregister(void) { P##_unregister_thread(); } \
  static inline void ID##_offline(void) { P##_thread_offline(); }      \
  static inline void ID##_online(void) { P##_thread_online(); }

/* A flavour that is not built in: never called (the harness refuses to
 * select it), present so the table keeps one shape. */
#define RCU_ABSENT_FLAVOR(ID)                  \
  AI void ID##_read_lock(void) { abort(); }    \
  AI void ID##_read_unlock(void) { abort(); }  \
  AI void ID##_quiescent(void) {}              \
  static inline void ID##_synchronize(void) { abort(); } \
  static inline void ID##_register(void) { abort(); }    \
  static inline void ID##_unregister(void) { abort(); }  \
  static inline void ID##_offline(void) { abort(); }     \
  static inline void ID##_online(void) { abort(); }

#include <stdlib.h>

/* liburcu's memb flavour: readers order their sections with a compiler
 * barrier only; synchronize issues membarrier(). */
#ifdef RM_BENCH_HAVE_URCU_MEMB
#include <urcu/urcu-memb.h>
RCU_URCU_FLAVOR(rcu_memb, urcu_memb)
#define RCU_MEMB_FLAGS 0u
#else
RCU_ABSENT_FLAVOR(rcu_memb)
#define RCU_MEMB_FLAGS RCU_ABSENT
#endif

/* mb: a full fence in every read lock and unlock. */
#ifdef RM_BENCH_HAVE_URCU_MB
#include <urcu/urcu-mb.h>
RCU_URCU_FLAVOR(rcu_mb, urcu_mb)
#define RCU_MB_FLAGS 0u
#else
RCU_ABSENT_FLAVOR(rcu_mb)
#define RCU_MB_FLAGS RCU_ABSENT
#endif

/* signal: fence-free readers; synchronize signals every registered thread. */
#ifdef RM_BENCH_HAVE_URCU_SIGNAL
#include <urcu/urcu-signal.h>
RCU_URCU_FLAVOR(rcu_signal, urcu_signal)
#define RCU_SIGNAL_FLAGS 0u
#else
RCU_ABSENT_FLAVOR(rcu_signal)
#define RCU_SIGNAL_FLAGS RCU_ABSENT
#endif

/* qsbr: read sections are free; readers announce quiescent states. */
#ifdef RM_BENCH_HAVE_URCU_QSBR
#include <urcu/urcu-qsbr.h>
RCU_URCU_FLAVOR(rcu_qsbr, urcu_qsbr)
#define RCU_QSBR_FLAGS 0u
#else
RCU_ABSENT_FLAVOR(rcu_qsbr)
#define RCU_QSBR_FLAGS RCU_ABSENT
#endif

/* bp: "bulletproof", threads register on their first read lock; readers
 * fence (membarrier when the kernel has it: liburcu 0.13's bp uses a
 * full barrier in the read lock unless membarrier is available). */
#ifdef RM_BENCH_HAVE_URCU_BP
#include <urcu/urcu-bp.h>
RCU_URCU_FLAVOR(rcu_bp, urcu_bp)
#define RCU_BP_FLAGS 0u
#else
RCU_ABSENT_FLAVOR(rcu_bp)
#define RCU_BP_FLAGS RCU_ABSENT
#endif

/* Ours: FCP-RCU.  Readers need no quiescent states (every outermost unlock
 * reports); "rcu-fence" is the same code in a process started with
 * READMOSTLY_NO_MEMBARRIER=1. */
#if defined(__has_include)
#if __has_include(<readmostly/rcu.h>)
#define RM_BENCH_HAVE_RM_RCU 1
#endif
#endif
#ifdef RM_BENCH_HAVE_RM_RCU
#include <readmostly/rcu.h>
AI void rcu_rm_read_lock(void) { rm_rcu_read_lock(); }
AI void rcu_rm_read_unlock(void) { rm_rcu_read_unlock(); }
AI void rcu_rm_quiescent(void) {}
static inline void rcu_rm_synchronize(void) {
  if (rm_rcu_synchronize() != 0) abort(); /* EDEADLK: never outside a section */
}
static inline void rcu_rm_register(void) {
  if (rm_rcu_register_thread() != 0) abort();
}
static inline void rcu_rm_unregister(void) { (void)rm_rcu_unregister_thread(); }
static inline void rcu_rm_offline(void) { rm_rcu_thread_offline(); }
static inline void rcu_rm_online(void) { rm_rcu_thread_online(); }
#define RCU_RM_FLAGS 0u
#else
RCU_ABSENT_FLAVOR(rcu_rm)
#define RCU_RM_FLAGS RCU_ABSENT
#endif
/* Ours: the QSBR flavor (readmostly/rcu_qsbr.h): sections are compiler
 * barriers, readers announce quiescent states. */
#if defined(__has_include)
#if __has_include(<readmostly/rcu_qsbr.h>)
#define RM_BENCH_HAVE_RM_RCU_QSBR 1
#endif
#endif
#ifdef RM_BENCH_HAVE_RM_RCU_QSBR
#include <readmostly/rcu_qsbr.h>
AI void rcu_rmq_read_lock(void) { rm_rcu_qsbr_read_lock(); }
AI void rcu_rmq_read_unlock(void) { rm_rcu_qsbr_read_unlock(); }
AI void rcu_rmq_quiescent(void) { rm_rcu_qsbr_quiescent_state(); }
static inline void rcu_rmq_synchronize(void) {
  if (rm_rcu_qsbr_synchronize() != 0) abort();
}
static inline void rcu_rmq_register(void) {
  if (rm_rcu_qsbr_register_thread() != 0) abort();
}
static inline void rcu_rmq_unregister(void) { (void)rm_rcu_qsbr_unregister_thread(); }
static inline void rcu_rmq_offline(void) { rm_rcu_qsbr_thread_offline(); }
static inline void rcu_rmq_online(void) { rm_rcu_qsbr_thread_online(); }
#define RCU_RMQ_FLAGS 0u
#else
RCU_ABSENT_FLAVOR(rcu_rmq)
#define RCU_RMQ_FLAGS RCU_ABSENT
#endif
#define rcu_rmf_read_lock rcu_rm_read_lock
#define rcu_rmf_read_unlock rcu_rm_read_unlock
#define rcu_rmf_quiescent rcu_rm_quiescent
#define rcu_rmf_synchronize rcu_rm_synchronize
#define rcu_rmf_register rcu_rm_register
#define rcu_rmf_unregister rcu_rm_unregister
#define rcu_rmf_offline rcu_rm_offline
#define rcu_rmf_online rcu_rm_online

/* X(ID, "name", flags, env) */
#define RCU_FLAVORS(X)                                                   \
  X(rcu_rm, "rcu", RCU_RM_FLAGS, NULL)                                   \
  X(rcu_rmf, "rcu-fence", RCU_RM_FLAGS, "READMOSTLY_NO_MEMBARRIER=1")    \
  X(rcu_rmq, "rcu-qsbr", RCU_RMQ_FLAGS, NULL)                            \
  X(rcu_memb, "urcu-memb", RCU_MEMB_FLAGS, NULL)                         \
  X(rcu_mb, "urcu-mb", RCU_MB_FLAGS, NULL)                               \
  X(rcu_signal, "urcu-signal", RCU_SIGNAL_FLAGS, NULL)                   \
  X(rcu_qsbr, "urcu-qsbr", RCU_QSBR_FLAGS, NULL)                         \
  X(rcu_bp, "urcu-bp", RCU_BP_FLAGS, NULL)

#endif
