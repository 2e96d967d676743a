// SPDX-License-Identifier: GPL-2.0
/*
 * rm_locks.c - BRAVO over rw_semaphore and prwlock with IPIs (rm_locks.h).
 *
 * Ordering points (each use names its letter)
 *   B1  BRAVO reader: the slot cmpxchg (a full barrier when it succeeds)
 *       before the bias load.  Dekker with B2: either the revoking writer
 *       sees our slot, or we see the bias cleared and leave the fast path.
 *   B2  BRAVO writer: bias store, smp_mb(), then the table scan.
 *   B3  BRAVO reader: the bias load is acquire, pairing with the release
 *       that sets it (B4): a fast-path reader sees what the writers before
 *       the biasing slow-path reader wrote.
 *   B4  BRAVO slow-path reader: the bias store is release, after taking the
 *       rw_semaphore for reading (after every earlier writer's release).
 *   B5  BRAVO fast-path unlock: the slot is cleared with release; the
 *       writer's scan loads it with acquire: the reader's section happens
 *       before the writer's.
 *   P1  prwlock reader: passive store, then the writer-flag load, with no
 *       fence between (TSO may reorder them).  A writer that misses the
 *       passive store has not seen this CPU report its version: it IPIs the
 *       CPU, and the handler runs on this CPU after the stores before the
 *       interrupt; it sees passive and does not report, or the reader's
 *       flag load comes after the interrupt and sees the writer.
 *   P2  prwlock reader: the writer-flag load is acquire, pairing with the
 *       writer's release at unlock (P6): a reader that sees it clear sees
 *       the last writer's section.
 *   P3  prwlock reader unlock: passive cleared with release (the section's
 *       accesses before it), then the version report, release.  A writer
 *       that loads the reported version (acquire, P5) sees the section done.
 *   P4  prwlock writer: writer flag store, then the version increment (a
 *       full barrier): a CPU that reports the new version loaded it after
 *       the flag was visible, and its next section's flag load (after that
 *       acquire load of the version) sees the writer.
 *   P5  prwlock writer: each CPU's version loaded with acquire; the active
 *       count loaded with acquire (pairs with the release of the decrement).
 *   P6  prwlock writer unlock: flag cleared with release.
 *   P7  prwlock switch-out: active incremented, smp_mb__after_atomic(), then
 *       passive cleared and the version reported: a writer that sees the
 *       report sees the active count that covers the reader.
 */
#include <linux/cpu.h>
#include <linux/delay.h>
#include <linux/hash.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/smp.h>
#include <linux/string.h>

#include "rm_locks.h"

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("readmostly: BRAVO over rw_semaphore, and prwlock with IPIs");

/* ---- BRAVO ------------------------------------------------------------------ */
#define VR_BITS 12
#define VR_SIZE (1 << VR_BITS)
#define BRAVO_N 9

static struct bravo_rwsem *vr_table[VR_SIZE] ____cacheline_aligned;

/* Statistics: per-CPU, so that counting does not make readers share a
 * line; this_cpu_inc() is safe with preemption on. */
struct rm_locks_stats {
	unsigned long fast_reads, slow_reads, revocations;
	unsigned long ipis, conversions, slow_passive;
};
static DEFINE_PER_CPU(struct rm_locks_stats, rm_stats);
#define STAT_INC(f) this_cpu_inc(rm_stats.f)

void rm_locks_stats_print(const char *tag)
{
	struct rm_locks_stats sum = { 0 };
	int cpu;

	for_each_possible_cpu(cpu) {
		struct rm_locks_stats *s = per_cpu_ptr(&rm_stats, cpu);

		sum.fast_reads += s->fast_reads;
		sum.slow_reads += s->slow_reads;
		sum.revocations += s->revocations;
		sum.ipis += s->ipis;
		sum.conversions += s->conversions;
		sum.slow_passive += s->slow_passive;
		memset(s, 0, sizeof(*s));
	}
	pr_info("rm_locks: %s bravo fast_reads=%lu slow_reads=%lu revocations=%lu prwlock ipis=%lu switched_out_readers=%lu readers_that_met_a_writer=%lu\n",
		tag, sum.fast_reads, sum.slow_reads, sum.revocations, sum.ipis,
		sum.conversions, sum.slow_passive);
}
EXPORT_SYMBOL_GPL(rm_locks_stats_print);

/* Waiting for another task: spin briefly, then let the scheduler run it
 * (it may be preempted on this CPU), then sleep a little. */
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

static unsigned int vr_slot(struct bravo_rwsem *b)
{
	return hash_long((unsigned long)b ^ ((unsigned long)current >> 4), VR_BITS);
}

void bravo_rwsem_init(struct bravo_rwsem *b)
{
	init_rwsem(&b->rwsem);
	b->rbias = 1;
	b->inhibit_until = 0;
}
EXPORT_SYMBOL_GPL(bravo_rwsem_init);

