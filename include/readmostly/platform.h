/*
 * readmostly/platform.h - the platform layer every primitive stands on.
 *
 * SYNOPSIS
 *   #include <readmostly/platform.h>
 *
 * DESCRIPTION
 *   Purpose-named atomics and fences, cpu_relax(), 128-byte alignment for hot
 *   shared fields, futex wait/wake and a spin-then-park helper, a polite
 *   back-off for long waits, a cheap monotonic clock, the current CPU, the
 *   thread identity used for hashing, membarrier() and the thread registry
 *   (see readmostly/thread.h).
 *
 *   Atomics.  Public headers must compile as C++ as well as C11, and C++
 *   before C++23 has no <stdatomic.h>.  Shared words are therefore plain
 *   integers or pointers accessed only through the rm_atomic_* macros below,
 *   which expand to the GCC/Clang __atomic builtins (the same builtins C11
 *   <stdatomic.h> is built on).  ThreadSanitizer understands them.  Every
 *   call site names its memory order; the comment at the call site says which
 *   store is ordered before which load, and with what partner.
 *
 *   Alignment.  RM_CACHE_SECTOR is 128 bytes, not 64: Intel's adjacent-line
 *   prefetcher fetches pairs of 64-byte lines, so two hot fields 64 bytes
 *   apart still false-share (the BRAVO paper, section 5).
 *
 *   Clock.  rm_ticks() reads the time-stamp counter on x86-64 when the CPU
 *   reports an invariant TSC, and clock_gettime(CLOCK_MONOTONIC) in
 *   nanoseconds otherwise.  Ticks are only compared with ticks; use
 *   rm_ticks_to_ns() to report them and rm_ns_to_ticks() for a duration
 *   given in nanoseconds.
 *
 *   Debug yield.  When the including code is compiled with
 *   -DREADMOSTLY_DEBUG_YIELD, RM_DEBUG_YIELD() yields the CPU at random
 *   (about one call in eight) to widen race windows; otherwise it compiles to
 *   nothing.
 *
 * THREAD SAFETY
 *   Everything here is thread-safe.  rm_platform_init() runs from a library
 *   constructor and again (idempotently) on first use.
 */
#ifndef READMOSTLY_PLATFORM_H
#define READMOSTLY_PLATFORM_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#if !defined(__GNUC__) && !defined(__clang__)
#error "readmostly needs GCC or Clang (the __atomic builtins)"
#endif

/* POSIX 2008 (CLOCK_MONOTONIC here, pthread_rwlock_t in pthread_rw.h).  The
 * GNU dialects (-std=gnu11, and C++ with g++ or clang++) declare it by
 * default; a strict -std=c11 declares only ISO C unless a feature-test
 * macro is defined before the first system header, which a header included
 * after others cannot do for its user.  Say so once, instead of a list of
 * undeclared names.  CLOCK_MONOTONIC is a macro in glibc and in musl. */
#ifndef CLOCK_MONOTONIC
#error "readmostly needs POSIX 2008 (CLOCK_MONOTONIC, pthread_rwlock_t): compile with -D_POSIX_C_SOURCE=200809L or -D_GNU_SOURCE (-std=c11 alone defines neither)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- attributes ------------------------------------------------------ */

/* One "cache sector": two 64-byte lines, see the header comment. */
#define RM_CACHE_SECTOR 128
#define RM_ALIGNED __attribute__((aligned(RM_CACHE_SECTOR)))
#define RM_LIKELY(x) __builtin_expect(!!(x), 1)
#define RM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RM_INLINE static inline __attribute__((always_inline))
#define RM_NOINLINE __attribute__((noinline))
#define RM_COLD __attribute__((cold, noinline))
#define RM_API __attribute__((visibility("default")))

#ifdef __cplusplus
#define RM_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define RM_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* ---- atomics ----------------------------------------------------------
 * Thin, purpose-named wrappers over the __atomic builtins.  "p" is a pointer
 * to a naturally aligned integer or pointer object.
 */
