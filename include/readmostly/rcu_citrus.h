/*
 * readmostly/rcu_citrus.h - the Citrus search tree on FCP-RCU: an integer
 * set whose lookups take no lock, header-only.
 *
 * SYNOPSIS
 *   #include <readmostly/rcu_citrus.h>
 *   struct rm_rcu_citrus *t = rm_rcu_citrus_create();  // NULL on ENOMEM
 *   int r = rm_rcu_citrus_insert(t, 42);     // 1 inserted, 0 present, -ENOMEM
 *   r = rm_rcu_citrus_remove(t, 42);         // 1 removed, 0 absent, -ENOMEM
 *   r = rm_rcu_citrus_contains(t, 42);       // 1 or 0
 *   long n = rm_rcu_citrus_walk(t, fn, arg); // in order; keys visited
 *   rm_rcu_citrus_destroy(t);                // no operation may run
 *
 * DESCRIPTION
 *   Citrus (Arbel and Attiya, "Concurrent updates with RCU: search tree as
 *   an example", PODC 2014) is an unbalanced binary search tree whose
 *   lookups are plain RCU read sections and whose updates take fine-grained
 *   per-node locks.  Every key lives in an internal node; a sentinel root
 *   (key INT64_MAX, reserved) holds the tree in its left child.
 *
 *   contains() walks from the root inside one rm_rcu_read_lock() section,
 *   with no lock, no store and no retry.
 *
 *   insert() walks the same way to the empty child slot where the key
 *   belongs (prev, dir), reads prev's tag for that slot, locks prev and
 *   validates: prev is not marked (still in the tree), its child dir is
 *   still empty and its tag unchanged.  It then links a new node there.
 *
 *   remove() walks to the node (curr) and its parent (pred), locks both and
 *   validates that neither is marked and pred still points to curr.  With
 *   at most one child, curr is marked and pred's pointer is swung to that
 *   child.  With two, the successor succ (leftmost node of the right
 *   subtree) and its parent are found and locked and validated (unmarked,
 *   linked, succ has no left child); then the heart of Citrus:
 *     1. a NEW node with succ's key and curr's two children, locked, is
 *        linked in curr's place (curr marked): lookups of succ's key that
 *        start now find it at the top;
 *     2. rm_rcu_synchronize(): every lookup that started before step 1 and
 *        may be on its way down to the old succ finishes;
 *     3. the old succ (marked) is unlinked from its parent.
 *   Without step 2 a lookup for succ's key that passed curr before step 1
 *   could reach succ's old place after step 3 and miss a key that was in
 *   the set throughout.  Removed nodes are freed after a grace period:
 *   curr at once after step 2 (it was unlinked before it), the others
 *   through rm_rcu_call().
 *
 *   Tags.  Each node counts, per child slot, the times the slot became
 *   empty.  An insert that read an empty slot and its tag, and finds after
 *   locking the same tag and an empty slot, knows the slot was not filled
 *   and emptied again meanwhile (a two-child removal can empty a slot whose
 *   key range it has narrowed: succ's key moved above it).
 *
 *   Locks.  Each node has a spinlock word.  Writers take their locks while
 *   still inside their read section, with bounded try-locks: a node seen in
 *   the section cannot be freed before the section ends, so the lock word
 *   is valid memory (the paper's writers lock after leaving the section and
 *   so must never free nodes, or free them by other means).  A writer that
 *   cannot get a lock releases the locks it holds, leaves the section,
 *   backs off and starts again; it never waits for a lock inside a section,
 *   which could deadlock with the holder's rm_rcu_synchronize().  Locks are
 *   held across that synchronize (step 2), outside any read section.
 *
 *   Keys are int64_t; INT64_MAX is reserved.  Updates must not be called
 *   inside an RCU read section (remove may call rm_rcu_synchronize()).
 *   contains() and walk() may be.  The calling thread is registered with
 *   RCU by its first read section (readmostly/rcu.h).
 *
 *   walk(t, fn, arg) calls fn(key, arg) for keys in strictly ascending
 *   order, inside one read section, and stops early when fn returns
 *   non-zero.  It is not a snapshot: a key inserted or removed during the
 *   walk may or may not be seen; a key present throughout is seen once.
 *   The walk skips any key not above the last one it reported: concurrent
 *   updates can show it a key twice (a two-child removal's successor, at
 *   its new and its old place) or a removed key followed by a smaller one
 *   inserted after the removal into the range the removal widened.
 *
 *   Design, ordering and why each step is safe: docs/citrus.md.
 *
 * RETURN VALUES
 *   insert, remove: 1 done, 0 nothing to do (present / absent), -ENOMEM (a
 *   node could not be allocated; the set is unchanged).  contains: 1 or 0.
 *   walk: the number of keys reported, or -ENOMEM (its stack).
 *
 * COSTS
 *   56 bytes per node.  A lookup: one read section and one acquire load
 *   per level.  An update: one or two locks; a two-child removal: up to five
 *   locks and one grace period.
 */
