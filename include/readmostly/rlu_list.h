/*
 * readmostly/rlu_list.h - the RLU paper's sorted linked list (section 4.1,
 * Listing 2): an integer set on read-log-update, header-only.
 *
 * SYNOPSIS
 *   #include <readmostly/rlu_list.h>
 *   struct rm_rlu_list *l = rm_rlu_list_create();    // NULL on ENOMEM
 *   int r = rm_rlu_list_add(self, l, 42);            // 1 added, 0 present, -ENOMEM
 *   r = rm_rlu_list_remove(self, l, 42);             // 1 removed, 0 absent, -ENOMEM
 *   r = rm_rlu_list_contains(self, l, 42);           // 1 or 0
 *   rm_rlu_list_destroy(l);                          // no section may run
 *   // inside a section of your own: rm_rlu_list_add_in / rm_rlu_list_remove_in
 *
 * DESCRIPTION
 *   Nodes are RLU objects in ascending key order between two sentinels
 *   (keys INT64_MIN and INT64_MAX, so every search stops without a NULL
 *   check).  Lookups are one section of dereferences.  An update walks the
 *   list in a section, locks the predecessor and the successor with
 *   rm_rlu_try_lock() and changes pointers in the copies; removal also frees
 *   the removed node after the commit's grace period.  Under the
 *   fine-grained flavor a failed try_lock aborts the section and the
 *   operation restarts; under the coarse-grained flavor updates enter with
 *   rm_rlu_writer_lock() and never restart.  No extra validation is needed
 *   after locking: both nodes are read in the same section that locks them,
 *   and RLU makes the section's view consistent (the paper's point against
 *   fine-grained locking under RCU).
 *
 *   Keys are int64_t; INT64_MIN and INT64_MAX are reserved.
 */
#ifndef READMOSTLY_RLU_LIST_H
#define READMOSTLY_RLU_LIST_H

#include <readmostly/rlu.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rm_rlu_node {
  int64_t key;
  struct rm_rlu_node *next;
};

struct rm_rlu_list {
  struct rm_rlu_node *head; /* sentinel INT64_MIN; never changes */
  bool coarse;              /* updates take the writer lock */
};

static inline struct rm_rlu_list *rm_rlu_list_create_flavor(bool coarse) {
  struct rm_rlu_list *l = (struct rm_rlu_list *)malloc(sizeof *l);
  struct rm_rlu_node *h = (struct rm_rlu_node *)rm_rlu_alloc(sizeof *h);
  struct rm_rlu_node *t = (struct rm_rlu_node *)rm_rlu_alloc(sizeof *t);
  if (l == NULL || h == NULL || t == NULL) {
    free(l);
    if (h) rm_rlu_free(NULL, h);
    if (t) rm_rlu_free(NULL, t);
    return NULL;
  }
  t->key = INT64_MAX;
  t->next = NULL;
  h->key = INT64_MIN;
  h->next = t;
  l->head = h;
  l->coarse = coarse;
  return l;
}
static inline struct rm_rlu_list *rm_rlu_list_create(void) { return rm_rlu_list_create_flavor(false); }

/* Free every node.  No section may be running on the list. */
static inline void rm_rlu_list_destroy(struct rm_rlu_list *l) {
  struct rm_rlu_node *n = l->head;
  while (n != NULL) {
    struct rm_rlu_node *nx = n->next;
    rm_rlu_free(NULL, n);
    n = nx;
  }
  free(l);
}

static inline int rm_rlu_list_contains(rm_rlu_ctx *self, struct rm_rlu_list *l, int64_t key) {
  rm_rlu_reader_lock(self);
  struct rm_rlu_node *n = RM_RLU_DEREF(self, l->head);
  while (n->key < key) n = RM_RLU_DEREF(self, n->next);
  int found = n->key == key;
  rm_rlu_reader_unlock(self);
  return found;
}

/* Inside a section: the first node with key >= key and its predecessor
 * (our own copies where we have locked nodes). */
static inline void rm_rlu_list_find_(rm_rlu_ctx *self, struct rm_rlu_list *l, int64_t key,
                                     struct rm_rlu_node **pprev, struct rm_rlu_node **pnext) {
  struct rm_rlu_node *prev = RM_RLU_DEREF(self, l->head);
  struct rm_rlu_node *next = RM_RLU_DEREF(self, prev->next);
  while (next->key < key) {
    prev = next;
    next = RM_RLU_DEREF(self, prev->next);
  }
  *pprev = prev;
  *pnext = next;
}

/*
 * The update steps alone, for a section the caller opened (several steps in
 * one section commit together: the torture test moves a key this way).
 * Return 1 (done), 0 (present / absent), -EBUSY (conflict: abort the
 * section and retry) or -ENOMEM (abort).
 */
static inline int rm_rlu_list_add_in(rm_rlu_ctx *self, struct rm_rlu_list *l, int64_t key) {
  struct rm_rlu_node *prev, *next;
  rm_rlu_list_find_(self, l, key, &prev, &next);
  if (next->key == key) return 0;
  int r = RM_RLU_TRY_LOCK(self, &prev);
  if (r == 0) r = RM_RLU_TRY_LOCK(self, &next);
  if (r != 0) return -r;
  struct rm_rlu_node *n = (struct rm_rlu_node *)rm_rlu_alloc(sizeof *n);
  if (n == NULL) return -ENOMEM;
  n->key = key;
  rm_rlu_assign_ptr(&n->next, next);
  rm_rlu_assign_ptr(&prev->next, n);
  return 1;
}

static inline int rm_rlu_list_remove_in(rm_rlu_ctx *self, struct rm_rlu_list *l, int64_t key) {
  struct rm_rlu_node *prev, *next;
  rm_rlu_list_find_(self, l, key, &prev, &next);
  if (next->key != key) return 0;
  int r = RM_RLU_TRY_LOCK(self, &prev);
  if (r == 0) r = RM_RLU_TRY_LOCK(self, &next);
  if (r == 0) r = rm_rlu_free(self, next);
  if (r != 0) return -r;
  rm_rlu_assign_ptr(&prev->next, RM_RLU_DEREF(self, next->next));
  return 1;
}

static inline void rm_rlu_list_enter_update_(rm_rlu_ctx *self, struct rm_rlu_list *l) {
  if (l->coarse) rm_rlu_writer_lock(self);
  else rm_rlu_reader_lock(self);
}

static inline int rm_rlu_list_add(rm_rlu_ctx *self, struct rm_rlu_list *l, int64_t key) {
  for (;;) {
    rm_rlu_list_enter_update_(self, l);
    int r = rm_rlu_list_add_in(self, l, key);
    if (r >= 0) {
      rm_rlu_reader_unlock(self);
      return r;
    }
    rm_rlu_abort(self);
    if (r == -ENOMEM) return r;
  }
}

static inline int rm_rlu_list_remove(rm_rlu_ctx *self, struct rm_rlu_list *l, int64_t key) {
  for (;;) {
    rm_rlu_list_enter_update_(self, l);
    int r = rm_rlu_list_remove_in(self, l, key);
    if (r >= 0) {
      rm_rlu_reader_unlock(self);
      return r;
    }
    rm_rlu_abort(self);
    if (r == -ENOMEM) return r;
  }
}

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_RLU_LIST_H */
