/*
 * readmostly/rlu_rhash.h - the RLU paper's resizable hash table (section
 * 4.3, Fig. 6): a set of uint64_t keys in chained buckets whose number
 * doubles and halves while lookups, inserts and removes run, header-only.
 *
 * SYNOPSIS
 *   #include <readmostly/rlu_rhash.h>
 *   struct rm_rlu_rhash *h = rm_rlu_rhash_create(8192, false); // NULL: errno
 *   rm_rlu_ctx *self = rm_rlu_thread_register();
 *   int r = rm_rlu_rhash_add(self, h, 42);         // 1 added, 0 present, -ENOMEM
 *   r = rm_rlu_rhash_remove(self, h, 42);          // 1 removed, 0 absent, -ENOMEM
 *   r = rm_rlu_rhash_contains(self, h, 42);        // 1 or 0
 *   r = rm_rlu_rhash_resize(self, h, 16384);       // 0, EINVAL, ENOMEM
 *   rm_rlu_rhash_set_batch(h, 64);                 // bucket pairs per resize section
 *   size_t nb = rm_rlu_rhash_buckets(self, h);     // the published size
 *   size_t n = rm_rlu_rhash_count(self, h);        // one section: a snapshot
 *   n = rm_rlu_rhash_size(h);                      // no section may run
 *   rm_rlu_rhash_destroy(h);                       // no section may run
 *
 *   // several steps in one section of your own commit together:
 *   restart:
 *     rm_rlu_reader_lock(self);                    // coarse: rm_rlu_writer_lock
 *     r = rm_rlu_rhash_remove_in(self, h, 7);
 *     if (r == 1) r = rm_rlu_rhash_add_in(self, h, 8);
 *     if (r < 0) { rm_rlu_abort(self); if (r == -EBUSY) goto restart; ... }
 *     rm_rlu_reader_unlock(self);                  // 7 gone and 8 there, or neither
 *
 * DESCRIPTION
 *   A separate header, not an extension of rlu_hash.h: that table keeps
 *   each bucket sorted between two sentinel nodes, which a split or a
 *   merge would have to rebuild node by node, and its hash reduces modulo
 *   any bucket count; this one keeps unsorted chains (a split keeps the
 *   relative order of the nodes, a merge appends one chain to the other)
 *   and power-of-two sizes, so that the keys of bucket i of a table of n
 *   buckets are exactly the keys of buckets i and i + n of a table of 2n.
 *   The bucket of key k is mix(k) & (buckets - 1), mix() being a fixed
 *   64-bit finalizer (rm_rlu_rhash_mix: xor-shift-multiply rounds with
 *   SplitMix64's constants), so sequential keys spread over all buckets.
 *
 *   Objects.  The table is three kinds of RLU objects:
 *     the root   one per table (rm_rlu_alloc): the pointer to the current
 *                bucket array (struct rm_rlu_rhash_tab: the mask, then the
 *                n heads, one allocation, plain memory but for the heads),
 *                and during a resize the progress hint (below);
 *     a head     one per bucket, in its array, laid out with rlu.h's object
 *                header before it (a lookup finds it by address, with no
 *                pointer per bucket to load): the first node of the chain,
 *                and `fwd`, NULL or the array that replaces this one;
 *     a node     one per key: the key and the next node.
 *   Every reader and writer starts from the root in its section, takes
 *   the head of its key's bucket, and, when that head's fwd is set, takes
 *   the head of its key's bucket in the fwd array instead (one hop: see
 *   INVARIANTS), unless the root's hint already says the bucket is done.
 *
 *   Updates.  add locks (rm_rlu_try_lock) the head of the key's bucket and
 *   links a new node first in the chain; remove locks the node before the
 *   key's node (or the head) and the key's node, links around it and
 *   frees it (rm_rlu_free: after the commit's synchronize).  These are the
 *   RLU paper's per-bucket writer locks: updates of different buckets
 *   never conflict under the fine-grained flavor; a conflict aborts the
 *   section and the operation retries it (rm_rlu_abort waits for the owner
 *   first).  Under the coarse-grained flavor (create(..., true), for a
 *   process initialized with RM_RLU_COARSE) update sections and the
 *   resize's sections enter with rm_rlu_writer_lock() and never abort.
 *
 *   Resize, grow (n -> 2n).  Serialized with other resizes by a mutex in
 *   the table, not with updates.  (1) Allocate the new array and its 2n
 *   heads (fwd NULL, chains empty); ENOMEM here returns at once.  (2) For
 *   each old bucket i, ONE section: lock old head H_i, the new heads
 *   N_i and N_i+n and every node of H_i's chain; relink the nodes into
 *   two chains by the bit n of their hash (N_i's and N_i+n's, each in the
 *   old order), set H_i's chain to empty and H_i.fwd to the new array;
 *   commit.  That is the paper's "one-shot" unzip: a section sees H_i
 *   with its whole chain and no fwd, or H_i forwarding to the two split
 *   chains, never a half-split bucket, so lookups need no "unzip point"
 *   handling and the resizer needs no grace period between steps (RCU's
 *   column-wise unzip, readmostly/rcu_hash.h, needs one per step).
 *   (3) One section locks the root and points it at the new array.  Its
 *   commit's synchronize waits for every section that could have read the
 *   old root, so after it (and rm_rlu_sync, for deferral) the old array
 *   and the old heads are unreachable and are freed at once.
 *
 *   The progress hint.  Every RM_RLU_RHASH_HINT_EVERY (64) resize sections
 *   one more section locks the root and writes (ntab = the new array,
 *   done = the steps committed so far).  A walk whose step (its hash's
 *   bits below the smaller array's size) is below done goes to the new
 *   array's head directly.  Without it, a lookup in a bucket already split
 *   or merged reads two heads (the old one only to find its fwd), and since
 *   a resize forwards bucket after bucket, lookups during one did that half
 *   the time: the resizing table's lookups were 0.84x RCU's against
 *   0.87-0.90x with the hint (docs/rlu-structures.md).  A hint section that
 *   fails for memory is skipped (the hint only saves a hop); the root's own
 *   section clears it.
 *
 *   Resize, shrink (2m -> m).  The same with merges: for each new bucket
 *   j, one section locks old heads H_j and H_j+m, the new head N_j and the
 *   last node of H_j's chain; N_j's chain becomes H_j's chain followed by
 *   H_j+m's (the last node's next is set to H_j+m's first), both old heads
 *   get empty chains and fwd = the new array.  Then the root, as for grow.
 *
 *   Batches.  rm_rlu_rhash_set_batch(h, K) makes each resize section do K
 *   consecutive steps (K bucket pairs split or merged, one commit and one
 *   synchronize for all of them) instead of 1, the paper's.  A section
 *   still sees every pair of a batch done or none of it; the price is a
 *   bigger write-log per section, and, under the fine-grained flavor, a
 *   conflict with any update of K pairs' buckets aborts the whole batch.
 *
 *   Why the locks suffice (the proof is in docs/rlu-structures.md, "Resizable hash
 *   table").  RLU serializes two sections that lock a common object: the
 *   second locks it only after the first's write-back, and then sees all
 *   of the first's writes.  A split locks every object that any update of
 *   H_i's bucket locks (the head, every node), so no update of that bucket
 *   commits alongside it.  A merge locks both heads (every add, and the
 *   removal of a first node, lock one of them) and the last node of H_j's
 *   chain (its removal locks it); the removal of any other node changes
 *   next pointers between two nodes that are neighbours in the merged
 *   chain as well, so it commutes with the merge.  An update that found
 *   a forwarding head locks heads and nodes of the new array, which the
 *   split or merge that set the forwarding already wrote back.
 *   RLU locks what a section writes, not what it reads (rlu.h, Write skew):
 *   the root is read by everyone and locked only by the resizer, which is
 *   safe because the root changes only after every old head forwards, and
 *   an old head that forwards leads to the same new head as the new root;
 *   a hint too leads to the head that the forwarding would (I5), and an
 *   update that followed it locks that head like one that hopped.
 *
 *   ENOMEM in the middle.  A split, merge or root section can fail for its
 *   write-log (rm_rlu_try_lock returns ENOMEM: malloc failed, or the copies
 *   passed rm_rlu_options.max_log_bytes).  The resize then undoes the
 *   buckets it has done, newest first, each in one section (a grow's split
 *   is undone by merging N_i and N_i+n back into H_i, with H_i.fwd reset;
 *   a shrink's merge by splitting N_j back into H_j and H_j+m), frees the
 *   new array and heads once those sections have committed, and returns
 *   ENOMEM with the table as it was (its keys as concurrent updates left
 *   them, its size unchanged).  Before the first undo one section takes
 *   the hint away (retried like an undo), so that no later section goes to
 *   a new head whose step is being undone.  An undo section that itself
 *   fails for memory is retried after a yield until it commits: a
 *   max_log_bytes too small for one bucket's objects (head, partner head,
 *   new head, a chain's nodes) therefore makes a resize spin; leave it 0,
 *   or generous.
 *
 *   The _in functions run inside a section the caller opened (entered with
 *   rm_rlu_writer_lock() under the coarse flavor); several in one section
 *   commit together.  rm_rlu_rhash_count() counts every bucket in ONE
 *   section (a snapshot, exact even during a resize); rm_rlu_rhash_size()
 *   reads without RLU (no section may run, no deferred section may hold
 *   objects of the table).
 *
 *   Deferral (rm_rlu_options.max_defer > 1) works: the resize calls
 *   rm_rlu_sync() before it frees anything, and a deferring writer that
 *   holds a head the resizer needs is asked to flush (rlu.h); a deferring
 *   thread that stops calling RLU stalls the resize until it does.
 *
 *   Debug-yield builds (-DREADMOSTLY_DEBUG_YIELD in the including code)
 *   yield at random between the steps of a split or merge and of a lookup.
 *
 * INVARIANTS (at every commit)
 *   I1  Outside a resize, every head of the root's array has fwd NULL.
 *   I2  During a resize from array A to array B, a head of A has fwd NULL
 *       (its bucket not yet done; its chain holds every key of the bucket)
 *       or fwd == B (done; its chain is empty and B's heads hold its keys);
 *       heads of B have fwd NULL.  So a walk takes at most one hop.
 *   I3  Every key of the set is on exactly one chain reachable from the
 *       root this way: the chain of its bucket in A (not done) or in B.
 *   I4  The root points to B only after every head of A forwards.
 *   I5  The hint: outside a resize the root's ntab is NULL; during one
 *       from A to B it is NULL or B, and when it is B every step below
 *       done is done (it is written after those steps' commits and taken
 *       away before any of them is undone).
 *
 * RETURN VALUES
 *   rm_rlu_rhash_create() returns the table or NULL with errno EINVAL (0
 *   buckets, not a power of two, or above RM_RLU_RHASH_MAX_BUCKETS) or
 *   ENOMEM (nothing leaked).  add and remove return 1 (done), 0 (already
 *   present / absent) or -ENOMEM (the write-log or the node allocation
 *   failed; nothing of the operation is applied).  The _in functions also
 *   return -EBUSY (a conflict under the fine-grained flavor: abort the
 *   section and retry).  contains returns 1 or 0.  resize returns 0
 *   (done, or already that size), EINVAL or ENOMEM (see ERRORS).  buckets
 *   returns the bucket count of the array the root points to.
 *
 * ERRORS
 *   EINVAL  resize: nbuckets not the current size, its double or its half
 *           (one step per call, so that ENOMEM can leave the table as it
 *           was), or outside [1, RM_RLU_RHASH_MAX_BUCKETS].
 *   ENOMEM  resize: the new array or heads could not be allocated, or a
 *           section's write-log could not grow; the table keeps its size
 *           and every key (see ENOMEM in the middle).
 *   Calling resize, destroy or size inside a section is a bug (resize
 *   asserts in debug builds).
 *
 * FOOTPRINT
 *   Per bucket: a head (16 bytes behind a 16-byte object header) in the
 *   array, which is cache-line aligned so that no head straddles a line.
 *   Per key: a node of 16 bytes behind its 16-byte header.  Per table: the
 *   root (a pointer, the hint's pointer and count).  A grow copies into
 *   the resizer's write-log, per old bucket, 3 heads and every node of the
 *   bucket; a shrink 3 heads and one node per new bucket (the paper
 *   measured the RLU resize at half the speed of RCU's for this copying);
 *   every 64th section also the root, for the hint.
 */
