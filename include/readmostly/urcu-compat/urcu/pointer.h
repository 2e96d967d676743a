/*
 * <urcu/pointer.h> (readmostly's liburcu compat directory) - publishing and
 * reading RCU-protected pointers, with liburcu 0.13's names.
 *
 * SYNOPSIS
 *   #include <urcu/pointer.h>
 *   p = rcu_dereference(gp);             rcu_assign_pointer(gp, n);
 *   rcu_set_pointer(&gp, n);             old = rcu_xchg_pointer(&gp, n);
 *   old = rcu_cmpxchg_pointer(&gp, expect, n);
 *
 * DESCRIPTION
 *   When liburcu-dev's headers are installed (they come after this
 *   directory on the include path), this header includes what liburcu's
 *   pointer.h includes: <urcu/compiler.h>, <urcu/arch.h>, <urcu/system.h>
 *   and <urcu/uatomic.h> (caa_container_of, CMM_LOAD_SHARED,
 *   CMM_STORE_SHARED, cmm_smp_mb, uatomic_*), which liburcu's data
 *   structure headers (urcu/rculist.h, urcu/rculfhash.h, ...) rely on.
 *   Without them it defines the few helpers a flavor's users need
 *   (caa_container_of, URCU_FORCE_CAST, caa_likely, caa_unlikely,
 *   cmm_barrier, CMM_ACCESS_ONCE, CMM_LOAD_SHARED, CMM_STORE_SHARED,
 *   cmm_smp_mb).  Define READMOSTLY_URCU_NO_LIBURCU to never include
 *   liburcu's headers.
 *
 *   rcu_dereference(p) is an acquire load of the pointer p (an lvalue);
 *   rcu_set_pointer(pp, v) a release store of v to *pp (a statement);
 *   rcu_assign_pointer(p, v) is rcu_set_pointer(&p, v); rcu_xchg_pointer
 *   and rcu_cmpxchg_pointer are sequentially consistent (full barriers, as
 *   liburcu's) and return the old value.  _rcu_dereference and the other
 *   underscore names of liburcu's urcu/static/pointer.h are the same
 *   macros.  The *_sym functions (liburcu's out-of-line versions for code
 *   built without _LGPL_SOURCE) are static inline functions here.
 *
 * RETURN VALUES
 *   rcu_dereference: the pointer; rcu_xchg_pointer, rcu_cmpxchg_pointer:
 *   the value *pp held before.
 *
 * DIFFERENCES FROM LIBURCU
 *   rcu_dereference is an acquire load (liburcu: a volatile load ordered
 *   by the address dependency): on x86 the same instruction; on weakly
 *   ordered machines a little stronger.  rcu_set_pointer releases even a
 *   NULL store (liburcu skips the barrier for a constant NULL).
 */
#ifndef _URCU_POINTER_H
#define _URCU_POINTER_H

#include <readmostly/rcu.h>

#if !defined(READMOSTLY_URCU_NO_LIBURCU) && defined(__has_include)
#if __has_include(<urcu/uatomic.h>) && __has_include(<urcu/system.h>)
#define READMOSTLY_URCU_HAVE_LIBURCU 1
#include <urcu/compiler.h>
#include <urcu/arch.h>
#include <urcu/system.h>
#include <urcu/uatomic.h>
#endif
#endif

#ifndef READMOSTLY_URCU_HAVE_LIBURCU
/* The helpers of liburcu's urcu/compiler.h and urcu/system.h a flavor's
 * users reach for, with the same meaning. */
#include <stddef.h>
#ifndef caa_container_of
#define caa_container_of(ptr, type, member)                                        \
  __extension__({                                                                  \
    const __typeof__(((type *)NULL)->member) *rm_urcu_mptr_ = (ptr);              \
    (type *)((char *)rm_urcu_mptr_ - offsetof(type, member));                      \
  })
#endif
#ifndef URCU_FORCE_CAST
#define URCU_FORCE_CAST(type, arg) ((type)(arg))
#endif
#ifndef caa_likely
#define caa_likely(x) __builtin_expect(!!(x), 1)
#define caa_unlikely(x) __builtin_expect(!!(x), 0)
#endif
#ifndef cmm_barrier
#define cmm_barrier() __asm__ __volatile__("" : : : "memory")
#endif
#ifndef CMM_ACCESS_ONCE
#define CMM_ACCESS_ONCE(x) (*(__volatile__ __typeof__(x) *)&(x))
#endif
#ifndef CMM_LOAD_SHARED
#define CMM_LOAD_SHARED(p) CMM_ACCESS_ONCE(p)
#define CMM_STORE_SHARED(x, v)                                                     \
  __extension__({                                                                  \
    __typeof__(x) rm_urcu_v_ = (v);                                                \
    CMM_ACCESS_ONCE(x) = rm_urcu_v_;                                               \
    rm_urcu_v_;                                                                    \
  })
#endif
#ifndef cmm_smp_mb
/* A full fence, as liburcu's cmm_smp_mb (mfence on x86). */
#define cmm_smp_mb() rm_fence_store_load()
#endif
#endif /* !READMOSTLY_URCU_HAVE_LIBURCU */

#ifdef __cplusplus
extern "C" {
#endif

/* Acquire: every later load through the pointer sees the object as its
 * publisher initialised it (consume, implemented as acquire). */
#define rcu_dereference(p) rm_rcu_dereference(p)
/* Release: the object's initialisation happens before a reader that loads
 * the new value.  A statement, as liburcu's. */
#define rcu_set_pointer(pp, v)                                                     \
  do {                                                                             \
    __typeof__(*(pp)) rm_urcu_v_ = (v);                                            \
    __atomic_store_n((pp), rm_urcu_v_, __ATOMIC_RELEASE);                          \
  } while (0)
#define rcu_assign_pointer(p, v) rcu_set_pointer(&(p), (v))
/* Sequentially consistent, as liburcu's uatomic_xchg / uatomic_cmpxchg. */
#define rcu_xchg_pointer(pp, v) rm_rcu_xchg_pointer((pp), (v))
#define rcu_cmpxchg_pointer(pp, old, v) rm_rcu_cmpxchg_pointer((pp), (old), (v))

#define _rcu_dereference rcu_dereference
#define _rcu_set_pointer rcu_set_pointer
#define _rcu_assign_pointer rcu_assign_pointer
#define _rcu_xchg_pointer rcu_xchg_pointer
#define _rcu_cmpxchg_pointer rcu_cmpxchg_pointer

/* liburcu's out-of-line versions.  rcu_dereference_sym receives the value
 * its caller loaded with a plain load: the acquire fence after it orders
 * that load before every later load through the pointer (a load followed
 * by an acquire fence acts as an acquire load). */
static inline void *rcu_dereference_sym(void *p) {
  rm_fence_acquire();
  return p;
}
/* Release, as rcu_set_pointer; returns v, as liburcu's. */
static inline void *rcu_set_pointer_sym(void **p, void *v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
  return v;
}
/* Sequentially consistent, as rcu_xchg_pointer. */
static inline void *rcu_xchg_pointer_sym(void **p, void *v) {
  return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
/* Sequentially consistent on success and failure, as rcu_cmpxchg_pointer;
 * returns the value *p held. */
static inline void *rcu_cmpxchg_pointer_sym(void **p, void *old, void *v) {
  __atomic_compare_exchange_n(p, &old, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return old;
}

#ifdef __cplusplus
}
#endif
#endif /* _URCU_POINTER_H */
