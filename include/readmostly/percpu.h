/*
 * readmostly/percpu.h - Per-CPU: a reader-writer lock made of one BA lock
 * per CPU (the "per-CPU" or "big reader" construction, the Per-CPU
 * baseline of the BRAVO paper, Dice and Kogan, USENIX ATC 2019).
 *
 * SYNOPSIS
 *   #include <readmostly/percpu.h>
 *
 *   static rm_percpu_t l = RM_PERCPU_INITIALIZER;   // allocates on first use
 *
 *   int rm_percpu_init(rm_percpu_t *l);
 *   int rm_percpu_destroy(rm_percpu_t *l);
 *   int rm_percpu_read_lock(rm_percpu_t *l, rm_token_t *tok);
 *   int rm_percpu_read_trylock(rm_percpu_t *l, rm_token_t *tok);
 *   int rm_percpu_read_unlock(rm_percpu_t *l, rm_token_t tok);
 *   int rm_percpu_write_lock(rm_percpu_t *l);
 *   int rm_percpu_write_trylock(rm_percpu_t *l);
 *   int rm_percpu_write_unlock(rm_percpu_t *l);
 *
 * DESCRIPTION
 *   The lock is an array of rm_ba_t sub-locks (readmostly/ba.h), one per
 *   configured CPU (rm_cpu_count()), each alone on a 128-byte sector.  A
 *   reader read-locks the sub-lock of the CPU it runs on (rm_current_cpu())
 *   and receives a token naming that sub-lock (its address); the read unlock
 *   releases the token's sub-lock, never the one of the CPU the thread runs
 *   on by then, because the thread may have migrated.  Readers on different
 *   CPUs therefore write to different lines.  A writer write-locks every
 *   sub-lock in index order and unlocks them in reverse order; the order is
 *   fixed, so two writers cannot deadlock, and a reader holds one sub-lock
 *   only.  write_trylock trylocks each sub-lock in order and, on the first
 *   EBUSY, releases those it holds and returns EBUSY.
 *
 *   RM_PERCPU_INITIALIZER leaves the array unallocated; the first lock call
 *   allocates it, zeroed (RM_BA_INITIALIZER is all zero), and installs it
 *   with a CAS from NULL, so racing first users agree on one array (the
 *   losers free theirs).  rm_percpu_init allocates eagerly.
 *
 *   Ordering is that of the sub-locks (see ba.h, points (A)-(H)), plus:
 *   (I) install: relaxed store of n, then the acq_rel CAS of subs from NULL
 *       (release publishes n and the zeroed sub-locks); every lock call
 *       loads subs with acquire and then sees n and zeroed sub-locks.
 *
 * PREFERENCE
 *   Phase-fair per sub-lock, as BA.  A writer waits for the readers of each
 *   CPU in turn and readers of a CPU whose sub-lock it already holds wait
 *   for the whole write.  Read-side recursion deadlocks if a writer comes in
 *   between (and may pick another CPU's sub-lock the second time).
 *
 * RETURN VALUES
 *   0 on success.  EBUSY from the trylocks and from destroy when a sub-lock
 *   is visibly held.  EINVAL from init and destroy for NULL.  ENOMEM from
 *   init, and from any lock call on a lock set up with RM_PERCPU_INITIALIZER
 *   whose first use cannot allocate the array (a later call retries).
 *
 * ERRORS OF MISUSE
 *   EPERM, changing nothing, from read_unlock when the token is not one of
 *   this lock's sub-locks (0, returned by a failed lock, or another lock's
 *   token), and from write_unlock when the lock is not write-held (the
 *   first sub-lock has no writer).  Debug builds (no NDEBUG where the call
 *   is compiled) abort with a message instead.  A second read unlock with
 *   a valid token is not detected, as in BA (readmostly/ba.h): it corrupts
 *   that sub-lock's count.
 *
 * FOOTPRINT
 *   sizeof(rm_percpu_t) is 128 bytes (array pointer and CPU count on their
 *   own sector, read by every reader) plus 128 bytes per configured CPU on
 *   the heap.
 */
#ifndef READMOSTLY_PERCPU_H
#define READMOSTLY_PERCPU_H

#include <errno.h>
#include <readmostly/ba.h>
#include <readmostly/platform.h>
#include <readmostly/rwlock.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One CPU's sub-lock, alone on its sector. */
typedef struct rm_percpu_sub {
  rm_ba_t ba;
} RM_ALIGNED rm_percpu_sub_t;

