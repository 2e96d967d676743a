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

/* The section 4.7 torture for RLU; returns 0 (PASS) or -EIO (FAIL). */
int kb_torture(void);

#endif