#ifndef READMOSTLY_RLU_RHASH_H
#define READMOSTLY_RLU_RHASH_H

#include <readmostly/rlu.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RM_RLU_RHASH_MAX_BUCKETS ((size_t)1 << 30)

/* Tests only: RM_RLU_RHASH_INJECT(k), defined before the include, makes a
 * resize fail with ENOMEM where it returns true: k = SIZE_MAX before the
 * new array is allocated, k < (buckets of the smaller array) at step k
 * after that step's section did its work (the section is aborted), and
 * k = that count at the root's section. */
#ifndef RM_RLU_RHASH_INJECT
#define RM_RLU_RHASH_INJECT(k) ((void)(k), false) /* k used: quiet under -Wextra */
#endif

/* Resize sections between two updates of the root's progress hint (see
 * "The progress hint"); tests define it small so that a table of a few
 * dozen buckets gets hints too. */
#ifndef RM_RLU_RHASH_HINT_EVERY
#define RM_RLU_RHASH_HINT_EVERY 64
#endif

struct rm_rlu_rhash_node {
  uint64_t key;
  struct rm_rlu_rhash_node *next;
};

struct rm_rlu_rhash_tab;
/* An RLU object: one bucket's chain, and where it moved during a resize. */
struct rm_rlu_rhash_head {
  struct rm_rlu_rhash_node *first;
  struct rm_rlu_rhash_tab *fwd; /* NULL, or the array replacing this head's */
};