int bravo_down_read(struct bravo_rwsem *b)
{
	if (READ_ONCE(b->rbias)) {
		unsigned int s = vr_slot(b);

		/* B1: a full barrier when it succeeds. */
		if (cmpxchg(&vr_table[s], NULL, b) == NULL) {
			/* B3: acquire. */
			if (likely(smp_load_acquire(&b->rbias))) {
				STAT_INC(fast_reads);
				return s;
			}
			/* A writer revokes: leave the slot (release: nothing
			 * was read under it). */
			smp_store_release(&vr_table[s], NULL);
		}
	}
	down_read(&b->rwsem);
	STAT_INC(slow_reads);
	if (!READ_ONCE(b->rbias) && local_clock() >= READ_ONCE(b->inhibit_until))
		smp_store_release(&b->rbias, 1); /* B4 */
	return -1;
}
EXPORT_SYMBOL_GPL(bravo_down_read);

void bravo_up_read(struct bravo_rwsem *b, int token)
{
	if (token >= 0)
		smp_store_release(&vr_table[token], NULL); /* B5 */
	else
		up_read(&b->rwsem);
}
EXPORT_SYMBOL_GPL(bravo_up_read);

void bravo_down_write(struct bravo_rwsem *b)
{
	down_write(&b->rwsem);
	if (READ_ONCE(b->rbias)) {
		u64 start = local_clock(), now;
		unsigned int i;

		WRITE_ONCE(b->rbias, 0);
		STAT_INC(revocations);
		/* B2: the cleared bias before the scan (pairs with B1). */
		smp_mb();
#ifdef RM_MUTANT_NO_REVOKE
		/* A writer that does not wait for fast-path readers, for
		 * scripts/kernel.sh MUTANT=no_revoke: locktorture must fail. */
		i = VR_SIZE;
#else
		i = 0;
#endif
		for (; i < VR_SIZE; i++) {
			unsigned int n = 0;

			/* B5: acquire. */
			while (smp_load_acquire(&vr_table[i]) == b)
				backoff(&n);
		}
		now = local_clock();
		WRITE_ONCE(b->inhibit_until, now + (now - start) * BRAVO_N);
	}
}
EXPORT_SYMBOL_GPL(bravo_down_write);

void bravo_up_write(struct bravo_rwsem *b)
{
	up_write(&b->rwsem);
}
EXPORT_SYMBOL_GPL(bravo_up_write);

/* ---- prwlock ---------------------------------------------------------------- */
int prwlock_init(struct prwlock *l)
{
	int cpu;

	mutex_init(&l->wmutex);
	l->writer = 0;
	atomic_long_set(&l->version, 1);
	atomic_set(&l->active, 0);
	l->st = alloc_percpu(struct prwlock_cpu);
	if (!l->st)
		return -ENOMEM;
	if (!zalloc_cpumask_var(&l->wait, GFP_KERNEL)) {
		free_percpu(l->st);
		return -ENOMEM;
	}
	for_each_possible_cpu(cpu) {
		per_cpu_ptr(l->st, cpu)->passive = 0;
		per_cpu_ptr(l->st, cpu)->version = 0;
	}
	return 0;
}
EXPORT_SYMBOL_GPL(prwlock_init);

void prwlock_destroy(struct prwlock *l)
{
	free_cpumask_var(l->wait);
	free_percpu(l->st);
}
EXPORT_SYMBOL_GPL(prwlock_destroy);

/* This CPU reports the lock's version (acquire load: P4's argument). */
static void prw_report(struct prwlock *l, struct prwlock_cpu *st)
{
	smp_store_release(&st->version, atomic_long_read_acquire(&l->version));
}

/* The scheduler switches the reader out inside its section: turn active
 * (Figure 3, ScheduleOut).  Runs on the reader's CPU, before the switch. */
static void prw_sched_out(struct preempt_notifier *pn, struct task_struct *next)
{
	struct prwlock_reader *r = container_of(pn, struct prwlock_reader, pn);
	struct prwlock *l = r->lock;
	struct prwlock_cpu *st;

	if (!r->passive)
		return;
	atomic_inc(&l->active);
	STAT_INC(conversions);
	/* P7 */
	smp_mb__after_atomic();
	st = this_cpu_ptr(l->st);
	WRITE_ONCE(st->passive, 0);
	r->passive = false;
	prw_report(l, st);
}

static void prw_sched_in(struct preempt_notifier *pn, int cpu)
{
}

static struct preempt_ops prw_preempt_ops = {
	.sched_in = prw_sched_in,
	.sched_out = prw_sched_out,
};

void prwlock_reader_init(struct prwlock_reader *r)
{
	preempt_notifier_init(&r->pn, &prw_preempt_ops);
	r->lock = NULL;
	r->passive = false;
}
EXPORT_SYMBOL_GPL(prwlock_reader_init);

