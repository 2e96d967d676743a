/*
 * support/xthread.h - stand-in for glibc's test harness header: pthread
 * calls that end the test on an error.  See check.h.
 */
#ifndef RM_GLIBC_SUPPORT_XTHREAD_H
#define RM_GLIBC_SUPPORT_XTHREAD_H
#include <pthread.h>
#include <support/check.h>

#define RM_XCALL(call)                                      \
  do {                                                      \
    int e_ = (call);                                        \
    if (e_) FAIL_EXIT1("%s: %s", #call, strerror(e_));      \
  } while (0)

static inline pthread_t xpthread_create(pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  pthread_t t;
  RM_XCALL(pthread_create(&t, attr, fn, arg));
  return t;
}
static inline void *xpthread_join(pthread_t t) {
  void *ret;
  RM_XCALL(pthread_join(t, &ret));
  return ret;
}
static inline void xpthread_rwlock_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *a) {
  RM_XCALL(pthread_rwlock_init(l, a));
}
static inline void xpthread_rwlock_destroy(pthread_rwlock_t *l) {
  RM_XCALL(pthread_rwlock_destroy(l));
}
static inline void xpthread_rwlock_rdlock(pthread_rwlock_t *l) { RM_XCALL(pthread_rwlock_rdlock(l)); }
static inline void xpthread_rwlock_wrlock(pthread_rwlock_t *l) { RM_XCALL(pthread_rwlock_wrlock(l)); }
static inline void xpthread_rwlock_unlock(pthread_rwlock_t *l) { RM_XCALL(pthread_rwlock_unlock(l)); }
static inline void xpthread_rwlockattr_init(pthread_rwlockattr_t *a) {
  RM_XCALL(pthread_rwlockattr_init(a));
}
static inline void xpthread_rwlockattr_setkind_np(pthread_rwlockattr_t *a, int kind) {
  RM_XCALL(pthread_rwlockattr_setkind_np(a, kind));
}
static inline void xpthread_mutex_lock(pthread_mutex_t *m) { RM_XCALL(pthread_mutex_lock(m)); }
static inline void xpthread_mutex_unlock(pthread_mutex_t *m) { RM_XCALL(pthread_mutex_unlock(m)); }
static inline void xpthread_barrier_init(pthread_barrier_t *b, pthread_barrierattr_t *a,
                                         unsigned n) {
  RM_XCALL(pthread_barrier_init(b, a, n));
}
/* 1 in the one thread that gets PTHREAD_BARRIER_SERIAL_THREAD, else 0. */
static inline int xpthread_barrier_wait(pthread_barrier_t *b) {
  int e = pthread_barrier_wait(b);
  if (e != 0 && e != PTHREAD_BARRIER_SERIAL_THREAD)
    FAIL_EXIT1("pthread_barrier_wait: %s", strerror(e));
  return e == PTHREAD_BARRIER_SERIAL_THREAD;
}
static inline void xpthread_barrier_destroy(pthread_barrier_t *b) {
  RM_XCALL(pthread_barrier_destroy(b));
}
#endif
