/*
 * readmostly/rlu_dlist.h - a circular doubly linked list on read-log-update,
 * with the calls of the kernel's RCU list (list_add_rcu, list_add_tail_rcu,
 * list_del_rcu, list_for_each_entry_rcu), and a reverse iterator that RCU
 * cannot offer.  Header-only.
 *
 * SYNOPSIS
 *   #include <readmostly/rlu_dlist.h>
 *
 *   struct item { int key; struct rm_rlu_dlist link; };   // link: anywhere
 *   struct set  { long n; struct rm_rlu_dlist items; };   // the head: anywhere
 *
 *   struct set *s = rm_rlu_alloc(sizeof *s);           // heads and entries are
 *   RM_RLU_DLIST_INIT(s, items);                        //   RLU objects
 *
 *   struct item *it = rm_rlu_alloc(sizeof *it);        // a new entry, private
 *   it->key = 7;
 *   RM_RLU_DLIST_INIT(it, link);
 *   for (;;) {                                          // fine-grained: retry
 *     rm_rlu_reader_lock(self);
 *     struct set *sv = RM_RLU_DEREF(self, s);          // the head's version
 *     int r = rm_rlu_dlist_add_tail(self, &it->link, &sv->items);
 *     if (r == 0) { rm_rlu_reader_unlock(self); break; }   // commit
 *     rm_rlu_abort(self);                               // EBUSY: again
 *     if (r == ENOMEM) break;                           //   ENOMEM: give up
 *   }
 *
 *   rm_rlu_reader_lock(self);                           // a reader
 *   struct set *sv = RM_RLU_DEREF(self, s);
 *   struct item *pos;
 *   rm_rlu_dlist_for_each_entry(self, pos, &sv->items, link) use(pos->key);
 *   rm_rlu_dlist_for_each_entry_reverse(self, pos, &sv->items, link) use(pos->key);
 *   rm_rlu_reader_unlock(self);
 *
 *   // in a writer's section, pos reached by an iterator:
 *   r = rm_rlu_dlist_del(self, &pos->link);            // 0, EBUSY, ENOMEM
 *   if (r == 0) r = rm_rlu_free(self, pos);            // after the grace period
 *
 * DESCRIPTION
 *   A list is a head link and entry links, each a struct rm_rlu_dlist
 *   embedded at any offset in an object allocated with rm_rlu_alloc()
 *   (rlu.h).  The list is circular through the head, as the kernel's.  A
 *   link stores its neighbours' addresses (always in the actual objects,
 *   never in copies) and where those links sit in their objects, so that
 *   every step can dereference the neighbour's object through RLU; and
 *   where it sits in its own object, so that the calls can lock it.
 *
 *   rm_rlu_dlist_init(obj, link) (or RM_RLU_DLIST_INIT(obj, member)) makes
 *   link, inside the RLU object obj, an empty list head or a new entry.  It
 *   is done before the object is published; an entry is added once (an
 *   entry that was deleted is freed or kept, not added again).
 *
 *   Inside a section, every link handed to these calls must be a link of a
 *   version the section obtained from RLU: the head's object dereferenced
 *   with RM_RLU_DEREF(), or an entry reached by an iterator,
 *   rm_rlu_dlist_next() or rm_rlu_dlist_prev() (the new entry of an add is
 *   the exception: it is the private object itself).  Never hand a link of
 *   the actual object read without a dereference: a writer's write-back may
 *   be copying over it.
 *
 *   rm_rlu_dlist_add(self, new, pos) inserts new after pos (pos is the head
 *   or an entry; after the head is the front).  rm_rlu_dlist_add_tail(self,
 *   new, head) inserts new before head (the back).  rm_rlu_dlist_del(self,
 *   entry) unlinks entry; the entry keeps its own links, so a section
 *   standing on it still walks on in both directions, and the caller frees
 *   its object with rm_rlu_free() in the same section (freed after the
 *   commit's grace period) or keeps it.  The three lock, with
 *   rm_rlu_try_lock(), every object whose link they change and the deleted
 *   entry itself: add locks pos and its successor, del locks the entry and
 *   both neighbours.  Locking the deleted entry is not optional: without
 *   it, deleting A (locks its neighbours P and B) and B (locks A and C) in
 *   two sections would lock disjoint sets, both commit, and leave P
 *   pointing to the deleted B (rlu.h, "Write skew").
 *
 *   Nothing is visible to other sections until the caller's
 *   rm_rlu_reader_unlock() commits, and then all of it at once: a section
 *   sees the whole list before or after the commit, in both directions.
 *   Several calls in one section (move an entry: del then add) commit
 *   together.  The section's own later steps see its changes.
 *
 *   rm_rlu_dlist_for_each_entry(self, pos, head, member) sets pos to each
 *   entry from the front, rm_rlu_dlist_for_each_entry_reverse from the back.
 *   The loop starts from the head's current version (the section's own copy
 *   if it has changed the head) and each step dereferences the neighbour
 *   through RLU, so pos is the version this section must read.  Steps go
 *   from the version of each entry the loop reached: a change the body makes
 *   to the current entry's links (an add after pos) is not followed by that
 *   loop; deleting pos is (the deleted entry keeps its links).  break and
 *   continue work; after the last entry pos keeps the last value.  The
 *   iterators declare two variables named after the line: do not put two on
 *   one line.
 *
 *   Single steps: rm_rlu_dlist_next(self, link) and rm_rlu_dlist_prev(self,
 *   link), from the current version of link (any version may be given; the
 *   head is a step like any other); rm_rlu_dlist_version(self, link), that
 *   current version; rm_rlu_dlist_actual(link), the link in its actual
 *   object, for comparing versions (two versions are the same link when
 *   their actual links are equal); rm_rlu_dlist_empty(self, head).
 *
 *   Retrying.  Under the fine-grained flavor (rlu.h) add and del return
 *   EBUSY when another section holds one of the objects: the caller must
 *   rm_rlu_abort() the section (which discards every change it made) and
 *   run it again from rm_rlu_reader_lock(), finding its position anew (the
 *   SYNOPSIS loop; the abort waits briefly for the other writer).  Under the
 *   coarse-grained flavor, sections that write enter with
 *   rm_rlu_writer_lock() and never see EBUSY.  The new entry is unchanged by
 *   an abort and can be handed to the retry.
 *
 * RETURN VALUES
 *   rm_rlu_dlist_add(), rm_rlu_dlist_add_tail() and rm_rlu_dlist_del()
 *   return 0, EBUSY (an object is locked by another section: abort and
 *   retry) or ENOMEM (the write-log could not grow: abort).  After a
 *   non-zero return the section has locked some objects and must abort.
 *   rm_rlu_dlist_next(), rm_rlu_dlist_prev() and rm_rlu_dlist_version()
 *   return a link in the version to read (the head included); the first two
 *   and rm_rlu_dlist_empty() are for sections only.
 *
 * ERRORS
 *   Deleting the head, adding an entry that is already on a list, or handing
 *   in links of undereferenced objects are bugs that are not detected.
 *
 * ORDERING
 *   The list adds no ordering of its own: every step is an
 *   rm_rlu_dereference() (L1 and D1 of src/rlu.c), every change is a plain
 *   store into a copy in the writer's log or into the still private new
 *   entry, and the commit publishes them (W2: the clock store is a release;
 *   a section that steals a copy acquired the owner's write clock, one that
 *   reads the actual object after the write-back acquired the unlock, L3).
 *   A section that read an object before a writer locked it keeps reading
 *   that object's original: the writer's synchronize waits for it before
 *   the write-back.  Hence every next/prev pair a section crosses agrees:
 *   rm_rlu_dlist_prev(self, rm_rlu_dlist_next(self, l))'s actual link is
 *   rm_rlu_dlist_actual(l), in both directions, under any concurrent adds
 *   and deletes.  The RCU list cannot give this: its add and delete store
 *   next and prev separately, and a reader between the two stores, or
 *   reading on after one, sees a pair that disagrees (docs/rlu-structures.md).
 */