/* A head as an RLU object laid out in its array (rlu.h's object header just
 * before it), so that a lookup reaches it by address arithmetic rather than
 * through a pointer per bucket (one dependent cache miss less), and an
 * array with its heads is one allocation. */
struct rm_rlu_rhash_slot_ {
  struct rm_rlu_obj_hdr hdr;
  struct rm_rlu_rhash_head head;
};

RM_STATIC_ASSERT(64 % sizeof(struct rm_rlu_rhash_slot_) == 0,
                 "a head slot must not straddle a cache line");

/* Plain memory: written by the resizer before anything can reach it, then
 * never changed until it is freed. */
struct rm_rlu_rhash_tab {
  size_t mask;                    /* buckets - 1 */
  struct rm_rlu_rhash_slot_ *b;   /* the heads, in the same allocation, after
                                     this struct (no flexible array member:
                                     the header also compiles as C++) */
};

/* An RLU object: the array every section starts from, and, during a
 * resize, how far it has gone (the progress hint). */
struct rm_rlu_rhash_root {
  struct rm_rlu_rhash_tab *tab;
  struct rm_rlu_rhash_tab *ntab; /* the array being built, or NULL */
  size_t done;                   /* steps 0 .. done-1 are done (with ntab) */
};

struct rm_rlu_rhash {
  struct rm_rlu_rhash_root *root; /* never changes */
  bool coarse;                    /* updates take RLU's writer lock */
  size_t batch;                   /* bucket pairs per resize section (1) */
  pthread_mutex_t resize_mu;      /* one resize at a time */
};

