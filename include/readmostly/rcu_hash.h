/*
 * readmostly/rcu_hash.h - a resizable RCU hash table (relativistic hash
 * table) over any RCU flavor.
 *
 * SYNOPSIS
 *   #include <readmostly/rcu_hash.h>
 *
 *   // Stamp the table's functions out over an RCU flavor: a prefix and three
 *   // names called with no arguments (functions or function-like macros).
 *   RM_RCU_HASH_DEFINE(my_hash, my_read_lock, my_read_unlock, my_synchronize)
 *
 *   struct item { struct rm_rcu_hash_node node; int payload; };  // intrusive
 *   struct rm_rcu_hash h;
 *   int  my_hash_init(struct rm_rcu_hash *h, size_t buckets);       // power of two
 *   void my_hash_destroy(struct rm_rcu_hash *h, rm_rcu_hash_free_fn *fn, void *arg);
 *   int  my_hash_insert(struct rm_rcu_hash *h, uint64_t key, struct rm_rcu_hash_node *n);
 *   int  my_hash_remove(struct rm_rcu_hash *h, uint64_t key,
 *                       rm_rcu_hash_free_fn *free_fn, void *arg);   // synchronize, then free
 *   int  my_hash_remove_deferred(struct rm_rcu_hash *h, uint64_t key,
 *                       rm_rcu_hash_free_fn *retire_fn, void *arg); // e.g. call_rcu
 *   int  my_hash_replace(struct rm_rcu_hash *h, uint64_t key, struct rm_rcu_hash_node *n,
 *                        rm_rcu_hash_free_fn *free_fn, void *arg);  // swap, synchronize, free old
 *   int  my_hash_resize(struct rm_rcu_hash *h, size_t buckets);     // grow or shrink
 *   // readers, inside a read-side section of the flavor:
 *   struct rm_rcu_hash_node *my_hash_lookup(struct rm_rcu_hash *h, uint64_t key);
 *   // readers, taking their own section:
 *   bool my_hash_contains(struct rm_rcu_hash *h, uint64_t key);
 *   size_t my_hash_count(struct rm_rcu_hash *h);
 *   size_t my_hash_buckets(struct rm_rcu_hash *h);
 *   struct item *it = rm_rcu_hash_entry(n, struct item, node);
 *
 *   // On the library's RCU (readmostly/rcu.h), already defined:
 *   //   rm_rcu_hash_init, rm_rcu_hash_insert, rm_rcu_hash_lookup, ...
 *
 *   // liburcu's memb flavor, for instance:
 *   #include <urcu/urcu-memb.h>
 *   RM_RCU_HASH_DEFINE(memb_hash, urcu_memb_read_lock, urcu_memb_read_unlock,
 *                      urcu_memb_synchronize_rcu)
 *
 * DESCRIPTION
 *   The relativistic hash table of Triplett, McKenney and Walpole ("Resizable,
 *   Scalable, Concurrent Hash Tables via Relativistic Programming", USENIX
 *   ATC 2011): chained buckets of singly linked nodes, keyed by uint64_t.
 *   Lookups are plain RCU readers: no lock, no atomic read-modify-write, no
 *   retry, and they stay correct while the table is being resized, because
 *   every writer step keeps each reader's chain a superset of the nodes of
 *   its bucket.  A chain may hold foreign nodes for a while (readers compare
 *   keys, so those cost a step, never a wrong answer); it never loses one of
 *   its own.
 *
 *   Nodes are intrusive: embed a struct rm_rcu_hash_node in your object and
 *   get the object back with rm_rcu_hash_entry() (offsetof arithmetic).  The
 *   table never allocates a node, so an insert cannot fail for lack of
 *   memory, the object can carry what it likes (a value pointer, an inline
 *   value, a struct rcu_head for call_rcu), and removal hands the object back
 *   to code that knows how to free it.  The key is written by insert; the
 *   rest of the object must be written before insert and is read-only while
 *   the node is in the table: to change a value, build a new object and
 *   replace() the old one (readers find the old or the new one, never
 *   neither), or use your own atomics inside the object.
 *
 *   Hash: the bucket of key k is mix(k) & (buckets - 1), where mix() is a
 *   fixed 64-bit finalizer (two xor-shift-multiply rounds, the constants of
 *   SplitMix64), so that sequential or strided keys spread over all buckets.
 *   Only the low bits index the array: a node of bucket i in a table of n
 *   buckets is in bucket i or i + n of a table of 2n, which is what makes the
 *   zip and unzip below possible.  rm_rcu_hash_mix() is public.
 *
 *   Writers (insert, remove, remove_deferred, replace, resize) serialize on
 *   one mutex in the table.  A resize holds it from start to end, grace
 *   periods included: as in the paper's RCU version, only lookups run
 *   concurrently with a resize; other writers wait for it.  destroy must
 *   run alone: no reader, no writer.
 *
 *   Shrink (halve, n -> n/2 buckets; n/2 = m): for each new bucket j, link
 *   the tail of old chain j to the head of old chain j + m (one release
 *   store), so that old bucket j's readers see old bucket j + m's nodes too;
 *   fill the new array (new[j] = the concatenated chain); publish the new
 *   table with a release store; synchronize (no reader is left in the old
 *   array); free the old array.  One grace period per halving.
 *
 *   Grow (double, n -> 2n buckets): for each new bucket k, new[k] = the
 *   first node of old chain k mod n that hashes to k (in the new table);
 *   publish; synchronize (no reader is left in the old array, which from now
 *   on serves the resizer as the list of unzip cursors).  The old chains are
 *   now "zipped": each holds the interleaved nodes of two new buckets, and
 *   each new bucket's head points into it at the first node of its own.
 *   Unzip pass: in each zipped chain, at the cursor, skip to the end of the
 *   run of nodes of one bucket (last node p), find the next node r of p's
 *   bucket past the following run of the other bucket, and set p->next = r
 *   (release); the cursor moves to the skipped run.  After a pass that
 *   changed anything, synchronize, then the next pass.  The grace period is
 *   what lets a later pass change a pointer inside a run that an earlier
 *   pass cut out: a reader of p's bucket that was walking that run when it
 *   was cut out has left it, and no reader of p's bucket can enter it
 *   again.  Within one pass a chain changes only once for the same reason.
 *   Passes end when every chain holds only its own nodes; a grow costs
 *   1 + (number of alternations in the most interleaved chain) grace
 *   periods.  resize() to a size several powers of two away repeats these
 *   steps one halving or doubling at a time, with all arrays allocated up
 *   front (so ENOMEM changes nothing).
 *
 *   Replace: replace() links a new node in the old one's place with one
 *   release store (the new node's next is the old one's successor, and the
 *   old node keeps its next, so a reader standing on it walks on), drops
 *   the mutex, synchronizes, and calls free_fn(old, arg).  The key is never
 *   absent from the table meanwhile.
 *
 *   Removal: remove() unlinks the node under the mutex (its predecessor's
 *   next, or the bucket head, is set to the node's successor with a
 *   release store), drops the mutex, synchronizes, then calls
 *   free_fn(node, arg) (NULL: nothing; the node is then the caller's, safe
 *   to free or reuse).  remove_deferred() calls retire_fn(node, arg) right
 *   after the unlink instead, without a grace period: retire_fn must itself
 *   wait for one before the memory is reused (call_rcu, defer_rcu, or a
 *   list that the caller empties after its own synchronize).  A removed
 *   node may be inserted again only after that grace period: a reader
 *   still standing on it would follow its new next into another chain.
 *
 *   The flavor.  RM_RCU_HASH_DEFINE(prefix, read_lock, read_unlock,
 *   synchronize) defines static inline functions prefix_* over the three
 *   names (called as read_lock(), read_unlock(), synchronize()).  The table
 *   type is the same for every flavor, but one table must only ever be used
 *   through one flavor's functions.  A flavor's threads must be registered
 *   as that flavor requires before they read.  QSBR flavors (urcu-qsbr):
 *   read_lock/read_unlock are empty and readers announce quiescent states
 *   themselves; a thread that calls a writer function must be
 *   offline or unregistered while it does, because it may block on the
 *   mutex while the holder waits for a grace period, which an online thread
 *   blocked there would never let end.
 *   This header instantiates the table once on the library's own RCU
 *   (readmostly/rcu.h): rm_rcu_hash_init, rm_rcu_hash_insert, ...,
 *   rm_rcu_hash_lookup inside rm_rcu_read_lock()/rm_rcu_read_unlock().
 *   Those functions are static inline, so a program that uses only another
 *   flavor's instantiation does not link against the library's RCU.
 *
 *   Debug-yield builds (-DREADMOSTLY_DEBUG_YIELD in the including code)
 *   yield at random between a reader's steps and after each zip or unzip
 *   store, to widen the windows the torture test aims at.
 *
 *   Never call a writer function or destroy inside a read-side section:
 *   synchronize inside a section deadlocks (not detected here; the flavor
 *   may detect it: the library's RCU returns EDEADLK, which the table does
 *   not see, and then frees too early).
 *
 * RETURN VALUES
 *   init, insert, remove, remove_deferred, replace, resize: 0 on success,
 *   else an error number (errno is not set).  lookup: the node with the key, or
 *   NULL; valid until the caller's read-side section ends.  contains: true
 *   when the key is in the table at some moment during the call.  count:
 *   the number of nodes; buckets: the number of buckets of the array
 *   readers currently start from (both exact when no writer runs, else a
 *   value from during the call; neither needs a read-side section).
 *
 * ERRORS
 *   ENOMEM  init or resize could not allocate a bucket array; nothing
 *           changed (resize: the table keeps its size and contents).
 *   EINVAL  buckets is 0, not a power of two, or above
 *           RM_RCU_HASH_MAX_BUCKETS; a NULL node.
 *   EEXIST  insert: a node with that key is already in the table (the new
 *           node is not linked; it is still the caller's).
 *   ENOENT  remove, remove_deferred, replace: no node with that key (replace:
 *           the new node is not linked).
 *   EINVAL  also: remove_deferred without retire_fn.
 *   Other errors of pthread_mutex_init from init.
 *
 * MEMORY ORDERING (the letters are used at each site below)
 *   (A) Publication of a node: insert (and replace) writes the node's key
 *       and next with plain stores, then links it with a release store into
 *       the bucket head (replace: into the old node's link).  A reader's
 *       acquire load that returns the node's address therefore sees its
 *       key, its next and everything the caller wrote before the call.
 *   (B) Publication of a table: resize fills the new array with plain and
 *       release stores, then stores the table pointer with release; a
 *       reader loads the table pointer with acquire and sees the mask and
 *       every head of that array.
 *   (C) Readers load the table pointer, bucket heads and next pointers with
 *       acquire loads.  What they need is consume (address-dependent)
 *       ordering: every later load goes through the pointer just loaded.
 *       C11 compilers implement consume as acquire, so acquire is what
 *       consume costs anyway; on x86-64 (TSO) it is a plain mov, on arm64
 *       an ldar (rcu_dereference in liburcu is a plain load plus the
 *       dependency, which is cheaper there and equivalent on x86-64).
 *   (D) Every pointer a writer stores into a reachable node or array (zip,
 *       unzip, unlink, replace) is a release store, even where the node it points to
 *       was published long ago: all writers run under the mutex, so the
 *       node's publication (A) happens before this store, and the release
 *       carries it to a reader that reaches the node through the new
 *       pointer.  (A relaxed store would be enough on every real machine
 *       through the address dependency; release keeps the C11 argument
 *       whole and costs nothing on x86-64.)
 *   (E) Writers read the structure with relaxed loads: only mutex holders
 *       store to it, and the mutex orders them.
 *   (F) Grace periods (the flavor's synchronize) separate: the release of
 *       a new table from the free of the old one (no reader still uses the
 *       old array); one unzip pass from the next (no reader is still inside
 *       a run that the earlier pass cut out of its bucket); an unlink or a
 *       replace from free_fn.  The flavor's synchronize provides the
 *       ordering: every section that began before it has ended, and that
 *       section's loads happen before synchronize returns.
 */