#define rm_atomic_load_relaxed(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define rm_atomic_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define rm_atomic_load_seq_cst(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define rm_atomic_store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define rm_atomic_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define rm_atomic_store_seq_cst(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define rm_atomic_xchg_acq_rel(p, v) __atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)
#define rm_atomic_xchg_seq_cst(p, v) __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define rm_atomic_fetch_add_relaxed(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define rm_atomic_fetch_add_acquire(p, v) __atomic_fetch_add((p), (v), __ATOMIC_ACQUIRE)
#define rm_atomic_fetch_add_release(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELEASE)
#define rm_atomic_fetch_add_acq_rel(p, v) __atomic_fetch_add((p), (v), __ATOMIC_ACQ_REL)
#define rm_atomic_fetch_add_seq_cst(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define rm_atomic_fetch_sub_release(p, v) __atomic_fetch_sub((p), (v), __ATOMIC_RELEASE)
#define rm_atomic_fetch_sub_acq_rel(p, v) __atomic_fetch_sub((p), (v), __ATOMIC_ACQ_REL)
#define rm_atomic_fetch_or_acq_rel(p, v) __atomic_fetch_or((p), (v), __ATOMIC_ACQ_REL)
#define rm_atomic_fetch_and_acq_rel(p, v) __atomic_fetch_and((p), (v), __ATOMIC_ACQ_REL)
#define rm_atomic_fetch_and_release(p, v) __atomic_fetch_and((p), (v), __ATOMIC_RELEASE)
#define rm_atomic_fetch_xor_acq_rel(p, v) __atomic_fetch_xor((p), (v), __ATOMIC_ACQ_REL)
/*
 * rm_publish_once(slotp, mine): install the freshly built object `mine` in
 * the pointer *slotp if it is still NULL, for lazily allocated parts of a
 * lock.  Evaluates to the object that won: `mine`, or the one a racing
 * thread installed first (then `mine` is free()d).  The CAS is acq_rel: its
 * release publishes everything written to `mine` (and before the call) to
 * readers that load *slotp with acquire; on failure its acquire makes the
 * winner's object visible to us.  Used in .c files (needs <stdlib.h>).
 */
#define rm_publish_once(slotp, mine)                                      \
  __extension__({                                                         \
    __typeof__(*(slotp)) rm_po_seen_ = NULL, rm_po_mine_ = (mine);        \
    if (!rm_atomic_cas_acq_rel((slotp), &rm_po_seen_, rm_po_mine_)) {     \
      free(rm_po_mine_);                                                  \
      rm_po_mine_ = rm_po_seen_;                                          \
    }                                                                     \
    rm_po_mine_;                                                          \
  })

/* Compare-and-swap; *expp is updated with the observed value on failure.
 * Returns true on success. */
#define rm_atomic_cas_acquire(p, expp, v) \
  __atomic_compare_exchange_n((p), (expp), (v), false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)
#define rm_atomic_cas_acq_rel(p, expp, v) \
  __atomic_compare_exchange_n((p), (expp), (v), false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#define rm_atomic_cas_seq_cst(p, expp, v) \
  __atomic_compare_exchange_n((p), (expp), (v), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)

/* Full store->load fence: orders every earlier store before every later load
 * (mfence on x86-64, dmb ish on arm64).  The only fence TSO hardware needs. */
#if defined(__SANITIZE_THREAD__)
#define RM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RM_TSAN 1
#endif
#endif
#ifdef RM_TSAN
/* ThreadSanitizer does not model fences (GCC refuses them under -Werror):
 * use a seq_cst read-modify-write of a dummy word, which it does model and
 * which is at least as strong. */
extern RM_API uint32_t rm_tsan_fence_word;
#define rm_fence_store_load() ((void)__atomic_fetch_add(&rm_tsan_fence_word, 0u, __ATOMIC_SEQ_CST))
#else
#define rm_fence_store_load() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif
/* The full fence after a seq_cst read-modify-write, where the argument
 * needs one (the RMW's store before later loads, including the plain and
 * vector loads that C11 cannot order): on x86 the RMW is a locked
 * instruction, which neither loads nor stores pass, so the fence is only a
 * compiler barrier there (a second fence cost 5.7 ns per use, measured
 * beside a lone locked AND); elsewhere, and for ThreadSanitizer's view,
 * rm_fence_store_load(). */
#if (defined(__x86_64__) || defined(__i386__)) && !defined(RM_TSAN)
#define rm_fence_after_rmw() rm_compiler_barrier()
#else
#define rm_fence_after_rmw() rm_fence_store_load()
#endif
/* Orders earlier loads/stores before later stores (free on TSO). */
#ifdef RM_TSAN
#define rm_fence_release() ((void)__atomic_fetch_add(&rm_tsan_fence_word, 0u, __ATOMIC_SEQ_CST))
#else
#define rm_fence_release() __atomic_thread_fence(__ATOMIC_RELEASE)
#endif
/* Orders earlier loads before later loads/stores (free on TSO). */
#ifdef RM_TSAN
#define rm_fence_acquire() ((void)__atomic_fetch_add(&rm_tsan_fence_word, 0u, __ATOMIC_SEQ_CST))
#else
#define rm_fence_acquire() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#endif
/* Stops the compiler, not the CPU, from moving memory accesses across. */
#define rm_compiler_barrier() __asm__ __volatile__("" ::: "memory")

/* ---- spinning ---------------------------------------------------------- */

/* Tell the CPU we are in a spin-wait loop (PAUSE / YIELD). */
RM_INLINE void rm_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield" ::: "memory");
#elif defined(__powerpc64__)
  __asm__ __volatile__("or 27,27,27" ::: "memory");
#else
  rm_compiler_barrier();
#endif
}

