// SPDX-License-Identifier: GPL-2.0
/*
 * kbench.c - the RLU paper's kernel benchmarks (section 4.6, Figures 10 and
 * 11) as a module: a sorted singly linked list and a hash table (one such
 * list per bucket; the list is the table with one bucket), and (dlist.c,
 * Figure 9) a sorted doubly linked list, with
 *
 *   rcu         the kernel's RCU: readers in rcu_read_lock(), writers
 *               serialized by a spinlock per bucket (one for the list),
 *               removed nodes freed with kfree_rcu()
 *   rlu         rm_rlu, fine-grained: writers lock prev and cur, abort on
 *               a conflict and retry
 *   rlu-ff      the same with the fence-free section entry (writers IPI
 *               the other CPUs when a reader has not shown a new section)
 *   rlu-defer   the same with synchronize deferred over up to 10 sections
 *   rlu-coarse  rm_rlu, coarse-grained: one writer mutex, no aborts
 *
 * Each thread draws a key in [0, range) and an operation: a lookup, or
 * with probability update/10000 an update, inserts and removes alternating
 * per thread (1:1, as in the paper).  The structure starts with range/2
 * keys.  At the end the structure is walked: its keys must be sorted and
 * its size must be the initial size plus the successful inserts minus the
 * successful removes; otherwise the result is FAIL.
 *
 * The module does its work in its init function and prints one line:
 *   rm_kbench: experiment=kernel_list impl=rlu threads=2 update=200 ...
 * (update in basis points).  The test=torture parameter runs torture.c.
 */
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>

#include "rm_rlu.h"
#include "kbench.h"

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("readmostly: RLU against the kernel's RCU (lists, hash table, doubly linked lists) and the RLU torture");

struct kb_params kb = {
	.test = "list",
	.impl = "rlu",
	.threads = 2,
	.update = 200,
	.range = 1000,
	.buckets = 1000,
	.duration = 1000,
	.rep = 1,
};
module_param_named(test, kb.test, charp, 0444);
MODULE_PARM_DESC(test, "list, hash, dlist or torture");
module_param_named(impl, kb.impl, charp, 0444);
MODULE_PARM_DESC(impl, "rcu, rlu, rlu-ff, rlu-defer or rlu-coarse (torture: rlu, rlu-ff or rlu-defer)");
module_param_named(threads, kb.threads, uint, 0444);
module_param_named(update, kb.update, uint, 0444);
MODULE_PARM_DESC(update, "updates per 10000 operations (200 = 2%)");
module_param_named(range, kb.range, uint, 0444);
module_param_named(buckets, kb.buckets, uint, 0444);
module_param_named(duration, kb.duration, uint, 0444);
MODULE_PARM_DESC(duration, "milliseconds");
module_param_named(rep, kb.rep, uint, 0444);

/* ---- the thread runner --------------------------------------------------- */
struct kb_thread {
	struct task_struct *task;
	int (*fn)(void *arg, unsigned int i);
	void *arg;
	unsigned int i;
	atomic_t *ready;
	bool *go;
	int ret;
};

static int kb_thread_main(void *p)
{
	struct kb_thread *t = p;

	atomic_inc(t->ready);
	while (!READ_ONCE(*t->go) && !kthread_should_stop())
		usleep_range(100, 200);
	if (READ_ONCE(*t->go))
		t->ret = t->fn(t->arg, t->i);
	/* kthread_stop() needs the task alive until it is called. */
	while (!kthread_should_stop())
		schedule_timeout_interruptible(1);
	return 0;
}

long kb_run_threads(unsigned int n, int (*fn)(void *arg, unsigned int i), void *arg,
		    bool *stop)
{
	struct kb_thread *t;
	atomic_t ready = ATOMIC_INIT(0);
	bool go = false;
	unsigned int i, made = 0;
	ktime_t t0;
	long ms = 0;

	t = kcalloc(n, sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		t[i].fn = fn;
		t[i].arg = arg;
		t[i].i = i;
		t[i].ready = &ready;
		t[i].go = &go;
		t[i].task = kthread_run(kb_thread_main, &t[i], "rm_kbench/%u", i);
		if (IS_ERR(t[i].task)) {
			ms = PTR_ERR(t[i].task);
			break;
		}
		made++;
	}
	if (ms == 0) {
		while (atomic_read(&ready) < n)
			msleep(1);
		t0 = ktime_get();
		/* Plain flags: the threads poll them; nothing is published
		 * through them but "start" and "stop". */
		WRITE_ONCE(go, true);
		msleep(kb.duration);
		WRITE_ONCE(*stop, true);
	}
	for (i = 0; i < made; i++)
		kthread_stop(t[i].task);
	if (ms == 0)
		ms = ktime_ms_delta(ktime_get(), t0);
	kfree(t);
	return ms;
}