void prwlock_read_lock(struct prwlock *l, struct prwlock_reader *r)
{
	struct prwlock_cpu *st;

	r->lock = l;
	preempt_disable();
	/* Registered for the section only: a switch-out inside it turns the
	 * reader active; none is left behind when the task exits. */
	preempt_notifier_register(&r->pn);
	for (;;) {
		st = this_cpu_ptr(l->st);
		WRITE_ONCE(st->passive, 1);
		r->passive = true;
		/* P1: no fence between the store above and this load; P2:
		 * acquire. */
		if (likely(!smp_load_acquire(&l->writer)))
			break;
		/* A writer: step back, report, wait for it with preemption on. */
		STAT_INC(slow_passive);
		WRITE_ONCE(st->passive, 0);
		r->passive = false;
		prw_report(l, st);
		preempt_enable();
		{
			unsigned int n = 0;

			while (READ_ONCE(l->writer))
				backoff(&n);
		}
		preempt_disable();
	}
	preempt_enable();
}
EXPORT_SYMBOL_GPL(prwlock_read_lock);

void prwlock_read_unlock(struct prwlock *l, struct prwlock_reader *r)
{
	struct prwlock_cpu *st;

	preempt_disable();
	st = this_cpu_ptr(l->st);
	if (r->passive) {
		/* P3: still on the CPU of the lock (no switch-out happened). */
		smp_store_release(&st->passive, 0);
		r->passive = false;
	} else {
		/* Release: the section before the decrement (P5). */
		smp_mb__before_atomic();
		atomic_dec(&l->active);
	}
	prw_report(l, st); /* P3 */
	preempt_notifier_unregister(&r->pn);
	preempt_enable();
}
EXPORT_SYMBOL_GPL(prwlock_read_unlock);

/* The store-buffer model of the rm_sbuf test module: when set, the
 * handler first drains the modelled buffer of the CPU it interrupted, as
 * the interrupt drains the real one.  NULL outside that test. */
void (*rm_locks_ipi_hook)(void);
EXPORT_SYMBOL_GPL(rm_locks_ipi_hook);

/* IPI handler (Figure 4, Report): a CPU not in a passive section reports. */
static void prw_report_ipi(void *arg)
{
	struct prwlock *l = arg;
	struct prwlock_cpu *st = this_cpu_ptr(l->st);
	void (*hook)(void) = READ_ONCE(rm_locks_ipi_hook);

	if (hook)
		hook();
	if (!READ_ONCE(st->passive))
		prw_report(l, st);
}

void prwlock_write_lock(struct prwlock *l)
{
	unsigned long v;
	unsigned int n = 0;
	int cpu, me;

	mutex_lock(&l->wmutex);
	WRITE_ONCE(l->writer, 1);
	/* P4: a full barrier (value-returning atomic). */
	v = atomic_long_inc_return(&l->version);
	cpus_read_lock();
	cpumask_clear(l->wait);
	me = get_cpu();
	for_each_online_cpu(cpu) {
		/* P5: acquire. */
		if (cpu != me && smp_load_acquire(&per_cpu_ptr(l->st, cpu)->version) != v) {
#ifdef RM_MUTANT_NO_IPI
			/* A fence-free entry without its IPI, for
			 * scripts/kernel.sh MUTANT=no_ipi: a CPU whose passive
			 * mark reads 0 is taken as outside any section, which
			 * P1's store, still in the reader's store buffer, makes
			 * false.  rm_sbuf must fail. */
			if (!READ_ONCE(per_cpu_ptr(l->st, cpu)->passive))
				continue;
#endif
			__cpumask_set_cpu(cpu, l->wait);
		}
	}
	/* Stragglers are asked at once (P1); wait=true: the handlers ran. */
	if (!cpumask_empty(l->wait)) {
		this_cpu_add(rm_stats.ipis, cpumask_weight(l->wait));
		smp_call_function_many(l->wait, prw_report_ipi, l, true);
	}
	put_cpu();
#ifdef RM_MUTANT_NO_CONSENSUS
	/* A writer that does not wait for passive readers, for
	 * scripts/kernel.sh MUTANT=no_consensus: locktorture must fail. */
	cpumask_clear(l->wait);
#endif
	for_each_cpu(cpu, l->wait) {
		/* Readers inside passive sections report at their unlock. */
		while (smp_load_acquire(&per_cpu_ptr(l->st, cpu)->version) != v)
			backoff(&n);
	}
	cpus_read_unlock();
	/* Phase 2: readers that went active. P5: acquire. */
	while (atomic_read_acquire(&l->active))
		backoff(&n);
}
EXPORT_SYMBOL_GPL(prwlock_write_lock);

void prwlock_write_unlock(struct prwlock *l)
{
	smp_store_release(&l->writer, 0); /* P6 */
	mutex_unlock(&l->wmutex);
}
EXPORT_SYMBOL_GPL(prwlock_write_unlock);

static int __init rm_locks_init(void)
{
	/* Turns the scheduler's preempt-notifier calls on (a static key). */
	preempt_notifier_inc();
	return 0;
}

static void __exit rm_locks_exit(void)
{
	preempt_notifier_dec();
}

module_init(rm_locks_init);
module_exit(rm_locks_exit);
