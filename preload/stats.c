/*
 * stats.c - READMOSTLY_STATS=1: per-lock counters and the summary at exit.
 *
 * The counters live in a table of 4096 entries, open addressing on the
 * lock's address (locks beyond it are summed as "other"); it exists only
 * when the variable is set, and the modes count only while
 * rm_bravo_table.stats_on is (PL_STATS_ON).  At exit, on stderr, one line
 * for the process and one per lock for the ten busiest.  The names printed
 * are those of struct rm_bravo_stats (bravo.h): fast_reads, slow_bias_off,
 * slow_collision, slow_raced, writes, revocations, revoke_ns; slow_reads is
 * the sum of the three slow_* fields.  prwlock mode adds the FCP domain's
 * own counters under their field names (struct rm_fcp_domain, fcp.h).
 */
#include "preload_internal.h"

RM_STATIC_ASSERT((int)PS_FAST_READS == (int)RM_BRAVO_FAST &&
                     (int)PS_SLOW_BIAS_OFF == (int)RM_BRAVO_SLOW_BIAS_OFF &&
                     (int)PS_SLOW_COLLISION == (int)RM_BRAVO_SLOW_COLLISION &&
                     (int)PS_SLOW_RACED == (int)RM_BRAVO_SLOW_RACED,
                 "BRAVO mode counts a slow read under its rm_bravo_path");

struct pl_stat {
  uintptr_t lock;
  uint64_t v[PS_N];
};
#define PL_STAT_SLOTS 4096u
static struct pl_stat *pl_stats;     /* open addressing on the lock address */
static struct pl_stat pl_stat_other; /* locks beyond the table */

static struct pl_stat *pl_stat_of(const void *l) {
  struct pl_stat *t = pl_stats;
  if (!t) return &pl_stat_other;
  uintptr_t key = (uintptr_t)l;
  uint32_t h = rm_bravo_hash(l, 0);
  for (uint32_t k = 0; k < 64; k++) {
    struct pl_stat *e = &t[(h + k) & (PL_STAT_SLOTS - 1)];
    uintptr_t cur = rm_atomic_load_acquire(&e->lock);
    if (cur == key) return e;
    if (cur == 0 && rm_atomic_cas_acq_rel(&e->lock, &cur, key)) return e;
    if (cur == key) return e;
  }
  return &pl_stat_other;
}
RM_NOINLINE void pl_count(const void *l, int which, uint64_t v) {
  rm_atomic_fetch_add_relaxed(&pl_stat_of(l)->v[which], v);
}

static int pl_stat_cmp(const void *a, const void *b) {
  const struct pl_stat *x = (const struct pl_stat *)a, *y = (const struct pl_stat *)b;
  uint64_t sx = 0, sy = 0;
  for (int i = 0; i <= PS_WRITES; i++) {
    sx += x->v[i];
    sy += y->v[i];
  }
  return sx < sy ? 1 : sx > sy ? -1 : 0;
}

static unsigned long long pl_u(uint64_t v) { return (unsigned long long)v; }