/* ---- the sets (struct kb_set, kbench.h) ---- */
static unsigned int bucket_of(struct kb_set *s, long key)
{
	return (unsigned long)key % s->nb;
}

/* -- RCU: per-bucket spinlock for writers, kfree_rcu for removed nodes -- */
struct rcu_node {
	struct rcu_node __rcu *next;
	long key;
	struct rcu_head rcu;
};

struct rcu_bucket {
	spinlock_t lock;
	struct rcu_node __rcu *head;
} ____cacheline_aligned_in_smp;

static int rcu_create(struct kb_set *s)
{
	struct rcu_bucket *b = kvcalloc(s->nb, sizeof(*b), GFP_KERNEL);
	unsigned int i;

	if (!b)
		return -ENOMEM;
	for (i = 0; i < s->nb; i++)
		spin_lock_init(&b[i].lock);
	s->buckets = b;
	return 0;
}

static void rcu_destroy(struct kb_set *s)
{
	struct rcu_bucket *b = s->buckets;
	unsigned int i;

	if (!b)
		return;
	/* The threads are stopped: no reader is left, and the nodes still
	 * linked are ours to free (removed ones went to kfree_rcu()). */
	for (i = 0; i < s->nb; i++) {
		struct rcu_node *n = rcu_dereference_protected(b[i].head, 1);

		while (n) {
			struct rcu_node *nx = rcu_dereference_protected(n->next, 1);

			kfree(n);
			n = nx;
		}
	}
	kvfree(b);
}

static void *rcu_thread_init(struct kb_set *s)
{
	return s; /* no per-thread state */
}

static void rcu_thread_fini(struct kb_set *s, void *th)
{
}

static bool rcu_contains(struct kb_set *s, void *th, long key)
{
	struct rcu_bucket *b = (struct rcu_bucket *)s->buckets + bucket_of(s, key);
	struct rcu_node *n;
	bool found;

	rcu_read_lock();
	n = rcu_dereference(b->head);
	while (n && n->key < key)
		n = rcu_dereference(n->next);
	found = n && n->key == key;
	rcu_read_unlock();
	return found;
}

static int rcu_add(struct kb_set *s, void *th, long key)
{
	struct rcu_bucket *b = (struct rcu_bucket *)s->buckets + bucket_of(s, key);
	struct rcu_node __rcu **prev;
	struct rcu_node *cur, *n = kmalloc(sizeof(*n), GFP_KERNEL);

	if (!n)
		return -ENOMEM;
	n->key = key;
	spin_lock(&b->lock);
	prev = &b->head;
	cur = rcu_dereference_protected(*prev, lockdep_is_held(&b->lock));
	while (cur && cur->key < key) {
		prev = &cur->next;
		cur = rcu_dereference_protected(*prev, lockdep_is_held(&b->lock));
	}
	if (cur && cur->key == key) {
		spin_unlock(&b->lock);
		kfree(n);
		return 0;
	}
	RCU_INIT_POINTER(n->next, cur);
	/* Release: a reader that finds n sees its key and next. */
	rcu_assign_pointer(*prev, n);
	spin_unlock(&b->lock);
	return 1;
}

static int rcu_remove(struct kb_set *s, void *th, long key)
{
	struct rcu_bucket *b = (struct rcu_bucket *)s->buckets + bucket_of(s, key);
	struct rcu_node __rcu **prev;
	struct rcu_node *cur;

	spin_lock(&b->lock);
	prev = &b->head;
	cur = rcu_dereference_protected(*prev, lockdep_is_held(&b->lock));
	while (cur && cur->key < key) {
		prev = &cur->next;
		cur = rcu_dereference_protected(*prev, lockdep_is_held(&b->lock));
	}
	if (!cur || cur->key != key) {
		spin_unlock(&b->lock);
		return 0;
	}
	/* cur->next is already published (readers may be on cur): a plain
	 * pointer copy, no new object to order. */
	rcu_assign_pointer(*prev, rcu_dereference_protected(cur->next, lockdep_is_held(&b->lock)));
	spin_unlock(&b->lock);
	kfree_rcu(cur, rcu);
	return 1;
}

