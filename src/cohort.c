/*
 * cohort.c - slow paths of Cohort-RW, the C-RW-WP lock of Calciu et al.
 * (PPoPP 2013).  See readmostly/cohort.h for the algorithm, the invariants
 * (1-5) and the ordering points (A-E); the writer side adds:
 *
 *   G. Writer arrival: seq_cst store of wactive = 1, then rm_fence_store_load,
 *      then seq_cst loads of ingress.  Partner: the reader's seq_cst
 *      fetch_add on ingress followed by its seq_cst load of wactive (A).
 *      Either the writer sees the reader's arrival and waits for it, or the
 *      reader sees the flag and backs out.
 *   H. Writer drain: acquire load of a node's egress, then the load of its
 *      ingress; equal values mean the node was empty when egress was read
 *      (both counters only grow and egress <= ingress, invariant 1).  The
 *      acquire pairs with the release increment of egress (B) of every
 *      reader that left, so their critical sections happen before ours.
 */
#include <readmostly/cohort.h>

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

/* Number of NUMA nodes: directories node<N> under sysfs, else 1; clamped to
 * [1, RM_COHORT_MAX_NODES].  Computed once; racing first callers compute
 * the same value. */
static uint32_t cohort_detected_nodes;

static unsigned cohort_detect_nodes(void) {
  uint32_t n = rm_atomic_load_relaxed(&cohort_detected_nodes);
  if (n) return n;
  DIR *d = opendir("/sys/devices/system/node");
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      const char *s = e->d_name;
      if (strncmp(s, "node", 4) != 0 || s[4] == '\0') continue;
      bool digits = true;
      for (const char *p = s + 4; *p; p++)
        if (*p < '0' || *p > '9') digits = false;
      if (digits) n++;
    }
    closedir(d);
  }
  if (n == 0) n = 1;
  if (n > RM_COHORT_MAX_NODES) n = RM_COHORT_MAX_NODES;
  rm_atomic_store_relaxed(&cohort_detected_nodes, n);
  return n;
}

static rm_cohort_ind_t *cohort_alloc(unsigned nodes) {
  void *p = NULL;
  if (posix_memalign(&p, RM_CACHE_SECTOR, (size_t)nodes * sizeof(rm_cohort_ind_t)) != 0)
    return NULL;
  memset(p, 0, (size_t)nodes * sizeof(rm_cohort_ind_t));
  return (rm_cohort_ind_t *)p;
}

RM_API int rm_cohort_init_nodes(rm_cohort_t *l, unsigned nodes) {
  if (!l || nodes == 0 || nodes > RM_COHORT_MAX_NODES) return EINVAL;
  rm_cohort_ind_t *ind = cohort_alloc(nodes);
  if (!ind) return ENOMEM;
  /* Initialization is not concurrent with use: whoever hands the lock to
   * other threads (pthread_create, a mutex, ...) orders these stores. */
  l->ind = ind;
  l->nodes = nodes;
  l->wactive = 0;
  l->wnext = 0;
  l->wserving = 0;
  return 0;
}

RM_API int rm_cohort_init(rm_cohort_t *l) {
  if (!l) return EINVAL;
  return rm_cohort_init_nodes(l, cohort_detect_nodes());
}

RM_API int rm_cohort_destroy(rm_cohort_t *l) {
  if (!l) return EINVAL;
  rm_cohort_ind_t *ind = rm_atomic_load_acquire(&l->ind); /* E */
  if (rm_atomic_load_acquire(&l->wactive) != 0 ||
      rm_atomic_load_acquire(&l->wnext) != rm_atomic_load_acquire(&l->wserving))
    return EBUSY;
  if (ind) {
    unsigned nodes = rm_atomic_load_relaxed(&l->nodes);
    for (unsigned i = 0; i < nodes; i++)
      /* H: acquire on egress, so departed readers' accesses precede the free. */
      if (rm_atomic_load_acquire(&ind[i].egress) != rm_atomic_load_acquire(&ind[i].ingress))
        return EBUSY;
  }
  rm_atomic_store_relaxed(&l->ind, (rm_cohort_ind_t *)NULL);
  free(ind);
  return 0;
}

RM_API int rm_cohort_install_slowpath(rm_cohort_t *l, rm_cohort_ind_t **indp) {
  unsigned nodes = rm_atomic_load_relaxed(&l->nodes);
  if (nodes == 0) nodes = cohort_detect_nodes();
  rm_cohort_ind_t *mine = cohort_alloc(nodes);
  if (!mine) return ENOMEM;
  /* Every racing installer stores the same count (invariant 5); E orders it
   * before the publication below. */
  rm_atomic_store_relaxed(&l->nodes, (uint32_t)nodes);
  /* E: rm_publish_once's release publishes nodes and the zeroed counters
   * to readers' acquire loads of ind. */
  *indp = rm_publish_once(&l->ind, mine);
  return 0;
}

