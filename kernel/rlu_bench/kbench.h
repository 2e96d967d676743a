/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kbench.h - what the benchmark (kbench.c) and the torture (torture.c) of
 * the rm_rlu_bench module share: the parameters and the thread runner.
 */
#ifndef RM_KBENCH_H
#define RM_KBENCH_H

#include <linux/atomic.h>
#include <linux/kthread.h>
#include <linux/prandom.h>
#include <linux/types.h>

struct kb_params {
	char *test;            /* list, hash, dlist, torture */
	char *impl;            /* rcu, rlu, rlu-defer, rlu-coarse */
	unsigned int threads;  /* worker threads (torture: readers = fake writers) */
	unsigned int update;   /* updates per 10000 operations (200 = 2%) */
	unsigned int range;    /* keys are drawn from [0, range) */
	unsigned int buckets;  /* hash table */
	unsigned int duration; /* milliseconds */
	unsigned int rep;      /* the repetition number, printed back */
};
extern struct kb_params kb;

/*
 * Run fn(arg, i) on n kernel threads, started together, for kb.duration
 * milliseconds: *stop turns true at the end, and each fn returns when it
 * sees it.  Returns the elapsed milliseconds, or a negative errno when a
 * thread could not be created.
 */
long kb_run_threads(unsigned int n, int (*fn)(void *arg, unsigned int i), void *arg,
		    bool *stop);

/*
 * A set of keys behind operations: kbench.c's list and hash table (RCU and
 * RLU), dlist.c's doubly linked lists.
 */
struct kb_set;
struct kb_set_ops {
	const char *name;
	int (*create)(struct kb_set *s);
	void (*destroy)(struct kb_set *s);
	void *(*thread_init)(struct kb_set *s);
	void (*thread_fini)(struct kb_set *s, void *th);
	bool (*contains)(struct kb_set *s, void *th, long key);
	int (*add)(struct kb_set *s, void *th, long key);    /* 1, 0, -ENOMEM */
	int (*remove)(struct kb_set *s, void *th, long key); /* 1, 0, -ENOMEM */
	long (*check)(struct kb_set *s);                     /* size, or -1: unsorted */
};

struct kb_set {
	const struct kb_set_ops *ops;
	unsigned int nb;
	void *buckets;
	void *extra;            /* dlist.c: its structure */
	bool coarse;
	atomic_long_t errors;   /* inconsistencies readers saw (dlist.c) */
};

extern const struct kb_set_ops kb_dlist_rcu_ops, kb_dlist_rlu_ops;

/* The section 4.7 torture for RLU; returns 0 (PASS) or -EIO (FAIL). */
int kb_torture(void);

#endif
