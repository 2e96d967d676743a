// SPDX-License-Identifier: GPL-2.0
/*
 * torture.c - the RLU paper's kernel torture (section 4.7), for rm_rlu: the
 * basic consistency test of the kernel's rcutorture, with 1 writer, n
 * readers and n fake writers, and frees deferred through RLU.
 *
 * Shared state (all RLU objects):
 *   root   { cur, seq }     cur points to an element of a private pool
 *   elem   { seq, mbtest, check }
 *   a, b   { seq, val }     a.val + b.val == 0 and a.seq == b.seq == root.seq
 *
 * The writer takes an element from the pool and fills it (seq s + 1,
 * mbtest 1, check = f(s + 1)) before any section can see it, then in one
 * section locks root, a and b, points root at the new element, writes
 * s + 1 into all three (a.val = s + 1, b.val = -(s + 1)) and frees the old
 * element with rm_rlu_free().  RLU returns a freed element to the pool
 * (rm_rlu_set_free_fn) only after the commit's synchronize; the pool
 * poisons it (mbtest 0, seq and check scrambled) and the writer reuses it
 * soon.  With impl=rlu-defer the writer's sections (and their frees) are
 * deferred over up to 10 sections; with impl=rlu-ff sections enter without
 * a fence (rm_rlu_init's fence_free).
 *
 * A reader's section reads root, its element, then a and b, with random
 * delays and reschedules in between (sections may sleep here), and checks:
 *   - the element is not in the pool (mbtest 1), its seq is root's and its
 *     check matches: it was not freed and reused under the section (the
 *     grace period);
 *   - a.seq == b.seq == root.seq and a.val + b.val == 0: the section saw all
 *     of the writer's section or none of it (RLU's atomicity over several
 *     objects);
 *   - the element is still intact at the end of the section;
 *   - the seq never goes backwards from one section of a reader to the next.
 * Fake writers call rm_rlu_synchronize(), or commit a section that locks a
 * private object, or rm_rlu_sync(), with random delays.
 *
 * At the end the pool must hold every element but root's: none lost, none
 * freed twice.  Any violation: pr_err (the first few), a failure count, and
 * result=FAIL in the result line.
 */
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>

#include "rm_rlu.h"
#include "kbench.h"

#define POOL 64
#define POISON_SEQ 0x5a5a5a5a5a5a5a5aULL

struct t_elem {
	u64 seq;
	u64 check;
	u32 mbtest;       /* 1: published or about to be; 0: in the pool */
	u32 pooled;       /* the pool's own mark (double free detection) */
	struct t_elem *pool_next;
};

struct t_root {
	struct t_elem *cur;
	u64 seq;
};

struct t_pair {
	u64 seq;
	s64 val;
};

struct t_dummy {
	u64 n;
};

struct t_counts {
	u64 reads, updates, syncs, commits;
} ____cacheline_aligned_in_smp;

static struct {
	struct t_root *root;
	struct t_pair *a, *b;
	struct t_dummy **dummy;
	spinlock_t pool_lock;
	struct t_elem *pool;
	unsigned int pooled;
	struct t_elem *all[POOL];
	atomic_t errors;
	struct t_counts *cnt;
	unsigned int readers;
	bool stop;
} T;

static u64 check_of(u64 seq)
{
	return seq * 0x9e3779b97f4a7c15ULL ^ 0xc0ffee;
}

