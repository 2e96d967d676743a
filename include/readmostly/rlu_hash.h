/*
 * readmostly/rlu_hash.h - the RLU paper's hash table (section 4.2): a fixed
 * array of buckets, each a sorted list of readmostly/rlu_list.h.
 *
 * SYNOPSIS
 *   #include <readmostly/rlu_hash.h>
 *   struct rm_rlu_hash *h = rm_rlu_hash_create(1000, false); // NULL on ENOMEM
 *   int r = rm_rlu_hash_add(self, h, 42);       // 1 added, 0 present, -ENOMEM
 *   r = rm_rlu_hash_remove(self, h, 42);        // 1 removed, 0 absent, -ENOMEM
 *   r = rm_rlu_hash_contains(self, h, 42);      // 1 or 0
 *   size_t n = rm_rlu_hash_size(h);             // no section may run
 *   rm_rlu_hash_destroy(h);                     // no section may run
 *
 * DESCRIPTION
 *   A key goes to bucket key mod nbuckets (keys are int64_t; INT64_MIN and
 *   INT64_MAX are reserved, negative keys are allowed).  Every operation is
 *   one section on one bucket's list, with that list's rules: fine-grained
 *   updates lock two nodes and retry on conflict, coarse-grained updates
 *   (coarse = true, for a process initialized with RM_RLU_COARSE) take the
 *   one writer lock, so they are serialized across buckets.  The table does
 *   not resize.
 */
#ifndef READMOSTLY_RLU_HASH_H
#define READMOSTLY_RLU_HASH_H

#include <readmostly/rlu_list.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rm_rlu_hash {
  size_t nbuckets;
  struct rm_rlu_list **bucket;
};

static inline void rm_rlu_hash_destroy(struct rm_rlu_hash *h) {
  for (size_t i = 0; i < h->nbuckets; i++)
    if (h->bucket[i] != NULL) rm_rlu_list_destroy(h->bucket[i]);
  free(h->bucket);
  free(h);
}

static inline struct rm_rlu_hash *rm_rlu_hash_create(size_t nbuckets, bool coarse) {
  if (nbuckets == 0) nbuckets = 1;
  struct rm_rlu_hash *h = (struct rm_rlu_hash *)malloc(sizeof *h);
  if (h == NULL) return NULL;
  h->nbuckets = nbuckets;
  h->bucket = (struct rm_rlu_list **)calloc(nbuckets, sizeof *h->bucket);
  if (h->bucket == NULL) {
    free(h);
    return NULL;
  }
  for (size_t i = 0; i < nbuckets; i++) {
    h->bucket[i] = rm_rlu_list_create_flavor(coarse);
    if (h->bucket[i] == NULL) {
      rm_rlu_hash_destroy(h);
      return NULL;
    }
  }
  return h;
}

static inline struct rm_rlu_list *rm_rlu_hash_bucket_(struct rm_rlu_hash *h, int64_t key) {
  uint64_t k = (uint64_t)key;
  return h->bucket[k % h->nbuckets];
}

static inline int rm_rlu_hash_contains(rm_rlu_ctx *self, struct rm_rlu_hash *h, int64_t key) {
  return rm_rlu_list_contains(self, rm_rlu_hash_bucket_(h, key), key);
}
static inline int rm_rlu_hash_add(rm_rlu_ctx *self, struct rm_rlu_hash *h, int64_t key) {
  return rm_rlu_list_add(self, rm_rlu_hash_bucket_(h, key), key);
}
static inline int rm_rlu_hash_remove(rm_rlu_ctx *self, struct rm_rlu_hash *h, int64_t key) {
  return rm_rlu_list_remove(self, rm_rlu_hash_bucket_(h, key), key);
}

/* Keys in the table, read without RLU: no section may run. */
static inline size_t rm_rlu_hash_size(const struct rm_rlu_hash *h) {
  size_t n = 0;
  for (size_t i = 0; i < h->nbuckets; i++)
    for (struct rm_rlu_node *x = h->bucket[i]->head->next; x->key != INT64_MAX; x = x->next) n++;
  return n;
}

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_RLU_HASH_H */
