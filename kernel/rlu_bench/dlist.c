// SPDX-License-Identifier: GPL-2.0
/*
 * dlist.c - the RLU paper's Figure 9: a sorted doubly linked list of nodes
 * padded to a cache line,
 *
 *   rcu   the kernel's list API: list_for_each_entry_rcu() for lookups,
 *         list_add_tail_rcu() and list_del_rcu() under a spinlock for
 *         updates, kfree_rcu() for removed nodes.  Readers may only go
 *         forward: a node's prev pointer is not safe to follow under RCU.
 *   rlu   the same list on rm_rlu (rlu, rlu-defer, rlu-coarse): an insert
 *         locks the two neighbours, a remove the node and both neighbours,
 *         and both directions are updated in one section.
 *
 * RLU readers check what RCU cannot give: after walking forward to the
 * first node with key >= the one looked for, they step back through that
 * node's prev pointer and must arrive at the node they came from (the
 * section sees both links of every update or neither).  A mismatch counts
 * as an error (the run's result is FAIL).
 */
#include <linux/kernel.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "rm_rlu.h"
#include "kbench.h"

/* ---- RCU: list_head and list_*_rcu --------------------------------------- */
struct dl_rcu_node {
	struct list_head list;
	long key;
	struct rcu_head rcu;
	char pad[64 - sizeof(struct list_head) - sizeof(long) - sizeof(struct rcu_head)];
};

struct dl_rcu {
	spinlock_t lock;
	struct list_head head;
};

static int dl_rcu_create(struct kb_set *s)
{
	struct dl_rcu *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return -ENOMEM;
	spin_lock_init(&d->lock);
	INIT_LIST_HEAD(&d->head);
	s->extra = d;
	return 0;
}

static void dl_rcu_destroy(struct kb_set *s)
{
	struct dl_rcu *d = s->extra;
	struct dl_rcu_node *n, *nx;

	if (!d)
		return;
	/* The threads are stopped: what is still linked is ours to free. */
	list_for_each_entry_safe(n, nx, &d->head, list)
		kfree(n);
	kfree(d);
}

static void *dl_rcu_thread_init(struct kb_set *s)
{
	return s;
}

static void dl_rcu_thread_fini(struct kb_set *s, void *th)
{
}

static bool dl_rcu_contains(struct kb_set *s, void *th, long key)
{
	struct dl_rcu *d = s->extra;
	struct dl_rcu_node *n;
	bool found = false;

	rcu_read_lock();
	list_for_each_entry_rcu(n, &d->head, list) {
		if (n->key >= key) {
			found = n->key == key;
			break;
		}
	}
	rcu_read_unlock();
	return found;
}

/* The first node with key >= key, or the head's container (writers only). */
static struct dl_rcu_node *dl_rcu_find(struct dl_rcu *d, long key)
{
	struct dl_rcu_node *n;

	list_for_each_entry(n, &d->head, list)
		if (n->key >= key)
			break;
	return n;
}

static int dl_rcu_add(struct kb_set *s, void *th, long key)
{
	struct dl_rcu *d = s->extra;
	struct dl_rcu_node *cur, *n = kmalloc(sizeof(*n), GFP_KERNEL);

	if (!n)
		return -ENOMEM;
	n->key = key;
	spin_lock(&d->lock);
	cur = dl_rcu_find(d, key);
	if (&cur->list != &d->head && cur->key == key) {
		spin_unlock(&d->lock);
		kfree(n);
		return 0;
	}
	/* Before cur (at the tail when cur is the head): list_add_tail_rcu
	 * publishes n with a release (rcu_assign_pointer) after filling it. */
	list_add_tail_rcu(&n->list, &cur->list);
	spin_unlock(&d->lock);
	return 1;
}

static int dl_rcu_remove(struct kb_set *s, void *th, long key)
{
	struct dl_rcu *d = s->extra;
	struct dl_rcu_node *cur;

	spin_lock(&d->lock);
	cur = dl_rcu_find(d, key);
	if (&cur->list == &d->head || cur->key != key) {
		spin_unlock(&d->lock);
		return 0;
	}
	list_del_rcu(&cur->list);
	spin_unlock(&d->lock);
	kfree_rcu(cur, rcu);
	return 1;
}

static long dl_rcu_check(struct kb_set *s)
{
	struct dl_rcu *d = s->extra;
	struct list_head *p, *last = &d->head;
	long size = 0, lastkey = LONG_MIN;

	for (p = d->head.next; p != &d->head; p = p->next) {
		struct dl_rcu_node *n = list_entry(p, struct dl_rcu_node, list);

		if (n->key <= lastkey || p->prev != last)
			return -1;
		lastkey = n->key;
		last = p;
		size++;
	}
	return d->head.prev == last ? size : -1;
}

const struct kb_set_ops kb_dlist_rcu_ops = {
	"rcu-dlist", dl_rcu_create, dl_rcu_destroy, dl_rcu_thread_init, dl_rcu_thread_fini,
	dl_rcu_contains, dl_rcu_add, dl_rcu_remove, dl_rcu_check,
};

/* ---- RLU: sentinels at both ends (keys LONG_MIN and LONG_MAX) ------------- */
struct dl_rlu_node {
	struct dl_rlu_node *next, *prev;
	long key;
	/* With the 16-byte RLU header, a node fills a 64-byte line. */
	char pad[64 - sizeof(struct rm_rlu_obj_hdr) - 2 * sizeof(void *) - sizeof(long)];
};

struct dl_rlu {
	struct dl_rlu_node *head, *tail;
};

