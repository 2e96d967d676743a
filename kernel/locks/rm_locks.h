/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rm_locks.h - BRAVO over rw_semaphore and the passive reader-writer lock
 * (prwlock) with IPIs, for kernel code (the rm_locks module).
 *
 * BRAVO (Dice and Kogan, USENIX ATC 2019): struct bravo_rwsem wraps a
 * rw_semaphore.  While the lock is read-biased, a reader publishes the
 * lock's address in a slot of a global visible-readers table (4096 slots,
 * the slot picked by hashing the lock and the task) with one cmpxchg and
 * does not touch the rw_semaphore at all.  A writer takes the rw_semaphore
 * for writing, clears the bias and revokes: it waits until no slot of the
 * table holds the lock.  Bias comes back, on a slow-path read, only after
 * an inhibit window of N = 9 times the revocation's duration.
 *
 *   int t = bravo_down_read(&b);   ...   bravo_up_read(&b, t);
 *   bravo_down_write(&b);          ...   bravo_up_write(&b);
 *
 * The token from bravo_down_read() (a slot, or -1 for the rw_semaphore)
 * goes back to bravo_up_read().  Readers may sleep.
 *
 * prwlock (Liu, Zhang, Chen et al., USENIX ATC 2014, Figures 3 and 4):
 * readers mark their CPU passive and check the writer flag, with no atomic
 * instruction and no fence.  A writer takes the writer mutex, sets the
 * flag, advances the lock's version, and waits for every other online CPU
 * to report that version; it IPIs the CPUs that have not reported, whose
 * handler reports for a CPU not inside a passive section.  A reader that
 * is switched out inside its section turns active (a shared counter,
 * through a preempt notifier registered for the section) and reports; the
 * writer waits for the active count to drop to 0 after the consensus.
 *
 *   struct prwlock_reader r;  prwlock_reader_init(&r);   // per reader task
 *   prwlock_read_lock(&l, &r);  ...  prwlock_read_unlock(&l, &r);
 *   prwlock_write_lock(&l);     ...  prwlock_write_unlock(&l);
 *
 * A reader record holds one prwlock at a time, in process context.
 */
#ifndef RM_LOCKS_KERNEL_H
#define RM_LOCKS_KERNEL_H

#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/mutex.h>
#include <linux/preempt.h>
#include <linux/rwsem.h>
#include <linux/types.h>

#ifndef CONFIG_PREEMPT_NOTIFIERS
#error "prwlock's readers turn active on a context switch through a preempt notifier"
#endif

struct bravo_rwsem {
	struct rw_semaphore rwsem;
	int rbias;              /* read-biased: readers may take the fast path */
	u64 inhibit_until;      /* ns (local clock): no bias before then */
};

void bravo_rwsem_init(struct bravo_rwsem *b);
int bravo_down_read(struct bravo_rwsem *b);
void bravo_up_read(struct bravo_rwsem *b, int token);
void bravo_down_write(struct bravo_rwsem *b);
void bravo_up_write(struct bravo_rwsem *b);

struct prwlock_cpu {
	int passive;            /* a reader on this CPU is in a passive section */
	unsigned long version;  /* the newest lock version this CPU reported */
} ____cacheline_aligned_in_smp;

struct prwlock {
	struct mutex wmutex;    /* writers */
	int writer;             /* a writer holds or is acquiring the lock */
	atomic_long_t version;
	atomic_t active;        /* readers switched out inside their sections */
	struct prwlock_cpu __percpu *st;
	cpumask_var_t wait;     /* writer's scratch (under wmutex) */
};

struct prwlock_reader {
	struct preempt_notifier pn;
	struct prwlock *lock;
	bool passive;
};

int prwlock_init(struct prwlock *l);

/* Test only (rm_sbuf): called first by prwlock's IPI handler. */
extern void (*rm_locks_ipi_hook)(void);

/* Counts since the last call (per-CPU counters, summed), printed as one
 * line "rm_locks: <tag> bravo fast_reads=..."; locktorture's lock types
 * call it at the end of each run. */
void rm_locks_stats_print(const char *tag);

void prwlock_destroy(struct prwlock *l);
void prwlock_reader_init(struct prwlock_reader *r);
void prwlock_read_lock(struct prwlock *l, struct prwlock_reader *r);
void prwlock_read_unlock(struct prwlock *l, struct prwlock_reader *r);
void prwlock_write_lock(struct prwlock *l);
void prwlock_write_unlock(struct prwlock *l);

#endif
