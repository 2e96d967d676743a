/*
 * readmostly/rlu_hash.h - the RLU paper's hash table (section 4.2, Fig. 5):
 * a fixed array of buckets, each an RLU sorted list (readmostly/rlu_list.h),
 * header-only.
 *
 * SYNOPSIS
 *   #include <readmostly/rlu_hash.h>
 *   struct rm_rlu_hash *h = rm_rlu_hash_create(1000, false); // NULL on ENOMEM
 *   rm_rlu_ctx *self = rm_rlu_thread_register();
 *   int r = rm_rlu_hash_add(self, h, 42);            // 1 added, 0 present, -ENOMEM
 *   r = rm_rlu_hash_remove(self, h, 42);             // 1 removed, 0 absent, -ENOMEM
 *   r = rm_rlu_hash_contains(self, h, 42);           // 1 or 0
 *   size_t n = rm_rlu_hash_count(self, h);           // one section: a snapshot
 *   n = rm_rlu_hash_size(h);                         // no section may run
 *   rm_rlu_hash_destroy(h);                          // no section may run
 *
 *   // several steps in one section of your own commit together:
 *   restart:
 *     rm_rlu_reader_lock(self);
 *     r = rm_rlu_hash_remove_in(self, h, 7);
 *     if (r == 1) r = rm_rlu_hash_add_in(self, h, 8);
 *     if (r < 0) { rm_rlu_abort(self); if (r == -EBUSY) goto restart; ... }
 *     rm_rlu_reader_unlock(self);                    // 7 gone and 8 there, or neither
 *
 * DESCRIPTION
 *   A key selects its bucket by Fibonacci hashing of its bits
 *   (rm_rlu_hash_bucket: the key times 2^64 / phi, bits 20 and up, modulo
 *   the number of buckets), so consecutive keys spread over the buckets.
 *   Each bucket is a sorted list with its own two sentinel nodes, exactly
 *   the list of rlu_list.h: a lookup is one section of dereferences down
 *   one bucket, an update locks the predecessor and successor in that
 *   bucket (rm_rlu_try_lock) and changes their copies.  Updates of
 *   different buckets therefore never conflict under the fine-grained
 *   flavor: the table's concurrency among writers comes from RLU's
 *   per-object locks, where an RCU table needs a lock per bucket.
 *
 *   rm_rlu_hash_create(nbuckets, true) makes updates enter with
 *   rm_rlu_writer_lock() (the coarse-grained flavor, for a process
 *   initialized with RM_RLU_COARSE: one writer at a time in the whole
 *   process, no aborts); false is the fine-grained flavor.
 *
 *   The _in functions run inside a section the caller opened (entered with
 *   rm_rlu_writer_lock() under the coarse flavor); several of them in one
 *   section commit together, and a section sees all of another's steps or
 *   none (RLU's atomicity across objects, here across buckets).
 *
 *   rm_rlu_hash_count() counts every bucket inside ONE section: the result
 *   is the table's size at one instant, even while writers run.  Under
 *   deferral (rm_rlu_options.max_defer > 1) other threads' deferred updates
 *   are not yet visible to it (see readmostly/rlu.h, Deferral).
 *   rm_rlu_hash_size() reads the nodes without RLU: no section may run,
 *   and no deferred section may be pending.
 *
 *   Keys are int64_t; INT64_MIN and INT64_MAX are reserved (the sentinels).
 *   The number of buckets is fixed at creation (the paper's resizable table
 *   is not this one).
 *
 * RETURN VALUES
 *   rm_rlu_hash_create() returns the table or NULL (out of memory; nothing
 *   is leaked).  add and remove return 1 (done), 0 (already present /
 *   absent) or -ENOMEM (the write-log or an allocation failed; nothing of
 *   the operation is applied).  The _in functions also return -EBUSY (a
 *   conflict under the fine-grained flavor: abort the section and retry).
 *   contains returns 1 or 0.
 *
 * FOOTPRINT
 *   Per bucket: a struct rm_rlu_list (16 bytes) and two sentinel objects
 *   (16 bytes each behind a 16-byte object header).  Per key: one node of
 *   16 bytes behind its 16-byte header.
 */
#ifndef READMOSTLY_RLU_HASH_H
#define READMOSTLY_RLU_HASH_H

#include <readmostly/rlu.h>
#include <readmostly/rlu_list.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rm_rlu_hash {
  size_t nbuckets;
  struct rm_rlu_list *b; /* buckets[i]: the list of keys hashing to i */
};

static inline size_t rm_rlu_hash_bucket(const struct rm_rlu_hash *h, int64_t key) {
  if (h->nbuckets == 1) return 0;
  return (size_t)((((uint64_t)key * UINT64_C(0x9E3779B97F4A7C15)) >> 20) % h->nbuckets);
}