#ifndef READMOSTLY_RCU_HASH_H
#define READMOSTLY_RCU_HASH_H

#include <readmostly/platform.h>
#include <readmostly/rcu.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One entry: embed it in your object. */
struct rm_rcu_hash_node {
  struct rm_rcu_hash_node *next; /* chain link (C, D) */
  uint64_t key;                  /* written by insert before publication (A) */
};

/* A bucket array and its size (a power of two). */
struct rm_rcu_hash_table {
  size_t mask;                      /* buckets - 1 */
  struct rm_rcu_hash_node **heads;  /* mask + 1 heads, allocated after the struct */
};

struct rm_rcu_hash {
  struct rm_rcu_hash_table *table;  /* current array (B, C) */
  size_t count;                     /* nodes (written under the mutex, read relaxed) */
  size_t nbuckets;                  /* the current array's size (same) */
  pthread_mutex_t lock;             /* every writer */
};

/* free_fn / retire_fn: receives a node that is no longer in the table. */
typedef void rm_rcu_hash_free_fn(struct rm_rcu_hash_node *node, void *arg);

/* Largest bucket count accepted (2^40 heads would be 8 TiB). */
#define RM_RCU_HASH_MAX_BUCKETS ((size_t)1 << 40)

#define rm_rcu_hash_entry(ptr, type, member) \
  ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* The fixed 64-bit mixer: every input bit changes every output bit with
 * probability close to 1/2 (a bijection, so distinct keys never collide in
 * the full 64 bits). */
