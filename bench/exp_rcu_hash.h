/*
 * bench/exp_rcu_hash.h - entry point of readmostly-bench's rcu_hash
 * experiment (bench/exp_rcu_hash.c).
 */
#ifndef READMOSTLY_BENCH_EXP_RCU_HASH_H
#define READMOSTLY_BENCH_EXP_RCU_HASH_H

/* argv[1] is "rcu_hash"; options follow as for every experiment.  Prints
 * the machine lines and CSV rows; returns the process exit status. */
int rmb_rcu_hash_main(int argc, char **argv);

#endif
