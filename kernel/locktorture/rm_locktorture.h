/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rm_locktorture.h - readmostly's lock types for the kernel's locktorture:
 * bravo_rwsem (BRAVO over rw_semaphore) and prwlock (passive reader-writer
 * lock with IPIs), from the rm_locks module (kernel/locks/).
 *
 * scripts/kernel.sh copies locktorture.c out of linux-source-6.1 and
 * applies patches/locktorture-readmostly.patch, which includes this file
 * after locktorture's own rwsem_lock type (whose delay functions, and
 * struct lock_torture_cxt cxt, it uses) and adds the two types to the
 * torture_ops table.  Both types use rwsem_lock's read and write delays,
 * so that the three are compared on the same critical sections.
 *
 * locktorture passes each reader and writer its thread index; a reader's
 * BRAVO token and prwlock record are kept per index.
 */
#include "rm_locks.h"

#define RM_LT_MAX_READERS 1024

/* ---- bravo_rwsem ------------------------------------------------------------- */
static struct bravo_rwsem rm_lt_bravo;
static int rm_lt_bravo_token[RM_LT_MAX_READERS];

static void rm_lt_bravo_init(void)
{
	rm_locks_stats_print("before bravo_rwsem");
	bravo_rwsem_init(&rm_lt_bravo);
}

static void rm_lt_bravo_exit(void)
{
	rm_locks_stats_print("bravo_rwsem");
}

static int rm_lt_bravo_write_lock(int tid __maybe_unused)
{
	bravo_down_write(&rm_lt_bravo);
	return 0;
}

static void rm_lt_bravo_write_unlock(int tid __maybe_unused)
{
	bravo_up_write(&rm_lt_bravo);
}

static int rm_lt_bravo_read_lock(int tid)
{
	BUG_ON(tid < 0 || tid >= RM_LT_MAX_READERS);
	rm_lt_bravo_token[tid] = bravo_down_read(&rm_lt_bravo);
	return 0;
}

static void rm_lt_bravo_read_unlock(int tid)
{
	bravo_up_read(&rm_lt_bravo, rm_lt_bravo_token[tid]);
}

static struct lock_torture_ops bravo_rwsem_lock_ops = {
	.init		= rm_lt_bravo_init,
	.exit		= rm_lt_bravo_exit,
	.writelock	= rm_lt_bravo_write_lock,
	.write_delay	= torture_rwsem_write_delay,
	.task_boost	= torture_boost_dummy,
	.writeunlock	= rm_lt_bravo_write_unlock,
	.readlock	= rm_lt_bravo_read_lock,
	.read_delay	= torture_rwsem_read_delay,
	.readunlock	= rm_lt_bravo_read_unlock,
	.name		= "bravo_rwsem"
};

/* ---- prwlock ------------------------------------------------------------------- */
static struct prwlock rm_lt_prw;
static struct prwlock_reader rm_lt_prw_reader[RM_LT_MAX_READERS];
static bool rm_lt_prw_ready;

static void rm_lt_prw_init(void)
{
	int i;

	rm_locks_stats_print("before prwlock");
	rm_lt_prw_ready = prwlock_init(&rm_lt_prw) == 0;
	BUG_ON(!rm_lt_prw_ready);
	for (i = 0; i < RM_LT_MAX_READERS; i++)
		prwlock_reader_init(&rm_lt_prw_reader[i]);
}

static void rm_lt_prw_exit(void)
{
	rm_locks_stats_print("prwlock");
	if (rm_lt_prw_ready)
		prwlock_destroy(&rm_lt_prw);
	rm_lt_prw_ready = false;
}

static int rm_lt_prw_write_lock(int tid __maybe_unused)
{
	prwlock_write_lock(&rm_lt_prw);
	return 0;
}

static void rm_lt_prw_write_unlock(int tid __maybe_unused)
{
	prwlock_write_unlock(&rm_lt_prw);
}

static int rm_lt_prw_read_lock(int tid)
{
	BUG_ON(tid < 0 || tid >= RM_LT_MAX_READERS);
	prwlock_read_lock(&rm_lt_prw, &rm_lt_prw_reader[tid]);
	return 0;
}

static void rm_lt_prw_read_unlock(int tid)
{
	prwlock_read_unlock(&rm_lt_prw, &rm_lt_prw_reader[tid]);
}

static struct lock_torture_ops prwlock_lock_ops = {
	.init		= rm_lt_prw_init,
	.exit		= rm_lt_prw_exit,
	.writelock	= rm_lt_prw_write_lock,
	.write_delay	= torture_rwsem_write_delay,
	.task_boost	= torture_boost_dummy,
	.writeunlock	= rm_lt_prw_write_unlock,
	.readlock	= rm_lt_prw_read_lock,
	.read_delay	= torture_rwsem_read_delay,
	.readunlock	= rm_lt_prw_read_unlock,
	.name		= "prwlock"
};
