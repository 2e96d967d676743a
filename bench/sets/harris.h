/*
 * bench/sets/harris.h - the Harris-Michael lock-free sorted list, and a
 * hash table of such lists, as the RLU paper's non-blocking baseline
 * (section 4.1: "Harris-Michael", leaky and with hazard pointers).
 *
 * The list is Harris's (a node is deleted in two steps: its `next` is
 * marked, then it is unlinked by a CAS of its predecessor's `next`; every
 * traversal helps unlink the marked nodes it meets) in Michael's form,
 * which lets each node be reclaimed with hazard pointers: a traversal
 * publishes the node it is about to read in a hazard pointer, then checks
 * that the node is still linked, and a node is freed only once no hazard
 * pointer names it (M. M. Michael, "High Performance Dynamic Lock-Free
 * Hash Tables and List-Based Sets", SPAA 2002; "Hazard Pointers", IEEE
 * TPDS 2004).  The leaky variant runs the same code with the hazard
 * pointers compiled out and frees removed nodes only when the set is
 * destroyed (the paper's "leaky" lists: the cost of the traversal without
 * the cost of reclaiming).
 *
 * Header-only: one instantiation per variant, selected by the constant
 * `hp` argument of the always-inline bodies.
 *
 * Invariants:
 *  1. The keys of unmarked nodes reachable from a head are strictly
 *     increasing; a marked node's key is no longer in the set.
 *  2. A node's `next` is marked at most once and never unmarked.
 *  3. (hp) A node is freed only after it was unlinked, retired by the
 *     thread whose CAS unlinked it, and a scan found no hazard pointer
 *     naming it.
 *
 * Ordering points:
 *  (H1) reader: store hazard pointer, then a full fence, then re-load the
 *       predecessor's `next` and find it still points at the node.  Pairs
 *       with (H2): a scanner that unlinked the node (seq_cst CAS) before
 *       loading the hazard pointers either sees the hazard or, if the
 *       reader's store came later in the seq_cst order, the reader's
 *       re-load follows the unlink and sees it, and the reader retries.
 *  (H2) scanner: full fence, then load every hazard pointer.
 *  (L1) insert and unlink: CAS of a `next`, seq_cst (release: the new
 *       node's fields are visible to whoever loads the pointer with acquire).
 *  (L2) traversal: acquire loads of `next` (the node's key and next are
 *       visible once its address is).
 */
#ifndef READMOSTLY_BENCH_HARRIS_H
#define READMOSTLY_BENCH_HARRIS_H

#include <readmostly/platform.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "set.h"

#define HM_MARK ((uintptr_t)1)
#define HM_HPS 2          /* hazard pointers per thread: predecessor, current */
#define HM_SCAN_MIN 64u   /* retired nodes before a thread scans, at least */

struct hm_node {
  uint64_t key;
  uintptr_t next; /* address of the next node | HM_MARK when this node is deleted */
};

/* A thread's hazard pointers and its retired nodes. */
struct hm_rec {
  void *hp[HM_HPS];
  struct hm_rec *next;   /* the set's records, append-only */
  uint32_t in_use;       /* claimed by a thread */
  struct hm_node **retired;
  size_t nretired, capretired;
} RM_ALIGNED;

struct hm_set {
  uintptr_t *heads;      /* one per bucket */
  size_t buckets;
  struct hm_rec *recs;
  size_t nrecs;
  int hp;                /* hazard pointers (1) or leaky (0) */
};

static inline size_t hm_bucket(const struct hm_set *s, uint64_t key) {
  /* Fibonacci hashing: keys that are consecutive spread over buckets. */
  return s->buckets == 1 ? 0 : (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) % s->buckets;
}

/* (H1) */
RM_INLINE void hm_protect(struct hm_rec *h, int i, void *p, const bool hp) {
  if (!hp) return;
  rm_atomic_store_relaxed(&h->hp[i], p);
  rm_fence_store_load();
}

/* Free every retired node that no hazard pointer names (H2).  Every record
 * must be read: a record claimed after we read the list head belongs to a
 * thread whose claim precedes any hazard it could have published in time
 * to protect one of our nodes (that hazard precedes our unlink, which
 * precedes our fence), so the fence makes the claim visible to the walk. */
static void hm_scan(struct hm_set *s, struct hm_rec *h) {
  rm_fence_store_load();
  size_t n = 0, cap = 0;
  void **haz = NULL;
  for (struct hm_rec *r = rm_atomic_load_acquire(&s->recs); r; r = r->next)
    for (int i = 0; i < HM_HPS; i++) {
      void *p = rm_atomic_load_acquire(&r->hp[i]);
      if (!p) continue;
      if (n == cap) {
        size_t ncap = cap ? 2 * cap : 64;
        void **q = (void **)realloc(haz, ncap * sizeof *q);
        if (!q) { /* keep every retired node: try again at the next retire */
          free(haz);
          return;
        }
        haz = q;
        cap = ncap;
      }
      haz[n++] = p;
    }
  size_t keep = 0;
  for (size_t i = 0; i < h->nretired; i++) {
    bool hazardous = false;
    for (size_t k = 0; k < n && !hazardous; k++) hazardous = haz[k] == h->retired[i];
    if (hazardous) h->retired[keep++] = h->retired[i];
    else free(h->retired[i]);
  }
  h->nretired = keep;
  free(haz);
}