static int dl_rlu_create(struct kb_set *s)
{
	struct dl_rlu *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return -ENOMEM;
	s->extra = d;
	d->head = rm_rlu_alloc(sizeof(struct dl_rlu_node), GFP_KERNEL);
	d->tail = rm_rlu_alloc(sizeof(struct dl_rlu_node), GFP_KERNEL);
	if (!d->head || !d->tail)
		return -ENOMEM; /* destroy frees what was made */
	d->head->key = LONG_MIN;
	d->head->prev = NULL;
	d->head->next = d->tail;
	d->tail->key = LONG_MAX;
	d->tail->prev = d->head;
	d->tail->next = NULL;
	return 0;
}

static void dl_rlu_destroy(struct kb_set *s)
{
	struct dl_rlu *d = s->extra;
	struct dl_rlu_node *n;

	if (!d)
		return;
	/* Every context is unregistered: the originals are the list. */
	if (d->head && d->tail) {
		n = d->head;
		while (n) {
			struct dl_rlu_node *nx = n->next;

			rm_rlu_free(NULL, n);
			n = nx;
		}
	} else {
		rm_rlu_free(NULL, d->head);
		rm_rlu_free(NULL, d->tail);
	}
	kfree(d);
}

static void *dl_rlu_thread_init(struct kb_set *s)
{
	return rm_rlu_thread_register();
}

static void dl_rlu_thread_fini(struct kb_set *s, void *th)
{
	rm_rlu_thread_unregister(th);
}

/* prev: the last node with key < key; cur: the one after it (the tail at
 * worst).  Then the backward check (see the top). */
static void dl_rlu_find(struct rm_rlu_ctx *self, struct kb_set *s, long key,
			struct dl_rlu_node **pprev, struct dl_rlu_node **pcur)
{
	struct dl_rlu *d = s->extra;
	struct dl_rlu_node *prev = RM_RLU_DEREF(self, d->head);
	struct dl_rlu_node *cur = RM_RLU_DEREF(self, prev->next);

	while (cur->key < key) {
		prev = cur;
		cur = RM_RLU_DEREF(self, cur->next);
	}
	if (!rm_rlu_same(RM_RLU_DEREF(self, cur->prev), prev))
		atomic_long_inc(&s->errors);
	*pprev = prev;
	*pcur = cur;
}

static bool dl_rlu_contains(struct kb_set *s, void *th, long key)
{
	struct dl_rlu_node *prev, *cur;
	bool found;

	rm_rlu_reader_lock(th);
	dl_rlu_find(th, s, key, &prev, &cur);
	found = cur->key == key;
	rm_rlu_reader_unlock(th);
	return found;
}

static void dl_rlu_enter_writer(struct kb_set *s, struct rm_rlu_ctx *self)
{
	if (s->coarse)
		rm_rlu_writer_lock(self);
	else
		rm_rlu_reader_lock(self);
}

static int dl_rlu_add(struct kb_set *s, void *th, long key)
{
	struct rm_rlu_ctx *self = th;
	struct dl_rlu_node *prev, *cur, *n = rm_rlu_alloc(sizeof(*n), GFP_KERNEL);

	if (!n)
		return -ENOMEM;
	for (;;) {
		dl_rlu_enter_writer(s, self);
		dl_rlu_find(self, s, key, &prev, &cur);
		if (cur->key == key) {
			rm_rlu_reader_unlock(self);
			rm_rlu_free(NULL, n); /* never published */
			return 0;
		}
		if (RM_RLU_TRY_LOCK(self, &prev) == 0 && RM_RLU_TRY_LOCK(self, &cur) == 0)
			break;
		rm_rlu_abort(self);
		cond_resched();
	}
	n->key = key;
	RM_RLU_ASSIGN_PTR(&n->next, cur);
	RM_RLU_ASSIGN_PTR(&n->prev, prev);
	RM_RLU_ASSIGN_PTR(&prev->next, n);
	RM_RLU_ASSIGN_PTR(&cur->prev, n);
	rm_rlu_reader_unlock(self);
	return 1;
}

static int dl_rlu_remove(struct kb_set *s, void *th, long key)
{
	struct rm_rlu_ctx *self = th;
	struct dl_rlu_node *prev, *cur, *next;

	for (;;) {
		dl_rlu_enter_writer(s, self);
		dl_rlu_find(self, s, key, &prev, &cur);
		if (cur->key != key) {
			rm_rlu_reader_unlock(self);
			return 0;
		}
		next = RM_RLU_DEREF(self, cur->next);
		if (RM_RLU_TRY_LOCK(self, &prev) == 0 && RM_RLU_TRY_LOCK(self, &cur) == 0 &&
		    RM_RLU_TRY_LOCK(self, &next) == 0 && rm_rlu_free(self, cur) == 0)
			break;
		rm_rlu_abort(self);
		cond_resched();
	}
	RM_RLU_ASSIGN_PTR(&prev->next, next);
	RM_RLU_ASSIGN_PTR(&next->prev, prev);
	rm_rlu_reader_unlock(self);
	return 1;
}

static long dl_rlu_check(struct kb_set *s)
{
	struct dl_rlu *d = s->extra;
	struct dl_rlu_node *last = d->head, *n;
	long size = 0;

	for (n = d->head->next; n != d->tail; n = n->next) {
		if (!n || n->key <= last->key || n->prev != last || RM_RLU_HDR(n)->copy)
			return -1;
		last = n;
		size++;
	}
	return d->tail->prev == last ? size : -1;
}

const struct kb_set_ops kb_dlist_rlu_ops = {
	"rlu-dlist", dl_rlu_create, dl_rlu_destroy, dl_rlu_thread_init, dl_rlu_thread_fini,
	dl_rlu_contains, dl_rlu_add, dl_rlu_remove, dl_rlu_check,
};