static long rcu_check(struct kb_set *s)
{
	struct rcu_bucket *b = s->buckets;
	long size = 0;
	unsigned int i;

	for (i = 0; i < s->nb; i++) {
		struct rcu_node *n = rcu_dereference_protected(b[i].head, 1);
		long last = LONG_MIN;

		for (; n; n = rcu_dereference_protected(n->next, 1)) {
			if (n->key <= last || bucket_of(s, n->key) != i)
				return -1;
			last = n->key;
			size++;
		}
	}
	return size;
}

static const struct kb_set_ops rcu_ops = {
	"rcu", rcu_create, rcu_destroy, rcu_thread_init, rcu_thread_fini,
	rcu_contains, rcu_add, rcu_remove, rcu_check,
};

/* -- RLU: each bucket a sentinel node (key LONG_MIN) heading a sorted list -- */
struct rlu_node {
	struct rlu_node *next;
	long key;
};

static int rlu_create(struct kb_set *s)
{
	struct rlu_node **b = kvcalloc(s->nb, sizeof(*b), GFP_KERNEL);
	unsigned int i;

	if (!b)
		return -ENOMEM;
	s->buckets = b;
	for (i = 0; i < s->nb; i++) {
		b[i] = rm_rlu_alloc(sizeof(struct rlu_node), GFP_KERNEL);
		if (!b[i])
			return -ENOMEM; /* destroy frees what was made */
		b[i]->next = NULL;
		b[i]->key = LONG_MIN;
	}
	return 0;
}

static void rlu_destroy(struct kb_set *s)
{
	struct rlu_node **b = s->buckets;
	unsigned int i;

	if (!b)
		return;
	/* Every context is unregistered: the originals are the structure. */
	for (i = 0; i < s->nb; i++) {
		struct rlu_node *n = b[i];

		while (n) {
			struct rlu_node *nx = n->next;

			rm_rlu_free(NULL, n);
			n = nx;
		}
	}
	kvfree(b);
}

static void *rlu_thread_init(struct kb_set *s)
{
	return rm_rlu_thread_register();
}

static void rlu_thread_fini(struct kb_set *s, void *th)
{
	rm_rlu_thread_unregister(th); /* commits deferred sections */
}

/* Find the last node with key < key (prev) and the one after it (cur),
 * as this section must see them. */
static void rlu_find(struct rm_rlu_ctx *self, struct kb_set *s, long key,
		     struct rlu_node **pprev, struct rlu_node **pcur)
{
	struct rlu_node *prev = RM_RLU_DEREF(self, ((struct rlu_node **)s->buckets)[bucket_of(s, key)]);
	struct rlu_node *cur = RM_RLU_DEREF(self, prev->next);

	while (cur && cur->key < key) {
		prev = cur;
		cur = RM_RLU_DEREF(self, cur->next);
	}
	*pprev = prev;
	*pcur = cur;
}

static bool rlu_contains(struct kb_set *s, void *th, long key)
{
	struct rlu_node *prev, *cur;
	bool found;

	rm_rlu_reader_lock(th);
	rlu_find(th, s, key, &prev, &cur);
	found = cur && cur->key == key;
	rm_rlu_reader_unlock(th);
	return found;
}

static void rlu_enter_writer(struct kb_set *s, struct rm_rlu_ctx *self)
{
	if (s->coarse)
		rm_rlu_writer_lock(self);
	else
		rm_rlu_reader_lock(self);
}

static int rlu_add(struct kb_set *s, void *th, long key)
{
	struct rm_rlu_ctx *self = th;
	struct rlu_node *prev, *cur, *n = rm_rlu_alloc(sizeof(*n), GFP_KERNEL);

	if (!n)
		return -ENOMEM;
	for (;;) {
		rlu_enter_writer(s, self);
		rlu_find(self, s, key, &prev, &cur);
		if (cur && cur->key == key) {
			rm_rlu_reader_unlock(self);
			rm_rlu_free(NULL, n); /* never published */
			return 0;
		}
		/* prev and cur: a concurrent remove of either, or an insert
		 * between them, locks one of them too. */
		if (RM_RLU_TRY_LOCK(self, &prev) == 0 && (!cur || RM_RLU_TRY_LOCK(self, &cur) == 0))
			break;
		rm_rlu_abort(self);
		cond_resched();
	}
	n->key = key;
	RM_RLU_ASSIGN_PTR(&n->next, cur);
	RM_RLU_ASSIGN_PTR(&prev->next, n);
	rm_rlu_reader_unlock(self);
	return 1;
}