static inline uint64_t rm_rlu_rhash_mix(uint64_t k) {
  k ^= k >> 30;
  k *= UINT64_C(0xbf58476d1ce4e5b9);
  k ^= k >> 27;
  k *= UINT64_C(0x94d049bb133111eb);
  k ^= k >> 31;
  return k;
}

static inline bool rm_rlu_rhash_size_ok_(size_t n) {
  return n >= 1 && n <= RM_RLU_RHASH_MAX_BUCKETS && (n & (n - 1)) == 0;
}

/* Head i of array t. */
#define RM_RLU_RHASH_B_(t, i) (&(t)->b[(i)].head)

/* A new array of n heads, all empty; NULL on ENOMEM.  The allocation is
 * cache-line aligned and the heads start one line in, so every 32-byte
 * slot (header and head) lies within one line: a lookup's head costs one
 * line, never two (malloc's 16-byte alignment put half the slots across a
 * line boundary whenever the array came from the heap rather than mmap). */
#define RM_RLU_RHASH_LINE_ 64
static inline struct rm_rlu_rhash_tab *rm_rlu_rhash_tab_new_(size_t n) {
  /* 2^30 heads do not fit a 32-bit size_t: ENOMEM, not a short array. */
  if (n > (SIZE_MAX - 2 * RM_RLU_RHASH_LINE_) / sizeof(struct rm_rlu_rhash_slot_)) return NULL;
  size_t bytes = RM_RLU_RHASH_LINE_ + n * sizeof(struct rm_rlu_rhash_slot_);
  /* C11's aligned_alloc wants a multiple of the alignment. */
  void *p = aligned_alloc(RM_RLU_RHASH_LINE_, (bytes + RM_RLU_RHASH_LINE_ - 1) &
                                                  ~(size_t)(RM_RLU_RHASH_LINE_ - 1));
  if (p == NULL) return NULL;
  struct rm_rlu_rhash_tab *t = (struct rm_rlu_rhash_tab *)p;
  t->mask = n - 1;
  t->b = (struct rm_rlu_rhash_slot_ *)(void *)((char *)p + RM_RLU_RHASH_LINE_);
  for (size_t i = 0; i < n; i++) {
    t->b[i].hdr.copy = NULL;
    t->b[i].hdr.size = sizeof(struct rm_rlu_rhash_head);
    t->b[i].head.first = NULL;
    t->b[i].head.fwd = NULL;
  }
  return t;
}

/* Free an array and its heads (not the nodes); nothing may reach them. */
static inline void rm_rlu_rhash_tab_free_(struct rm_rlu_rhash_tab *t) { free(t); }

static inline struct rm_rlu_rhash *rm_rlu_rhash_create(size_t nbuckets, bool coarse) {
  if (!rm_rlu_rhash_size_ok_(nbuckets)) return errno = EINVAL, (struct rm_rlu_rhash *)NULL;
  struct rm_rlu_rhash *h = (struct rm_rlu_rhash *)malloc(sizeof *h);
  struct rm_rlu_rhash_root *root = (struct rm_rlu_rhash_root *)rm_rlu_alloc(sizeof *root);
  struct rm_rlu_rhash_tab *t = rm_rlu_rhash_tab_new_(nbuckets);
  if (h == NULL || root == NULL || t == NULL || pthread_mutex_init(&h->resize_mu, NULL) != 0) {
    free(h);
    if (root) rm_rlu_free(NULL, root);
    if (t) rm_rlu_rhash_tab_free_(t);
    return errno = ENOMEM, (struct rm_rlu_rhash *)NULL;
  }
  root->tab = t;
  root->ntab = NULL;
  root->done = 0;
  h->root = root;
  h->coarse = coarse;
  h->batch = 1;
  return h;
}

/* Bucket pairs split or merged per section of later resizes (0 is 1). */
static inline void rm_rlu_rhash_set_batch(struct rm_rlu_rhash *h, size_t pairs) {
  pthread_mutex_lock(&h->resize_mu);
  h->batch = pairs ? pairs : 1;
  pthread_mutex_unlock(&h->resize_mu);
}

/* Free every node, head and array.  No section may run on the table and no
 * deferred section may hold its objects. */
