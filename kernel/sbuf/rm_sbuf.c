// SPDX-License-Identifier: GPL-2.0
/*
 * rm_sbuf.c - a deterministic check of the fence-free section entries, with
 * the store buffer modelled: RLU's entry with rm_rlu_init(..., fence_free)
 * and prwlock's passive entry.
 *
 * Both entries store (RLU: the odd run counter, then the local clock;
 * prwlock: the CPU's passive mark) and then load (the clock; the writer
 * flag) with no fence between: on x86 the store may wait in the CPU's store
 * buffer, invisible to other CPUs, after the load has returned.  The
 * writer's IPI makes that safe: the interrupt drains the reader CPU's
 * buffer before the handler runs.  Under qemu's TCG emulation no store is
 * ever held back, so a writer that skips its IPI (MUTANT=no_ipi) passes
 * every torture there.
 *
 * Here the reader's entry stores go into an explicit buffer instead of
 * memory.  They reach memory where a real CPU's would: at a full barrier of
 * the reader's own (the fenced entry's smp_mb()), when the reader's CPU
 * takes a writer's IPI (the modules' handlers call sb_ipi_hook() first:
 * rm_rlu_ipi_hook, rm_locks_ipi_hook), and at the end of the section.  In
 * each round the reader, a kthread on one CPU, enters a section (stores
 * buffered, load done), tells the writer, and stays inside for hold_ms with
 * preemption off (a context switch would drain the buffer too); the writer,
 * a kthread on another CPU, then waits for readers (rm_rlu_synchronize(), or
 * prwlock_write_lock()) and looks whether the reader is still inside.  The
 * real code's writer IPIs the reader's CPU, finds the section and waits; a
 * writer that decides from memory alone finds the reader's stores missing
 * and goes on while the reader is inside: a violation, in every round.
 *
 * Parameters: impl (rlu-ff: RLU, fence-free entry; rlu: RLU, fenced entry,
 * whose own barrier drains the buffer; prwlock), rounds, hold_ms, rep.
 * One result line: rm_ksbuf: experiment=kernel_sbuf impl=... violations=N
 * ipi_drains=M result=PASS|FAIL.
 */
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/irqflags.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <linux/string.h>

#include "rm_rlu.h"
#include "rm_locks.h"

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("readmostly: the fence-free entries of RLU and prwlock against a modelled store buffer");

static char *impl = "rlu-ff";
module_param(impl, charp, 0444);
MODULE_PARM_DESC(impl, "rlu-ff, rlu or prwlock");
static unsigned int rounds = 5;
module_param(rounds, uint, 0444);
static unsigned int hold_ms = 100;
module_param(hold_ms, uint, 0444);
MODULE_PARM_DESC(hold_ms, "how long the reader stays in its section each round");
static unsigned int rep = 1;
module_param(rep, uint, 0444);

/* ---- the modelled store buffer of the reader's CPU -------------------------- */
struct sb_entry {
	void *addr;
	u64 val;
	unsigned int size; /* 4 or 8 */
};

static struct {
	int cpu;                 /* the reader's CPU: the buffer's owner */
	unsigned int n;          /* buffered stores, oldest first */
	struct sb_entry e[4];
	atomic_t ipi_drains;     /* drains done in an IPI handler */
} SB;

/* Owner CPU only, interrupts off (the hook runs on this CPU too). */
static void sb_drain(void)
{
	unsigned int i;

	for (i = 0; i < SB.n; i++) {
		if (SB.e[i].size == 8)
			WRITE_ONCE(*(u64 *)SB.e[i].addr, SB.e[i].val);
		else
			WRITE_ONCE(*(int *)SB.e[i].addr, (int)SB.e[i].val);
	}
	SB.n = 0;
}

/* A store of the reader's entry: into the buffer, not memory. */
static void sb_store(void *addr, u64 val, unsigned int size)
{
	unsigned long flags;

	local_irq_save(flags);
	if (WARN_ON_ONCE(SB.n == ARRAY_SIZE(SB.e)))
		sb_drain();
	SB.e[SB.n].addr = addr;
	SB.e[SB.n].val = val;
	SB.e[SB.n].size = size;
	SB.n++;
	local_irq_restore(flags);
}

/* What a full barrier of the reader's own does. */
static void sb_fence(void)
{
	unsigned long flags;

	local_irq_save(flags);
	sb_drain();
	local_irq_restore(flags);
	smp_mb();
}

