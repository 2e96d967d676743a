// SPDX-License-Identifier: GPL-2.0
/*
 * rm_rlu.c - read-log-update as a Linux kernel module (Matveev, Shavit,
 * Felber, Marlier, SOSP 2015, Algorithm 1): the algorithm of the user-space
 * src/rlu.c, ported to kernel primitives.  The contract is in rm_rlu.h;
 * docs/kernel-rlu.md says where this differs from user space.
 *
 * Invariants (as in src/rlu.c)
 *   1. An object is locked by at most one context: its header's copy
 *      pointer goes NULL -> entry (cmpxchg, by the locker) -> NULL (release
 *      store, by the locker, after write-back or on abort).
 *   2. A context's write clock is RM_RLU_NO_CLOCK except during a commit,
 *      from the clock step to the end of write-back; then it equals the
 *      clock value the step produced.
 *   3. The global clock changes only in the clock step (clock_lock held),
 *      by one, to the value the stepping writer published as write clock.
 *   4. A section with local clock L and a writer with write clock wc: if
 *      L >= wc it began after the step and steals every copy of the
 *      writer; if L < wc it reads only originals of the writer's objects
 *      and the writer's synchronize waits for it.
 *   5. A log is reset only after a synchronize that began after its objects
 *      were unlocked and its write clock reset (the next commit's).
 *
 * Ordering points (each use names its letter)
 *   R1  reader: run counter store (odd), smp_mb(), clock load.  Pairs with
 *       W3: the writer's scan sees the odd counter, or the section's clock
 *       load sees the step.
 *   R2  reader: clock load acquire; pairs with W2.
 *   R3  reader: run counter store at exit, release; pairs with S1.
 *   R4  reader: local clock store, release; pairs with S2.
 *   R5  a committing writer reports the clock it read (release), as R4.
 *   L1  dereference: header load acquire; pairs with L2.
 *   L2  try_lock: cmpxchg (a full barrier when it succeeds): publishes the
 *       entry to L1 and orders the copy after the previous owner's unlock
 *       (L3).  A failed cmpxchg orders nothing: the header is loaded again
 *       with acquire (L1).
 *   L3  unlock: release store of NULL after the write-back.
 *   D1  dereference: the owner's write clock loaded with acquire; pairs
 *       with W2 (through R2) and W4.
 *   W1  writer: write clock store, before the clock store (W2's release).
 *   W2  writer: clock store, release.
 *   W3  writer: smp_mb() after the clock step, before synchronize's loads.
 *   W4  writer: write clock reset, release, after the write-back.
 *   W5  writer, fence-free entry: an IPI to every other online CPU, whose
 *       handler executes smp_mb(), waited for, before the run counters are
 *       loaded: a section whose run counter store preceded the interrupt on
 *       its CPU is visible after it, and one whose clock load follows the
 *       interrupt sees our step.  A task not running at that moment passed
 *       the barrier of its context switch.  Before W5 only a report (a
 *       local clock >= wc, S2) settles a context: an even counter may hide
 *       a later odd one still in its CPU's store buffer.
 *   S1  synchronize: run counter loads acquire (pairs with R3).
 *   S2  synchronize: local clock loads acquire (pairs with R4, R5).
 *   S3  synchronize: in_use loads acquire (pairs with U1).
 *   U1  unregister: in_use = 0 with release, after the last section.
 *   U2  register: in_use = 1, smp_mb(), before the first section's clock
 *       load: Dekker with W3 (the writer's scan sees the slot in use, or our
 *       first clock load sees its step).
 */
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>

#include "rm_rlu.h"

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("readmostly: read-log-update (RLU) for kernel code");

/* ---- logs ---------------------------------------------------------------- */
struct chunk {
	struct chunk *next;
	size_t cap, used;
	size_t pad;
	unsigned char data[];
};

struct rlu_log {
	struct chunk *head, *cur;
	size_t bytes;
};