static int rlu_remove(struct kb_set *s, void *th, long key)
{
	struct rm_rlu_ctx *self = th;
	struct rlu_node *prev, *cur;

	for (;;) {
		rlu_enter_writer(s, self);
		rlu_find(self, s, key, &prev, &cur);
		if (!cur || cur->key != key) {
			rm_rlu_reader_unlock(self);
			return 0;
		}
		if (RM_RLU_TRY_LOCK(self, &prev) == 0 && RM_RLU_TRY_LOCK(self, &cur) == 0 &&
		    rm_rlu_free(self, cur) == 0)
			break;
		rm_rlu_abort(self);
		cond_resched();
	}
	RM_RLU_ASSIGN_PTR(&prev->next, RM_RLU_DEREF(self, cur->next));
	rm_rlu_reader_unlock(self);
	return 1;
}

static long rlu_check(struct kb_set *s)
{
	struct rlu_node **b = s->buckets;
	long size = 0;
	unsigned int i;

	for (i = 0; i < s->nb; i++) {
		struct rlu_node *n = b[i]->next;
		long last = LONG_MIN;

		for (; n; n = n->next) {
			if (n->key <= last || bucket_of(s, n->key) != i ||
			    RM_RLU_HDR(n)->copy != NULL)
				return -1;
			last = n->key;
			size++;
		}
	}
	return size;
}

static const struct kb_set_ops rlu_ops = {
	"rlu", rlu_create, rlu_destroy, rlu_thread_init, rlu_thread_fini,
	rlu_contains, rlu_add, rlu_remove, rlu_check,
};

/* ---- the benchmark ------------------------------------------------------- */
struct kb_counts {
	u64 ops, adds, removes, errors;
} ____cacheline_aligned_in_smp;

struct kb_bench {
	struct kb_set set;
	struct kb_counts *cnt;
	bool stop;
};

static int bench_thread(void *arg, unsigned int i)
{
	struct kb_bench *b = arg;
	struct kb_set *s = &b->set;
	struct kb_counts *c = &b->cnt[i];
	struct rnd_state rnd;
	bool insert_next = true;
	void *th = s->ops->thread_init(s);

	if (!th) {
		c->errors++;
		return -ENOMEM;
	}
	prandom_seed_state(&rnd, get_random_u64());
	while (!READ_ONCE(b->stop)) {
		long key = prandom_u32_state(&rnd) % kb.range;
		int r;

		if (prandom_u32_state(&rnd) % 10000 < kb.update) {
			if (insert_next) {
				r = s->ops->add(s, th, key);
				if (r > 0)
					c->adds++;
			} else {
				r = s->ops->remove(s, th, key);
				if (r > 0)
					c->removes++;
			}
			if (r < 0)
				c->errors++;
			insert_next = !insert_next;
		} else {
			s->ops->contains(s, th, key);
		}
		c->ops++;
		cond_resched();
	}
	s->ops->thread_fini(s, th);
	return 0;
}