/* In a writer's IPI handler, on the CPU it interrupted: the interrupt
 * drained that CPU's store buffer before the handler's first instruction. */
static void sb_ipi_hook(void)
{
	if (raw_smp_processor_id() == SB.cpu && SB.n) {
		sb_drain();
		atomic_inc(&SB.ipi_drains);
	}
}

/* ---- the rounds --------------------------------------------------------------- */
/* The test's own hand-shakes use real barriers: they are outside the model
 * and drain nothing of it.  go: the writer lets the reader start round r;
 * entered: the reader's entry of round r is done (its load returned);
 * inside: cleared before the section's end becomes visible to the lock
 * (release before the release that ends it), so a writer that waited as it
 * must never sees it set; left: round r is over. */
static struct {
	bool ff;
	bool is_prw;
	struct prwlock prw;
	int go, entered, left, inside;
	unsigned int violations;
	int err;
	struct completion done[2];
} S;

static void wait_for(int *flag, int r)
{
	while (smp_load_acquire(flag) != r)
		usleep_range(50, 100);
}

static void hold(void)
{
	ktime_t end = ktime_add_ms(ktime_get(), hold_ms);

	/* Interrupts on (the IPI comes in here), preemption off. */
	while (ktime_before(ktime_get(), end))
		cpu_relax();
}

/* rm_rlu_reader_lock and rm_rlu_reader_unlock, step by step, with the
 * entry's stores through the modelled buffer. */
static void rlu_round(struct rm_rlu_ctx *c, int r)
{
	struct rm_rlu_ctx_hot *h = (struct rm_rlu_ctx_hot *)c;
	u64 l;

	preempt_disable();
	sb_store(&h->run_cnt, h->run_cnt + 1, 8);
	/* R1: the fenced entry's smp_mb() drains the buffer; the fence-free
	 * one has only a compiler barrier. */
	if (!S.ff)
		sb_fence();
	l = atomic64_read_acquire(&rm_rlu_clock_g); /* R2 */
	sb_store(&h->local_clock, l, 8);            /* R4 */
	WRITE_ONCE(S.inside, 1);
	smp_store_release(&S.entered, r);
	hold();
	sb_fence(); /* the buffer drains, in order, before the unlock's store */
	smp_store_release(&S.inside, 0);
	/* R3 (the run counter is ours: the buffer is empty now). */
	smp_store_release(&h->run_cnt, h->run_cnt + 1);
	preempt_enable();
}

/* prwlock_read_lock and prwlock_read_unlock for a reader that stays on its
 * CPU, with the passive store through the modelled buffer. */
static void prw_round(int r)
{
	struct prwlock *l = &S.prw;
	struct prwlock_cpu *st;

	preempt_disable();
	st = this_cpu_ptr(l->st);
	sb_store(&st->passive, 1, sizeof(st->passive));
	/* P1: no fence; P2: acquire.  The writer of the last round has
	 * unlocked before it let this round start. */
	if (WARN_ON_ONCE(smp_load_acquire(&l->writer)))
		S.err = -EPROTO;
	WRITE_ONCE(S.inside, 1);
	smp_store_release(&S.entered, r);
	hold();
	sb_fence();
	smp_store_release(&S.inside, 0);
	smp_store_release(&st->passive, 0); /* P3 */
	smp_store_release(&st->version, atomic_long_read_acquire(&l->version));
	preempt_enable();
}

/* An RLU thread context for the RLU runs (NULL for prwlock; on failure
 * NULL and S.err set, which ends the rounds). */
static struct rm_rlu_ctx *thread_ctx(void)
{
	struct rm_rlu_ctx *c;

	if (S.is_prw)
		return NULL;
	c = rm_rlu_thread_register();
	if (!c)
		S.err = -ENOMEM;
	return c;
}

static int reader_fn(void *unused)
{
	struct rm_rlu_ctx *c = thread_ctx();
	int r;

	for (r = 1; r <= rounds && !S.err; r++) {
		wait_for(&S.go, r);
		if (S.is_prw)
			prw_round(r);
		else
			rlu_round(c, r);
		smp_store_release(&S.left, r);
	}
	if (c)
		rm_rlu_thread_unregister(c);
	/* Let a writer waiting for a round that will not come go. */
	smp_store_release(&S.entered, -1);
	smp_store_release(&S.left, -1);
	complete(&S.done[0]);
	return 0;
}