static inline uint64_t rm_rcu_hash_mix(uint64_t k) {
  k ^= k >> 30;
  k *= 0xbf58476d1ce4e5b9ull;
  k ^= k >> 27;
  k *= 0x94d049bb133111ebull;
  k ^= k >> 31;
  return k;
}

/* ---- internal helpers, shared by every flavor -------------------------- */

static inline bool rm_rcu_hash__size_ok(size_t buckets) {
  return buckets != 0 && (buckets & (buckets - 1)) == 0 && buckets <= RM_RCU_HASH_MAX_BUCKETS;
}

/* An array of `buckets` NULL heads, or NULL. */
static inline struct rm_rcu_hash_table *rm_rcu_hash__table_new(size_t buckets) {
  struct rm_rcu_hash_table *t = (struct rm_rcu_hash_table *)calloc(
      1, sizeof(struct rm_rcu_hash_table) + buckets * sizeof(struct rm_rcu_hash_node *));
  if (!t) return NULL;
  t->mask = buckets - 1;
  t->heads = (struct rm_rcu_hash_node **)(void *)(t + 1);
  return t;
}

/* Reader side (C): the node with `key` in the current table, or NULL.  The
 * chain may hold foreign nodes during a resize; comparing keys skips them. */
static inline struct rm_rcu_hash_node *rm_rcu_hash__lookup(struct rm_rcu_hash *h, uint64_t key) {
  /* (B, C) acquire: pairs with the release that published this table. */
  struct rm_rcu_hash_table *t = rm_atomic_load_acquire(&h->table);
  /* (A, C, D) acquire: pairs with the release store that linked the node. */
  struct rm_rcu_hash_node *n = rm_atomic_load_acquire(&t->heads[rm_rcu_hash_mix(key) & t->mask]);
  while (n && n->key != key) {
    RM_DEBUG_YIELD(); /* debug-yield builds: stand on n while writers act */
    n = rm_atomic_load_acquire(&n->next);
  }
  return n;
}