#ifndef READMOSTLY_RCU_CITRUS_H
#define READMOSTLY_RCU_CITRUS_H

#include <readmostly/rcu.h>

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rm_rcu_citrus_node {
  int64_t key;                           /* set before publication, never changed */
  struct rm_rcu_citrus_node *child[2];   /* [0] smaller keys, [1] larger */
  uint32_t lock;                         /* 0 free, 1 held */
  uint32_t marked;                       /* 1: no longer in the tree (under lock) */
  uint32_t tag[2];                       /* times child[i] became NULL */
  struct rm_rcu_head rcu;                /* deferred free */
};

struct rm_rcu_citrus {
  struct rm_rcu_citrus_node *root; /* sentinel, key INT64_MAX; tree in child[0] */
};

/* Try-lock rounds inside a read section before backing off outside it. */
#define RM_RCU_CITRUS_SPINS 64u

static inline struct rm_rcu_citrus_node *rm_rcu_citrus_node_new_(int64_t key, uint32_t locked) {
  struct rm_rcu_citrus_node *n = (struct rm_rcu_citrus_node *)calloc(1, sizeof *n);
  if (n != NULL) {
    n->key = key;
    n->lock = locked;
  }
  return n;
}

static inline struct rm_rcu_citrus *rm_rcu_citrus_create(void) {
  struct rm_rcu_citrus *t = (struct rm_rcu_citrus *)malloc(sizeof *t);
  struct rm_rcu_citrus_node *r = rm_rcu_citrus_node_new_(INT64_MAX, 0);
  if (t == NULL || r == NULL) {
    free(t);
    free(r);
    return NULL;
  }
  t->root = r;
  return t;
}

/* Free every node still linked.  No operation may run on the tree; nodes
 * already removed are freed by their pending rm_rcu_call() callbacks
 * (rm_rcu_barrier() waits for those). */