static inline void rm_rlu_rhash_destroy(struct rm_rlu_rhash *h) {
  struct rm_rlu_rhash_tab *t = h->root->tab;
  for (size_t i = 0; i <= t->mask; i++) {
    struct rm_rlu_rhash_node *n = RM_RLU_RHASH_B_(t, i)->first;
    while (n != NULL) {
      struct rm_rlu_rhash_node *nx = n->next;
      rm_rlu_free(NULL, n);
      n = nx;
    }
  }
  rm_rlu_rhash_tab_free_(t);
  rm_rlu_free(NULL, h->root);
  pthread_mutex_destroy(&h->resize_mu);
  free(h);
}

/* Inside a section: the head of hash's bucket (this section's own copy if
 * it locked it), after at most one forwarding hop (I2).  A bucket whose
 * step the root's hint counts as done is looked up in the new array
 * directly (I5), saving the hop through its old head. */
static inline struct rm_rlu_rhash_head *rm_rlu_rhash_head_(rm_rlu_ctx *self,
                                                           struct rm_rlu_rhash *h, uint64_t hash) {
  struct rm_rlu_rhash_root *root = RM_RLU_DEREF(self, h->root);
  struct rm_rlu_rhash_tab *t = root->tab, *nt = root->ntab;
  if (RM_UNLIKELY(nt != NULL)) {
    /* Step s handles old bucket s (grow) or new bucket s (shrink): the
     * hash's bits below the smaller array's size. */
    size_t smask = nt->mask < t->mask ? nt->mask : t->mask;
    if ((hash & smask) < root->done) t = nt;
  }
  struct rm_rlu_rhash_head *hd = RM_RLU_DEREF(self, RM_RLU_RHASH_B_(t, hash & t->mask));
  while (hd->fwd != NULL) {
    RM_DEBUG_YIELD();
    t = hd->fwd;
    hd = RM_RLU_DEREF(self, RM_RLU_RHASH_B_(t, hash & t->mask));
  }
  return hd;
}

static inline int rm_rlu_rhash_contains_in(rm_rlu_ctx *self, struct rm_rlu_rhash *h,
                                           uint64_t key) {
  struct rm_rlu_rhash_head *hd = rm_rlu_rhash_head_(self, h, rm_rlu_rhash_mix(key));
  for (struct rm_rlu_rhash_node *n = RM_RLU_DEREF(self, hd->first); n != NULL;
       n = RM_RLU_DEREF(self, n->next))
    if (n->key == key) return 1;
  return 0;
}

static inline int rm_rlu_rhash_contains(rm_rlu_ctx *self, struct rm_rlu_rhash *h, uint64_t key) {
  rm_rlu_reader_lock(self);
  int r = rm_rlu_rhash_contains_in(self, h, key);
  rm_rlu_reader_unlock(self);
  return r;
}

/* The update steps for a section the caller opened: 1 (done), 0 (present /
 * absent), -EBUSY (conflict: abort and retry) or -ENOMEM (abort). */
static inline int rm_rlu_rhash_add_in(rm_rlu_ctx *self, struct rm_rlu_rhash *h, uint64_t key) {
  struct rm_rlu_rhash_head *hd = rm_rlu_rhash_head_(self, h, rm_rlu_rhash_mix(key));
  for (struct rm_rlu_rhash_node *n = RM_RLU_DEREF(self, hd->first); n != NULL;
       n = RM_RLU_DEREF(self, n->next))
    if (n->key == key) return 0;
  /* Absence holds because every add to this bucket, and every split or
   * merge that fills it, locks this head too. */
  int r = RM_RLU_TRY_LOCK(self, &hd);
  if (r != 0) return -r;
  struct rm_rlu_rhash_node *nn = (struct rm_rlu_rhash_node *)rm_rlu_alloc(sizeof *nn);
  if (nn == NULL) return -ENOMEM;
  nn->key = key;
  rm_rlu_assign_ptr(&nn->next, hd->first);
  rm_rlu_assign_ptr(&hd->first, nn);
  return 1;
}

static inline int rm_rlu_rhash_remove_in(rm_rlu_ctx *self, struct rm_rlu_rhash *h,
                                         uint64_t key) {
  struct rm_rlu_rhash_head *hd = rm_rlu_rhash_head_(self, h, rm_rlu_rhash_mix(key));
  struct rm_rlu_rhash_node *prev = NULL, *n = RM_RLU_DEREF(self, hd->first);
  while (n != NULL && n->key != key) {
    prev = n;
    n = RM_RLU_DEREF(self, n->next);
  }
  if (n == NULL) return 0;
  /* The predecessor (or the head) and the node itself: a removal of n's
   * successor locks n, so the two cannot both link around stale copies. */
  int r = prev != NULL ? RM_RLU_TRY_LOCK(self, &prev) : RM_RLU_TRY_LOCK(self, &hd);
  if (r == 0) r = RM_RLU_TRY_LOCK(self, &n);
  if (r == 0) r = rm_rlu_free(self, n);
  if (r != 0) return -r;
  if (prev != NULL) rm_rlu_assign_ptr(&prev->next, n->next);
  else rm_rlu_assign_ptr(&hd->first, n->next);
  return 1;
}