static int kb_bench(const char *experiment)
{
	struct kb_bench *b;
	struct rm_rlu_stats st0, st1;
	u64 ops = 0, adds = 0, removes = 0, errors = 0;
	long initial = 0, size, ms;
	bool is_rlu = strncmp(kb.impl, "rlu", 3) == 0, dl;
	unsigned int i;
	void *th;
	int ret = 0;

	if (kb.threads == 0 || kb.range < 2 || kb.update > 10000)
		return -EINVAL;
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->cnt = kcalloc(kb.threads, sizeof(*b->cnt), GFP_KERNEL);
	b->set.nb = strcmp(experiment, "kernel_hash") == 0 ? max(kb.buckets, 1u) : 1;
	dl = strcmp(experiment, "kernel_dlist") == 0;
	atomic_long_set(&b->set.errors, 0);
	if (!strcmp(kb.impl, "rcu")) {
		b->set.ops = dl ? &kb_dlist_rcu_ops : &rcu_ops;
	} else if (!strcmp(kb.impl, "rlu")) {
		b->set.ops = dl ? &kb_dlist_rlu_ops : &rlu_ops;
		ret = rm_rlu_init(RM_RLU_FINE, 0, false);
	} else if (!strcmp(kb.impl, "rlu-ff")) {
		b->set.ops = dl ? &kb_dlist_rlu_ops : &rlu_ops;
		ret = rm_rlu_init(RM_RLU_FINE, 0, true);
	} else if (!strcmp(kb.impl, "rlu-defer")) {
		b->set.ops = dl ? &kb_dlist_rlu_ops : &rlu_ops;
		ret = rm_rlu_init(RM_RLU_FINE, 10, false);
	} else if (!strcmp(kb.impl, "rlu-coarse")) {
		b->set.ops = dl ? &kb_dlist_rlu_ops : &rlu_ops;
		b->set.coarse = true;
		ret = rm_rlu_init(RM_RLU_COARSE, 0, false);
	} else {
		ret = -EINVAL;
	}
	if (!ret && !b->cnt)
		ret = -ENOMEM;
	if (ret)
		goto out;
	ret = b->set.ops->create(&b->set);
	if (ret)
		goto destroy;
	/* Fill to range/2 distinct keys, from this thread. */
	th = b->set.ops->thread_init(&b->set);
	if (!th) {
		ret = -ENOMEM;
		goto destroy;
	}
	while (initial < kb.range / 2) {
		int r = b->set.ops->add(&b->set, th, get_random_u32_below(kb.range));

		if (r < 0) {
			ret = r;
			break;
		}
		initial += r;
	}
	b->set.ops->thread_fini(&b->set, th);
	if (ret)
		goto destroy;
	if (is_rlu)
		rm_rlu_stats_get(&st0);
	ms = kb_run_threads(kb.threads, bench_thread, b, &b->stop);
	if (ms < 0) {
		ret = ms;
		goto destroy;
	}
	for (i = 0; i < kb.threads; i++) {
		ops += b->cnt[i].ops;
		adds += b->cnt[i].adds;
		removes += b->cnt[i].removes;
		errors += b->cnt[i].errors;
	}
	errors += atomic_long_read(&b->set.errors);
	size = b->set.ops->check(&b->set);
	if (size != initial + (long)adds - (long)removes)
		errors++;
	pr_info("rm_kbench: experiment=%s impl=%s threads=%u update=%u range=%u buckets=%u rep=%u ms=%ld ops=%llu ops_per_s=%llu adds=%llu removes=%llu size=%ld expected=%ld errors=%llu result=%s\n",
		experiment, kb.impl, kb.threads, kb.update, kb.range, b->set.nb, kb.rep, ms, ops,
		ms > 0 ? ops * 1000 / ms : 0, adds, removes, size,
		initial + (long)adds - (long)removes, errors, errors ? "FAIL" : "PASS");
	if (is_rlu) {
		rm_rlu_stats_get(&st1);
		pr_info("rm_kbench: rlu-stats experiment=%s impl=%s commits=%llu aborts=%llu conflicts=%llu steals=%llu syncs=%llu sync_waits=%llu deferred=%llu ipi_rounds=%llu\n",
			experiment, kb.impl, st1.commits - st0.commits, st1.aborts - st0.aborts,
			st1.conflicts - st0.conflicts, st1.steals - st0.steals,
			st1.syncs - st0.syncs, st1.sync_waits - st0.sync_waits,
			st1.deferred - st0.deferred, st1.ipi_rounds - st0.ipi_rounds);
	}
	/* The result is in the line above; the module stays loaded (rmmod). */
destroy:
	b->set.ops->destroy(&b->set);
out:
	kfree(b->cnt);
	kfree(b);
	return ret;
}

static int __init kb_init(void)
{
	int ret;

	if (!strcmp(kb.test, "list"))
		ret = kb_bench("kernel_list");
	else if (!strcmp(kb.test, "hash"))
		ret = kb_bench("kernel_hash");
	else if (!strcmp(kb.test, "dlist"))
		ret = kb_bench("kernel_dlist");
	else if (!strcmp(kb.test, "torture"))
		ret = kb_torture();
	else
		ret = -EINVAL;
	if (ret && ret != -EIO)
		pr_err("rm_kbench: test=%s impl=%s failed to run: %d\n", kb.test, kb.impl, ret);
	/* A torture that found errors has printed result=FAIL: the module
	 * still loads, so that the log, not insmod, carries the verdict. */
	return ret == -EIO ? 0 : ret;
}

static void __exit kb_exit(void)
{
}

module_init(kb_init);
module_exit(kb_exit);