/* Writer side: the link that points to the node with `key` in its bucket
 * (the head or a predecessor's next), or NULL.  Mutex held (E). */
static inline struct rm_rcu_hash_node **rm_rcu_hash__find_link(struct rm_rcu_hash *h,
                                                               uint64_t key) {
  struct rm_rcu_hash_table *t = h->table;
  struct rm_rcu_hash_node **link = &t->heads[rm_rcu_hash_mix(key) & t->mask];
  struct rm_rcu_hash_node *n;
  while ((n = rm_atomic_load_relaxed(link)) != NULL) {
    if (n->key == key) return link;
    link = &n->next;
  }
  return NULL;
}

static inline int rm_rcu_hash__insert_locked(struct rm_rcu_hash *h, uint64_t key,
                                             struct rm_rcu_hash_node *node) {
  if (rm_rcu_hash__find_link(h, key)) return EEXIST;
  struct rm_rcu_hash_table *t = h->table;
  struct rm_rcu_hash_node **head = &t->heads[rm_rcu_hash_mix(key) & t->mask];
  node->key = key;
  node->next = rm_atomic_load_relaxed(head);
  /* (A) release: the node's key and next (and the caller's fields) before
   * its address becomes visible to readers. */
  rm_atomic_store_release(head, node);
  rm_atomic_store_relaxed(&h->count, h->count + 1);
  return 0;
}

