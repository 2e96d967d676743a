/*
 * readmostly/rlu_citrus.h - the Citrus search tree on read-log-update (the
 * RLU paper's section 4.5, Listings 3 and 4): an integer set, header-only.
 *
 * SYNOPSIS
 *   #include <readmostly/rlu_citrus.h>
 *   struct rm_rlu_citrus *t = rm_rlu_citrus_create();   // NULL on ENOMEM
 *   rm_rlu_ctx *self = rm_rlu_thread_register();          // per thread
 *   int r = rm_rlu_citrus_insert(self, t, 42);    // 1 inserted, 0 present, -ENOMEM
 *   r = rm_rlu_citrus_remove(self, t, 42);        // 1 removed, 0 absent, -ENOMEM
 *   r = rm_rlu_citrus_contains(self, t, 42);      // 1 or 0
 *   long n = rm_rlu_citrus_walk(self, t, fn, arg); // in order, one snapshot
 *   rm_rlu_citrus_destroy(t);                     // no section may run
 *   // inside a section of your own: rm_rlu_citrus_insert_in / _remove_in
 *
 * DESCRIPTION
 *   The same unbalanced binary search tree as readmostly/rcu_citrus.h (a
 *   sentinel root with key INT64_MAX, the tree in its left child, every key
 *   in an internal node), written as the RLU paper rewrote it: nodes are
 *   RLU objects, lookups are one RLU section of dereferences, and an update
 *   is sequential code inside one section that locks every node it writes
 *   (rm_rlu_try_lock) before writing it.  There are no marks, tags,
 *   per-node locks, validation or manual copies: RLU gives the section a
 *   consistent view of the tree and applies the section's writes together.
 *
 *   insert() locks the parent of the empty slot and links a new node.
 *   remove() locks the node (curr) and its parent; with at most one child
 *   it links that child in curr's place; with two it locks the successor
 *   (leftmost node of the right subtree) and, when that is not curr's
 *   child, the successor's parent, and MOVES the successor into curr's
 *   place (the paper's Listing 4: the successor's parent adopts the
 *   successor's right child, the successor adopts curr's children, curr's
 *   parent points to the successor).  A lookup sees the tree before or
 *   after the whole move, never in between, so no grace period is needed
 *   for it (the RCU version must copy the successor and wait one).  curr is
 *   freed by rm_rlu_free() after the commit's grace period.
 *
 *   curr is locked although it is not written (Listing 4 omits this):
 *   RLU locks what a section writes, not what it reads (write skew,
 *   readmostly/rlu.h), and a concurrent insert under curr would otherwise
 *   commit a child of a node this section unlinks, losing that key.
 *
 *   Fine-grained flavor: a failed try_lock (EBUSY) aborts the section and
 *   the operation restarts.  Coarse-grained: the tree is created with
 *   rm_rlu_citrus_create_flavor(true), updates enter with
 *   rm_rlu_writer_lock() and never restart.  Deferral (rm_rlu_options.
 *   max_defer) needs nothing from the tree: a deferred update is visible to
 *   the updating thread at once and to others after its flush (see
 *   readmostly/rlu.h on the loss of linearizability).
 *
 *   walk(self, t, fn, arg) calls fn(key, arg) for every key in ascending
 *   order inside one section, so it sees one consistent set (a snapshot,
 *   unlike the RCU tree's walk); it stops early when fn returns non-zero.
 *
 *   The _ex variants take a counter (NULL: none) to which they add the
 *   number of objects they dereferenced: the denominator of the RLU paper's
 *   "read copy ratio" (rm_rlu_stats.steals over object reads), which RLU
 *   does not count itself (dereferences are its fast path).
 *
 *   Keys are int64_t; INT64_MAX is reserved.
 *
 * RETURN VALUES
 *   insert, remove: 1 done, 0 nothing to do, -ENOMEM (the set is unchanged).
 *   The _in variants: 1, 0, -EBUSY (conflict: rm_rlu_abort() and retry) or
 *   -ENOMEM (abort).  contains: 1 or 0.  walk: keys visited, or -ENOMEM.
 *
 * COSTS
 *   40 bytes per node (24 and RLU's 16-byte header); a lookup: one section
 *   and one dereference per level; an update: one commit (a synchronize,
 *   or none when deferred) and a copy of each locked node.
 */
#ifndef READMOSTLY_RLU_CITRUS_H
#define READMOSTLY_RLU_CITRUS_H

#include <readmostly/rlu.h>

#include <stdint.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rm_rlu_citrus_node {
  int64_t key;
  struct rm_rlu_citrus_node *child[2]; /* [0] smaller keys, [1] larger */
};

struct rm_rlu_citrus {
  struct rm_rlu_citrus_node *root; /* sentinel, key INT64_MAX; never changes */
  bool coarse;                     /* updates take the writer lock */
};