#ifndef READMOSTLY_RLU_DLIST_H
#define READMOSTLY_RLU_DLIST_H

#include <readmostly/rlu.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A link, the head's and every entry's (32 bytes):
 *
 *   next, prev          the neighbours' links in their actual objects
 *   next_off, prev_off  where those links sit in their objects (bytes)
 *   off                 where this link sits in its own object
 *
 * Fields are written only in copies and in private new entries, and read
 * only from versions returned by RLU dereferences.
 */
struct rm_rlu_dlist {
  struct rm_rlu_dlist *next;
  struct rm_rlu_dlist *prev;
  uint32_t next_off;
  uint32_t prev_off;
  uint32_t off;
  uint32_t reserved_;
};

/* The object holding link, given the link and the offset of it inside. */
static inline void *rm_rlu_dlist_obj_(const struct rm_rlu_dlist *l, uint32_t off) {
  return (void *)((char *)(uintptr_t)l - off);
}
static inline struct rm_rlu_dlist *rm_rlu_dlist_at_(void *obj, uint32_t off) {
  return (struct rm_rlu_dlist *)(void *)((char *)obj + off);
}

/* link, inside the RLU object obj, as an empty list or a new entry. */
static inline void rm_rlu_dlist_init(void *obj, struct rm_rlu_dlist *link) {
  uint32_t off = (uint32_t)((char *)link - (char *)obj);
  link->next = link;
  link->prev = link;
  link->next_off = off;
  link->prev_off = off;
  link->off = off;
  link->reserved_ = 0;
}
#define RM_RLU_DLIST_INIT(obj, member) rm_rlu_dlist_init((obj), &(obj)->member)