/*
 * Polite waiting for conditions that may take long (a reader that was
 * preempted inside its critical section): spin with cpu_relax for a while,
 * then sched_yield(), then sleep with a doubling period capped at 1 ms.
 * The sleep is a raw system call, not nanosleep(): lock calls must not be
 * cancellation points (POSIX lists none of the rwlock calls; a deferred
 * cancel acting inside one would unwind with the lock half taken).
 * Usage:
 *     rm_backoff_t b = RM_BACKOFF_INIT;
 *     while (!cond) rm_backoff_wait(&b);
 */
typedef struct rm_backoff {
  uint32_t round;
} rm_backoff_t;
#define RM_BACKOFF_INIT {0}
#define RM_BACKOFF_SPINS 256u  /* cpu_relax rounds before the first yield */
#define RM_BACKOFF_YIELDS 64u  /* sched_yield rounds before the first sleep */
RM_API void rm_backoff_wait_slowpath(rm_backoff_t *b);
RM_INLINE void rm_backoff_wait(rm_backoff_t *b) {
  if (RM_LIKELY(b->round < RM_BACKOFF_SPINS)) {
    b->round++;
    rm_cpu_relax();
    return;
  }
  rm_backoff_wait_slowpath(b);
}

/* ---- futexes ------------------------------------------------------------
 * rm_futex_wait: sleep while *addr == expected.  abstime (may be NULL for no
 * limit) is absolute on clock clk, which must be CLOCK_MONOTONIC or
 * CLOCK_REALTIME.  shared=false uses the cheaper process-private futex.
 * Returns 0 when woken (or spuriously), EAGAIN if *addr != expected at the
 * call, EINTR on a signal, ETIMEDOUT when abstime passed, EINVAL for a bad
 * clock or timespec.  Callers always recheck their condition.
 *
 * rm_futex_wake: wake up to n waiters (INT32_MAX for all); returns how many.
 */
RM_API int rm_futex_wait(uint32_t *addr, uint32_t expected, int clk,
                         const struct timespec *abstime, bool shared);
RM_API int rm_futex_wake(uint32_t *addr, int n, bool shared);

/*
 * Spin-then-park: wait until *addr != expected.  Spins up to `spins` rounds
 * of cpu_relax() re-reading *addr (acquire), then parks on the futex.
 * Returns 0 once *addr differs (acquire ordering on that load), or the
 * ETIMEDOUT / EINVAL of rm_futex_wait.  A waker must change *addr (release)
 * before calling rm_futex_wake.
 */
RM_API int rm_spin_then_park(uint32_t *addr, uint32_t expected, unsigned spins,
                             int clk, const struct timespec *abstime, bool shared);

/* Validate a pthread-style timeout: clk is CLOCK_MONOTONIC or CLOCK_REALTIME
 * and 0 <= tv_nsec < 1e9 (abstime may be NULL: no limit).  Returns 0 or
 * EINVAL. */
RM_API int rm_timespec_check(int clk, const struct timespec *abstime);
/*
 * The check every timed lock makes first, before it looks at the lock (as
 * glibc 2.36 does), so a bad argument gets EINVAL whether or not the lock
 * is free: abstime must not be NULL, clk must be CLOCK_MONOTONIC or
 * CLOCK_REALTIME, and 0 <= tv_nsec < 1e9.  A negative tv_sec is valid (it
 * has passed: ETIMEDOUT unless the lock is free).  Returns 0 or EINVAL.
 */
RM_INLINE int rm_timeout_check(int clk, const struct timespec *abstime) {
  if (RM_UNLIKELY(abstime == NULL || (clk != CLOCK_MONOTONIC && clk != CLOCK_REALTIME) ||
                  abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L))
    return EINVAL;
  return 0;
}
/* True when abstime (on clk) is already in the past. */
RM_API bool rm_timespec_expired(int clk, const struct timespec *abstime);

/* ---- clock --------------------------------------------------------------- */

/* Process-wide platform facts, filled by rm_platform_init(). */
struct rm_platform_info {
  uint32_t initialized;      /* 1 once filled */
  uint32_t tsc_ok;           /* rm_ticks() reads the invariant TSC */
  uint32_t ncpus;            /* configured CPUs (sysconf) */
  uint32_t membarrier_ok;    /* private expedited membarrier registered */
  double ns_per_tick;        /* 1.0 when ticks are nanoseconds */
};
extern RM_API struct rm_platform_info rm_platform;

RM_API void rm_platform_init(void);