/* Free every node of the first n buckets, then the table. */
static inline void rm_rlu_hash_free_(struct rm_rlu_hash *h, size_t n) {
  for (size_t i = 0; i < n; i++) {
    struct rm_rlu_node *p = h->b[i].head;
    while (p != NULL) {
      struct rm_rlu_node *nx = p->next;
      rm_rlu_free(NULL, p);
      p = nx;
    }
  }
  free(h->b);
  free(h);
}

static inline struct rm_rlu_hash *rm_rlu_hash_create(size_t nbuckets, bool coarse) {
  if (nbuckets == 0) nbuckets = 1;
  struct rm_rlu_hash *h = (struct rm_rlu_hash *)malloc(sizeof *h);
  if (h == NULL) return NULL;
  h->nbuckets = nbuckets;
  h->b = (struct rm_rlu_list *)calloc(nbuckets, sizeof *h->b);
  if (h->b == NULL) {
    free(h);
    return NULL;
  }
  /* Each bucket as rm_rlu_list_create_flavor() builds a list: head sentinel
   * (INT64_MIN) -> tail sentinel (INT64_MAX), in place. */
  for (size_t i = 0; i < nbuckets; i++) {
    struct rm_rlu_node *hd = (struct rm_rlu_node *)rm_rlu_alloc(sizeof *hd);
    struct rm_rlu_node *tl = (struct rm_rlu_node *)rm_rlu_alloc(sizeof *tl);
    if (hd == NULL || tl == NULL) {
      if (hd) rm_rlu_free(NULL, hd);
      if (tl) rm_rlu_free(NULL, tl);
      rm_rlu_hash_free_(h, i);
      return NULL;
    }
    tl->key = INT64_MAX;
    tl->next = NULL;
    hd->key = INT64_MIN;
    hd->next = tl;
    h->b[i].head = hd;
    h->b[i].coarse = coarse;
  }
  return h;
}

/* Free every node and the table.  No section may be running on it, and no
 * deferred section may still hold its nodes (sync or unregister first). */
static inline void rm_rlu_hash_destroy(struct rm_rlu_hash *h) { rm_rlu_hash_free_(h, h->nbuckets); }

static inline struct rm_rlu_list *rm_rlu_hash_list(struct rm_rlu_hash *h, int64_t key) {
  return &h->b[rm_rlu_hash_bucket(h, key)];
}

static inline int rm_rlu_hash_contains(rm_rlu_ctx *self, struct rm_rlu_hash *h, int64_t key) {
  return rm_rlu_list_contains(self, rm_rlu_hash_list(h, key), key);
}
static inline int rm_rlu_hash_add(rm_rlu_ctx *self, struct rm_rlu_hash *h, int64_t key) {
  return rm_rlu_list_add(self, rm_rlu_hash_list(h, key), key);
}
static inline int rm_rlu_hash_remove(rm_rlu_ctx *self, struct rm_rlu_hash *h, int64_t key) {
  return rm_rlu_list_remove(self, rm_rlu_hash_list(h, key), key);
}

/* Inside the caller's section. */
static inline int rm_rlu_hash_contains_in(rm_rlu_ctx *self, struct rm_rlu_hash *h, int64_t key) {
  struct rm_rlu_node *prev, *next;
  rm_rlu_list_find_(self, rm_rlu_hash_list(h, key), key, &prev, &next);
  return next->key == key;
}
static inline int rm_rlu_hash_add_in(rm_rlu_ctx *self, struct rm_rlu_hash *h, int64_t key) {
  return rm_rlu_list_add_in(self, rm_rlu_hash_list(h, key), key);
}
static inline int rm_rlu_hash_remove_in(rm_rlu_ctx *self, struct rm_rlu_hash *h, int64_t key) {
  return rm_rlu_list_remove_in(self, rm_rlu_hash_list(h, key), key);
}

/* The number of keys, counted in one section (a snapshot). */
static inline size_t rm_rlu_hash_count(rm_rlu_ctx *self, struct rm_rlu_hash *h) {
  size_t n = 0;
  rm_rlu_reader_lock(self);
  for (size_t i = 0; i < h->nbuckets; i++) {
    struct rm_rlu_node *p = RM_RLU_DEREF(self, h->b[i].head);
    p = RM_RLU_DEREF(self, p->next);
    while (p->key != INT64_MAX) {
      n++;
      p = RM_RLU_DEREF(self, p->next);
    }
  }
  rm_rlu_reader_unlock(self);
  return n;
}

/* The number of keys, read without RLU: no section may run and no deferred
 * section may be pending. */
static inline size_t rm_rlu_hash_size(const struct rm_rlu_hash *h) {
  size_t n = 0;
  for (size_t i = 0; i < h->nbuckets; i++)
    for (const struct rm_rlu_node *p = h->b[i].head->next; p->key != INT64_MAX; p = p->next) n++;
  return n;
}

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_RLU_HASH_H */
