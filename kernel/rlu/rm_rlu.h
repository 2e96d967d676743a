/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rm_rlu.h - read-log-update for Linux kernel code (the rm_rlu module).
 *
 * SYNOPSIS
 *   #include "rm_rlu.h"
 *   rm_rlu_init(RM_RLU_FINE, 0, false);             // before any context
 *   struct rm_rlu_ctx *self = rm_rlu_thread_register();   // per kthread
 *   struct node *n = rm_rlu_alloc(sizeof *n, GFP_KERNEL);
 *
 *   restart:
 *     rm_rlu_reader_lock(self);
 *     p = RM_RLU_DEREF(self, head);
 *     if (RM_RLU_TRY_LOCK(self, &p)) { rm_rlu_abort(self); goto restart; }
 *     p->val = 7;                                   // writes go to the copy
 *     rm_rlu_assign_ptr(&p->next, other);
 *     rm_rlu_reader_unlock(self);                   // commit
 *
 *   rm_rlu_thread_unregister(self);
 *
 * DESCRIPTION
 *   The algorithm of the user-space library (include/readmostly/rlu.h and
 *   docs/rlu.md): Algorithm 1 of Matveev, Shavit, Felber and Marlier (SOSP
 *   2015), with the write clock stepped under a small spinlock (docs/rlu.md,
 *   "The write-clock race"), two write-logs per context swapped at each
 *   commit, fine-grained (per-object locks, abort and retry) and
 *   coarse-grained (one writer mutex) flavors, and deferral of synchronize
 *   over up to max_defer sections (fine-grained).  docs/kernel-rlu.md lists
 *   where this port differs from user space and why.
 *
 *   Contexts are passed explicitly: a kernel thread has no thread-local
 *   storage to find one in.  A context belongs to the task that registered
 *   it.  There are at most RM_RLU_MAX_CTX registered contexts.
 *
 *   Sections may sleep and may be preempted: entry disables nothing.  A
 *   writer waiting for a preempted reader spins a little, then yields, then
 *   sleeps.  try_lock allocates log chunks with GFP_KERNEL: call it where
 *   sleeping is allowed.
 *
 *   Entry is the paper's fenced one (smp_mb()) by default.  With fence_free
 *   (rm_rlu_init) it has no fence: a writer whose synchronize finds a
 *   context that has not shown a section begun after its clock step sends
 *   an IPI to every other online CPU (the kernel's counterpart of the
 *   user-space library's membarrier) before it trusts run counters.
 *
 * THE OBJECT HEADER, just before each object rm_rlu_alloc() returns
 *   copy   NULL              unlocked
 *          RM_RLU_COPY_MARK  this object is itself a copy in a write-log
 *          anything else     locked: points to the copy in the owner's log
 *   size   the size given to rm_rlu_alloc (copies have the same)
 */
#ifndef RM_RLU_KERNEL_H
#define RM_RLU_KERNEL_H

#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/gfp.h>
#include <linux/types.h>
#include <asm/barrier.h>

#ifndef CONFIG_64BIT
#error "rm_rlu needs 64-bit loads and stores of the run counters and clocks to be single accesses"
#endif

#define RM_RLU_MAX_CTX 256

enum rm_rlu_flavor {
	RM_RLU_FINE = 0,   /* per-object locks, abort and retry */
	RM_RLU_COARSE = 1, /* one writer mutex, sections never abort */
};

struct rm_rlu_obj_hdr {
	void *copy;
	size_t size;
};
#define RM_RLU_COPY_MARK ((void *)1UL)
#define RM_RLU_HDR(obj) ((struct rm_rlu_obj_hdr *)(obj) - 1)

/* A log entry: the fields, then the copy's header, then the copy. */
struct rm_rlu_ctx;
struct rm_rlu_entry {
	struct rm_rlu_ctx *owner; /* read by other contexts (READ_ONCE) */
	void *actual;             /* NULL: dead (an aborted section's) */
	size_t size;
	u64 section;              /* owner's run counter when locked */
	struct rm_rlu_obj_hdr hdr; /* hdr.copy == RM_RLU_COPY_MARK */
};

/*
 * The part of a context that other contexts read.  run_cnt is odd inside a
 * section; local_clock is the clock the section read; write_clock is
 * RM_RLU_NO_CLOCK except while a commit runs; unlocks is bumped after each
 * batch of unlocks; sync_request is set by other writers (deferral).
 */
struct rm_rlu_ctx_hot {
	u64 run_cnt;
	u64 local_clock;
	u64 write_clock;
	u64 unlocks;
	u32 sync_request;
	u8 is_writer;   /* owner only: this section locked or freed something */
	u8 deferred;    /* owner only: deferred sections wait in the log */
	u8 in_use;      /* registered */
};
#define RM_RLU_NO_CLOCK U64_MAX

/* The global clock: only the clock step writes it (under a spinlock). */
extern atomic64_t rm_rlu_clock_g;
/* Section entry without a fence (rm_rlu_init's fence_free). */
extern int rm_rlu_fence_free_g;

/* Test only (rm_sbuf): called first by the fence-free writers' IPI handler. */
extern void (*rm_rlu_ipi_hook)(void);

/* Only while no context is registered: -EBUSY otherwise. */
int rm_rlu_init(enum rm_rlu_flavor flavor, unsigned int max_defer, bool fence_free);
/* Called instead of kfree() on an object whose free a commit carried out;
 * NULL restores kfree (only while no context is registered). */
int rm_rlu_set_free_fn(void (*fn)(void *obj));
struct rm_rlu_ctx *rm_rlu_thread_register(void);
void rm_rlu_thread_unregister(struct rm_rlu_ctx *self);

void *rm_rlu_alloc(size_t size, gfp_t gfp);
/* Inside a section: freed after the commit's synchronize.  Outside (self
 * NULL or no section): at once.  0 or -ENOMEM (abort the section). */
int rm_rlu_free(struct rm_rlu_ctx *self, void *obj);

void rm_rlu_checkpoint_slowpath(struct rm_rlu_ctx *self);
void rm_rlu_reader_unlock_slowpath(struct rm_rlu_ctx *self);
void *rm_rlu_deref_slowpath(struct rm_rlu_ctx *self, void *obj, void *copy);

/*
 * Enter a section.  Ordering letters (R1, R2, R4) refer to the table at
 * the top of rm_rlu.c.
 */
static inline void rm_rlu_reader_lock(struct rm_rlu_ctx *self)
{
	struct rm_rlu_ctx_hot *h = (struct rm_rlu_ctx_hot *)self;
	u64 l;

	if (unlikely(h->deferred))
		rm_rlu_checkpoint_slowpath(self);
	WRITE_ONCE(h->run_cnt, h->run_cnt + 1);
	/* R1: the odd run counter is visible before the clock load: pairs
	 * with the writer's smp_mb() after its clock step (W3).  Either the
	 * writer's scan sees us inside, or our load sees its step.  Fence-free
	 * entry: only a compiler barrier; the writer's IPI (W5) runs on this
	 * CPU either after the store (then it is visible) or before the load
	 * (then the load sees the step).  The flag never changes while
	 * contexts are registered. */
	if (likely(!READ_ONCE(rm_rlu_fence_free_g)))
		smp_mb();
	else
		barrier();
	/* R2: acquire, pairs with the clock step's release (W2): a section
	 * that reads the new clock sees the writer's write clock and copies. */
	l = atomic64_read_acquire(&rm_rlu_clock_g);
	/* R4: release, pairs with synchronize's acquire load (S2). */
	smp_store_release(&h->local_clock, l);
}

/* Leave a section; commit when it wrote. */
static inline void rm_rlu_reader_unlock(struct rm_rlu_ctx *self)
{
	struct rm_rlu_ctx_hot *h = (struct rm_rlu_ctx_hot *)self;

	/* R3: release: the section's reads happen before the write-back of a
	 * writer that sees the even counter (S1). */
	smp_store_release(&h->run_cnt, h->run_cnt + 1);
	if (unlikely(h->is_writer))
		rm_rlu_reader_unlock_slowpath(self);
}

static inline bool rm_rlu_in_section(const struct rm_rlu_ctx *self)
{
	return ((const struct rm_rlu_ctx_hot *)self)->run_cnt & 1;
}

/* The version of obj this section must read. */
static inline void *rm_rlu_dereference(struct rm_rlu_ctx *self, void *obj)
{
	void *copy;

	if (!obj)
		return NULL;
	/* L1: acquire, pairs with the locker's cmpxchg (L2): a copy pointer
	 * we see comes with the log entry written before it. */
	copy = smp_load_acquire(&RM_RLU_HDR(obj)->copy);
	if (likely(!copy || copy == RM_RLU_COPY_MARK))
		return obj;
	return rm_rlu_deref_slowpath(self, obj, copy);
}
#define RM_RLU_DEREF(self, p) ((typeof(p))rm_rlu_dereference((self), (void *)(p)))

/* 0, -EBUSY (fine-grained: abort and retry), -ENOMEM (abort), -EPERM
 * (outside a section). */
int rm_rlu_try_lock(struct rm_rlu_ctx *self, void **pobj);
#define RM_RLU_TRY_LOCK(self, pp) rm_rlu_try_lock((self), (void **)(pp))
void rm_rlu_writer_lock(struct rm_rlu_ctx *self);
void rm_rlu_abort(struct rm_rlu_ctx *self);
/* Commit the deferred sections now (outside a section). */
void rm_rlu_sync(struct rm_rlu_ctx *self);
/* Wait for every section that began before the call (outside a section):
 * the counterpart of synchronize_rcu(), for the torture's fake writers. */
void rm_rlu_synchronize(struct rm_rlu_ctx *self);

/* The object's actual address (obj may be a copy). */
static inline void *rm_rlu_actual(void *obj)
{
	if (obj && READ_ONCE(RM_RLU_HDR(obj)->copy) == RM_RLU_COPY_MARK)
		return container_of(RM_RLU_HDR(obj), struct rm_rlu_entry, hdr)->actual;
	return obj;
}
static inline bool rm_rlu_same(void *a, void *b)
{
	return rm_rlu_actual(a) == rm_rlu_actual(b);
}
/* Store a pointer to obj's actual address into *slot (usually a field of
 * a copy; release for a slot read by sections directly). */
static inline void rm_rlu_assign_ptr(void *slot, void *obj)
{
	smp_store_release((void **)slot, rm_rlu_actual(obj));
}
#define RM_RLU_ASSIGN_PTR(slot, obj) rm_rlu_assign_ptr((void *)(slot), (void *)(obj))

struct rm_rlu_stats {
	u64 commits, aborts, conflicts, steals, syncs, sync_waits, frees, deferred;
	u64 ipi_rounds;  /* fence-free: synchronizes that sent IPIs */
};
void rm_rlu_stats_get(struct rm_rlu_stats *out);
u64 rm_rlu_clock(void);

#endif /* RM_RLU_KERNEL_H */