RM_API int rm_cohort_read_lock_slowpath(rm_cohort_t *l, rm_token_t *tok) {
  rm_cohort_ind_t *ind = rm_atomic_load_acquire(&l->ind); /* E (already installed) */
  for (;;) {
    rm_backoff_t b = RM_BACKOFF_INIT;
    /* C: pairs with the writer's release store of wactive = 0. */
    while (rm_atomic_load_acquire(&l->wactive) != 0) rm_backoff_wait(&b);
    RM_DEBUG_YIELD();
    unsigned node = rm_cohort_node_(l);
    /* A: arrival before the flag check; partner G. */
    rm_atomic_fetch_add_seq_cst(&ind[node].ingress, 1u);
    if (rm_atomic_load_seq_cst(&l->wactive) == 0) {
      *tok = (rm_token_t)node + 1;
      return 0;
    }
    /* B: back out; a draining writer's acquire load of egress sees it. */
    rm_atomic_fetch_add_release(&ind[node].egress, 1u);
  }
}

/* G + H for every node: raise the flag and, if `wait`, wait until every
 * node is empty.  Returns false (flag still up) if !wait and a node was not
 * empty.  Called with the writer mutex held. */
static bool cohort_raise_and_drain(rm_cohort_t *l, bool wait) {
  rm_cohort_ind_t *ind = rm_atomic_load_relaxed(&l->ind); /* installed by the caller */
  unsigned nodes = rm_atomic_load_relaxed(&l->nodes);
  /* G: the flag store is ordered before the ingress loads below (store->load
   * fence); partner: the reader's ingress fetch_add then flag load (A). */
  rm_atomic_store_seq_cst(&l->wactive, 1u);
  rm_fence_store_load();
  for (unsigned i = 0; i < nodes; i++) {
    rm_backoff_t b = RM_BACKOFF_INIT;
    for (;;) {
      /* H: egress first (acquire, pairs with B), then ingress (seq_cst, the
       * G side of the Dekker pair with A). */
      uint64_t out = rm_atomic_load_acquire(&ind[i].egress);
      uint64_t in = rm_atomic_load_seq_cst(&ind[i].ingress);
      if (in == out) break;
      if (!wait) return false;
      rm_backoff_wait(&b);
    }
  }
  return true;
}

RM_API int rm_cohort_write_lock_slowpath(rm_cohort_t *l, uint32_t my_ticket) {
  rm_backoff_t b = RM_BACKOFF_INIT;
  /* D: acquire pairs with the previous holder's release store of wserving;
   * its critical section happens before ours. */
  while (rm_atomic_load_acquire(&l->wserving) != my_ticket) rm_backoff_wait(&b);
  RM_DEBUG_YIELD();
  cohort_raise_and_drain(l, true);
  return 0;
}

RM_API int rm_cohort_write_trylock_slowpath(rm_cohort_t *l) {
  /* D: acquire pairs with the last holder's release store of wserving.  The
   * mutex is free with nobody queued iff wnext == wserving. */
  uint32_t s = rm_atomic_load_acquire(&l->wserving);
  uint32_t expected = s;
  if (!rm_atomic_cas_acquire(&l->wnext, &expected, s + 1u)) return EBUSY;
  if (cohort_raise_and_drain(l, false)) return 0;
  /* A reader is inside: undo.  Readers that saw the flag meanwhile back out
   * and retry once it drops (or the mutex passes to a queued writer). */
  rm_cohort_write_release_slowpath(l);
  return EBUSY;
}

RM_API void rm_cohort_write_release_slowpath(rm_cohort_t *l) {
  uint32_t me = rm_atomic_load_relaxed(&l->wserving); /* only the holder writes it */
  /* A queued writer (wnext beyond our ticket) inherits the raised flag, so
   * readers stay out between writers (writer preference).  A writer that
   * queues right after this relaxed look simply raises the flag again. */
  if (rm_atomic_load_relaxed(&l->wnext) == me + 1u)
    /* C: our critical section happens before any reader that sees 0. */
    rm_atomic_store_release(&l->wactive, 0u);
  /* D: hand the mutex on; pairs with the next writer's acquire load. */
  rm_atomic_store_release(&l->wserving, me + 1u);
}