static inline struct rm_rcu_hash_node *rm_rcu_hash__unlink_locked(struct rm_rcu_hash *h,
                                                                  uint64_t key) {
  struct rm_rcu_hash_node **link = rm_rcu_hash__find_link(h, key);
  if (!link) return NULL;
  struct rm_rcu_hash_node *n = rm_atomic_load_relaxed(link);
  /* (D) release: readers that reach the successor through the new link see
   * it whole.  The node keeps its own next, so a reader standing on it
   * walks on into the rest of the chain. */
  rm_atomic_store_release(link, rm_atomic_load_relaxed(&n->next));
  rm_atomic_store_relaxed(&h->count, h->count - 1);
  return n;
}

/* Writer side: put `node` in the place of the node with `key`; returns the
 * old node (now unlinked), or NULL when there is none.  Mutex held. */
static inline struct rm_rcu_hash_node *rm_rcu_hash__replace_locked(struct rm_rcu_hash *h,
                                                                   uint64_t key,
                                                                   struct rm_rcu_hash_node *node) {
  struct rm_rcu_hash_node **link = rm_rcu_hash__find_link(h, key);
  if (!link) return NULL;
  struct rm_rcu_hash_node *old = rm_atomic_load_relaxed(link);
  node->key = key;
  node->next = rm_atomic_load_relaxed(&old->next);
  /* (A) release: the new node's key and next before its address.  A reader
   * that loaded the old address keeps walking from old->next, unchanged;
   * one that loads the new address finds the same successor. */
  rm_atomic_store_release(link, node);
  return old;
}

/* Shrink step, part 1 (mutex held): build `to` (half the buckets of the
 * current table) by concatenating old chains j and j + m into new bucket j,
 * and publish it.  Returns the old table, which the caller frees after a
 * grace period (F). */
static inline struct rm_rcu_hash_table *rm_rcu_hash__shrink_publish(struct rm_rcu_hash *h,
                                                                    struct rm_rcu_hash_table *to) {
  struct rm_rcu_hash_table *from = h->table;
  size_t m = to->mask + 1;
  for (size_t j = 0; j < m; j++) {
    struct rm_rcu_hash_node *a = rm_atomic_load_relaxed(&from->heads[j]);
    struct rm_rcu_hash_node *b = rm_atomic_load_relaxed(&from->heads[j + m]);
    if (a) {
      struct rm_rcu_hash_node *tail = a;
      struct rm_rcu_hash_node *nx;
      while ((nx = rm_atomic_load_relaxed(&tail->next)) != NULL) tail = nx;
      /* (D) release: old bucket j's readers may now walk into old bucket
       * j + m's nodes (harmless: keys are compared).  Nothing is taken out
       * of any chain. */
      rm_atomic_store_release(&tail->next, b);
      RM_DEBUG_YIELD();
      to->heads[j] = a;
    } else {
      to->heads[j] = b;
    }
  }
  /* (B) release: the new heads (plain stores above) and mask before the
   * table's address. */
  rm_atomic_store_release(&h->table, to);
  rm_atomic_store_relaxed(&h->nbuckets, m); /* a statistic: no order needed */
  return from;
}