struct log_mark {
	struct chunk *chunk; /* NULL: the start of the log */
	size_t used;
};

#define ENTRY_OF_COPY(c) container_of(RM_RLU_HDR(c), struct rm_rlu_entry, hdr)
#define COPY_OF_ENTRY(e) ((void *)(&(e)->hdr + 1))
#define CHUNK_MIN 4096
#define CHUNK_MAX (1UL << 20)

static size_t round16(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

/* ---- contexts ------------------------------------------------------------ */
struct rm_rlu_ctx {
	struct rm_rlu_ctx_hot h;         /* read by other contexts */
	/* Private to the owning task, on its own cache line. */
	struct task_struct *task ____cacheline_aligned_in_smp;
	bool holds_writer_lock;
	u64 section;                     /* run counter of the section that wrote */
	unsigned int slot;
	struct rlu_log log[2];
	int cur;                         /* log[cur] takes this section's copies */
	struct log_mark mark;            /* log position at the section's first write */
	void **frees;                    /* objects freed by committed and current sections */
	size_t nfrees, capfrees, frees_mark;
	unsigned int ndeferred;
	struct rm_rlu_ctx *conflict_owner;
	u64 conflict_seen;
	struct rm_rlu_stats st;          /* owner's, read racily by stats_get */
};

static struct {
	spinlock_t clock_lock;           /* the clock step (committing writers only) */
	unsigned int high;               /* slots below this may be live */
	struct rm_rlu_ctx *slot[RM_RLU_MAX_CTX];
	unsigned int nlive;
	struct mutex reg_lock;
	struct mutex writer_lock;        /* coarse-grained flavor */
	enum rm_rlu_flavor flavor;
	unsigned int max_defer;
	void (*free_fn)(void *obj);
	struct rm_rlu_stats retired;
} g = {
	.clock_lock = __SPIN_LOCK_UNLOCKED(g.clock_lock),
	.reg_lock = __MUTEX_INITIALIZER(g.reg_lock),
	.writer_lock = __MUTEX_INITIALIZER(g.writer_lock),
};

atomic64_t rm_rlu_clock_g = ATOMIC64_INIT(0);
EXPORT_SYMBOL_GPL(rm_rlu_clock_g);
int rm_rlu_fence_free_g;
EXPORT_SYMBOL_GPL(rm_rlu_fence_free_g);

#define STAT(c, f) WRITE_ONCE((c)->st.f, (c)->st.f + 1)

/* Waiting for another context: spin briefly, then let the scheduler run
 * the task we wait for (it may be preempted on this CPU), then sleep. */
static void backoff(unsigned int *n)
{
	unsigned int i = (*n)++;

	if (i < 64)
		cpu_relax();
	else if (i < 256)
		cond_resched();
	else
		usleep_range(10, 50);
}

static void obj_free(void *obj)
{
	if (g.free_fn)
		g.free_fn(obj);
	else
		kfree(RM_RLU_HDR(obj));
}

/* ---- logs ---------------------------------------------------------------- */
static void log_reset(struct rlu_log *l)
{
	struct chunk *c;

	for (c = l->head; c; c = c->next)
		c->used = 0;
	l->cur = l->head;
	l->bytes = 0;
}

static void log_free(struct rlu_log *l)
{
	struct chunk *c = l->head;

	while (c) {
		struct chunk *n = c->next;

		kvfree(c);
		c = n;
	}
	l->head = l->cur = NULL;
	l->bytes = 0;
}

/* Room for an entry of `need` bytes at the end of the log (not taken until
 * log_claim); NULL when memory says no.  Copies never move: a chunk that is
 * full is followed by another one. */
static struct rm_rlu_entry *log_reserve(struct rlu_log *l, size_t need)
{
	struct chunk *ch = l->cur;

	if (!ch || ch->cap - ch->used < need) {
		struct chunk *nx = ch ? ch->next : l->head;

		if (!nx || nx->cap < need) {
			size_t cap = CHUNK_MIN;
			struct chunk *n;

			if (ch && ch->cap * 2 > cap)
				cap = ch->cap * 2;
			if (cap > CHUNK_MAX)
				cap = CHUNK_MAX;
			if (cap < need)
				cap = need;
			n = kvmalloc(sizeof(*n) + cap, GFP_KERNEL);
			if (!n)
				return NULL;
			n->cap = cap;
			n->used = 0;
			n->next = nx;
			if (ch)
				ch->next = n;
			else
				l->head = n;
			nx = n;
		}
		ch = nx;
		l->cur = ch;
	}
	return (struct rm_rlu_entry *)(ch->data + ch->used);
}

static void log_claim(struct rlu_log *l, size_t need)
{
	l->cur->used += need;
	l->bytes += need;
}

static void log_mark(struct rlu_log *l, struct log_mark *m)
{
	m->chunk = l->cur;
	m->used = l->cur ? l->cur->used : 0;
}

static void log_each(struct rlu_log *l, const struct log_mark *m,
		     void (*fn)(struct rm_rlu_entry *e))
{
	struct chunk *ch = m->chunk ? m->chunk : l->head;
	size_t off = m->chunk ? m->used : 0;

	for (; ch; ch = ch->next, off = 0) {
		while (off < ch->used) {
			struct rm_rlu_entry *e = (struct rm_rlu_entry *)(ch->data + off);

			off += sizeof(*e) + round16(e->size);
			fn(e);
		}
		if (ch == l->cur)
			break;
	}
}

static void first_write(struct rm_rlu_ctx *c)
{
	if (c->h.is_writer)
		return;
	c->h.is_writer = 1;
	c->section = c->h.run_cnt;
	c->frees_mark = c->nfrees;
	log_mark(&c->log[c->cur], &c->mark);
}

static void entry_unlock(struct rm_rlu_entry *e)
{
	/* L3: release; a section that sees NULL sees the write-back. */
	smp_store_release(&RM_RLU_HDR(e->actual)->copy, NULL);
}

static void entry_write_back(struct rm_rlu_entry *e)
{
	if (!e->actual)
		return; /* an aborted section's */
	memcpy(e->actual, COPY_OF_ENTRY(e), e->size);
	entry_unlock(e);
}

static void entry_abort(struct rm_rlu_entry *e)
{
	if (!e->actual)
		return;
	entry_unlock(e);
	e->actual = NULL;
}

/* ---- options and registration -------------------------------------------- */
int rm_rlu_init(enum rm_rlu_flavor flavor, unsigned int max_defer, bool fence_free)
{
	int ret = 0;

	if ((flavor != RM_RLU_FINE && flavor != RM_RLU_COARSE) ||
	    (flavor == RM_RLU_COARSE && max_defer > 1))
		return -EINVAL;
	mutex_lock(&g.reg_lock);
	if (g.nlive) {
		ret = -EBUSY;
	} else {
		g.flavor = flavor;
		g.max_defer = max_defer;
		/* No context: no section reads it now; the registration's
		 * smp_mb() (U2) publishes it to the next ones. */
		WRITE_ONCE(rm_rlu_fence_free_g, fence_free);
	}
	mutex_unlock(&g.reg_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(rm_rlu_init);

int rm_rlu_set_free_fn(void (*fn)(void *obj))
{
	int ret = 0;

	mutex_lock(&g.reg_lock);
	if (g.nlive)
		ret = -EBUSY;
	else
		g.free_fn = fn;
	mutex_unlock(&g.reg_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(rm_rlu_set_free_fn);

u64 rm_rlu_clock(void)
{
	return atomic64_read_acquire(&rm_rlu_clock_g);
}
EXPORT_SYMBOL_GPL(rm_rlu_clock);

static void stats_add(struct rm_rlu_stats *to, const struct rm_rlu_stats *from)
{
	to->commits += READ_ONCE(from->commits);
	to->aborts += READ_ONCE(from->aborts);
	to->conflicts += READ_ONCE(from->conflicts);
	to->steals += READ_ONCE(from->steals);
	to->syncs += READ_ONCE(from->syncs);
	to->sync_waits += READ_ONCE(from->sync_waits);
	to->frees += READ_ONCE(from->frees);
	to->deferred += READ_ONCE(from->deferred);
	to->ipi_rounds += READ_ONCE(from->ipi_rounds);
}

void rm_rlu_stats_get(struct rm_rlu_stats *out)
{
	unsigned int i;

	memset(out, 0, sizeof(*out));
	mutex_lock(&g.reg_lock);
	stats_add(out, &g.retired);
	for (i = 0; i < g.high; i++)
		if (g.slot[i] && READ_ONCE(g.slot[i]->h.in_use))
			stats_add(out, &g.slot[i]->st);
	mutex_unlock(&g.reg_lock);
}
EXPORT_SYMBOL_GPL(rm_rlu_stats_get);

struct rm_rlu_ctx *rm_rlu_thread_register(void)
{
	struct rm_rlu_ctx *c = NULL;
	unsigned int i;

	mutex_lock(&g.reg_lock);
	for (i = 0; i < RM_RLU_MAX_CTX; i++) {
		if (!g.slot[i])
			break;
		if (!READ_ONCE(g.slot[i]->h.in_use)) {
			c = g.slot[i];
			break;
		}
	}
	if (!c) {
		if (i == RM_RLU_MAX_CTX)
			goto out;
		c = kzalloc(sizeof(*c), GFP_KERNEL);
		if (!c)
			goto out;
		c->slot = i;
		c->h.write_clock = RM_RLU_NO_CLOCK;
		/* Release: synchronize loads the slot with acquire. */
		smp_store_release(&g.slot[i], c);
	}
	/* U2: in use before the smp_mb() below. */
	WRITE_ONCE(c->h.in_use, 1);
	c->task = current;
	c->h.is_writer = 0;
	c->cur = 0;
	/* The run counter is kept across reuse: a synchronize may have sampled
	 * the previous owner's value and waits only for it to change. */
	if (c->slot + 1 > g.high)
		WRITE_ONCE(g.high, c->slot + 1);
	g.nlive++;
	/* U2: a writer whose scan missed our slot (or saw it free) stepped the
	 * clock before its W3; this barrier pairs with that one, so our first
	 * section's clock load sees the step. */
	smp_mb();
out:
	mutex_unlock(&g.reg_lock);
	return c;
}
EXPORT_SYMBOL_GPL(rm_rlu_thread_register);

static void synchronize(struct rm_rlu_ctx *self, u64 wc);
static void flush(struct rm_rlu_ctx *c);

void rm_rlu_thread_unregister(struct rm_rlu_ctx *c)
{
	if (!c)
		return;
	if (WARN_ON_ONCE(!READ_ONCE(c->h.in_use) || c->task != current))
		return;
	WARN_ON_ONCE(c->h.run_cnt & 1);
	flush(c); /* deferred sections are committed, never lost */
	/* The log of the last commit may still be read by sections that stole
	 * from it: one more grace period, then both logs are free. */
	if (c->log[0].head || c->log[1].head) {
		/* Our last unlocks before the run counter loads (as W3). */
		smp_mb();
		synchronize(c, rm_rlu_clock() + 1);
	}
	mutex_lock(&g.reg_lock);
	log_free(&c->log[0]);
	log_free(&c->log[1]);
	kfree(c->frees);
	c->frees = NULL;
	c->nfrees = c->capfrees = 0;
	c->task = NULL;
	stats_add(&g.retired, &c->st);
	memset(&c->st, 0, sizeof(c->st));
	/* U1: release, after the context's last section's exit (R3): a writer
	 * that reads 0 (S3) and skips us has those reads ordered before its
	 * write-back. */
	smp_store_release(&c->h.in_use, 0);
	g.nlive--;
	while (g.high > 0 && !READ_ONCE(g.slot[g.high - 1]->h.in_use))
		g.high--;
	mutex_unlock(&g.reg_lock);
}
EXPORT_SYMBOL_GPL(rm_rlu_thread_unregister);

/* ---- objects ------------------------------------------------------------- */
void *rm_rlu_alloc(size_t size, gfp_t gfp)
{
	struct rm_rlu_obj_hdr *h = kmalloc(sizeof(*h) + (size ? size : 1), gfp);

	if (!h)
		return NULL;
	h->copy = NULL;
	h->size = size;
	return h + 1;
}
EXPORT_SYMBOL_GPL(rm_rlu_alloc);

int rm_rlu_free(struct rm_rlu_ctx *c, void *obj)
{
	if (!obj)
		return 0;
	obj = rm_rlu_actual(obj);
	if (!c || !(c->h.run_cnt & 1)) {
		obj_free(obj);
		return 0;
	}
	if (c->nfrees == c->capfrees) {
		size_t n = c->capfrees ? c->capfrees * 2 : 16;
		void **f = krealloc(c->frees, n * sizeof(*f), GFP_KERNEL);

		if (!f)
			return -ENOMEM;
		c->frees = f;
		c->capfrees = n;
	}
	first_write(c);
	c->frees[c->nfrees++] = obj;
	return 0;
}
EXPORT_SYMBOL_GPL(rm_rlu_free);

static void free_pending(struct rm_rlu_ctx *c)
{
	size_t i;

	for (i = 0; i < c->nfrees; i++)
		obj_free(c->frees[i]);
	WRITE_ONCE(c->st.frees, c->st.frees + c->nfrees);
	c->nfrees = 0;
}

/* ---- sections ------------------------------------------------------------ */
void rm_rlu_checkpoint_slowpath(struct rm_rlu_ctx *c)
{
	if (c->ndeferred && READ_ONCE(c->h.sync_request))
		flush(c);
}
EXPORT_SYMBOL_GPL(rm_rlu_checkpoint_slowpath);

void *rm_rlu_deref_slowpath(struct rm_rlu_ctx *c, void *obj, void *copy)
{
	struct rm_rlu_entry *e = ENTRY_OF_COPY(copy);
	struct rm_rlu_ctx *owner = READ_ONCE(e->owner);
	u64 wc;

	if (owner == c)
		return copy;
	/* D1: acquire; pairs with W2 (through R2: our clock is the step's or
	 * later, so we see the write clock it published) and with W4. */
	wc = smp_load_acquire(&owner->h.write_clock);
	if (wc <= c->h.local_clock) {
		STAT(c, steals);
		return copy;
	}
	return obj;
}
EXPORT_SYMBOL_GPL(rm_rlu_deref_slowpath);

int rm_rlu_try_lock(struct rm_rlu_ctx *c, void **pobj)
{
	void *obj, *copy;
	struct rm_rlu_obj_hdr *h;
	struct rm_rlu_entry *e;
	size_t need;

	if (WARN_ON_ONCE(!(c->h.run_cnt & 1)))
		return -EPERM;
	obj = rm_rlu_actual(*pobj);
	h = RM_RLU_HDR(obj);
	first_write(c);
again:
	/* L1 again: a lock we see comes with its entry. */
	copy = smp_load_acquire(&h->copy);
	if (copy) {
		struct rm_rlu_entry *oe = ENTRY_OF_COPY(copy);
		struct rm_rlu_ctx *owner = READ_ONCE(oe->owner);

		if (owner == c) {
			if (oe->section == c->section) {
				*pobj = copy;
				return 0;
			}
			/* Locked by one of our deferred sections: its copy must
			 * not change under an abort of this one.  Fail; our next
			 * checkpoint flushes. */
			WRITE_ONCE(c->h.sync_request, 1);
			STAT(c, conflicts);
			return -EBUSY;
		}
		c->conflict_owner = owner;
		c->conflict_seen = smp_load_acquire(&owner->h.unlocks);
		if (g.max_defer > 1)
			WRITE_ONCE(owner->h.sync_request, 1); /* ask it to flush */
		STAT(c, conflicts);
		return -EBUSY;
	}
	need = sizeof(*e) + round16(h->size);
	e = log_reserve(&c->log[c->cur], need);
	if (!e)
		return -ENOMEM;
	WRITE_ONCE(e->owner, c);
	e->actual = obj;
	e->size = h->size;
	e->section = c->section;
	e->hdr.copy = RM_RLU_COPY_MARK;
	e->hdr.size = h->size;
	copy = COPY_OF_ENTRY(e);
	/* L2: a successful cmpxchg is a full barrier: the entry is visible
	 * before the lock (to L1), and our copy below reads the object after
	 * the previous owner's write-back (its L3). */
	if (cmpxchg(&h->copy, NULL, copy) != NULL)
		goto again; /* lost the race: look at the winner (space not taken) */
	log_claim(&c->log[c->cur], need);
	memcpy(copy, obj, h->size);
	*pobj = copy;
	return 0;
}
EXPORT_SYMBOL_GPL(rm_rlu_try_lock);

void rm_rlu_writer_lock(struct rm_rlu_ctx *c)
{
	WARN_ON_ONCE(c->h.run_cnt & 1);
	mutex_lock(&g.writer_lock);
	c->holds_writer_lock = true;
	rm_rlu_reader_lock(c);
	first_write(c); /* the exit must release the lock */
}
EXPORT_SYMBOL_GPL(rm_rlu_writer_lock);

static void release_writer_lock(struct rm_rlu_ctx *c)
{
	if (c->holds_writer_lock) {
		c->holds_writer_lock = false;
		mutex_unlock(&g.writer_lock);
	}
}

/* ---- synchronize --------------------------------------------------------- */
/* S2: acquire, pairs with R4/R5: a context whose local clock is at wc or
 * later has left every section that began before the step. */
static bool reported(struct rm_rlu_ctx *o, u64 wc)
{
	return smp_load_acquire(&o->h.local_clock) >= wc;
}

/* R5: report, outside a section, the clock we read now (so that another
 * writer waiting for an old section of ours sees it is over). */
static void report_clock(struct rm_rlu_ctx *c)
{
	u64 t = atomic64_read_acquire(&rm_rlu_clock_g);

	if (t > c->h.local_clock)
		smp_store_release(&c->h.local_clock, t);
}

/* The store-buffer model of the rm_sbuf test module: when set, the
 * handler first drains the modelled buffer of the CPU it interrupted, as
 * the interrupt drains the real one.  NULL outside that test. */
void (*rm_rlu_ipi_hook)(void);
EXPORT_SYMBOL_GPL(rm_rlu_ipi_hook);

static void ipi_mb(void *unused)
{
	void (*hook)(void) = READ_ONCE(rm_rlu_ipi_hook);

	if (hook)
		hook();
	/* W5: this CPU's earlier stores before the writer's run counter
	 * loads, its later loads after the writer's clock step. */
	smp_mb();
}

/* Fence-free entry: has every other live context shown a section begun
 * after the step (S2)?  Busy readers do at their next entry. */
static bool all_reported(struct rm_rlu_ctx *self, unsigned int n, u64 wc)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct rm_rlu_ctx *o = smp_load_acquire(&g.slot[i]);

		if (o && o != self && smp_load_acquire(&o->h.in_use) && !reported(o, wc))
			return false;
	}
	return true;
}

/* Wait until every section that began before the clock reached wc is over.
 * After W3 (fenced entry) or W5 (fence-free) an even run counter means "not
 * in a section that began before the step", and an odd one that changes
 * means that section has left. */
static void synchronize(struct rm_rlu_ctx *self, u64 wc)
{
	unsigned int i, n = READ_ONCE(g.high);

	STAT(self, syncs);
	report_clock(self);
	if (READ_ONCE(rm_rlu_fence_free_g)) {
		unsigned int round;
		bool done = false;

		for (round = 0; round < 16 && !done; round++) {
			done = all_reported(self, n, wc);
			for (i = 0; i < 32 && !done; i++)
				cpu_relax();
		}
		if (done)
			return;
		STAT(self, ipi_rounds);
		/* W5: every other online CPU runs ipi_mb(); wait for them. */
#ifndef RM_MUTANT_NO_IPI
		smp_call_function(ipi_mb, NULL, 1);
#else
		ipi_mb(NULL); /* the mutant: this CPU only */
#endif
		smp_mb(); /* and this CPU */
	}
	for (i = 0; i < n; i++) {
		struct rm_rlu_ctx *o = smp_load_acquire(&g.slot[i]);
		unsigned int b = 0;
		u64 r;

		if (!o || o == self)
			continue;
		/* S3: a free slot has no section to wait for (U1); one being
		 * taken has none that began before our step (U2). */
		if (!smp_load_acquire(&o->h.in_use))
			continue;
		/* S1: acquire, pairs with R3. */
		r = smp_load_acquire(&o->h.run_cnt);
		if (!(r & 1) || reported(o, wc))
			continue;
#ifdef RM_MUTANT_NO_WAIT
		/* A broken synchronize, for scripts/kernel.sh MUTANT=no_wait:
		 * the torture must catch it. */
		continue;
#endif
		STAT(self, sync_waits);
		for (;;) {
			backoff(&b);
			report_clock(self);
			if (smp_load_acquire(&o->h.run_cnt) != r) /* S1 */
				break;
			if (reported(o, wc)) /* S2 */
				break;
		}
	}
}

void rm_rlu_synchronize(struct rm_rlu_ctx *c)
{
	WARN_ON_ONCE(c->h.run_cnt & 1);
	/* As W3: whatever we did before happens before the run counter loads;
	 * every section that began before this point has local clock <= the
	 * clock we load, so below clock + 1. */
	smp_mb();
	synchronize(c, rm_rlu_clock() + 1);
}
EXPORT_SYMBOL_GPL(rm_rlu_synchronize);

/* ---- commit -------------------------------------------------------------- */
static u64 clock_step(struct rm_rlu_ctx *c)
{
	u64 t;

	spin_lock(&g.clock_lock);
	/* Only clock_lock holders write the clock: it cannot move until we
	 * store t + 1, so the write clock we publish is the value the clock
	 * will have. */
	t = atomic64_read(&rm_rlu_clock_g);
	/* W1: ordered before the clock store by W2's release. */
	WRITE_ONCE(c->h.write_clock, t + 1);
	/* W2: release; a section whose clock load (R2) reads t + 1 or later
	 * sees our write clock, our locks and our finished copies. */
	atomic64_set_release(&rm_rlu_clock_g, t + 1);
	spin_unlock(&g.clock_lock);
	return t + 1;
}

static void commit(struct rm_rlu_ctx *c)
{
	struct rlu_log *l = &c->log[c->cur];
	struct log_mark all = { NULL, 0 };
	u64 wc;

	c->ndeferred = 0;
	c->h.deferred = 0;
	WRITE_ONCE(c->h.sync_request, 0);
	wc = clock_step(c);
	/* W3: the clock store before synchronize's run counter loads (pairs
	 * with R1). */
	smp_mb();
	synchronize(c, wc);
	log_each(l, &all, entry_write_back);
	/* W4: release; a section that sees "no stealing" sees the write-back. */
	smp_store_release(&c->h.write_clock, RM_RLU_NO_CLOCK);
	smp_store_release(&c->h.unlocks, c->h.unlocks + 1);
	free_pending(c);
	/* Swap: the other log was last used by the previous commit; our
	 * synchronize began after that commit unlocked (invariant 5). */
	c->cur ^= 1;
	log_reset(&c->log[c->cur]);
}

static void flush(struct rm_rlu_ctx *c)
{
	if (c->log[c->cur].bytes || c->nfrees)
		commit(c);
	c->ndeferred = 0;
	c->h.deferred = 0;
	WRITE_ONCE(c->h.sync_request, 0);
}

void rm_rlu_sync(struct rm_rlu_ctx *c)
{
	WARN_ON_ONCE(c->h.run_cnt & 1);
	flush(c);
}
EXPORT_SYMBOL_GPL(rm_rlu_sync);

/* The exit of a section that wrote (the inline exit stored the even run
 * counter, R3, already). */
void rm_rlu_reader_unlock_slowpath(struct rm_rlu_ctx *c)
{
	c->h.is_writer = 0;
	STAT(c, commits);
	if (g.max_defer > 1 && !c->holds_writer_lock) {
		/* Deferral: the section stays in the log, its objects locked and
		 * its copies private, until max_defer sections or a request. */
		c->ndeferred++;
		c->h.deferred = 1;
		if (c->ndeferred < g.max_defer && !READ_ONCE(c->h.sync_request)) {
			STAT(c, deferred);
			return;
		}
	}
	flush(c);
	release_writer_lock(c);
}
EXPORT_SYMBOL_GPL(rm_rlu_reader_unlock_slowpath);

void rm_rlu_abort(struct rm_rlu_ctx *c)
{
	if (WARN_ON_ONCE(!(c->h.run_cnt & 1)))
		return;
	if (c->h.is_writer) {
		/* Nobody stole these copies (our write clock is NO_CLOCK), but a
		 * section may still read an entry's header through a copy
		 * pointer it loaded before our unlock: the entries stay, dead,
		 * until the log is reset after a later commit's synchronize. */
		log_each(&c->log[c->cur], &c->mark, entry_abort);
		smp_store_release(&c->h.unlocks, c->h.unlocks + 1);
		c->nfrees = c->frees_mark;
		c->h.is_writer = 0;
	}
	/* R3 as at a section's exit. */
	smp_store_release(&c->h.run_cnt, c->h.run_cnt + 1);
	STAT(c, aborts);
	release_writer_lock(c);
	if (c->ndeferred && READ_ONCE(c->h.sync_request))
		flush(c);
	if (c->conflict_owner) {
		/* Retrying at once would meet the same lock: wait a bounded
		 * while until its owner releases a batch of locks. */
		struct rm_rlu_ctx *o = c->conflict_owner;
		unsigned int b = 0;

		c->conflict_owner = NULL;
		while (b < 128 && smp_load_acquire(&o->h.unlocks) == c->conflict_seen)
			backoff(&b);
	}
}
EXPORT_SYMBOL_GPL(rm_rlu_abort);

static int __init rm_rlu_mod_init(void)
{
	pr_info("rm_rlu: loaded (max %d contexts, fenced section entry)\n", RM_RLU_MAX_CTX);
	return 0;
}

static void __exit rm_rlu_mod_exit(void)
{
	unsigned int i;

	/* Users are modules that depend on us: they are gone, and so are
	 * their contexts (unregistered). */
	for (i = 0; i < RM_RLU_MAX_CTX; i++) {
		if (g.slot[i]) {
			WARN_ON(g.slot[i]->h.in_use);
			kfree(g.slot[i]);
		}
	}
	pr_info("rm_rlu: unloaded\n");
}

module_init(rm_rlu_mod_init);
module_exit(rm_rlu_mod_exit);
