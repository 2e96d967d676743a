/*
 * percpu.c - out-of-line parts of the Per-CPU lock: allocation, lazy
 * installation, destroy and the writer side.  See readmostly/percpu.h for
 * the design and ordering point (I); the sub-locks' points (A)-(H) are in
 * readmostly/ba.h.
 */
#include <readmostly/percpu.h>

#include <stdlib.h>
#include <string.h>

static rm_percpu_sub_t *percpu_alloc(unsigned n) {
  void *p = NULL;
  if (posix_memalign(&p, RM_CACHE_SECTOR, (size_t)n * sizeof(rm_percpu_sub_t)) != 0) return NULL;
  memset(p, 0, (size_t)n * sizeof(rm_percpu_sub_t)); /* RM_BA_INITIALIZER is all zero */
  return (rm_percpu_sub_t *)p;
}

RM_API int rm_percpu_init(rm_percpu_t *l) {
  if (!l) return EINVAL;
  unsigned n = rm_cpu_count();
  rm_percpu_sub_t *subs = percpu_alloc(n);
  if (!subs) return ENOMEM;
  /* Initialization is not concurrent with use: whoever hands the lock to
   * other threads (pthread_create, a mutex, ...) orders these stores. */
  l->n = n;
  l->subs = subs;
  return 0;
}

RM_API int rm_percpu_destroy(rm_percpu_t *l) {
  if (!l) return EINVAL;
  rm_percpu_sub_t *subs = rm_atomic_load_acquire(&l->subs); /* (I) */
  if (subs) {
    unsigned n = rm_atomic_load_relaxed(&l->n);
    for (unsigned i = 0; i < n; i++)
      if (rm_ba_destroy(&subs[i].ba) != 0) return EBUSY;
  }
  rm_atomic_store_relaxed(&l->subs, (rm_percpu_sub_t *)NULL);
  free(subs);
  return 0;
}

RM_API int rm_percpu_install_slowpath(rm_percpu_t *l, rm_percpu_sub_t **subsp) {
  unsigned n = rm_cpu_count(); /* the same for every racing installer */
  rm_percpu_sub_t *mine = percpu_alloc(n);
  if (!mine) return ENOMEM;
  /* (I) racing installers store the same count; the CAS below orders it
   * before the array becomes visible. */
  rm_atomic_store_relaxed(&l->n, (uint32_t)n);
  /* (I) rm_publish_once's release publishes n and the zeroed sub-locks to
   * readers' acquire loads of subs. */
  *subsp = rm_publish_once(&l->subs, mine);
  return 0;
}

RM_API int rm_percpu_write_lock(rm_percpu_t *l) {
  rm_percpu_sub_t *subs;
  if (RM_UNLIKELY(rm_percpu_subs_(l, &subs) != 0)) return ENOMEM;
  unsigned n = rm_atomic_load_relaxed(&l->n); /* (I) */
  /* Index order: every writer takes the sub-locks in the same order. */
  for (unsigned i = 0; i < n; i++) {
    rm_ba_write_lock(&subs[i].ba);
    RM_DEBUG_YIELD();
  }
  return 0;
}

RM_API int rm_percpu_write_trylock(rm_percpu_t *l) {
  rm_percpu_sub_t *subs;
  if (RM_UNLIKELY(rm_percpu_subs_(l, &subs) != 0)) return ENOMEM;
  unsigned n = rm_atomic_load_relaxed(&l->n); /* (I) */
  for (unsigned i = 0; i < n; i++) {
    if (rm_ba_write_trylock(&subs[i].ba) != 0) {
      /* Back out, in reverse order. */
      while (i-- > 0) rm_ba_write_unlock(&subs[i].ba);
      return EBUSY;
    }
    RM_DEBUG_YIELD();
  }
  return 0;
}

RM_API int rm_percpu_write_unlock(rm_percpu_t *l) {
  rm_percpu_sub_t *subs = rm_atomic_load_relaxed(&l->subs); /* set: we hold it */
  unsigned n = rm_atomic_load_relaxed(&l->n);
  /* A writer holds every sub-lock; if the first has no writer (PRES clear,
   * our own bit while we hold it), nobody write-holds the lock: change
   * nothing rather than release sub-locks we do not hold. */
  if (RM_UNLIKELY(subs == NULL || !(rm_atomic_load_relaxed(&subs[0].ba.rin) & RM_BA_PRES))) {
    RM_ASSERT(0, "rm_percpu_write_unlock(%p): the lock is not write-held", (void *)l);
    return EPERM;
  }
  /* Reverse order. */
  for (unsigned i = n; i-- > 0;) rm_ba_write_unlock(&subs[i].ba);
  return 0;
}