/* Grow step, part 1 (mutex held): point each bucket k of `to` (twice the
 * buckets) at the first node of old chain k & old_mask that belongs to k,
 * and publish it.  Returns the old table: after a grace period (F) no
 * reader uses it, and its heads are the unzip cursors (one per zipped
 * chain). */
static inline struct rm_rcu_hash_table *rm_rcu_hash__grow_publish(struct rm_rcu_hash *h,
                                                                  struct rm_rcu_hash_table *to) {
  struct rm_rcu_hash_table *from = h->table;
  size_t n = from->mask + 1;
  for (size_t i = 0; i < n; i++) {
    for (struct rm_rcu_hash_node *p = rm_atomic_load_relaxed(&from->heads[i]); p;
         p = rm_atomic_load_relaxed(&p->next)) {
      size_t k = (size_t)(rm_rcu_hash_mix(p->key) & to->mask);
      if (!to->heads[k]) to->heads[k] = p;
      if (to->heads[i] && to->heads[i + n]) break;
    }
  }
  /* (B) release: the new heads before the table's address.  Each head
   * points into a chain that is already published (A). */
  rm_atomic_store_release(&h->table, to);
  rm_atomic_store_relaxed(&h->nbuckets, 2 * n); /* a statistic: no order needed */
  return from;
}

/* Grow step, part 2 (mutex held, and a grace period since publication):
 * one unzip pass over every zipped chain; cursors[i] is where chain i's
 * next step starts (NULL: that chain is done).  Returns true if a pointer
 * changed, in which case a grace period must pass before the next pass (F). */
static inline bool rm_rcu_hash__unzip_pass(struct rm_rcu_hash_node **cursors, size_t chains,
                                           size_t new_mask) {
  bool changed = false;
  for (size_t i = 0; i < chains; i++) {
    struct rm_rcu_hash_node *p = cursors[i];
    if (!p) continue;
    size_t mine = (size_t)(rm_rcu_hash_mix(p->key) & new_mask);
    /* p: the last node of the run of `mine` that starts at the cursor. */
    struct rm_rcu_hash_node *q;
    while ((q = rm_atomic_load_relaxed(&p->next)) != NULL &&
           (size_t)(rm_rcu_hash_mix(q->key) & new_mask) == mine)
      p = q;
    if (!q) { /* the rest of the chain is all `mine`: done */
      cursors[i] = NULL;
      continue;
    }
    /* q starts a run of the other bucket; r: the next node of `mine`. */
    struct rm_rcu_hash_node *r = rm_atomic_load_relaxed(&q->next);
    while (r && (size_t)(rm_rcu_hash_mix(r->key) & new_mask) != mine)
      r = rm_atomic_load_relaxed(&r->next);
    /* (D) release: cut the other bucket's run (q up to r) out of `mine`'s
     * chain.  A reader of `mine` standing in that run walks on to r as
     * before (the run's last node still points there).  No reader of the
     * other bucket stands on p's run: at a chain's first step that
     * bucket's head points past it, and at later steps p's run is the one
     * an earlier pass cut out of the other bucket's chain, a grace period
     * ago (F). */
    rm_atomic_store_release(&p->next, r);
    RM_DEBUG_YIELD();
    changed = true;
    /* Next step of this chain: the run just cut out, once a grace period
     * has removed every reader of `mine` from it.  With no r, the rest
     * (from q) holds only the other bucket's nodes: done. */
    cursors[i] = r ? q : NULL;
  }
  return changed;
}

/* The halving/doubling steps from the current size to `buckets`, with every
 * array allocated before anything changes.  tables[0 .. *steps-1]. */
static inline int rm_rcu_hash__plan(struct rm_rcu_hash *h, size_t buckets,
                                    struct rm_rcu_hash_table **tables, unsigned *steps) {
  size_t cur = h->table->mask + 1;
  unsigned s = 0;
  while (cur != buckets) {
    cur = cur < buckets ? cur * 2 : cur / 2;
    tables[s] = rm_rcu_hash__table_new(cur);
    if (!tables[s]) {
      while (s) free(tables[--s]);
      return ENOMEM;
    }
    s++;
  }
  *steps = s;
  return 0;
}

