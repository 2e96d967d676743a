/*
 * bench/sets/rlu_set.h - the RLU list and hash table (readmostly/rlu_hash.h;
 * one bucket is the paper's list) behind the set interface (set.h), in the
 * four configurations the set experiments compare:
 *
 *   rlu         fine-grained, fence-free section entry (rm_rlu_options
 *               .fence_free: the FCP core's membarrier mode; docs/rlu.md
 *               "Section entry")
 *   rlu-fence   fine-grained, the paper's fenced entry (rlu.h's default)
 *   rlu-defer   fine-grained, synchronize deferred over up to 10 sections
 *               (the paper's "RLU defer"), fence-free entry
 *   rlu-coarse  coarse-grained (one writer lock, no aborts), fence-free entry
 *
 * RLU's configuration is process-wide (rm_rlu_init, only while no context
 * is registered): create() sets it, with statistics on (they count on slow
 * paths only), and fails with errno EBUSY while contexts of another
 * configuration are registered.  One RLU set at a time, then.
 *
 * Keys.  A set key k in [1, RM_SET_KEY_MAX] is stored as the int64_t with
 * the same bits, except the two whose bits are the list's sentinels:
 * 2^63 - 1 (INT64_MAX) is stored as 0 and 2^63 (INT64_MIN) as -1, the two
 * bit patterns no set key has.  So bench keys hash to the bucket the other
 * sets' Fibonacci hash picks, and bucket lengths are the same for all.
 *
 * Statistics.  stats(set, NULL, out) adds RLU's counters (aborts, syncs,
 * steals, membarriers; process-wide) accumulated since create() or the previous call
 * with th == NULL; with a thread's state it adds nothing.
 */
#ifndef READMOSTLY_BENCH_RLU_SET_H
#define READMOSTLY_BENCH_RLU_SET_H

#include <readmostly/rlu_hash.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "set.h"

struct rluset {
  struct rm_rlu_hash *h;
  struct rm_rlu_stats base; /* RLU's counters at the last stats(NULL) */
};

static inline int64_t rluset_key(uint64_t k) {
  if (k == (uint64_t)INT64_MAX) return 0;
  if (k == (uint64_t)INT64_MAX + 1) return -1;
  return (int64_t)k;
}

static inline void *rluset_create(const struct rm_set_config *cfg, enum rm_rlu_flavor flavor,
                                  unsigned max_defer, bool fence_free) {
  struct rm_rlu_options o;
  memset(&o, 0, sizeof o);
  o.flavor = flavor;
  o.max_defer = max_defer;
  o.stats = true;
  o.fence_free = fence_free;
  int e = rm_rlu_init(&o);
  if (e == EBUSY) {
    /* Contexts are registered: fine if they run this configuration. */
    struct rm_rlu_options cur;
    rm_rlu_options_get(&cur);
    if (cur.flavor != o.flavor || cur.max_defer != o.max_defer || !cur.stats ||
        (cur.fence_free && !fence_free))
      return errno = EBUSY, (void *)NULL;
  } else if (e != 0) {
    return errno = e, (void *)NULL;
  }
  struct rluset *s = (struct rluset *)calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  s->h = rm_rlu_hash_create(cfg->buckets ? cfg->buckets : 1, flavor == RM_RLU_COARSE);
  if (s->h == NULL) {
    free(s);
    return NULL;
  }
  rm_rlu_stats_get(&s->base);
  return s;
}
static void *rluset_create_fine(const struct rm_set_config *c) {
  return rluset_create(c, RM_RLU_FINE, 0, true);
}
static void *rluset_create_fence(const struct rm_set_config *c) {
  return rluset_create(c, RM_RLU_FINE, 0, false);
}
static void *rluset_create_defer(const struct rm_set_config *c) {
  return rluset_create(c, RM_RLU_FINE, 10, true);
}
static void *rluset_create_coarse(const struct rm_set_config *c) {
  return rluset_create(c, RM_RLU_COARSE, 0, true);
}

static void rluset_destroy(void *set) {
  struct rluset *s = (struct rluset *)set;
  rm_rlu_hash_destroy(s->h);
  free(s);
}

static void *rluset_thread_init(void *set) {
  (void)set;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  if (self == NULL) abort();
  return self;
}
/* Unregistering writes back every deferred section of the thread. */
static void rluset_thread_fini(void *set, void *th) {
  (void)set;
  rm_rlu_thread_unregister((rm_rlu_ctx *)th);
}

static bool rluset_contains(void *set, void *th, uint64_t key) {
  return rm_rlu_hash_contains((rm_rlu_ctx *)th, ((struct rluset *)set)->h, rluset_key(key)) == 1;
}
static bool rluset_insert(void *set, void *th, uint64_t key) {
  int r = rm_rlu_hash_add((rm_rlu_ctx *)th, ((struct rluset *)set)->h, rluset_key(key));
  if (r < 0) abort(); /* -ENOMEM */
  return r == 1;
}
static bool rluset_remove(void *set, void *th, uint64_t key) {
  int r = rm_rlu_hash_remove((rm_rlu_ctx *)th, ((struct rluset *)set)->h, rluset_key(key));
  if (r < 0) abort();
  return r == 1;
}

/* A walk of the originals: no thread may be inside an operation, and no
 * deferred section may be pending (every thread that updated has called
 * thread_fini). */
static size_t rluset_size(void *set) { return rm_rlu_hash_size(((struct rluset *)set)->h); }

static void rluset_stats(void *set, void *th, struct rm_set_stats *out) {
  if (th != NULL) return;
  struct rluset *s = (struct rluset *)set;
  struct rm_rlu_stats now;
  rm_rlu_stats_get(&now);
  out->aborts += now.aborts - s->base.aborts;
  out->syncs += now.syncs - s->base.syncs;
  out->steals += now.steals - s->base.steals;
  out->barriers += now.barriers - s->base.barriers;
  s->base = now;
}

#define RLUSET_OPS(NAME, CREATE)                                                           \
  {NAME,          CREATE,        rluset_destroy, rluset_thread_init, rluset_thread_fini, \
   rluset_contains, rluset_insert, rluset_remove, rluset_size,        rluset_stats}
static const struct rm_set_ops rm_set_rlu = RLUSET_OPS("rlu", rluset_create_fine);
static const struct rm_set_ops rm_set_rlu_fence = RLUSET_OPS("rlu-fence", rluset_create_fence);
static const struct rm_set_ops rm_set_rlu_defer = RLUSET_OPS("rlu-defer", rluset_create_defer);
static const struct rm_set_ops rm_set_rlu_coarse = RLUSET_OPS("rlu-coarse", rluset_create_coarse);

#endif