static inline void rm_rlu_rhash_enter_update_(rm_rlu_ctx *self, const struct rm_rlu_rhash *h) {
  if (h->coarse) rm_rlu_writer_lock(self);
  else rm_rlu_reader_lock(self);
}

static inline int rm_rlu_rhash_update_(rm_rlu_ctx *self, struct rm_rlu_rhash *h, uint64_t key,
                                       bool add) {
  for (;;) {
    rm_rlu_rhash_enter_update_(self, h);
    int r = add ? rm_rlu_rhash_add_in(self, h, key) : rm_rlu_rhash_remove_in(self, h, key);
    if (r >= 0) {
      rm_rlu_reader_unlock(self);
      return r;
    }
    rm_rlu_abort(self);
    if (r == -ENOMEM) return r;
  }
}
static inline int rm_rlu_rhash_add(rm_rlu_ctx *self, struct rm_rlu_rhash *h, uint64_t key) {
  return rm_rlu_rhash_update_(self, h, key, true);
}
static inline int rm_rlu_rhash_remove(rm_rlu_ctx *self, struct rm_rlu_rhash *h, uint64_t key) {
  return rm_rlu_rhash_update_(self, h, key, false);
}

/* ---- resize ------------------------------------------------------------- */

/* One section's split: src's chain goes to a (hash bit `bit` clear) and b
 * (set), in order; src gets an empty chain and fwd = src_fwd; a and b get
 * fwd NULL.  Locks src, a, b and every node of src's chain.  0 or an error
 * number (EBUSY, ENOMEM). */
static inline int rm_rlu_rhash_split_in_(rm_rlu_ctx *self, struct rm_rlu_rhash_head *src,
                                         struct rm_rlu_rhash_head *a,
                                         struct rm_rlu_rhash_head *b, size_t bit,
                                         struct rm_rlu_rhash_tab *src_fwd) {
  int r;
  if ((r = RM_RLU_TRY_LOCK(self, &src)) != 0) return r;
  if ((r = RM_RLU_TRY_LOCK(self, &a)) != 0) return r;
  if ((r = RM_RLU_TRY_LOCK(self, &b)) != 0) return r;
  /* The link each chain's next node goes into: the head's first, then
   * the `next` of our copy of its last node. */
  struct rm_rlu_rhash_node **la = &a->first, **lb = &b->first;
  struct rm_rlu_rhash_node *n = RM_RLU_DEREF(self, src->first);
  while (n != NULL) {
    RM_DEBUG_YIELD();
    if ((r = RM_RLU_TRY_LOCK(self, &n)) != 0) return r;
    struct rm_rlu_rhash_node *nx = RM_RLU_DEREF(self, n->next);
    struct rm_rlu_rhash_node ***l = (rm_rlu_rhash_mix(n->key) & bit) ? &lb : &la;
    rm_rlu_assign_ptr(*l, n);
    *l = &n->next;
    n = nx;
  }
  rm_rlu_assign_ptr(la, NULL);
  rm_rlu_assign_ptr(lb, NULL);
  rm_rlu_assign_ptr(&src->first, NULL);
  src->fwd = src_fwd;
  a->fwd = NULL;
  b->fwd = NULL;
  return 0;
}

/* One section's merge: dst's chain becomes a's followed by b's; a and b
 * get empty chains and fwd = ab_fwd, dst fwd NULL.  Locks a, b, dst and
 * the last node of a's chain. */
static inline int rm_rlu_rhash_merge_in_(rm_rlu_ctx *self, struct rm_rlu_rhash_head *a,
                                         struct rm_rlu_rhash_head *b,
                                         struct rm_rlu_rhash_head *dst,
                                         struct rm_rlu_rhash_tab *ab_fwd) {
  int r;
  if ((r = RM_RLU_TRY_LOCK(self, &a)) != 0) return r;
  if ((r = RM_RLU_TRY_LOCK(self, &b)) != 0) return r;
  if ((r = RM_RLU_TRY_LOCK(self, &dst)) != 0) return r;
  struct rm_rlu_rhash_node *fa = RM_RLU_DEREF(self, a->first);
  struct rm_rlu_rhash_node *fb = RM_RLU_DEREF(self, b->first);
  if (fa != NULL) {
    struct rm_rlu_rhash_node *t = fa, *nx;
    while ((nx = RM_RLU_DEREF(self, t->next)) != NULL) t = nx;
    RM_DEBUG_YIELD();
    if ((r = RM_RLU_TRY_LOCK(self, &t)) != 0) return r;
    rm_rlu_assign_ptr(&t->next, fb);
    rm_rlu_assign_ptr(&dst->first, fa);
  } else {
    rm_rlu_assign_ptr(&dst->first, fb);
  }
  rm_rlu_assign_ptr(&a->first, NULL);
  rm_rlu_assign_ptr(&b->first, NULL);
  a->fwd = ab_fwd;
  b->fwd = ab_fwd;
  dst->fwd = NULL;
  return 0;
}