static inline struct rm_rlu_citrus *rm_rlu_citrus_create_flavor(bool coarse) {
  struct rm_rlu_citrus *t = (struct rm_rlu_citrus *)malloc(sizeof *t);
  struct rm_rlu_citrus_node *r = (struct rm_rlu_citrus_node *)rm_rlu_alloc(sizeof *r);
  if (t == NULL || r == NULL) {
    free(t);
    if (r != NULL) rm_rlu_free(NULL, r);
    return NULL;
  }
  r->key = INT64_MAX;
  r->child[0] = r->child[1] = NULL;
  t->root = r;
  t->coarse = coarse;
  return t;
}
static inline struct rm_rlu_citrus *rm_rlu_citrus_create(void) {
  return rm_rlu_citrus_create_flavor(false);
}

/* Free every node.  No section may be running on the tree (deferred
 * sections flushed: every thread synced or unregistered). */
static inline void rm_rlu_citrus_destroy(struct rm_rlu_citrus *t) {
  size_t cap = 64, n = 0;
  struct rm_rlu_citrus_node **st = (struct rm_rlu_citrus_node **)malloc(cap * sizeof *st);
  struct rm_rlu_citrus_node *x = t->root;
  while (x != NULL || n > 0) {
    if (x == NULL) x = st[--n];
    struct rm_rlu_citrus_node *l = x->child[0], *r = x->child[1];
    rm_rlu_free(NULL, x);
    if (r != NULL) {
      if (n == cap) {
        struct rm_rlu_citrus_node **s2 =
            (struct rm_rlu_citrus_node **)realloc(st, 2 * cap * sizeof *st);
        if (s2 == NULL) abort();
        st = s2;
        cap *= 2;
      }
      st[n++] = r;
    }
    x = l;
  }
  free(st);
  free(t);
}

/* Inside a section: the node holding key (or NULL), and the parent of that
 * node or of the empty slot where key belongs, with the side.  Every
 * pointer goes through rm_rlu_dereference: our copy where we locked a
 * node, a committing writer's copy where RLU says to steal it. */
RM_INLINE struct rm_rlu_citrus_node *rm_rlu_citrus_find_(rm_rlu_ctx *self, struct rm_rlu_citrus *t,
                                                         int64_t key,
                                                         struct rm_rlu_citrus_node **pred,
                                                         int *dir, uint64_t *derefs) {
  struct rm_rlu_citrus_node *p = RM_RLU_DEREF(self, t->root);
  int d = 0;
  struct rm_rlu_citrus_node *c = RM_RLU_DEREF(self, p->child[0]);
  uint64_t n = 2;
  while (c != NULL && c->key != key) {
    p = c;
    d = key > c->key;
    c = RM_RLU_DEREF(self, c->child[d]);
    n++;
  }
  if (derefs != NULL) *derefs += n;
  *pred = p;
  *dir = d;
  return c;
}

static inline int rm_rlu_citrus_contains_ex(rm_rlu_ctx *self, struct rm_rlu_citrus *t,
                                            int64_t key, uint64_t *derefs) {
  struct rm_rlu_citrus_node *pred;
  int dir;
  rm_rlu_reader_lock(self);
  int found = rm_rlu_citrus_find_(self, t, key, &pred, &dir, derefs) != NULL;
  rm_rlu_reader_unlock(self);
  return found;
}
static inline int rm_rlu_citrus_contains(rm_rlu_ctx *self, struct rm_rlu_citrus *t, int64_t key) {
  return rm_rlu_citrus_contains_ex(self, t, key, NULL);
}

/* ---- the update steps, inside the caller's section ----------------------------- */

static inline int rm_rlu_citrus_insert_in(rm_rlu_ctx *self, struct rm_rlu_citrus *t, int64_t key,
                                          uint64_t *derefs) {
  struct rm_rlu_citrus_node *prev;
  int dir;
  if (rm_rlu_citrus_find_(self, t, key, &prev, &dir, derefs) != NULL) return 0;
  int r = RM_RLU_TRY_LOCK(self, &prev);
  if (r != 0) return -r;
  struct rm_rlu_citrus_node *n = (struct rm_rlu_citrus_node *)rm_rlu_alloc(sizeof *n);
  if (n == NULL) return -ENOMEM;
  n->key = key;
  n->child[0] = n->child[1] = NULL;
  rm_rlu_assign_ptr(&prev->child[dir], n);
  return 1;
}