/* The link of version l in its actual object. */
static inline struct rm_rlu_dlist *rm_rlu_dlist_actual(const struct rm_rlu_dlist *l) {
  return rm_rlu_dlist_at_(rm_rlu_actual(rm_rlu_dlist_obj_(l, l->off)), l->off);
}

/* The version to read of the link `to` (an actual address) at offset off. */
static inline struct rm_rlu_dlist *rm_rlu_dlist_deref_(rm_rlu_ctx *self, struct rm_rlu_dlist *to,
                                                       uint32_t off) {
  return rm_rlu_dlist_at_(rm_rlu_dereference(self, rm_rlu_dlist_obj_(to, off)), off);
}
/* The version of link l (any version of it) this section must read now:
 * the section's own copy once it has locked the object. */
static inline struct rm_rlu_dlist *rm_rlu_dlist_version(rm_rlu_ctx *self,
                                                        const struct rm_rlu_dlist *l) {
  return rm_rlu_dlist_deref_(self, rm_rlu_dlist_actual(l), l->off);
}
static inline struct rm_rlu_dlist *rm_rlu_dlist_next(rm_rlu_ctx *self,
                                                     const struct rm_rlu_dlist *l) {
  l = rm_rlu_dlist_version(self, l);
  return rm_rlu_dlist_deref_(self, l->next, l->next_off);
}
static inline struct rm_rlu_dlist *rm_rlu_dlist_prev(rm_rlu_ctx *self,
                                                     const struct rm_rlu_dlist *l) {
  l = rm_rlu_dlist_version(self, l);
  return rm_rlu_dlist_deref_(self, l->prev, l->prev_off);
}
static inline bool rm_rlu_dlist_empty(rm_rlu_ctx *self, const struct rm_rlu_dlist *head) {
  head = rm_rlu_dlist_version(self, head);
  return head->next == rm_rlu_dlist_actual(head);
}

/* Lock the object of *pl for this section; *pl becomes the link in the
 * copy.  0, EBUSY or ENOMEM (rm_rlu_try_lock). */
static inline int rm_rlu_dlist_lock_(rm_rlu_ctx *self, struct rm_rlu_dlist **pl) {
  uint32_t off = (*pl)->off;
  void *obj = rm_rlu_dlist_obj_(*pl, off);
  int r = rm_rlu_try_lock(self, &obj);
  if (r == 0) *pl = rm_rlu_dlist_at_(obj, off);
  return r;
}

/* Insert new (a private entry) after pos.  pos and its successor are locked
 * first; when the list is empty they are the head, locked once (a second
 * try_lock of the same object returns the same copy). */
