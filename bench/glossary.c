/*
 * bench/glossary.c - one line of meaning for every implementation name the
 * driver measures, and for the names the scripts add to its results
 * (realprogs.sh, kyoto-rlu.sh, knot-urcu.sh).  `readmostly-bench list`
 * prints it; scripts/report.sh copies it into REPORT.md.  A name missing
 * here is listed with "(no description yet)".
 */
#include "harness.h"

#include <string.h>

static const struct {
  const char *name, *meaning;
} glossary[] = {
    /* locks (impls.h) */
    {"ba", "Brandenburg-Anderson phase-fair queue lock (PF-Q), the BRAVO paper's BA"},
    {"bravo-ba", "BRAVO over ba (ours: readmostly/bravo_locks.h)"},
    {"pft", "phase-fair ticket lock (PF-T, Brandenburg and Anderson)"},
    {"bravo-ba-private", "bravo-ba with a private 4096-slot table per lock (interference's reference)"},
    {"bravo-pft", "BRAVO over pft (ours)"},
    {"pthread", "glibc's pthread_rwlock_t (peer)"},
    {"bravo-pthread", "BRAVO over glibc's pthread_rwlock_t (ours)"},
    {"futex", "futexrw, our compact futex reader-writer lock (the preload's base lock)"},
    {"bravo-futex", "BRAVO over futexrw (ours; what libreadmostly-preload.so uses)"},
    {"bravo2d-ba", "BRAVO-2D over ba: per-CPU rows, a writer scans the lock's column (ours, "
                   "docs/bravo-future.md)"},
    {"bravo2d-pthread", "BRAVO-2D over glibc's pthread_rwlock_t (ours, docs/bravo-future.md)"},
    {"bravodyn-ba", "BRAVO over ba on the resizable visible-readers table (ours, "
                    "docs/bravo-dynamic.md)"},
    {"percpu", "one BA lock per CPU (the \"big reader\" lock, the BRAVO paper's Per-CPU)"},
    {"cohort", "Cohort-RW, NUMA-aware C-RW-WP (Calciu et al.)"},
    {"prwlock", "passive reader-writer lock on the FCP consensus (ours: readmostly/prwlock.h); "
                "in real programs: libreadmostly-preload.so in prwlock mode"},
    {"ck-rwlock", "Concurrency Kit's ck_rwlock (peer)"},
    {"ck-pflock", "Concurrency Kit's phase-fair ck_pflock (peer)"},
    {"ck-brlock", "Concurrency Kit's big-reader ck_brlock (peer; the FCP paper's brlock)"},
    {"urcu-memb", "liburcu's memb flavour (peer; in lock experiments its read side only)"},
    /* RCU flavours (rcu_impls.h) */
    {"rcu", "FCP-RCU, ours (readmostly/rcu.h), membarrier mode"},
    {"rcu-fence", "FCP-RCU in fence mode (READMOSTLY_NO_MEMBARRIER=1: readers fence)"},
    {"rcu-qsbr", "our QSBR flavour (readmostly/rcu_qsbr.h): free read side, readers report"},
    {"urcu-mb", "liburcu's mb flavour: readers fence (peer)"},
    {"urcu-signal", "liburcu's signal flavour: writers signal readers (peer)"},
    {"urcu-qsbr", "liburcu's QSBR flavour: free read side, readers report (peer; the floor)"},
    {"urcu-bp", "liburcu's bulletproof flavour: threads register themselves (peer)"},
    /* sets and structures (sets/sets.h, exp_citrus.c, exp_dlist.c, exp_rlu_resize.c) */
    {"harris", "Harris-Michael lock-free list, leaky (peer)"},
    {"harris-hp", "Harris-Michael lock-free list with hazard pointers (peer)"},
    {"rcu-set", "list / hash table on FCP-RCU, writers under per-bucket mutexes (ours)"},
    {"urcu-set", "the same code as rcu-set on liburcu's memb flavour (peer)"},
    {"rlu", "RLU, fine-grained, fence-free section entry (ours: readmostly/rlu.h); "
            "in kyoto: Kyoto Cabinet patched to RLU"},
    {"rlu-fence", "RLU with the paper's fenced section entry (ours)"},
    {"rlu-defer", "RLU with deferred synchronize (the paper's RLU-defer, ours)"},
    {"rlu-coarse", "RLU, coarse-grained: one writer at a time (ours)"},
    {"rlu-upd10", "rlu_resize's RLU table with 10 % of operations updates (ours)"},
    {"rcu-citrus", "Citrus search tree on FCP-RCU (ours)"},
    {"rlu-citrus", "Citrus search tree on RLU with deferral (ours)"},
    {"rlu-dlist", "doubly linked list on RLU (ours: readmostly/rlu_dlist.h)"},
    {"urcu-dlist", "liburcu's cds_list_*_rcu list on the memb flavour (peer)"},
    /* names the driver writes beside the sets above */
    {"no-lock", "writer_freq's ceiling: the same threads with no lock at all"},
    {"prwlock-parallel", "prwlock waking parked readers in parallel groups (wakeup)"},
    {"prwlock-broadcast", "prwlock waking parked readers by one broadcast (wakeup)"},
    /* names the real-program scripts write */
    {"stock", "a real program as released, on glibc or liburcu (peer)"},
    {"preload", "the same binary under libreadmostly-preload.so, BRAVO mode (ours)"},
    {"preload-prwlock", "the same binary under libreadmostly-preload.so, prwlock mode (ours)"},
};
#define NGLOSSARY (sizeof glossary / sizeof glossary[0])

const char *bench_glossary(const char *name) {
  for (size_t i = 0; i < NGLOSSARY; i++)
    if (strcmp(glossary[i].name, name) == 0) return glossary[i].meaning;
  return NULL;
}

/* The glossary's names for which has(name) is false, in its order. */
void bench_glossary_others(FILE *f, bool (*has)(const char *)) {
  for (size_t i = 0; i < NGLOSSARY; i++)
    if (!has(glossary[i].name)) fprintf(f, "  %-18s %s\n", glossary[i].name, glossary[i].meaning);
}
