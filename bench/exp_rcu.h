/*
 * bench/exp_rcu.h - what the RCU family (exp_rcu.c) lends other families:
 * its implementation set, and writer_freq's point for an RCU flavour (one
 * writer replacing a shared object and waiting one grace period per update,
 * T readers reading it).
 */
#ifndef READMOSTLY_BENCH_EXP_RCU_H
#define READMOSTLY_BENCH_EXP_RCU_H

#include "harness.h"

extern const struct bench_impl_set bench_rcu_flavors;

struct rcu_wf_result {
  double secs;
  uint64_t reads, writes;
};
/* One writer_freq run of flavour idx (bench_rcu_flavors order): nreaders
 * readers, delay_ns between the writer's updates. */
struct rcu_wf_result rcu_writer_freq_point(size_t idx, int nreaders, uint64_t delay_ns);

#endif