static inline int rm_rlu_citrus_remove_in(rm_rlu_ctx *self, struct rm_rlu_citrus *t, int64_t key,
                                          uint64_t *derefs) {
  struct rm_rlu_citrus_node *pred;
  int dir;
  struct rm_rlu_citrus_node *curr = rm_rlu_citrus_find_(self, t, key, &pred, &dir, derefs);
  if (curr == NULL) return 0;
  int r = RM_RLU_TRY_LOCK(self, &pred);
  if (r == 0) r = RM_RLU_TRY_LOCK(self, &curr);
  if (r != 0) return -r;
  struct rm_rlu_citrus_node *c0 = RM_RLU_DEREF(self, curr->child[0]);
  struct rm_rlu_citrus_node *c1 = RM_RLU_DEREF(self, curr->child[1]);
  uint64_t n = 2;
  if (c0 == NULL || c1 == NULL) {
    rm_rlu_assign_ptr(&pred->child[dir], c0 != NULL ? c0 : c1);
  } else {
    struct rm_rlu_citrus_node *parent = curr, *succ = c1;
    struct rm_rlu_citrus_node *next = RM_RLU_DEREF(self, succ->child[0]);
    n++;
    while (next != NULL) {
      parent = succ;
      succ = next;
      next = RM_RLU_DEREF(self, next->child[0]);
      n++;
    }
    if (parent != curr) r = RM_RLU_TRY_LOCK(self, &parent);
    if (r == 0) r = RM_RLU_TRY_LOCK(self, &succ);
    if (r != 0) {
      if (derefs != NULL) *derefs += n;
      return -r;
    }
    if (parent != curr) {
      rm_rlu_assign_ptr(&parent->child[0], succ->child[1]);
      rm_rlu_assign_ptr(&succ->child[1], c1);
    }
    rm_rlu_assign_ptr(&succ->child[0], c0);
    rm_rlu_assign_ptr(&pred->child[dir], succ);
  }
  if (derefs != NULL) *derefs += n;
  r = rm_rlu_free(self, curr);
  return r != 0 ? -r : 1;
}

static inline void rm_rlu_citrus_enter_update_(rm_rlu_ctx *self, struct rm_rlu_citrus *t) {
  if (t->coarse) rm_rlu_writer_lock(self);
  else rm_rlu_reader_lock(self);
}

static inline int rm_rlu_citrus_insert_ex(rm_rlu_ctx *self, struct rm_rlu_citrus *t, int64_t key,
                                          uint64_t *derefs) {
  for (;;) {
    rm_rlu_citrus_enter_update_(self, t);
    int r = rm_rlu_citrus_insert_in(self, t, key, derefs);
    if (r >= 0) {
      rm_rlu_reader_unlock(self);
      return r;
    }
    rm_rlu_abort(self);
    if (r == -ENOMEM) return r;
  }
}
static inline int rm_rlu_citrus_insert(rm_rlu_ctx *self, struct rm_rlu_citrus *t, int64_t key) {
  return rm_rlu_citrus_insert_ex(self, t, key, NULL);
}

static inline int rm_rlu_citrus_remove_ex(rm_rlu_ctx *self, struct rm_rlu_citrus *t, int64_t key,
                                          uint64_t *derefs) {
  for (;;) {
    rm_rlu_citrus_enter_update_(self, t);
    int r = rm_rlu_citrus_remove_in(self, t, key, derefs);
    if (r >= 0) {
      rm_rlu_reader_unlock(self);
      return r;
    }
    rm_rlu_abort(self);
    if (r == -ENOMEM) return r;
  }
}
static inline int rm_rlu_citrus_remove(rm_rlu_ctx *self, struct rm_rlu_citrus *t, int64_t key) {
  return rm_rlu_citrus_remove_ex(self, t, key, NULL);
}

/* ---- in-order walk -------------------------------------------------------------- */

static inline long rm_rlu_citrus_walk(rm_rlu_ctx *self, struct rm_rlu_citrus *t,
                                      int (*fn)(int64_t key, void *arg), void *arg) {
  size_t cap = 64, n = 0;
  struct rm_rlu_citrus_node **st = (struct rm_rlu_citrus_node **)malloc(cap * sizeof *st);
  if (st == NULL) return -ENOMEM;
  long count = 0;
  rm_rlu_reader_lock(self);
  struct rm_rlu_citrus_node *root = RM_RLU_DEREF(self, t->root);
  struct rm_rlu_citrus_node *x = RM_RLU_DEREF(self, root->child[0]);
  for (;;) {
    while (x != NULL) {
      if (n == cap) {
        struct rm_rlu_citrus_node **s2 =
            (struct rm_rlu_citrus_node **)realloc(st, 2 * cap * sizeof *st);
        if (s2 == NULL) {
          count = -ENOMEM;
          goto out;
        }
        st = s2;
        cap *= 2;
      }
      st[n++] = x;
      x = RM_RLU_DEREF(self, x->child[0]);
    }
    if (n == 0) break;
    x = st[--n];
    count++;
    if (fn(x->key, arg) != 0) break;
    x = RM_RLU_DEREF(self, x->child[1]);
  }
out:
  rm_rlu_reader_unlock(self);
  free(st);
  return count;
}

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_RLU_CITRUS_H */