static void pl_stats_print(void) {
  if (!pl_stats) return;
  if (pl_mode() == PL_PASSTHROUGH) { /* glibc's locks: nothing was counted */
    fprintf(stderr, "readmostly-preload: impl=passthrough pid=%d: glibc's locks, no statistics\n",
            (int)getpid());
    return;
  }
  struct pl_stat *copy = (struct pl_stat *)malloc(sizeof(struct pl_stat) * (PL_STAT_SLOTS + 1));
  if (!copy) return;
  size_t n = 0;
  uint64_t tot[PS_N] = {0};
  for (uint32_t i = 0; i < PL_STAT_SLOTS; i++)
    if (rm_atomic_load_acquire(&pl_stats[i].lock)) {
      for (int k = 0; k < PS_N; k++) copy[n].v[k] = rm_atomic_load_relaxed(&pl_stats[i].v[k]);
      copy[n].lock = pl_stats[i].lock;
      n++;
    }
  size_t nlocks = n;
  if (pl_stat_other.v[PS_FAST_READS] + pl_stat_other.v[PS_SLOW_BIAS_OFF] +
      pl_stat_other.v[PS_WRITES]) {
    copy[n] = pl_stat_other;
    n++;
  }
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < PS_N; k++) tot[k] += copy[i].v[k];
  qsort(copy, n, sizeof *copy, pl_stat_cmp);
  if (pl_mode() == PL_PRWLOCK) {
    /* fast_reads: passive holds; slow_reads: futexrw holds, because the
     * thread's record held another lock (slow_collision) or a writer was
     * there (slow_raced). */
    rm_fcp_domain_t *d = rm_fcp_default_domain();
    fprintf(stderr,
            "readmostly-preload: impl=prwlock pid=%d locks=%zu fast_reads=%llu slow_reads=%llu "
            "writes=%llu consensus_fast=%llu consensus_membarrier=%llu consensus_fenced=%llu "
            "writer_parks=%llu mode=%s\n",
            (int)getpid(), nlocks, pl_u(tot[PS_FAST_READS]),
            pl_u(tot[PS_SLOW_COLLISION] + tot[PS_SLOW_RACED]), pl_u(tot[PS_WRITES]),
            pl_u(rm_atomic_load_relaxed(&d->consensus_fast)),
            pl_u(rm_atomic_load_relaxed(&d->consensus_membarrier)),
            pl_u(rm_atomic_load_relaxed(&d->consensus_fenced)),
            pl_u(rm_atomic_load_relaxed(&d->writer_parks)),
            rm_fcp_membarrier_mode() ? "membarrier"
            : (rm_atomic_load_relaxed(&rm_fcp_mode) & RM_FCP_SWITCHED) ? "fence(switched)"
                                                                       : "fence");
    for (size_t i = 0; i < n && i < 10; i++) {
      const struct pl_stat *e = &copy[i];
      fprintf(stderr,
              "readmostly-preload: lock=%#lx fast_reads=%llu slow_collision=%llu "
              "slow_raced=%llu writes=%llu\n",
              (unsigned long)e->lock, pl_u(e->v[PS_FAST_READS]), pl_u(e->v[PS_SLOW_COLLISION]),
              pl_u(e->v[PS_SLOW_RACED]), pl_u(e->v[PS_WRITES]));
    }
    free(copy);
    return;
  }
  fprintf(stderr,
          "readmostly-preload: impl=%s pid=%d locks=%zu fast_reads=%llu slow_reads=%llu "
          "writes=%llu revocations=%llu revoke_ns=%llu\n",
          pl_mode() == PL_BRAVO2D ? "bravo2d" : "bravo", (int)getpid(), nlocks,
          pl_u(tot[PS_FAST_READS]),
          pl_u(tot[PS_SLOW_BIAS_OFF] + tot[PS_SLOW_COLLISION] + tot[PS_SLOW_RACED]),
          pl_u(tot[PS_WRITES]), pl_u(tot[PS_REVOCATIONS]),
          pl_u(rm_ticks_to_ns(tot[PS_REVOKE_TICKS])));
  for (size_t i = 0; i < n && i < 10; i++) {
    const struct pl_stat *e = &copy[i];
    char name[32];
    if (e->lock) snprintf(name, sizeof name, "%#lx", (unsigned long)e->lock);
    else snprintf(name, sizeof name, "other");
    fprintf(stderr,
            "readmostly-preload: lock=%s fast_reads=%llu slow_bias_off=%llu slow_collision=%llu "
            "slow_raced=%llu writes=%llu revocations=%llu revoke_ns=%llu\n",
            name, pl_u(e->v[PS_FAST_READS]), pl_u(e->v[PS_SLOW_BIAS_OFF]),
            pl_u(e->v[PS_SLOW_COLLISION]), pl_u(e->v[PS_SLOW_RACED]), pl_u(e->v[PS_WRITES]),
            pl_u(e->v[PS_REVOCATIONS]), pl_u(rm_ticks_to_ns(e->v[PS_REVOKE_TICKS])));
  }
  free(copy);
}

void pl_stats_init(void) {
  if (rm_env_flag("READMOSTLY_STATS")) {
    pl_stats = (struct pl_stat *)calloc(PL_STAT_SLOTS, sizeof *pl_stats);
    rm_bravo_stats_enable(pl_stats != NULL);
    if (pl_stats) atexit(pl_stats_print);
  } else {
    /* The library's own READMOSTLY_STATS handling may have turned it on. */
    rm_bravo_stats_enable(false);
  }
}