#define T_ERR(fmt, ...)                                                        \
	do {                                                                   \
		if (atomic_inc_return(&T.errors) <= 10)                        \
			pr_err("rm_ktorture: " fmt "\n", ##__VA_ARGS__);       \
	} while (0)

/* rm_rlu's free function while the torture runs: back to the pool. */
static void pool_put(void *obj)
{
	struct t_elem *e = obj;

	spin_lock(&T.pool_lock);
	if (e->pooled) {
		spin_unlock(&T.pool_lock);
		T_ERR("element %px freed twice", e);
		return;
	}
	/* Poison: a section that still reads e after the grace period sees
	 * it in the pool. */
	WRITE_ONCE(e->mbtest, 0);
	WRITE_ONCE(e->seq, POISON_SEQ);
	WRITE_ONCE(e->check, 0);
	e->pooled = 1;
	e->pool_next = T.pool;
	T.pool = e;
	T.pooled++;
	spin_unlock(&T.pool_lock);
}

static struct t_elem *pool_get(void)
{
	struct t_elem *e;

	spin_lock(&T.pool_lock);
	e = T.pool;
	if (e) {
		T.pool = e->pool_next;
		T.pooled--;
		e->pooled = 0;
	}
	spin_unlock(&T.pool_lock);
	return e;
}

static void maybe_delay(struct rnd_state *r, unsigned int one_in)
{
	u32 x = prandom_u32_state(r);

	if (x % one_in == 0)
		udelay(x / one_in % 8);
	else if (x % one_in == 1)
		cond_resched();
}

static int t_writer(struct rm_rlu_ctx *self)
{
	struct rnd_state rnd;
	u64 seq = READ_ONCE(T.root->seq);
	unsigned int i = 0;

	prandom_seed_state(&rnd, get_random_u64());
	while (!READ_ONCE(T.stop)) {
		struct t_elem *e = pool_get();
		struct t_root *root;
		struct t_pair *a, *b;
		struct t_elem *old;

		if (!e) {
			/* Deferred frees hold the pool: commit them. */
			rm_rlu_sync(self);
			e = pool_get();
			if (!e) {
				T_ERR("pool empty after rm_rlu_sync (%u pooled)", T.pooled);
				break;
			}
		}
		/* Filled before any section can reach it: the commit publishes
		 * it (the clock step's release, or the write-back's unlock). */
		e->seq = seq + 1;
		e->check = check_of(seq + 1);
		e->mbtest = 1;
		for (;;) {
			rm_rlu_reader_lock(self);
			root = RM_RLU_DEREF(self, T.root);
			a = RM_RLU_DEREF(self, T.a);
			b = RM_RLU_DEREF(self, T.b);
			if (RM_RLU_TRY_LOCK(self, &root) == 0 && RM_RLU_TRY_LOCK(self, &a) == 0 &&
			    RM_RLU_TRY_LOCK(self, &b) == 0)
				break;
			rm_rlu_abort(self);
			cond_resched();
		}
		old = root->cur;
		if (root->seq != seq || a->seq != seq || b->seq != seq)
			T_ERR("writer: seq %llu, root %llu a %llu b %llu", seq, root->seq, a->seq, b->seq);
		root->seq = seq + 1;
		RM_RLU_ASSIGN_PTR(&root->cur, e);
		a->seq = seq + 1;
		a->val = seq + 1;
		maybe_delay(&rnd, 4); /* a reader may look in between: it must not see this */
		b->seq = seq + 1;
		b->val = -(s64)(seq + 1);
		if (rm_rlu_free(self, old))
			T_ERR("writer: rm_rlu_free failed");
		rm_rlu_reader_unlock(self);
		seq++;
		T.cnt[0].updates++;
		if (++i % 16 == 0)
			cond_resched();
		maybe_delay(&rnd, 8);
	}
	return 0;
}

static int t_reader(struct rm_rlu_ctx *self, struct t_counts *c)
{
	struct rnd_state rnd;
	u64 last = 0;

	prandom_seed_state(&rnd, get_random_u64());
	while (!READ_ONCE(T.stop)) {
		struct t_root *root;
		struct t_elem *e;
		struct t_pair *a, *b;
		u64 s;

		rm_rlu_reader_lock(self);
		root = RM_RLU_DEREF(self, T.root);
		s = root->seq;
		e = RM_RLU_DEREF(self, root->cur);
		if (READ_ONCE(e->mbtest) != 1 || READ_ONCE(e->seq) != s ||
		    READ_ONCE(e->check) != check_of(s))
			T_ERR("reader: root seq %llu, element seq %llu mbtest %u (freed under the section)",
			      s, READ_ONCE(e->seq), READ_ONCE(e->mbtest));
		maybe_delay(&rnd, 16);
		a = RM_RLU_DEREF(self, T.a);
		maybe_delay(&rnd, 16);
		b = RM_RLU_DEREF(self, T.b);
		if (a->seq != s || b->seq != s || a->val + b->val != 0)
			T_ERR("reader: root seq %llu, a {%llu, %lld}, b {%llu, %lld} (a torn section)",
			      s, a->seq, a->val, b->seq, b->val);
		if (s < last)
			T_ERR("reader: seq went back from %llu to %llu", last, s);
		last = s;
		maybe_delay(&rnd, 8);
		if (READ_ONCE(e->mbtest) != 1 || READ_ONCE(e->seq) != s)
			T_ERR("reader: element of seq %llu reused under the section (seq %llu mbtest %u)",
			      s, READ_ONCE(e->seq), READ_ONCE(e->mbtest));
		rm_rlu_reader_unlock(self);
		c->reads++;
		cond_resched();
	}
	return 0;
}

static int t_fake_writer(struct rm_rlu_ctx *self, unsigned int k, struct t_counts *c)
{
	struct rnd_state rnd;

	prandom_seed_state(&rnd, get_random_u64());
	while (!READ_ONCE(T.stop)) {
		u32 x = prandom_u32_state(&rnd);

		if (x % 3 == 0) {
			rm_rlu_synchronize(self);
			c->syncs++;
		} else if (x % 3 == 1) {
			struct t_dummy *d;

			for (;;) {
				rm_rlu_reader_lock(self);
				d = RM_RLU_DEREF(self, T.dummy[k]);
				if (RM_RLU_TRY_LOCK(self, &d) == 0)
					break;
				rm_rlu_abort(self);
				cond_resched();
			}
			d->n++;
			rm_rlu_reader_unlock(self);
			c->commits++;
		} else {
			rm_rlu_sync(self);
		}
		if (x % 16 < 2)
			usleep_range(10, 100);
		else
			udelay(x % 16);
		cond_resched();
	}
	return 0;
}

static int t_thread(void *arg, unsigned int i)
{
	struct rm_rlu_ctx *self = rm_rlu_thread_register();
	int ret;

	if (!self) {
		T_ERR("thread %u: no RLU context", i);
		return -ENOMEM;
	}
	if (i == 0)
		ret = t_writer(self);
	else if (i <= T.readers)
		ret = t_reader(self, &T.cnt[i]);
	else
		ret = t_fake_writer(self, i - T.readers - 1, &T.cnt[i]);
	rm_rlu_thread_unregister(self); /* commits deferred sections */
	return ret;
}

int kb_torture(void)
{
	unsigned int n = 1 + 2 * kb.threads, i;
	unsigned int max_defer;
	bool ff = false;
	u64 reads = 0, updates = 0, syncs = 0, commits = 0;
	long ms;
	int ret = 0, errors;

	if (!strcmp(kb.impl, "rlu")) {
		max_defer = 0;
	} else if (!strcmp(kb.impl, "rlu-ff")) {
		max_defer = 0;
		ff = true;
	} else if (!strcmp(kb.impl, "rlu-defer")) {
		max_defer = 10;
	} else {
		return -EINVAL;
	}
	if (kb.threads == 0)
		return -EINVAL;
	memset(&T, 0, sizeof(T));
	spin_lock_init(&T.pool_lock);
	atomic_set(&T.errors, 0);
	T.readers = kb.threads;
	ret = rm_rlu_init(RM_RLU_FINE, max_defer, ff);
	if (!ret)
		ret = rm_rlu_set_free_fn(pool_put);
	if (ret)
		return ret;
	T.cnt = kcalloc(n, sizeof(*T.cnt), GFP_KERNEL);
	T.dummy = kcalloc(kb.threads, sizeof(*T.dummy), GFP_KERNEL);
	T.root = rm_rlu_alloc(sizeof(*T.root), GFP_KERNEL);
	T.a = rm_rlu_alloc(sizeof(*T.a), GFP_KERNEL);
	T.b = rm_rlu_alloc(sizeof(*T.b), GFP_KERNEL);
	if (!T.cnt || !T.dummy || !T.root || !T.a || !T.b) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < kb.threads; i++) {
		T.dummy[i] = rm_rlu_alloc(sizeof(struct t_dummy), GFP_KERNEL);
		if (!T.dummy[i]) {
			ret = -ENOMEM;
			goto out;
		}
		T.dummy[i]->n = 0;
	}
	for (i = 0; i < POOL; i++) {
		T.all[i] = rm_rlu_alloc(sizeof(struct t_elem), GFP_KERNEL);
		if (!T.all[i]) {
			ret = -ENOMEM;
			goto out;
		}
		memset(T.all[i], 0, sizeof(struct t_elem));
		if (i > 0)
			pool_put(T.all[i]);
	}
	T.root->cur = T.all[0];
	T.root->seq = 1;
	T.all[0]->seq = 1;
	T.all[0]->check = check_of(1);
	T.all[0]->mbtest = 1;
	T.a->seq = T.b->seq = 1;
	T.a->val = 1;
	T.b->val = -1;

	ms = kb_run_threads(n, t_thread, NULL, &T.stop);
	if (ms < 0) {
		ret = ms;
		goto out;
	}
	for (i = 0; i < n; i++) {
		reads += T.cnt[i].reads;
		updates += T.cnt[i].updates;
		syncs += T.cnt[i].syncs;
		commits += T.cnt[i].commits;
	}
	/* Every context is gone, every deferred free done: the pool holds
	 * all but root's element. */
	if (T.pooled != POOL - 1)
		T_ERR("end: %u elements in the pool, expected %u", T.pooled, POOL - 1);
	if (T.root->cur->mbtest != 1 || T.root->cur->seq != T.root->seq ||
	    T.a->seq != T.root->seq || T.b->seq != T.root->seq || T.root->seq != updates + 1)
		T_ERR("end: root seq %llu, element seq %llu, a %llu, b %llu, updates %llu",
		      T.root->seq, T.root->cur->seq, T.a->seq, T.b->seq, updates);
	errors = atomic_read(&T.errors);
	pr_info("rm_ktorture: experiment=kernel_torture impl=%s readers=%u fake_writers=%u rep=%u ms=%ld updates=%llu reads=%llu fake_syncs=%llu fake_commits=%llu errors=%d result=%s\n",
		kb.impl, kb.threads, kb.threads, kb.rep, ms, updates, reads, syncs, commits, errors,
		errors ? "FAIL" : "PASS");
	if (errors)
		ret = -EIO;
out:
	for (i = 0; i < POOL; i++)
		if (T.all[i])
			kfree(RM_RLU_HDR(T.all[i]));
	if (T.dummy)
		for (i = 0; i < kb.threads; i++)
			if (T.dummy[i])
				kfree(RM_RLU_HDR(T.dummy[i]));
	if (T.root)
		kfree(RM_RLU_HDR(T.root));
	if (T.a)
		kfree(RM_RLU_HDR(T.a));
	if (T.b)
		kfree(RM_RLU_HDR(T.b));
	kfree(T.dummy);
	kfree(T.cnt);
	rm_rlu_set_free_fn(NULL);
	return ret;
}