static inline void rm_rcu_citrus_destroy(struct rm_rcu_citrus *t) {
  size_t cap = 64, n = 0;
  struct rm_rcu_citrus_node **st =
      (struct rm_rcu_citrus_node **)malloc(cap * sizeof *st);
  struct rm_rcu_citrus_node *x = t->root;
  while (x != NULL || n > 0) {
    if (x == NULL) x = st[--n];
    struct rm_rcu_citrus_node *l = x->child[0], *r = x->child[1];
    free(x);
    if (r != NULL) {
      if (n == cap) {
        struct rm_rcu_citrus_node **s2 =
            (struct rm_rcu_citrus_node **)realloc(st, 2 * cap * sizeof *st);
        if (s2 == NULL) abort(); /* leaking the rest silently would be worse */
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

static inline int rm_rcu_citrus_contains(struct rm_rcu_citrus *t, int64_t key) {
  rm_rcu_read_lock();
  /* Acquire loads of child pointers (rm_rcu_dereference): the key of a node
   * we reach was written before the release store that linked it (C1). */
  struct rm_rcu_citrus_node *n = rm_rcu_dereference(t->root->child[0]);
  while (n != NULL && n->key != key) {
    RM_DEBUG_YIELD();
    n = rm_rcu_dereference(n->child[key > n->key]);
  }
  rm_rcu_read_unlock();
  return n != NULL;
}

/* ---- locks ------------------------------------------------------------------ */

/* Inside a read section: bounded spinning, never blocking. */
RM_INLINE bool rm_rcu_citrus_trylock_(struct rm_rcu_citrus_node *n) {
  for (unsigned i = 0; i < RM_RCU_CITRUS_SPINS; i++) {
    /* Acquire (C2): the previous holder's stores to this node (children,
     * tags, mark) happen before our validation reads. */
    if (rm_atomic_load_relaxed(&n->lock) == 0 &&
        __atomic_exchange_n(&n->lock, 1u, __ATOMIC_ACQUIRE) == 0)
      return true;
    rm_cpu_relax();
  }
  return false;
}
RM_INLINE void rm_rcu_citrus_unlock_(struct rm_rcu_citrus_node *n) {
  rm_atomic_store_release(&n->lock, 0u); /* C2: pairs with the next acquire */
}

/* A lock was busy: the caller has left its section; wait before starting
 * again.  The holder may be inside a grace period (a two-child removal), so
 * after two short spins this yields the CPU. */
static inline void rm_rcu_citrus_backoff_(unsigned *fails) {
  if ((*fails)++ < 2) {
    for (unsigned i = 0; i < 4 * RM_RCU_CITRUS_SPINS; i++) rm_cpu_relax();
  } else {
    sched_yield();
  }
}

/* ---- walks --------------------------------------------------------------------- */

/* Inside a section: curr is the node holding key or NULL, pred its parent
 * (or the parent of the empty slot), dir the side of pred it hangs on. */
RM_INLINE struct rm_rcu_citrus_node *rm_rcu_citrus_find_(struct rm_rcu_citrus *t, int64_t key,
                                                         struct rm_rcu_citrus_node **pred,
                                                         int *dir) {
  struct rm_rcu_citrus_node *p = t->root;
  int d = 0;
  struct rm_rcu_citrus_node *c = rm_rcu_dereference(p->child[0]);
  while (c != NULL && c->key != key) {
    RM_DEBUG_YIELD();
    p = c;
    d = key > c->key;
    c = rm_rcu_dereference(c->child[d]);
  }
  *pred = p;
  *dir = d;
  return c;
}

/* pred (locked) still links curr (locked, or NULL with the slot's tag as
 * read during the walk), and neither was removed. */
RM_INLINE bool rm_rcu_citrus_validate_(struct rm_rcu_citrus_node *pred, int dir,
                                       struct rm_rcu_citrus_node *curr, uint32_t tag) {
  if (rm_atomic_load_relaxed(&pred->marked)) return false;
  if (rm_atomic_load_relaxed(&pred->child[dir]) != curr) return false;
  if (curr == NULL) return rm_atomic_load_relaxed(&pred->tag[dir]) == tag;
  return !rm_atomic_load_relaxed(&curr->marked);
}

/* Empty a child slot (the caller holds the node's lock): count it in the
 * tag first, so that an insert that read the old tag fails validation. */
RM_INLINE void rm_rcu_citrus_set_child_(struct rm_rcu_citrus_node *n, int dir,
                                        struct rm_rcu_citrus_node *c) {
  if (c == NULL) rm_atomic_store_relaxed(&n->tag[dir], n->tag[dir] + 1);
  /* Release (C1): a reader that loads c sees c's fields. */
  rm_rcu_assign_pointer(n->child[dir], c);
}

static inline void rm_rcu_citrus_free_cb_(struct rm_rcu_head *h) {
  free((char *)h - offsetof(struct rm_rcu_citrus_node, rcu));
}

/* ---- updates ------------------------------------------------------------------- */

static inline int rm_rcu_citrus_insert(struct rm_rcu_citrus *t, int64_t key) {
  struct rm_rcu_citrus_node *n = rm_rcu_citrus_node_new_(key, 0);
  if (n == NULL) return -ENOMEM;
  unsigned fails = 0;
  for (;;) {
    struct rm_rcu_citrus_node *prev;
    int dir;
    rm_rcu_read_lock();
    struct rm_rcu_citrus_node *curr = rm_rcu_citrus_find_(t, key, &prev, &dir);
    if (curr != NULL) {
      rm_rcu_read_unlock();
      free(n);
      return 0;
    }
    /* The tag after the empty child: a slot emptied again after we read it
     * as empty has a tag we did not read. */
    uint32_t tag = rm_atomic_load_relaxed(&prev->tag[dir]);
    RM_DEBUG_YIELD();
    if (!rm_rcu_citrus_trylock_(prev)) {
      rm_rcu_read_unlock();
      rm_rcu_citrus_backoff_(&fails);
      continue;
    }
    if (!rm_rcu_citrus_validate_(prev, dir, NULL, tag)) {
      rm_rcu_citrus_unlock_(prev);
      rm_rcu_read_unlock();
      continue;
    }
    rm_rcu_read_unlock();
    /* prev is locked, unmarked and still has the empty slot: it stays in
     * the tree and nothing else can fill the slot until we unlock. */
    rm_rcu_citrus_set_child_(prev, dir, n);
    rm_rcu_citrus_unlock_(prev);
    return 1;
  }
}

/* Inside a section: try-lock n and remember it in held[]. */
RM_INLINE bool rm_rcu_citrus_take_(struct rm_rcu_citrus_node **held, unsigned *nh,
                                   struct rm_rcu_citrus_node *n) {
  if (!rm_rcu_citrus_trylock_(n)) return false;
  held[(*nh)++] = n;
  return true;
}
RM_INLINE void rm_rcu_citrus_release_(struct rm_rcu_citrus_node **held, unsigned nh) {
  while (nh > 0) rm_rcu_citrus_unlock_(held[--nh]);
}

static inline int rm_rcu_citrus_remove(struct rm_rcu_citrus *t, int64_t key) {
  unsigned fails = 0;
  struct rm_rcu_citrus_node *spare = NULL; /* the successor's new node */
  for (;;) {
    struct rm_rcu_citrus_node *held[4], *pred, *curr, *c0, *c1, *ps, *succ, *next, *node;
    unsigned nh = 0;
    int dir, sdir;
    rm_rcu_read_lock();
    curr = rm_rcu_citrus_find_(t, key, &pred, &dir);
    if (curr == NULL) {
      rm_rcu_read_unlock();
      free(spare);
      return 0;
    }
    RM_DEBUG_YIELD();
    if (!rm_rcu_citrus_take_(held, &nh, pred) || !rm_rcu_citrus_take_(held, &nh, curr))
      goto busy;
    if (!rm_rcu_citrus_validate_(pred, dir, curr, 0)) goto retry;
    /* curr is locked: its children stay as read. */
    c0 = rm_atomic_load_relaxed(&curr->child[0]);
    c1 = rm_atomic_load_relaxed(&curr->child[1]);
    if (c0 == NULL || c1 == NULL) {
      rm_rcu_read_unlock();
      rm_atomic_store_relaxed(&curr->marked, 1u);
      rm_rcu_citrus_set_child_(pred, dir, c0 != NULL ? c0 : c1);
      rm_rcu_citrus_release_(held, nh);
      free(spare);
      /* Lookups may still be on curr. */
      rm_rcu_call(&curr->rcu, rm_rcu_citrus_free_cb_);
      return 1;
    }
    /* Two children: the successor and its parent, still in the section. */
    ps = curr;
    succ = c1;
    next = rm_rcu_dereference(succ->child[0]);
    while (next != NULL) {
      ps = succ;
      succ = next;
      next = rm_rcu_dereference(next->child[0]);
    }
    sdir = ps == curr ? 1 : 0;
    if ((ps != curr && !rm_rcu_citrus_take_(held, &nh, ps)) || !rm_rcu_citrus_take_(held, &nh, succ))
      goto busy;
    if (!rm_rcu_citrus_validate_(ps, sdir, succ, 0) ||
        rm_atomic_load_relaxed(&succ->child[0]) != NULL)
      goto retry;
    rm_rcu_read_unlock();
    /* Every node we use is locked, unmarked and linked where we saw it; a
     * node is unlinked only by a holder of its lock and its parent's, so
     * they stay in the tree (and allocated) until we unlock. */
    if (spare == NULL) spare = rm_rcu_citrus_node_new_(0, 0);
    if (spare == NULL) {
      rm_rcu_citrus_release_(held, nh);
      return -ENOMEM;
    }
    node = spare;
    node->key = succ->key;
    node->lock = 1u;
    node->child[0] = c0;
    node->child[1] = c1;
    /* Step 1: the copy of succ replaces curr.  The release store (C1)
     * publishes the copy's key and children. */
    rm_atomic_store_relaxed(&curr->marked, 1u);
    rm_rcu_citrus_set_child_(pred, dir, node);
    RM_DEBUG_YIELD();
    /* Step 2: lookups that passed curr before step 1 and may be heading for
     * succ's old place end (C3: their reads happen before the end of the
     * grace period, which happens before step 3). */
    rm_rcu_synchronize();
    /* Step 3: unlink the old succ (it has no left child). */
    rm_atomic_store_relaxed(&succ->marked, 1u);
    next = rm_atomic_load_relaxed(&succ->child[1]);
    if (ps == curr) rm_rcu_citrus_set_child_(node, 1, next);
    else rm_rcu_citrus_set_child_(ps, 0, next);
    rm_rcu_citrus_unlock_(node);
    rm_rcu_citrus_release_(held, nh);
    /* curr was unreachable before the grace period began: no section can
     * hold it now (writers drop their pointers when they leave their
     * section).  succ may still be under lookups that passed node. */
    free(curr);
    rm_rcu_call(&succ->rcu, rm_rcu_citrus_free_cb_);
    return 1;
  retry: /* something moved: start again at once */
    rm_rcu_citrus_release_(held, nh);
    rm_rcu_read_unlock();
    continue;
  busy: /* a lock is held by another writer, maybe for a grace period */
    rm_rcu_citrus_release_(held, nh);
    rm_rcu_read_unlock();
    rm_rcu_citrus_backoff_(&fails);
  }
}

/* ---- in-order walk ------------------------------------------------------------- */

static inline long rm_rcu_citrus_walk(struct rm_rcu_citrus *t, int (*fn)(int64_t key, void *arg),
                                      void *arg) {
  size_t cap = 64, n = 0;
  struct rm_rcu_citrus_node **st = (struct rm_rcu_citrus_node **)malloc(cap * sizeof *st);
  if (st == NULL) return -ENOMEM;
  long count = 0;
  int64_t last = 0;
  rm_rcu_read_lock();
  struct rm_rcu_citrus_node *x = rm_rcu_dereference(t->root->child[0]);
  for (;;) {
    while (x != NULL) {
      if (n == cap) {
        struct rm_rcu_citrus_node **s2 =
            (struct rm_rcu_citrus_node **)realloc(st, 2 * cap * sizeof *st);
        if (s2 == NULL) {
          count = -ENOMEM;
          goto out;
        }
        st = s2;
        cap *= 2;
      }
      st[n++] = x;
      x = rm_rcu_dereference(x->child[0]);
    }
    if (n == 0) break;
    x = st[--n];
    if (count == 0 || x->key > last) {
      last = x->key;
      count++;
      if (fn(x->key, arg) != 0) break;
    }
    x = rm_rcu_dereference(x->child[1]);
  }
out:
  rm_rcu_read_unlock();
  free(st);
  return count;
}

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_RCU_CITRUS_H */