static int writer_fn(void *unused)
{
	struct rm_rlu_ctx *c = thread_ctx();
	int r;

	for (r = 1; r <= rounds && !S.err; r++) {
		smp_store_release(&S.go, r);
		while (smp_load_acquire(&S.entered) != r && READ_ONCE(S.entered) != -1)
			usleep_range(50, 100);
		if (READ_ONCE(S.entered) == -1)
			break;
		/* Wait for the readers whose sections began before: the
		 * reader's has. */
		if (S.is_prw)
			prwlock_write_lock(&S.prw);
		else
			rm_rlu_synchronize(c);
		if (smp_load_acquire(&S.inside)) {
			S.violations++;
			pr_err("rm_ksbuf: round %d: the writer went on while the reader was inside its section\n", r);
		}
		if (S.is_prw)
			prwlock_write_unlock(&S.prw);
		while (smp_load_acquire(&S.left) != r && READ_ONCE(S.left) != -1)
			usleep_range(50, 100);
	}
	if (c)
		rm_rlu_thread_unregister(c);
	smp_store_release(&S.go, -1);
	complete(&S.done[1]);
	return 0;
}

static int __init sb_init(void)
{
	struct task_struct *t[2];
	int cpu_r, cpu_w, ret = 0, i;

	memset(&S, 0, sizeof(S));
	memset(&SB, 0, sizeof(SB));
	atomic_set(&SB.ipi_drains, 0);
	init_completion(&S.done[0]);
	init_completion(&S.done[1]);
	if (!strcmp(impl, "rlu-ff") || !strcmp(impl, "rlu")) {
		S.ff = !strcmp(impl, "rlu-ff");
		ret = rm_rlu_init(RM_RLU_FINE, 0, S.ff);
	} else if (!strcmp(impl, "prwlock")) {
		S.is_prw = true;
		ret = prwlock_init(&S.prw);
	} else {
		ret = -EINVAL;
	}
	if (ret)
		return ret;
	cpu_r = cpumask_first(cpu_online_mask);
	cpu_w = cpumask_next(cpu_r, cpu_online_mask);
	if (cpu_w >= nr_cpu_ids) {
		pr_info("rm_ksbuf: experiment=kernel_sbuf impl=%s rep=%u rounds=0 violations=0 ipi_drains=0 result=SKIP (one CPU online)\n",
			impl, rep);
		goto out;
	}
	SB.cpu = cpu_r;
	WRITE_ONCE(rm_rlu_ipi_hook, sb_ipi_hook);
	WRITE_ONCE(rm_locks_ipi_hook, sb_ipi_hook);
	t[0] = kthread_create(reader_fn, NULL, "rm_sbuf/r");
	t[1] = kthread_create(writer_fn, NULL, "rm_sbuf/w");
	for (i = 0; i < 2; i++) {
		if (IS_ERR(t[i])) {
			ret = PTR_ERR(t[i]);
			if (i == 1)
				kthread_stop(t[0]); /* not woken: its function never runs */
			goto unhook;
		}
	}
	kthread_bind(t[0], cpu_r);
	kthread_bind(t[1], cpu_w);
	wake_up_process(t[0]);
	wake_up_process(t[1]);
	wait_for_completion(&S.done[0]);
	wait_for_completion(&S.done[1]);
	if (S.err) {
		ret = S.err;
		goto unhook;
	}
	pr_info("rm_ksbuf: experiment=kernel_sbuf impl=%s rep=%u rounds=%u hold_ms=%u violations=%u ipi_drains=%d result=%s\n",
		impl, rep, rounds, hold_ms, S.violations, atomic_read(&SB.ipi_drains),
		S.violations ? "FAIL" : "PASS");
unhook:
	/* The writers' IPIs waited for their handlers: none runs now. */
	WRITE_ONCE(rm_rlu_ipi_hook, NULL);
	WRITE_ONCE(rm_locks_ipi_hook, NULL);
out:
	if (S.is_prw)
		prwlock_destroy(&S.prw);
	if (ret)
		pr_err("rm_ksbuf: impl=%s failed to run: %d\n", impl, ret);
	return ret;
}

static void __exit sb_exit(void)
{
}

module_init(sb_init);
module_exit(sb_exit);