/* Retire a node this thread unlinked.  The leaky variant only remembers
 * it (freed by hm_destroy, never during the run); with hazard pointers a
 * scan frees what no thread protects once enough have piled up. */
static void hm_retire(struct hm_set *s, struct hm_rec *h, struct hm_node *node) {
  if (h->nretired == h->capretired) {
    size_t ncap = h->capretired ? h->capretired * 2 : 2 * HM_SCAN_MIN;
    struct hm_node **p = (struct hm_node **)realloc(h->retired, ncap * sizeof *p);
    if (!p) { /* cannot remember it: leak it rather than free it unsafely */
      return;
    }
    h->retired = p;
    h->capretired = ncap;
  }
  h->retired[h->nretired++] = node;
  if (!s->hp) return;
  size_t threshold = 2 * HM_HPS * (size_t)rm_atomic_load_relaxed(&s->nrecs);
  if (h->nretired >= (threshold > HM_SCAN_MIN ? threshold : HM_SCAN_MIN)) hm_scan(s, h);
}

/* Michael's find: on return *pprev points at the `next` field (or head)
 * that held *pcur, the first node with key >= key (NULL at the end), and
 * *pnext is cur's unmarked next; both nodes are protected (hp 0: the node
 * that owns *pprev, hp 1: cur).  Returns whether cur's key is key. */
RM_INLINE bool hm_find(struct hm_set *s, struct hm_rec *h, uintptr_t *head, uint64_t key,
                       uintptr_t **pprev, struct hm_node **pcur, uintptr_t *pnext, const bool hp) {
retry:;
  uintptr_t *prev = head;
  struct hm_node *cur = (struct hm_node *)rm_atomic_load_acquire(prev); /* (L2) */
  for (;;) {
    if (!cur) {
      *pprev = prev;
      *pcur = NULL;
      *pnext = 0;
      return false;
    }
    hm_protect(h, 1, cur, hp);
    if (hp && rm_atomic_load_acquire(prev) != (uintptr_t)cur) goto retry;
    uintptr_t next = rm_atomic_load_acquire(&cur->next); /* (L2) */
    if (next & HM_MARK) {
      /* cur is deleted: help unlink it (L1); the winner retires it. */
      uintptr_t expect = (uintptr_t)cur;
      if (!rm_atomic_cas_seq_cst(prev, &expect, next & ~HM_MARK)) goto retry;
      hm_retire(s, h, cur);
      cur = (struct hm_node *)(next & ~HM_MARK);
      continue;
    }
    uint64_t ck = cur->key;
    if (hp && rm_atomic_load_acquire(prev) != (uintptr_t)cur) goto retry;
    if (ck >= key) {
      *pprev = prev;
      *pcur = cur;
      *pnext = next;
      return ck == key;
    }
    prev = &cur->next;
    hm_protect(h, 0, cur, hp); /* still protected by hp 1 while we copy it */
    cur = (struct hm_node *)next;
  }
}

RM_INLINE void hm_clear(struct hm_rec *h, const bool hp) {
  if (!hp) return;
  rm_atomic_store_release(&h->hp[0], NULL);
  rm_atomic_store_release(&h->hp[1], NULL);
}

RM_INLINE bool hm_contains_body(struct hm_set *s, struct hm_rec *h, uint64_t key, const bool hp) {
  uintptr_t *prev, next;
  struct hm_node *cur;
  bool found = hm_find(s, h, &s->heads[hm_bucket(s, key)], key, &prev, &cur, &next, hp);
  hm_clear(h, hp);
  return found;
}

RM_INLINE bool hm_insert_body(struct hm_set *s, struct hm_rec *h, uint64_t key, const bool hp) {
  struct hm_node *node = (struct hm_node *)malloc(sizeof *node);
  if (!node) abort(); /* a benchmark set: out of memory ends the run */
  node->key = key;
  uintptr_t *head = &s->heads[hm_bucket(s, key)];
  for (;;) {
    uintptr_t *prev, next;
    struct hm_node *cur;
    if (hm_find(s, h, head, key, &prev, &cur, &next, hp)) {
      hm_clear(h, hp);
      free(node);
      return false;
    }
    rm_atomic_store_relaxed(&node->next, (uintptr_t)cur);
    uintptr_t expect = (uintptr_t)cur;
    if (rm_atomic_cas_seq_cst(prev, &expect, (uintptr_t)node)) { /* (L1) */
      hm_clear(h, hp);
      return true;
    }
  }
}