/* Step i of a resize from `from` to `to` (undo: the reverse), in one
 * section; 0 or an error number. */
static inline int rm_rlu_rhash_step_in_(rm_rlu_ctx *self, struct rm_rlu_rhash_tab *from,
                                        struct rm_rlu_rhash_tab *to, size_t i, bool undo) {
  if (to->mask > from->mask) { /* grow: old bucket i -> new i, i + n */
    size_t n = from->mask + 1;
    if (!undo) return rm_rlu_rhash_split_in_(self, RM_RLU_RHASH_B_(from, i), RM_RLU_RHASH_B_(to, i), RM_RLU_RHASH_B_(to, i + n), n, to);
    return rm_rlu_rhash_merge_in_(self, RM_RLU_RHASH_B_(to, i), RM_RLU_RHASH_B_(to, i + n), RM_RLU_RHASH_B_(from, i), NULL);
  }
  size_t m = to->mask + 1; /* shrink: old buckets i, i + m -> new i */
  if (!undo) return rm_rlu_rhash_merge_in_(self, RM_RLU_RHASH_B_(from, i), RM_RLU_RHASH_B_(from, i + m), RM_RLU_RHASH_B_(to, i), to);
  return rm_rlu_rhash_split_in_(self, RM_RLU_RHASH_B_(to, i), RM_RLU_RHASH_B_(from, i), RM_RLU_RHASH_B_(from, i + m), m, NULL);
}

/* Run steps i .. i+k-1 in one section (an undo: k is 1) until it commits;
 * an error only for ENOMEM when not undoing (undo steps persist: see
 * ENOMEM in the middle). */
static inline int rm_rlu_rhash_step_(rm_rlu_ctx *self, struct rm_rlu_rhash *h,
                                     struct rm_rlu_rhash_tab *from, struct rm_rlu_rhash_tab *to,
                                     size_t i, size_t k, bool undo) {
  for (;;) {
    rm_rlu_rhash_enter_update_(self, h);
    int r = 0;
    for (size_t j = i; j < i + k && r == 0; j++) {
      r = rm_rlu_rhash_step_in_(self, from, to, j, undo);
      if (r == 0 && !undo && RM_RLU_RHASH_INJECT(j)) r = ENOMEM;
    }
    if (r == 0) {
      rm_rlu_reader_unlock(self);
      return 0;
    }
    rm_rlu_abort(self);
    if (r == ENOMEM) {
      if (!undo) return r;
      sched_yield();
    }
  }
}

/* Set the root to (t, nt, done) in one section; 0 or ENOMEM.  With
 * injectable, the test hook RM_RLU_RHASH_INJECT(steps) may fail it. */
static inline int rm_rlu_rhash_set_root_(rm_rlu_ctx *self, struct rm_rlu_rhash *h,
                                         struct rm_rlu_rhash_tab *t, struct rm_rlu_rhash_tab *nt,
                                         size_t done, bool injectable, size_t steps) {
  for (;;) {
    rm_rlu_rhash_enter_update_(self, h);
    struct rm_rlu_rhash_root *root = h->root;
    int r = RM_RLU_TRY_LOCK(self, &root);
    if (r == 0 && injectable && RM_RLU_RHASH_INJECT(steps)) r = ENOMEM;
    if (r == 0) {
      root->tab = t;
      root->ntab = nt;
      root->done = done;
      rm_rlu_reader_unlock(self);
      return 0;
    }
    rm_rlu_abort(self);
    if (r == ENOMEM) return r;
  }
}