static inline int rm_rlu_dlist_add(rm_rlu_ctx *self, struct rm_rlu_dlist *new_,
                                   struct rm_rlu_dlist *pos) {
  int r = rm_rlu_dlist_lock_(self, &pos);
  if (r != 0) return r;
  struct rm_rlu_dlist *next = rm_rlu_dlist_deref_(self, pos->next, pos->next_off);
  r = rm_rlu_dlist_lock_(self, &next);
  if (r != 0) return r;
  struct rm_rlu_dlist *a_new = rm_rlu_dlist_actual(new_);
  /* Plain stores: new_ is private and pos, next are copies; the commit
   * publishes all of them together (ORDERING). */
  new_->next = pos->next;
  new_->next_off = pos->next_off;
  new_->prev = rm_rlu_dlist_actual(pos);
  new_->prev_off = pos->off;
  pos->next = a_new;
  pos->next_off = new_->off;
  next->prev = a_new;
  next->prev_off = new_->off;
  return 0;
}

/* Insert new before head: at the back. */
static inline int rm_rlu_dlist_add_tail(rm_rlu_ctx *self, struct rm_rlu_dlist *new_,
                                        struct rm_rlu_dlist *head) {
  return rm_rlu_dlist_add(self, new_, rm_rlu_dlist_prev(self, head));
}

/* Unlink entry: lock it (see DESCRIPTION: write skew) and both neighbours,
 * then join them.  The entry's own links stay as they were. */
static inline int rm_rlu_dlist_del(rm_rlu_ctx *self, struct rm_rlu_dlist *entry) {
  int r = rm_rlu_dlist_lock_(self, &entry);
  if (r != 0) return r;
  struct rm_rlu_dlist *prev = rm_rlu_dlist_deref_(self, entry->prev, entry->prev_off);
  r = rm_rlu_dlist_lock_(self, &prev);
  if (r != 0) return r;
  struct rm_rlu_dlist *next = rm_rlu_dlist_deref_(self, entry->next, entry->next_off);
  r = rm_rlu_dlist_lock_(self, &next);
  if (r != 0) return r;
  prev->next = entry->next;
  prev->next_off = entry->next_off;
  next->prev = entry->prev;
  next->prev_off = entry->prev_off;
  return 0;
}

/* One step of an iterator: the neighbour's version, or NULL at end (the
 * head's actual link). */
static inline struct rm_rlu_dlist *rm_rlu_dlist_step_(rm_rlu_ctx *self,
                                                      const struct rm_rlu_dlist *l,
                                                      const struct rm_rlu_dlist *end,
                                                      bool forward) {
  struct rm_rlu_dlist *to = forward ? l->next : l->prev;
  if (to == end) return NULL;
  return rm_rlu_dlist_deref_(self, to, forward ? l->next_off : l->prev_off);
}

/* The object of type `type` whose member `member` is the link l. */
#define rm_rlu_dlist_entry(l, type, member) ((type *)(void *)((char *)(l) - offsetof(type, member)))

#define RM_RLU_DLIST_CAT2_(a, b) a##b
#define RM_RLU_DLIST_CAT_(a, b) RM_RLU_DLIST_CAT2_(a, b)
#define RM_RLU_DLIST_END_ RM_RLU_DLIST_CAT_(rm_rlu_dlist_end_, __LINE__)
#define RM_RLU_DLIST_CUR_ RM_RLU_DLIST_CAT_(rm_rlu_dlist_cur_, __LINE__)

#define RM_RLU_DLIST_FOR_(self, pos, head, member, fwd)                                     \
  for (const struct rm_rlu_dlist *RM_RLU_DLIST_END_ = rm_rlu_dlist_actual(head),            \
                                  *RM_RLU_DLIST_CUR_ =                                      \
                                      rm_rlu_dlist_step_((self),                            \
                                                         rm_rlu_dlist_version((self), (head)), \
                                                         RM_RLU_DLIST_END_, (fwd));        \
       RM_RLU_DLIST_CUR_ != NULL &&                                                        \
       ((pos) = rm_rlu_dlist_entry(RM_RLU_DLIST_CUR_, __typeof__(*(pos)), member), 1);      \
       RM_RLU_DLIST_CUR_ =                                                                  \
           rm_rlu_dlist_step_((self), RM_RLU_DLIST_CUR_, RM_RLU_DLIST_END_, (fwd)))

/* pos = each entry, front to back / back to front, inside a section. */
#define rm_rlu_dlist_for_each_entry(self, pos, head, member) \
  RM_RLU_DLIST_FOR_(self, pos, head, member, true)
#define rm_rlu_dlist_for_each_entry_reverse(self, pos, head, member) \
  RM_RLU_DLIST_FOR_(self, pos, head, member, false)

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_RLU_DLIST_H */