typedef struct rm_percpu {
  rm_percpu_sub_t *subs; /* n sub-locks, or NULL until first use */
  uint32_t n;            /* sub-lock count, valid once subs is set */
} RM_ALIGNED rm_percpu_t;

#define RM_PERCPU_INITIALIZER {NULL, 0}

RM_API int rm_percpu_init(rm_percpu_t *l);
RM_API int rm_percpu_destroy(rm_percpu_t *l);
RM_API int rm_percpu_write_lock(rm_percpu_t *l);
RM_API int rm_percpu_write_trylock(rm_percpu_t *l);
RM_API int rm_percpu_write_unlock(rm_percpu_t *l);
/* Out of line (src/percpu.c): allocate and install the array.  0 or ENOMEM. */
RM_API int rm_percpu_install_slowpath(rm_percpu_t *l, rm_percpu_sub_t **subsp);

/* The sub-lock array, installing it on first use.  0 or ENOMEM. */
RM_INLINE int rm_percpu_subs_(rm_percpu_t *l, rm_percpu_sub_t **subsp) {
  rm_percpu_sub_t *s = rm_atomic_load_acquire(&l->subs); /* (I) */
  if (RM_LIKELY(s != NULL)) {
    *subsp = s;
    return 0;
  }
  return rm_percpu_install_slowpath(l, subsp);
}

/* The calling CPU's sub-lock. */
RM_INLINE rm_percpu_sub_t *rm_percpu_mine_(rm_percpu_t *l, rm_percpu_sub_t *subs) {
  unsigned n = rm_atomic_load_relaxed(&l->n); /* (I): set before subs */
  unsigned cpu = rm_current_cpu();
  return &subs[cpu < n ? cpu : cpu % n];
}

RM_INLINE int rm_percpu_read_lock(rm_percpu_t *l, rm_token_t *tok) {
  rm_percpu_sub_t *subs;
  if (RM_UNLIKELY(rm_percpu_subs_(l, &subs) != 0)) {
    *tok = 0; /* no hold: a token that no unlock accepts */
    return ENOMEM;
  }
  rm_percpu_sub_t *s = rm_percpu_mine_(l, subs);
  rm_ba_read_lock(&s->ba);
  *tok = (rm_token_t)s; /* 128-byte aligned, never 0 or RM_TOKEN_NONE */
  return 0;
}

RM_INLINE int rm_percpu_read_trylock(rm_percpu_t *l, rm_token_t *tok) {
  rm_percpu_sub_t *subs;
  if (RM_UNLIKELY(rm_percpu_subs_(l, &subs) != 0)) {
    *tok = 0;
    return ENOMEM;
  }
  rm_percpu_sub_t *s = rm_percpu_mine_(l, subs);
  int e = rm_ba_read_trylock(&s->ba);
  if (e) {
    *tok = 0;
    return e;
  }
  *tok = (rm_token_t)s;
  return 0;
}

/* tok names one of l's sub-locks.  subs and n are set while the lock is
 * held, so relaxed loads are enough; they share the line every read lock
 * reads. */
RM_INLINE bool rm_percpu_owns_(const rm_percpu_t *l, rm_token_t tok) {
  uintptr_t base = (uintptr_t)rm_atomic_load_relaxed(&l->subs);
  uintptr_t size = (uintptr_t)rm_atomic_load_relaxed(&l->n) * sizeof(rm_percpu_sub_t);
  return base != 0 && tok >= base && tok - base < size &&
         (tok - base) % sizeof(rm_percpu_sub_t) == 0;
}

RM_INLINE int rm_percpu_read_unlock(rm_percpu_t *l, rm_token_t tok) {
  if (RM_UNLIKELY(!rm_percpu_owns_(l, tok))) {
    RM_ASSERT(0, "rm_percpu_read_unlock(%p): token %#lx is not one of its sub-locks",
              (void *)l, (unsigned long)tok);
    return EPERM; /* 0 from a failed lock, or another lock's token */
  }
  /* The token's sub-lock, not the current CPU's: we may have migrated. */
  return rm_ba_read_unlock(&((rm_percpu_sub_t *)tok)->ba);
}

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_PERCPU_H */