/* ---- the flavor-specific functions --------------------------------------- */

/* Generated functions are static inline and marked unused: a program that
 * calls only some of them (in its .c file, where clang's -Wunused-function
 * looks) stays quiet. */
#define RM_RCU_HASH_FN static inline __attribute__((unused))

#define RM_RCU_HASH_DEFINE(prefix, read_lock, read_unlock, synchronize)                      \
  RM_RCU_HASH_FN int prefix##_init(struct rm_rcu_hash *h, size_t buckets) {                   \
    if (!rm_rcu_hash__size_ok(buckets)) return EINVAL;                                       \
    struct rm_rcu_hash_table *t = rm_rcu_hash__table_new(buckets);                           \
    if (!t) return ENOMEM;                                                                   \
    int err = pthread_mutex_init(&h->lock, NULL);                                            \
    if (err) {                                                                               \
      free(t);                                                                               \
      return err;                                                                            \
    }                                                                                        \
    h->count = 0;                                                                            \
    h->nbuckets = buckets;                                                                   \
    /* (B) release: a table handed to readers by other means (a pointer                      \
     * the caller publishes with release) is whole either way. */                            \
    rm_atomic_store_release(&h->table, t);                                                   \
    return 0;                                                                                \
  }                                                                                          \
                                                                                             \
  /* No reader or writer may use the table any more. */                                      \
  RM_RCU_HASH_FN void prefix##_destroy(struct rm_rcu_hash *h, rm_rcu_hash_free_fn *free_fn,  \
                                      void *arg) {                                           \
    struct rm_rcu_hash_table *t = h->table;                                                  \
    for (size_t i = 0; i <= t->mask; i++) {                                                  \
      struct rm_rcu_hash_node *n = t->heads[i];                                              \
      while (n) {                                                                            \
        struct rm_rcu_hash_node *next = n->next;                                             \
        if (free_fn) free_fn(n, arg);                                                        \
        n = next;                                                                            \
      }                                                                                      \
    }                                                                                        \
    free(t);                                                                                 \
    h->table = NULL;                                                                         \
    h->count = 0;                                                                            \
    h->nbuckets = 0;                                                                         \
    pthread_mutex_destroy(&h->lock);                                                         \
  }                                                                                          \
                                                                                             \
  /* Inside a read-side section. */                                                          \
  RM_RCU_HASH_FN struct rm_rcu_hash_node *prefix##_lookup(struct rm_rcu_hash *h,              \
                                                         uint64_t key) {                     \
    return rm_rcu_hash__lookup(h, key);                                                      \
  }                                                                                          \
                                                                                             \
  RM_RCU_HASH_FN bool prefix##_contains(struct rm_rcu_hash *h, uint64_t key) {                \
    read_lock();                                                                             \
    bool found = rm_rcu_hash__lookup(h, key) != NULL;                                        \
    read_unlock();                                                                           \
    return found;                                                                            \
  }                                                                                          \
                                                                                             \
  RM_RCU_HASH_FN int prefix##_insert(struct rm_rcu_hash *h, uint64_t key,                     \
                                    struct rm_rcu_hash_node *node) {                         \
    if (!node) return EINVAL;                                                                \
    pthread_mutex_lock(&h->lock);                                                            \
    int err = rm_rcu_hash__insert_locked(h, key, node);                                      \
    pthread_mutex_unlock(&h->lock);                                                          \
    return err;                                                                              \
  }                                                                                          \
                                                                                             \
  RM_RCU_HASH_FN int prefix##_remove(struct rm_rcu_hash *h, uint64_t key,                     \
                                    rm_rcu_hash_free_fn *free_fn, void *arg) {               \
    pthread_mutex_lock(&h->lock);                                                            \
    struct rm_rcu_hash_node *n = rm_rcu_hash__unlink_locked(h, key);                         \
    pthread_mutex_unlock(&h->lock);                                                          \
    if (!n) return ENOENT;                                                                   \
    /* (F) every reader that may still hold n has left its section. */                       \
    synchronize();                                                                           \
    if (free_fn) free_fn(n, arg);                                                            \
    return 0;                                                                                \
  }                                                                                          \
                                                                                             \
  RM_RCU_HASH_FN int prefix##_remove_deferred(struct rm_rcu_hash *h, uint64_t key,            \
                                             rm_rcu_hash_free_fn *retire_fn, void *arg) {    \
    if (!retire_fn) return EINVAL;                                                           \
    pthread_mutex_lock(&h->lock);                                                            \
    struct rm_rcu_hash_node *n = rm_rcu_hash__unlink_locked(h, key);                         \
    pthread_mutex_unlock(&h->lock);                                                          \
    if (!n) return ENOENT;                                                                   \
    retire_fn(n, arg); /* it owes n a grace period before reuse */                           \
    return 0;                                                                                \
  }                                                                                          \
                                                                                             \
  RM_RCU_HASH_FN int prefix##_replace(struct rm_rcu_hash *h, uint64_t key,                    \
                                      struct rm_rcu_hash_node *node,                         \
                                      rm_rcu_hash_free_fn *free_fn, void *arg) {             \
    if (!node) return EINVAL;                                                                \
    pthread_mutex_lock(&h->lock);                                                            \
    struct rm_rcu_hash_node *old = rm_rcu_hash__replace_locked(h, key, node);                \
    pthread_mutex_unlock(&h->lock);                                                          \
    if (!old) return ENOENT;                                                                 \
    synchronize(); /* (F) every reader that may still hold old has left */                   \
    if (free_fn) free_fn(old, arg);                                                          \
    return 0;                                                                                \
  }                                                                                          \
                                                                                             \
  RM_RCU_HASH_FN int prefix##_resize(struct rm_rcu_hash *h, size_t buckets) {                 \
    if (!rm_rcu_hash__size_ok(buckets)) return EINVAL;                                       \
    struct rm_rcu_hash_table *tables[64];                                                    \
    unsigned steps = 0;                                                                      \
    pthread_mutex_lock(&h->lock);                                                            \
    int err = rm_rcu_hash__plan(h, buckets, tables, &steps);                                 \
    for (unsigned s = 0; !err && s < steps; s++) {                                           \
      struct rm_rcu_hash_table *to = tables[s];                                              \
      if (to->mask < h->table->mask) {                                                       \
        struct rm_rcu_hash_table *from = rm_rcu_hash__shrink_publish(h, to);                 \
        synchronize(); /* (F) no reader left in from's array */                              \
        free(from);                                                                          \
      } else {                                                                               \
        struct rm_rcu_hash_table *from = rm_rcu_hash__grow_publish(h, to);                   \
        synchronize(); /* (F) no reader left in from's array: reuse it */                    \
        while (rm_rcu_hash__unzip_pass(from->heads, from->mask + 1, to->mask))               \
          synchronize(); /* (F) no reader of a bucket left in the run cut out of it */       \
        free(from);                                                                          \
      }                                                                                      \
    }                                                                                        \
    pthread_mutex_unlock(&h->lock);                                                          \
    return err;                                                                              \
  }                                                                                          \
                                                                                             \
  RM_RCU_HASH_FN size_t prefix##_count(struct rm_rcu_hash *h) {                               \
    return rm_atomic_load_relaxed(&h->count);                                                \
  }                                                                                          \
                                                                                             \
  RM_RCU_HASH_FN size_t prefix##_buckets(struct rm_rcu_hash *h) {                             \
    return rm_atomic_load_relaxed(&h->nbuckets);                                             \
  }

/* The table on the library's RCU: rm_rcu_hash_init, rm_rcu_hash_insert, ...
 * (rm_rcu_synchronize's EDEADLK, inside a read section, is the caller's
 * bug: see the DESCRIPTION). */
RM_RCU_HASH_DEFINE(rm_rcu_hash, rm_rcu_read_lock, rm_rcu_read_unlock, rm_rcu_synchronize)

#ifdef __cplusplus
}
#endif

#endif /* READMOSTLY_RCU_HASH_H */