/* Monotonic nanoseconds (clock_gettime, vDSO). */
RM_INLINE uint64_t rm_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Cheap monotonic ticks: invariant TSC where reliable, else nanoseconds. */
RM_INLINE uint64_t rm_ticks(void) {
#if defined(__x86_64__)
  if (RM_LIKELY(rm_platform.tsc_ok)) {
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
  }
#endif
  return rm_now_ns();
}

RM_API uint64_t rm_ticks_to_ns(uint64_t ticks);
/* The other way: ns nanoseconds in rm_ticks() units (rounded down).  Sets
 * the platform up first if it is not yet (so a caller may cache it). */
RM_API uint64_t rm_ns_to_ticks(uint64_t ns);

/* ---- CPUs and threads ---------------------------------------------------- */

/* The CPU the caller runs on now (sched_getcpu, rseq-backed on glibc >= 2.35);
 * 0 if unknown.  Always < rm_cpu_count(). */
RM_API unsigned rm_current_cpu(void);
/* Number of configured CPUs, at least 1. */
RM_API unsigned rm_cpu_count(void);

/*
 * A word that identifies the calling thread while it lives and costs no
 * memory access beyond the thread pointer: on x86-64 glibc, the TCB self
 * pointer at %fs:0; elsewhere the thread pointer builtin or pthread_self().
 * Used by BRAVO's hash; two live threads never share a value.
 */
RM_INLINE uintptr_t rm_thread_identity(void) {
#if defined(__x86_64__) && defined(__GLIBC__)
  uintptr_t self;
  __asm__("movq %%fs:0, %0" : "=r"(self));
  return self;
#elif defined(__aarch64__)
  uintptr_t tp;
  __asm__("mrs %0, tpidr_el0" : "=r"(tp));
  return tp;
#else
  extern unsigned long pthread_self(void);
  return (uintptr_t)pthread_self();
#endif
}

/* ---- membarrier ------------------------------------------------------------
 * Registered for MEMBARRIER_CMD_PRIVATE_EXPEDITED by a library constructor,
 * before the program creates threads (registering later costs a full RCU
 * grace period, about 13 ms measured on our machines).  Setting
 * READMOSTLY_NO_MEMBARRIER=1 in the environment skips registration, so the
 * fallback paths of later primitives can be tested.
 *
 * rm_membarrier_available(): registration succeeded.
 * rm_membarrier(): every running thread of the process executes a full memory
 * barrier before this returns.  Returns 0, or ENOSYS when unavailable.
 */
RM_API bool rm_membarrier_available(void);
RM_API int rm_membarrier(void);

/* ---- debug yield --------------------------------------------------------- */
/*
 * RM_DEBUG_PAUSE(name) marks a named race point.  In the debug-yield build
 * it pauses the calling thread for the time READMOSTLY_DEBUG_PAUSE gives
 * that name ("name:microseconds[,name:microseconds...]", read once), or
 * else yields at random like RM_DEBUG_YIELD(); in other builds it is
 * nothing.  Tests use it to hold one thread inside a window (say, between a
 * reader's CAS and its re-check) while others act, which makes an
 * interleaving that is otherwise rare happen every time.  The pause is a
 * raw system call: it is not a cancellation point either.
 */
RM_API void rm_debug_yield(void);
RM_API void rm_debug_pause(const char *name);
/* A test of the debug-yield build may have every race point call hook
 * instead of yielding at random (NULL: back to the yields); the RCU
 * signal test raises a signal there, so that a handler runs at each point
 * in turn.  Process-wide; set it while no other thread runs race points. */
RM_API void rm_debug_set_yield_hook(void (*hook)(void));
#ifdef READMOSTLY_DEBUG_YIELD
#define RM_DEBUG_YIELD() rm_debug_yield()
#define RM_DEBUG_PAUSE(name) rm_debug_pause(name)
#else
#define RM_DEBUG_YIELD() ((void)0)
#define RM_DEBUG_PAUSE(name) ((void)0)
#endif

/* Sleep ns nanoseconds (CLOCK_MONOTONIC) without being a cancellation
 * point: for waits inside lock calls. */
RM_API void rm_sleep_ns(long ns);

/* Debug assertions in inline code: active unless NDEBUG.
 * RM_ASSERT(cond, fmt, args...): the format is the first of the variadic
 * arguments, so a call with a format alone still passes one argument to
 * "..." (ISO C and C++ want at least one; -Wpedantic says so). */
#ifdef NDEBUG
#define RM_ASSERT(cond, ...) ((void)0)
#else
RM_API void rm_assert_fail(const char *file, int line, const char *cond,
                           const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));
#define RM_ASSERT(cond, ...)                                              \
  (RM_LIKELY(cond) ? (void)0                                              \
                   : rm_assert_fail(__FILE__, __LINE__, #cond, __VA_ARGS__))
#endif

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_PLATFORM_H */