RM_INLINE bool hm_remove_body(struct hm_set *s, struct hm_rec *h, uint64_t key, const bool hp) {
  uintptr_t *head = &s->heads[hm_bucket(s, key)];
  for (;;) {
    uintptr_t *prev, next;
    struct hm_node *cur;
    if (!hm_find(s, h, head, key, &prev, &cur, &next, hp)) {
      hm_clear(h, hp);
      return false;
    }
    /* Logical deletion: mark cur's next (the linearization point). */
    uintptr_t n = next;
    if (!rm_atomic_cas_seq_cst(&cur->next, &n, next | HM_MARK)) continue;
    /* Physical: unlink it ourselves, or leave it to the next traversal. */
    uintptr_t expect = (uintptr_t)cur;
    if (rm_atomic_cas_seq_cst(prev, &expect, next)) hm_retire(s, h, cur);
    else (void)hm_find(s, h, head, key, &prev, &cur, &next, hp);
    hm_clear(h, hp);
    return true;
  }
}

static void *hm_create(const struct rm_set_config *cfg, int hp) {
  struct hm_set *s = (struct hm_set *)calloc(1, sizeof *s);
  if (!s) return NULL;
  s->buckets = cfg->buckets ? cfg->buckets : 1;
  s->heads = (uintptr_t *)calloc(s->buckets, sizeof *s->heads);
  if (!s->heads) {
    free(s);
    return NULL;
  }
  s->hp = hp;
  return s;
}
static void *hm_create_leaky(const struct rm_set_config *cfg) { return hm_create(cfg, 0); }
static void *hm_create_hp(const struct rm_set_config *cfg) { return hm_create(cfg, 1); }

/* Nodes still in the lists (marked or not) and every retired node.  No
 * operation runs. */
static void hm_destroy(void *set) {
  struct hm_set *s = (struct hm_set *)set;
  for (size_t b = 0; b < s->buckets; b++) {
    struct hm_node *n = (struct hm_node *)(s->heads[b] & ~HM_MARK);
    while (n) {
      struct hm_node *next = (struct hm_node *)(n->next & ~HM_MARK);
      free(n);
      n = next;
    }
  }
  struct hm_rec *r = s->recs;
  while (r) {
    struct hm_rec *next = r->next;
    for (size_t i = 0; i < r->nretired; i++) free(r->retired[i]);
    free(r->retired);
    free(r);
    r = next;
  }
  free(s->heads);
  free(s);
}

/* A record for the calling thread: a free one, else a new one. */
static void *hm_thread_init(void *set) {
  struct hm_set *s = (struct hm_set *)set;
  for (struct hm_rec *r = rm_atomic_load_acquire(&s->recs); r; r = r->next) {
    uint32_t z = 0;
    if (!rm_atomic_load_relaxed(&r->in_use) && rm_atomic_cas_acq_rel(&r->in_use, &z, 1u)) return r;
  }
  struct hm_rec *r = (struct hm_rec *)aligned_alloc(RM_CACHE_SECTOR, sizeof *r);
  if (!r) abort();
  memset(r, 0, sizeof *r);
  r->in_use = 1;
  struct hm_rec *h = rm_atomic_load_relaxed(&s->recs);
  do r->next = h;
  while (!rm_atomic_cas_acq_rel(&s->recs, &h, r)); /* release: the fields above */
  rm_atomic_fetch_add_relaxed(&s->nrecs, (size_t)1);
  return r;
}

/* The record, with the nodes it could not free yet, goes to the next
 * thread that claims it (or to hm_destroy). */
static void hm_thread_fini(void *set, void *th) {
  struct hm_rec *h = (struct hm_rec *)th;
  struct hm_set *s = (struct hm_set *)set;
  if (s->hp && h->nretired) hm_scan(s, h);
  hm_clear(h, true);
  rm_atomic_store_release(&h->in_use, 0u);
}

static size_t hm_size(void *set) {
  struct hm_set *s = (struct hm_set *)set;
  size_t n = 0;
  for (size_t b = 0; b < s->buckets; b++)
    for (uintptr_t p = s->heads[b]; p; p = ((struct hm_node *)(p & ~HM_MARK))->next)
      if (!(((struct hm_node *)(p & ~HM_MARK))->next & HM_MARK)) n++;
  return n;
}

#define HM_OPS(SFX, HP)                                                                  \
  static bool hm_contains_##SFX(void *s, void *t, uint64_t k) {                          \
    return hm_contains_body((struct hm_set *)s, (struct hm_rec *)t, k, HP);              \
  }                                                                                      \
  static bool hm_insert_##SFX(void *s, void *t, uint64_t k) {                            \
    return hm_insert_body((struct hm_set *)s, (struct hm_rec *)t, k, HP);                \
  }                                                                                      \
  static bool hm_remove_##SFX(void *s, void *t, uint64_t k) {                            \
    return hm_remove_body((struct hm_set *)s, (struct hm_rec *)t, k, HP);                \
  }
HM_OPS(leaky, false)
HM_OPS(hp, true)

static const struct rm_set_ops rm_set_harris = {
    "harris",          hm_create_leaky,  hm_destroy,      hm_thread_init, hm_thread_fini,
    hm_contains_leaky, hm_insert_leaky,  hm_remove_leaky, hm_size,        NULL};
static const struct rm_set_ops rm_set_harris_hp = {
    "harris-hp",    hm_create_hp, hm_destroy,   hm_thread_init, hm_thread_fini,
    hm_contains_hp, hm_insert_hp, hm_remove_hp, hm_size,        NULL};

#endif