/* The resize itself, resize_mu held. */
static inline int rm_rlu_rhash_resize_locked_(rm_rlu_ctx *self, struct rm_rlu_rhash *h,
                                              size_t nbuckets) {
  /* Only resizes change the root, and they hold resize_mu (whose lock
   * orders us after the previous resize's write-back, done before its
   * rm_rlu_sync returned): a plain read of the original is current. */
  struct rm_rlu_rhash_tab *from = h->root->tab;
  size_t n = from->mask + 1;
  if (nbuckets == n) return 0;
  if (nbuckets != 2 * n && 2 * nbuckets != n) return EINVAL;
  struct rm_rlu_rhash_tab *to =
      RM_RLU_RHASH_INJECT(SIZE_MAX) ? NULL : rm_rlu_rhash_tab_new_(nbuckets);
  if (to == NULL) return ENOMEM;
  size_t steps = nbuckets < n ? nbuckets : n, done = 0, sections = 0;
  bool hinted = false;
  int err = 0;
  while (done < steps) {
    size_t k = steps - done < h->batch ? steps - done : h->batch;
    if ((err = rm_rlu_rhash_step_(self, h, from, to, done, k, false)) != 0) break;
    done += k;
    /* The progress hint (I5): written after the steps it counts have
     * committed, so a section that sees it sees them done.  It only saves
     * lookups a hop: a hint that fails for memory is skipped. */
    if (++sections % RM_RLU_RHASH_HINT_EVERY == 0 && done < steps &&
        rm_rlu_rhash_set_root_(self, h, from, to, done, false, 0) == 0)
      hinted = true;
  }
  if (err == 0) err = rm_rlu_rhash_set_root_(self, h, to, NULL, 0, true, steps);
  rm_rlu_sync(self); /* deferral: our sections written back */
  if (err == 0) {
    /* The root's commit waited for every section that began before its
     * clock step (the only ones that could have read `from`); later ones
     * read `to`.  Nothing reaches `from` or its heads any more. */
    rm_rlu_rhash_tab_free_(from);
    return 0;
  }
  /* ENOMEM: undo, newest first.  First the hint goes, so that no section
   * that starts after its commit goes to `to` without a forwarding head
   * (I5: a hint must not count an undone step).  Each undo's commit waits
   * for the sections that could have followed a forwarding head (or the
   * hint) into `to`; after the last one nothing reaches `to`. */
  if (hinted)
    while (rm_rlu_rhash_set_root_(self, h, from, NULL, 0, false, 0) != 0) sched_yield();
  while (done-- > 0) (void)rm_rlu_rhash_step_(self, h, from, to, done, 1, true);
  rm_rlu_sync(self);
  rm_rlu_rhash_tab_free_(to);
  return err;
}

static inline int rm_rlu_rhash_resize(rm_rlu_ctx *self, struct rm_rlu_rhash *h, size_t nbuckets) {
  RM_ASSERT(!rm_rlu_in_section(self), "rm_rlu_rhash_resize inside a section");
  if (!rm_rlu_rhash_size_ok_(nbuckets)) return EINVAL;
  pthread_mutex_lock(&h->resize_mu);
  int err = rm_rlu_rhash_resize_locked_(self, h, nbuckets);
  pthread_mutex_unlock(&h->resize_mu);
  return err;
}

/* ---- sizes ------------------------------------------------------------- */

/* The bucket count of the array the root points to (one section). */
static inline size_t rm_rlu_rhash_buckets(rm_rlu_ctx *self, struct rm_rlu_rhash *h) {
  rm_rlu_reader_lock(self);
  struct rm_rlu_rhash_root *root = RM_RLU_DEREF(self, h->root);
  size_t n = root->tab->mask + 1;
  rm_rlu_reader_unlock(self);
  return n;
}

static inline size_t rm_rlu_rhash_chain_len_(rm_rlu_ctx *self, struct rm_rlu_rhash_head *hd) {
  size_t n = 0;
  for (struct rm_rlu_rhash_node *p = RM_RLU_DEREF(self, hd->first); p != NULL;
       p = RM_RLU_DEREF(self, p->next))
    n++;
  return n;
}

/* The number of keys, counted in one section (a snapshot).  A forwarding
 * head of a grow leads to two new buckets (i and i + n); both old heads of
 * a shrink lead to the same new bucket, counted from the lower one. */
static inline size_t rm_rlu_rhash_count(rm_rlu_ctx *self, struct rm_rlu_rhash *h) {
  size_t n = 0;
  rm_rlu_reader_lock(self);
  struct rm_rlu_rhash_root *root = RM_RLU_DEREF(self, h->root);
  struct rm_rlu_rhash_tab *t = root->tab;
  for (size_t i = 0; i <= t->mask; i++) {
    struct rm_rlu_rhash_head *hd = RM_RLU_DEREF(self, RM_RLU_RHASH_B_(t, i));
    struct rm_rlu_rhash_tab *f = hd->fwd;
    if (f == NULL) {
      n += rm_rlu_rhash_chain_len_(self, hd);
    } else if (f->mask > t->mask) {
      n += rm_rlu_rhash_chain_len_(self, RM_RLU_DEREF(self, RM_RLU_RHASH_B_(f, i)));
      n += rm_rlu_rhash_chain_len_(self, RM_RLU_DEREF(self, RM_RLU_RHASH_B_(f, i + t->mask + 1)));
    } else if (i <= f->mask) {
      n += rm_rlu_rhash_chain_len_(self, RM_RLU_DEREF(self, RM_RLU_RHASH_B_(f, i)));
    }
  }
  rm_rlu_reader_unlock(self);
  return n;
}

/* The number of keys, read without RLU: no section may run and no
 * deferred section may hold objects of the table. */
static inline size_t rm_rlu_rhash_size(const struct rm_rlu_rhash *h) {
  const struct rm_rlu_rhash_tab *t = h->root->tab;
  size_t n = 0;
  for (size_t i = 0; i <= t->mask; i++)
    for (const struct rm_rlu_rhash_node *p = RM_RLU_RHASH_B_(t, i)->first; p != NULL; p = p->next) n++;
  return n;
}

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_RLU_RHASH_H */
