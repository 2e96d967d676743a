/*
 * bravo.c - the out-of-line half of BRAVO (Dice and Kogan, USENIX ATC 2019):
 * the process-wide visible-readers table, revocation, statistics and the
 * fork handler.  The fast paths and the generator are in readmostly/bravo.h;
 * the ordering table is in docs/bravo.md.
 * Model: models/bravo.pml (x86-TSO; docs/models-bravo.md).
 *
 * Invariants:
 *  1. A slot holds 0 or the address of a lock's struct rm_bravo_bias.  Only
 *     the reader that installed an address (by CAS from 0) clears it, except
 *     the fork handler in a single-threaded child (see bravo_fork_child()).
 *     With shared slots (the preload library, bravo.h "Slots that other
 *     threads' unlocks may mark") another thread may also remove a nesting
 *     level or set RM_BRAVO_SLOT_RELEASED, by CAS; the owner then clears the
 *     marked slot, by CAS or (after seeing the mark) by a store.
 *  2. A lock's address is in a slot and that reader re-checked the bias
 *     (R2) => no writer of that lock has finished revoking since: the writer
 *     is either before W1 or waiting in the scan for this slot.
 *  3. The bias goes on only by a CAS of the whole bias word from 0, by a
 *     reader holding A's read lock; it goes off only by writers (under A's
 *     write lock, or by the read-modify-write that counts a writer in).  So
 *     while a writer holds A or is counted in, the bias stays off once off.
 *  4. revoke_pending == 0 and the bias off, seen by a writer holding A =>
 *     no fast read hold exists (bravo.h, struct rm_bravo_bias).
 *  5. rm_bravo_table.slots/mask never change once set (the global table is
 *     never freed: locks may live until exit).
 */
#define _GNU_SOURCE
#include <readmostly/bravo.h>
#include <readmostly/bravo2d.h>
#include <readmostly/bravo_dyn.h>
#include <readmostly/bravo_wm.h>
#include <readmostly/thread.h>

#include "bravo_internal.h"
#include "env.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>
#if defined(__has_include)
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#define RM_HAVE_GLIBC_RSEQ 1
#endif
#endif

/* Defined once, here, with default visibility: every shared object that
 * links libreadmostly sees this one table. */
RM_API struct rm_bravo_table rm_bravo_table = {NULL, 0, 0, 9, 0, 0, 0, 0, 0, NULL, 0, 0};
/* The BRAVO-2D table (bravo2d.h), allocated on first use like the flat one. */
RM_API struct rm_bravo_table rm_bravo2d_table = {NULL, 0, 0, 9, 0, 0, 0, 0, 0, NULL, 0, 0};
RM_API __thread struct rm_bravo_clock_skip rm_bravo_tls_skip
    __attribute__((tls_model("initial-exec")));

static size_t pow2_at_least(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

static size_t default_slots(void) {
  size_t want = (size_t)rm_cpu_count() * 32u;
  /* 1 to 2^24 slots, rounded up to a power of two (src/env.h says so). */
  return rm_env_pow2("READMOSTLY_BRAVO_TABLE_SLOTS", 1, (size_t)1 << 24,
                     pow2_at_least(want < 4096 ? 4096 : want));
}

/* Map a zeroed table on its own pages: explicit huge pages when reserved,
 * else normal pages.  Returns NULL on failure. */
static uintptr_t *map_table(size_t slots, size_t *bytes, int *huge) {
  size_t len = slots * sizeof(uintptr_t);
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t huge_len = (len + (2u << 20) - 1) & ~((size_t)(2u << 20) - 1);
  void *p = MAP_FAILED;
#ifdef MAP_HUGETLB
  if (len >= (64u << 10) || rm_env_flag("READMOSTLY_BRAVO_HUGETLB")) {
    p = mmap(NULL, huge_len, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (p != MAP_FAILED) {
      *bytes = huge_len;
      *huge = 1;
      return (uintptr_t *)p;
    }
  }
#endif
  len = (len + page - 1) & ~(page - 1);
  p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  *bytes = len;
  *huge = 0;
  return (uintptr_t *)p;
}

uintptr_t *rm_bravo_map_slots(size_t slots) {
  size_t bytes;
  int huge;
  return map_table(slots, &bytes, &huge);
}

size_t rm_bravo_default_slots(void) { return default_slots(); }

/* Allocate the global table.  One thread allocates (rm_table_claim(),
 * bravo_internal.h): a thread that finds another allocating does not
 * wait (EAGAIN: a slow reader stays unbiased this time), and the fork
 * handler forgets an allocation under way in the child.
 *
 * This was once a race of whole tables: every first caller mapped one,
 * stored the mask and CASed the slots, and the losers unmapped theirs.  A
 * loser that found no table and was overtaken then wrote the mask, and
 * tried the slots, after the winner had published them, while fast readers
 * read both with plain loads: ThreadSanitizer reports that as a data race
 * (a failed CAS counts as a write for it), and a loser that had computed
 * another size (the environment changed between the two calls) would have
 * left a mask that disagrees with the table.
 *
 * Cancellation is off for the duration: a message about a bad
 * READMOSTLY_BRAVO_TABLE_SLOTS goes to stderr, and stdio may act on a
 * cancellation request, which must not happen inside a lock call. */
static uint32_t table_state;

RM_API int rm_bravo_table_init_slowpath(void) {
  if (rm_atomic_load_acquire(&rm_bravo_table.slots)) return 0;
  int cs;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
  int r = 0;
  uint32_t found = rm_table_claim(&table_state);
  if (found != RM_TABLE_NONE) {
    r = found == RM_TABLE_DONE ? 0 : EAGAIN;
  } else {
    size_t slots = default_slots(), bytes;
    int huge;
    uintptr_t *s = map_table(slots, &bytes, &huge);
    if (!s) {
      r = ENOMEM;
    } else {
      /* Relaxed: the release store of the slots publishes the mask with
       * them to every thread that loads the slots with acquire (slow
       * readers before they set a bias, writers before they scan); no one
       * reads the mask of a table whose slots are still NULL. */
      rm_atomic_store_relaxed(&rm_bravo_table.mask, (uintptr_t)(slots - 1));
      rm_atomic_store_release(&rm_bravo_table.slots, s);
    }
    rm_table_settle(&table_state, s != NULL);
  }
  pthread_setcancelstate(cs, NULL);
  return r;
}

/* ---- the BRAVO-2D table ---------------------------------------------------
 * Allocated once, by rm_bravo2d_configure() or by the first slow reader of a
 * BRAVO-2D lock.  The geometry must be whole before any reader sees the
 * slots, and one allocation must win even when a configure call races a
 * first slow read, so one thread allocates (rm_table_claim(),
 * bravo_internal.h), as for the flat table above.  A thread that finds
 * another allocating does not wait: a slow reader stays unbiased this
 * time (EAGAIN), a configure call gets EBUSY.  The fork handler forgets an
 * allocation under way in the child. */
static uint32_t t2d_state;

/* The rseq area's offset from the thread pointer, or 0 when glibc did not
 * register one (tunable glibc.pthread.rseq=0, an old kernel) or we have no
 * reader for it on this architecture. */
static intptr_t rseq_offset(void) {
#if defined(RM_HAVE_GLIBC_RSEQ) && (defined(__x86_64__) || defined(__aarch64__))
  /* __rseq_size is 0 when the registration failed or was disabled; the
   * cpu_id field (after cpu_id_start) is negative when this thread is not
   * registered. */
  if (__rseq_size < 8 || __rseq_offset == 0) return 0;
  const volatile int32_t *area =
      (const volatile int32_t *)((char *)__builtin_thread_pointer() + __rseq_offset);
  if (area[1] < 0) return 0;
  return (intptr_t)__rseq_offset;
#else
  return 0;
#endif
}

RM_API unsigned rm_bravo2d_cpu_slowpath(void) {
  int c = sched_getcpu();
  return c < 0 ? 0u : (unsigned)c;
}

static unsigned log2_pow2(size_t p) {
  unsigned s = 0;
  while (((size_t)1 << s) < p) s++;
  return s;
}

static bool is_pow2(size_t v) { return v != 0 && (v & (v - 1)) == 0; }

static const char *const cpu_sources[] = {"auto", "rseq", "getcpu", NULL};

RM_API int rm_bravo2d_attr_init(struct rm_bravo2d_attr *a) {
  if (!a) return EINVAL;
  memset(a, 0, sizeof *a);
  return 0;
}

/* ---- NUMA sectors (bravo2d.h) -----------------------------------------------
 * A layout is a list of node groups, each a set of CPUs.  The rows are
 * grouped by node: group g owns rows [g x node_rows, (g + 1) x node_rows),
 * and the k-th CPU of group g (in CPU order) takes row g x node_rows + k.
 * The map cpu_row[] holds that row for every CPU number up to a power of
 * two at least the CPUs configured; a CPU outside the layout takes
 * cpu & (rows - 1), like a table without groups.  Every row is scanned, so
 * the map decides only locality. */
#define T2D_CPU_LIMIT 65536u

struct t2d_geom {
  size_t slots;
  unsigned rows;
  intptr_t off;
  uint32_t probe2;
  uint32_t *cpu_row; /* malloc'ed, or NULL: no groups */
  uint32_t cpu_row_mask;
  uint32_t node_rows;
  unsigned nodes;                           /* groups; 1 without */
  bool real;                                /* from sysfs: place with mbind */
  unsigned node_id[RM_BRAVO2D_NODES_MAX];   /* the node of each group (real) */
};

/* The decimal number at *p (before e), advancing *p; it stops growing at
 * T2D_CPU_LIMIT, which the caller refuses. */
static unsigned long cpu_number(const char **p, const char *e) {
  unsigned long v = 0;
  while (*p < e && **p >= '0' && **p <= '9' && v < T2D_CPU_LIMIT)
    v = v * 10 + (unsigned)(*(*p)++ - '0');
  return v;
}

/* Parse a CPU list ("0-3,8,10-11") in [p, e) into grp[cpu] = g.  Counts
 * the CPUs into *n and raises *top above the highest.  EINVAL on a syntax
 * error, an empty list, a CPU of T2D_CPU_LIMIT or more, or a CPU already in
 * a group. */
static int cpulist_parse(const char *p, const char *e, int8_t *grp, int8_t g, unsigned *n,
                         unsigned *top) {
  *n = 0;
  while (p < e) {
    if (*p < '0' || *p > '9') return EINVAL;
    unsigned long a = cpu_number(&p, e), b = a;
    if (p < e && *p == '-') {
      p++;
      if (p == e || *p < '0' || *p > '9') return EINVAL;
      b = cpu_number(&p, e);
    }
    if (a > b || b >= T2D_CPU_LIMIT) return EINVAL;
    for (unsigned long c = a; c <= b; c++) {
      if (grp[c] >= 0) return EINVAL;
      grp[c] = g;
      ++*n;
    }
    if (b + 1 > *top) *top = (unsigned)b + 1;
    if (p < e) {
      if (*p != ',' || p + 1 == e) return EINVAL;
      p++;
    }
  }
  return *n ? 0 : EINVAL;
}

/* Parse a layout ("cpus:cpus:..."): grp[] filled, *ngroups, *maxper (CPUs
 * of the largest group), *top (highest CPU + 1).  EINVAL if it does not
 * parse or has more than RM_BRAVO2D_NODES_MAX groups. */
static int layout_parse(const char *s, int8_t *grp, unsigned *ngroups, unsigned *maxper,
                        unsigned *top) {
  unsigned g = 0;
  *maxper = 0;
  *top = 0;
  for (const char *p = s;; g++) {
    const char *e = strchr(p, ':');
    if (!e) e = p + strlen(p);
    unsigned n;
    if (g >= RM_BRAVO2D_NODES_MAX || cpulist_parse(p, e, grp, (int8_t)g, &n, top) != 0)
      return EINVAL;
    if (n > *maxper) *maxper = n;
    if (!*e) break;
    p = e + 1;
  }
  *ngroups = g + 1;
  return 0;
}

/* Read a small sysfs file into buf without its trailing newline; false if
 * it cannot be read. */
static bool read_small(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "re");
  if (!f) return false;
  size_t n = fread(buf, 1, len - 1, f);
  fclose(f);
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) n--;
  buf[n] = '\0';
  return true;
}

/* The machine's layout from /sys/devices/system/node: the online nodes that
 * have CPUs, as a layout string in *out (malloc'ed) with their node ids;
 * false when there is none to read or fewer than two such nodes. */
static bool sysfs_layout(char **out, unsigned *ids) {
  char online[256];
  if (!read_small("/sys/devices/system/node/online", online, sizeof online)) return false;
  int8_t *seen = (int8_t *)malloc(T2D_CPU_LIMIT);
  size_t cap = 4096, used = 0;
  char *lay = (char *)malloc(cap);
  if (!seen || !lay) {
    free(seen);
    free(lay);
    return false;
  }
  memset(seen, -1, T2D_CPU_LIMIT);
  unsigned n, top = 0, g = 0;
  /* The node numbers: a CPU list's syntax. */
  if (cpulist_parse(online, online + strlen(online), seen, 0, &n, &top) != 0) top = 0;
  for (unsigned node = 0; node < top && g < RM_BRAVO2D_NODES_MAX; node++) {
    if (seen[node] < 0) continue;
    char path[96], cpus[4096];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%u/cpulist", node);
    if (!read_small(path, cpus, sizeof cpus) || !cpus[0]) continue; /* memory only */
    size_t l = strlen(cpus);
    if (used + l + 2 > cap) break;
    if (g) lay[used++] = ':';
    memcpy(lay + used, cpus, l);
    used += l;
    lay[used] = '\0';
    ids[g++] = node;
  }
  free(seen);
  if (g < 2) {
    free(lay);
    return false;
  }
  *out = lay;
  return true;
}

/* Fill g's groups from layout string `lay` (real: the machine's).  0,
 * EINVAL (a bad layout, or a rows attribute that disagrees), ENOMEM. */
static int t2d_groups(const char *lay, bool real, unsigned want_rows, struct t2d_geom *g) {
  int8_t *grp = (int8_t *)malloc(T2D_CPU_LIMIT);
  if (!grp) return ENOMEM;
  memset(grp, -1, T2D_CPU_LIMIT);
  unsigned ng = 1, maxper = 1, top = 0;
  int e = layout_parse(lay, grp, &ng, &maxper, &top);
  size_t rpn = pow2_at_least(maxper), rows = pow2_at_least(ng) * rpn;
  if (!e && (rows > 65536u || (want_rows != 0 && want_rows != rows))) e = EINVAL;
  size_t m = pow2_at_least(top > rm_cpu_count() ? top : rm_cpu_count());
  uint32_t *map = e ? NULL : (uint32_t *)malloc(m * sizeof *map);
  if (!e && !map) e = ENOMEM;
  if (!e) {
    unsigned next[RM_BRAVO2D_NODES_MAX] = {0};
    for (size_t c = 0; c < m; c++) {
      int8_t gi = c < T2D_CPU_LIMIT ? grp[c] : (int8_t)-1;
      map[c] = gi >= 0 ? (uint32_t)((size_t)gi * rpn + next[gi]++) : (uint32_t)(c & (rows - 1));
    }
    g->cpu_row = map;
    g->cpu_row_mask = (uint32_t)(m - 1);
    g->node_rows = (uint32_t)rpn;
    g->nodes = ng;
    g->rows = (unsigned)rows;
    g->real = real;
  }
  free(grp);
  return e;
}

/* Resolve the defaults of *a (from the environment and the machine) and
 * check it into *g: 0, EINVAL, ENOTSUP or ENOMEM (g->cpu_row is then
 * NULL).  grow: a slot count too small for the rows grows (private
 * tables) instead of being refused. */
static int t2d_resolve(const struct rm_bravo2d_attr *a, bool grow, struct t2d_geom *g) {
  memset(g, 0, sizeof *g);
  g->nodes = 1;
  if (a->rows > 65536u || (a->rows != 0 && !is_pow2(a->rows))) return EINVAL;
  if (a->slots != 0 && (!is_pow2(a->slots) || a->slots > ((size_t)1 << 24))) return EINVAL;
  if (a->second_probe > RM_BRAVO2D_PROBE_OFF || a->cpu_source > RM_BRAVO2D_CPU_GETCPU)
    return EINVAL;
  /* NUMA sectors: the attribute, else the environment, else the machine. */
  const char *nodes = a->nodes;
  bool from_env = false;
  if (!nodes) {
    nodes = getenv("READMOSTLY_BRAVO2D_NODES");
    from_env = nodes != NULL && *nodes;
    if (!from_env) nodes = "auto";
  }
  int e = 0;
  if (!strcmp(nodes, "auto")) {
    char *lay = NULL;
    if (sysfs_layout(&lay, g->node_id)) {
      /* A machine whose layout we cannot use (too many CPUs a node for
       * the rows asked for) keeps rows in CPU order. */
      if (t2d_groups(lay, true, a->rows, g) == ENOMEM) e = ENOMEM;
      free(lay);
    }
  } else if (strcmp(nodes, "off") != 0) {
    e = t2d_groups(nodes, false, a->rows, g);
    if (e == EINVAL && from_env) {
      rm_env_report("READMOSTLY_BRAVO2D_NODES", nodes,
                    "is not valid: want auto, off or CPU lists separated by ':'", "auto");
      e = 0;
    }
  }
  if (e) return e;
  unsigned r = g->cpu_row ? g->rows : a->rows ? a->rows : (unsigned)pow2_at_least(rm_cpu_count());
  size_t n = a->slots;
  /* With groups: rows of at least a sector, and a group of at least a page
   * (4 KiB: 512 slots), so that no page holds rows of two nodes. */
  size_t row_min = RM_BRAVO2D_ROW_MIN;
  if (g->cpu_row && 512u / g->node_rows > row_min) row_min = 512u / g->node_rows;
  if (n == 0) {
    n = rm_env_pow2("READMOSTLY_BRAVO2D_TABLE_SLOTS", 1, (size_t)1 << 24, default_slots());
    /* A default too small for the rows grows. */
    if (n < (size_t)r * row_min) n = (size_t)r * row_min;
  } else if (grow && n < (size_t)r * RM_BRAVO2D_ROW_MIN) {
    n = (size_t)r * RM_BRAVO2D_ROW_MIN;
  }
  if (n / r < RM_BRAVO2D_ROW_MIN || n > ((size_t)1 << 24)) e = EINVAL;
  unsigned src = a->cpu_source;
  if (src == RM_BRAVO2D_CPU_AUTO)
    src = (unsigned)rm_env_choice("READMOSTLY_BRAVO2D_CPU", cpu_sources, 0);
  intptr_t o = 0;
  if (!e && src != RM_BRAVO2D_CPU_GETCPU) {
    o = rseq_offset();
    if (o == 0 && src == RM_BRAVO2D_CPU_RSEQ) e = ENOTSUP;
  }
  if (e) {
    free(g->cpu_row);
    g->cpu_row = NULL;
    return e;
  }
  /* The second probe: on unless the attribute or the environment says off
   * (docs/bravo-future.md, "The second probe"). */
  bool p2 = a->second_probe == RM_BRAVO2D_PROBE_ON ||
            (a->second_probe == RM_BRAVO2D_PROBE_DEFAULT &&
             rm_env_bool("READMOSTLY_BRAVO2D_PROBE2", true));
  g->slots = n;
  g->rows = r;
  g->off = o;
  /* The second probe: the rest of the column's 64-byte group, in the same
   * row (rows have RM_BRAVO2D_ROW_MIN slots or more, and the group divides
   * that). */
  g->probe2 = p2 ? RM_BRAVO2D_PROBE_GROUP - 1u : 0u;
  return 0;
}

/* Place each node group's pages on its node (a real layout only; the
 * pages are not touched yet).  MPOL_PREFERRED: memory elsewhere is still
 * used when the node is full.  Failures change nothing but placement. */
static void t2d_place(const struct t2d_geom *g, uintptr_t *slots, int huge) {
#if defined(SYS_mbind)
  size_t group = (g->slots / g->rows) * g->node_rows * sizeof(uintptr_t);
  size_t page = huge ? (2u << 20) : (size_t)sysconf(_SC_PAGESIZE);
  if (!g->real || g->nodes < 2 || group % page != 0) return;
  for (unsigned k = 0; k < g->nodes; k++) {
    unsigned long mask[1024 / (8 * sizeof(unsigned long))] = {0};
    unsigned id = g->node_id[k];
    if (id >= 1023) continue; /* the kernel reads maxnode - 1 bits */
    mask[id / (8 * sizeof(unsigned long))] |= 1ul << (id % (8 * sizeof(unsigned long)));
    (void)syscall(SYS_mbind, (char *)slots + (size_t)k * group, group, 1 /* MPOL_PREFERRED */,
                  mask, (unsigned long)1024, 0u);
  }
#else
  (void)g;
  (void)slots;
  (void)huge;
#endif
}

/* Store geometry g into t (relaxed: published by the caller's release
 * store of the slots). */
static void t2d_store(struct rm_bravo_table *t, const struct t2d_geom *g) {
  rm_atomic_store_relaxed(&t->mask, (uintptr_t)(g->slots - 1));
  rm_atomic_store_relaxed(&t->row_shift, (uint32_t)log2_pow2(g->slots / g->rows));
  rm_atomic_store_relaxed(&t->row_mask, (uint32_t)(g->rows - 1));
  rm_atomic_store_relaxed(&t->probe_mask, g->probe2);
  rm_atomic_store_relaxed(&t->rseq_off, g->off);
  rm_atomic_store_relaxed(&t->cpu_row_mask, g->cpu_row_mask);
  rm_atomic_store_relaxed(&t->node_rows, g->node_rows);
  rm_atomic_store_relaxed(&t->cpu_row, (const uint32_t *)g->cpu_row);
}

/* Map a table of geometry g on its own pages, place its node groups, and
 * store the geometry into t; the caller publishes the slots.  NULL on
 * failure (g's map freed). */
static uintptr_t *t2d_map(struct rm_bravo_table *t, struct t2d_geom *g) {
  size_t bytes;
  int huge;
  uintptr_t *s = map_table(g->slots, &bytes, &huge);
  if (!s) {
    free(g->cpu_row);
    g->cpu_row = NULL;
    return NULL;
  }
  t2d_place(g, s, huge);
  t2d_store(t, g);
  return s;
}

static int t2d_init(const struct rm_bravo2d_attr *a, bool configuring) {
  if (rm_atomic_load_acquire(&rm_bravo2d_table.slots)) return configuring ? EBUSY : 0;
  struct rm_bravo2d_attr dflt;
  rm_bravo2d_attr_init(&dflt);
  if (!a) a = &dflt;
  int cs;
  /* The environment checks may print (see rm_bravo_table_init_slowpath). */
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
  int r = 0;
  /* The state is taken before resolving, which may allocate the CPU map:
   * a loser allocates nothing. */
  uint32_t found = rm_table_claim(&t2d_state);
  if (found != RM_TABLE_NONE) {
    r = configuring ? EBUSY : (found == RM_TABLE_DONE ? 0 : EAGAIN);
  } else {
    struct t2d_geom g;
    r = t2d_resolve(a, false, &g);
    uintptr_t *s = r ? NULL : t2d_map(&rm_bravo2d_table, &g);
    if (!r && !s) r = ENOMEM;
    if (!r) {
      /* stats_on is not ours to write: rm_bravo_stats_enable() sets it in
       * both tables, and other threads read it (plainly) while we
       * allocate. */
      /* Release: the geometry (and the CPU map's contents) are visible to
       * every thread that loads the slots with acquire (slow readers
       * before they set a bias, writers before they scan). */
      rm_atomic_store_release(&rm_bravo2d_table.slots, s);
    }
    rm_table_settle(&t2d_state, r == 0);
  }
  pthread_setcancelstate(cs, NULL);
  return r;
}

RM_API int rm_bravo2d_configure(const struct rm_bravo2d_attr *a) {
  if (!a) return EINVAL;
  return t2d_init(a, true);
}

/* The shared table, allocated with the defaults if needed: 0 or ENOMEM. */
static int t2d_ready(void) {
  int e = t2d_init(NULL, false);
  /* EAGAIN: another thread is allocating; wait for it (it never blocks). */
  while (e == EAGAIN) {
    sched_yield();
    e = t2d_init(NULL, false);
  }
  return e;
}

RM_API int rm_bravo2d_get_attr(struct rm_bravo2d_attr *out) {
  if (!out) return EINVAL;
  int e = t2d_ready();
  if (e) return e;
  unsigned rs = rm_atomic_load_relaxed(&rm_bravo2d_table.row_shift);
  out->rows = rm_atomic_load_relaxed(&rm_bravo2d_table.row_mask) + 1u;
  out->slots = (size_t)out->rows << rs;
  out->second_probe = rm_atomic_load_relaxed(&rm_bravo2d_table.probe_mask) != 0
                          ? RM_BRAVO2D_PROBE_ON
                          : RM_BRAVO2D_PROBE_OFF;
  out->cpu_source = rm_atomic_load_relaxed(&rm_bravo2d_table.rseq_off) != 0
                        ? RM_BRAVO2D_CPU_RSEQ
                        : RM_BRAVO2D_CPU_GETCPU;
  out->nodes = NULL;
  return 0;
}

RM_API unsigned rm_bravo2d_nodes(void) {
  if (t2d_ready() != 0) return 0;
  uint32_t nr = rm_atomic_load_relaxed(&rm_bravo2d_table.node_rows);
  return nr ? (rm_atomic_load_relaxed(&rm_bravo2d_table.row_mask) + 1u) / nr : 1u;
}

RM_API long rm_bravo2d_row_of_cpu(unsigned cpu) {
  if (t2d_ready() != 0) return -1;
  const uint32_t *map = rm_atomic_load_relaxed(&rm_bravo2d_table.cpu_row);
  if (!map) return (long)(cpu & rm_bravo2d_table.row_mask);
  return (long)map[cpu & rm_bravo2d_table.cpu_row_mask];
}

RM_API int rm_bravo2d_table_create(struct rm_bravo_table *t, const struct rm_bravo2d_attr *a) {
  if (!t || t->slots) return EINVAL;
  struct rm_bravo2d_attr dflt;
  rm_bravo2d_attr_init(&dflt);
  struct t2d_geom g;
  int e = t2d_resolve(a ? a : &dflt, false, &g);
  if (e) return e;
  uintptr_t *s = t2d_map(t, &g);
  if (!s) return ENOMEM;
  t->stats_on = rm_bravo_table.stats_on;
  t->n = rm_bravo_table.n;
  /* Release: as the shared table's publication. */
  rm_atomic_store_release(&t->slots, s);
  return 0;
}

RM_API int rm_bravo2d_table_private_init(struct rm_bravo_table *t, size_t slots, unsigned rows,
                                         unsigned second_probe) {
  if (!t || slots == 0 || slots > ((size_t)1 << 24)) return EINVAL;
  struct rm_bravo2d_attr a;
  rm_bravo2d_attr_init(&a);
  a.rows = rows;
  a.second_probe = second_probe;
  a.slots = pow2_at_least(slots);
  struct t2d_geom g;
  int e = t2d_resolve(&a, true, &g);
  if (e) return e;
  e = rm_bravo_table_private_init(t, g.slots);
  if (e) {
    free(g.cpu_row);
    return e;
  }
  t2d_store(t, &g);
  return 0;
}

RM_API int rm_bravo_table_init_table(struct rm_bravo_table *t) {
  if (t == &rm_bravo_table) return rm_bravo_table_init_slowpath();
  if (t == &rm_bravo2d_table) return t2d_init(NULL, false);
  if (t == &rm_bravo_dyn_table) return rm_bravo_dyn_init();
  /* A private table is allocated by its lock's init. */
  return rm_atomic_load_acquire(&t->slots) ? 0 : ENOMEM;
}

RM_API size_t rm_bravo_table_size(void) {
  if (rm_table_wait(rm_bravo_table_init_slowpath) != 0) return 0;
  return (size_t)rm_bravo_table.mask + 1;
}

RM_API int rm_bravo_table_private_init(struct rm_bravo_table *t, size_t slots) {
  if (!t || slots == 0) return EINVAL;
  slots = pow2_at_least(slots);
  void *p = aligned_alloc(RM_CACHE_SECTOR, slots * sizeof(uintptr_t) < RM_CACHE_SECTOR
                                               ? RM_CACHE_SECTOR
                                               : slots * sizeof(uintptr_t));
  if (!p) return ENOMEM;
  memset(p, 0, slots * sizeof(uintptr_t));
  t->slots = (uintptr_t *)p;
  t->mask = slots - 1;
  t->row_shift = 0; /* flat */
  t->row_mask = 0;
  t->probe_mask = 0;
  t->dynamic = 0;
  t->rseq_off = 0;
  t->cpu_row = NULL;
  t->cpu_row_mask = 0;
  t->node_rows = 0;
  t->stats_on = rm_bravo_table.stats_on;
  t->n = rm_bravo_table.n;
  return 0;
}

RM_API void rm_bravo_table_private_destroy(struct rm_bravo_table *t) {
  if (!t) return;
  free(t->slots);
  /* A private BRAVO-2D table's CPU map (NUMA sectors) is its own. */
  free((void *)t->cpu_row);
  t->slots = NULL;
  t->cpu_row = NULL;
  t->mask = 0;
}

/* ---- configuration ------------------------------------------------------ */

RM_API int rm_bravo_set_inhibit_multiplier(unsigned n) {
  if (n > 1000000u) return EINVAL;
  rm_atomic_store_relaxed(&rm_bravo_table.n, n);
  return 0;
}

RM_API unsigned rm_bravo_inhibit_multiplier(void) {
  return rm_atomic_load_relaxed(&rm_bravo_table.n);
}

RM_API void rm_bravo_stats_enable(bool on) {
  if (on) rm_thread_self(); /* make sure the enabling thread has a record */
  rm_atomic_store_relaxed(&rm_bravo_table.stats_on, on ? 1u : 0u);
  rm_atomic_store_relaxed(&rm_bravo2d_table.stats_on, on ? 1u : 0u);
  rm_atomic_store_relaxed(&rm_bravo_dyn_table.stats_on, on ? 1u : 0u);
}

RM_API void rm_bravo_stats_get(struct rm_bravo_stats *out) {
  if (!out) return;
  out->fast_reads = rm_thread_stats_sum(RM_STAT_BRAVO_FAST_READ);
  out->slow_bias_off = rm_thread_stats_sum(RM_STAT_BRAVO_SLOW_BIAS_OFF);
  out->slow_collision = rm_thread_stats_sum(RM_STAT_BRAVO_SLOW_COLLISION);
  out->slow_raced = rm_thread_stats_sum(RM_STAT_BRAVO_SLOW_RACED);
  out->writes = rm_thread_stats_sum(RM_STAT_BRAVO_WRITE);
  out->revocations = rm_thread_stats_sum(RM_STAT_BRAVO_REVOKE);
  out->revoke_ns = rm_thread_stats_sum(RM_STAT_BRAVO_REVOKE_NS);
}

RM_API void rm_bravo_stats_reset(void) { rm_thread_stats_reset(); }

RM_API void rm_bravo_stat_slowpath(int which, uint64_t v) {
  /* The enum rm_bravo_path values and 4 (write) map one to one onto the
   * first counters of enum rm_stat. */
  rm_thread_stat_add((enum rm_stat)which, v);
}

RM_API RM_COLD void rm_bravo_bad_unlock(const void *lock, rm_token_t tok) {
  uintptr_t seen = (tok && tok != RM_TOKEN_NONE) ? *(const uintptr_t *)tok : 0;
  fprintf(stderr,
          "readmostly: BRAVO read unlock of lock %p with a bad token %#lx: %s "
          "(slot holds %#lx, expected %p)\n",
          lock, (unsigned long)tok,
          tok == 0 ? "token 0 was never returned by a read lock"
                   : "the token does not belong to this lock",
          (unsigned long)seen, lock);
  abort();
}

/* ---- revocation --------------------------------------------------------- */

/* Wait until slot s no longer holds b (W2, W3).  0; EBUSY (try: it holds
 * b); ETIMEDOUT (timed: abstime passed first). */
static RM_COLD int wait_slot_held(uintptr_t *s, struct rm_bravo_bias *b, int mode, int clk,
                                   const struct timespec *abstime) {
  if (mode == RM_BRAVO_REVOKE_TRY) return EBUSY;
  rm_backoff_t bo = RM_BACKOFF_INIT;
  unsigned polls = 0;
  /* (W3) acquire: once the slot no longer holds this lock, the reader's
   * critical section is over as far as we can observe (pairs with its
   * release store R3).  A reader that loaded the bias before W1 may
   * still CAS this lock into some slot after we passed it, but its
   * re-check R2 then follows W1 in S, sees the bias off, and it backs
   * out without entering: we need not look back.  The back-off sleeps
   * with a raw system call: not a cancellation point. */
  while (rm_bravo_slot_holds(rm_atomic_load_acquire(s), b)) {
    if (mode == RM_BRAVO_REVOKE_TIMED && (++polls & 63u) == 0 &&
        rm_timespec_expired(clk, abstime))
      return ETIMEDOUT;
    rm_backoff_wait(&bo);
  }
  return 0;
}
RM_INLINE int wait_slot(uintptr_t *s, struct rm_bravo_bias *b, int mode, int clk,
                        const struct timespec *abstime) {
  /* (W2) seq_cst load: sees any reader's slot that R2 did not beat. */
  if (RM_LIKELY(!rm_bravo_slot_holds(rm_atomic_load_seq_cst(s), b))) return 0;
  return wait_slot_held(s, b, mode, clk, abstime);
}

/* ---- the flat table's scan ---------------------------------------------------
 * A revoking writer of a flat table must look at every slot, and the table
 * is almost always nearly empty.  So the scan first looks for nonzero slots
 * a cache line or a sector at a time (SIMD: OR the slots together, test
 * for zero) and gives each nonzero slot to wait_slot(), which reads it
 * again with the ordering of W2/W3.
 *
 * Ordering of the SIMD loads (x86-64 only).  A slot that the vector load
 * sees as 0 is skipped, so that load stands for W2: it must not miss a
 * reader whose re-check R2 saw the bias on.  x86-64 orders every ordinary
 * load, vector loads included (not the non-temporal ones, which we do not
 * use), after an earlier locked instruction or MFENCE, and loads after
 * loads; W1 is a locked RMW (rm_fence_after_rmw adds no fence on x86),
 * so every vector load reads memory after W1 is visible to all CPUs, which
 * is all the Dekker argument of bravo.h needs from a seq_cst load.  Each
 * aligned 8-byte slot inside a 16- or 32-byte aligned load is read whole.
 * W3 (acquire) is what a load of 0 after the reader's release store R3
 * needs to order its section before ours: x86 loads are acquire loads in
 * hardware, and the compiler barrier after the scan (an acquire fence,
 * which is no instruction on x86) keeps the compiler from moving our later
 * accesses above it.  The C11 model has no words for mixed-size atomics,
 * so this is the one place where the argument is x86-TSO's rather than
 * C11's; ThreadSanitizer builds, and other architectures, use the plain C
 * scan (seq_cst loads, one slot at a time).
 */
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RM_BRAVO_NO_SIMD 1
#endif
#endif
#ifndef RM_BRAVO_NO_SIMD
#define RM_BRAVO_SIMD 1
#include <immintrin.h>
#endif
#endif

/* First index >= i of a nonzero slot in s[0..n), or n. */
static size_t scan_plain(const uintptr_t *s, size_t i, size_t n) {
  for (; i < n; i++)
    if (rm_atomic_load_seq_cst((uintptr_t *)&s[i]) != 0) return i; /* (W2) */
  return i;
}

#ifdef RM_BRAVO_SIMD
/* 8 slots (one 64-byte line) a step; s is 64-byte aligned (a flat table's
 * pages, or a BRAVO-2D probe group's line), so the steps from an index that
 * is a multiple of 8 are line-aligned. */
static size_t scan_sse2(const uintptr_t *s, size_t i, size_t n) {
  while (i < n && (i & 7u)) {
    if (s[i]) return i;
    i++;
  }
  const __m128i zero = _mm_setzero_si128();
  for (; i + 8 <= n; i += 8) {
    const __m128i *p = (const __m128i *)(const void *)&s[i];
    __m128i v = _mm_or_si128(_mm_or_si128(_mm_load_si128(p), _mm_load_si128(p + 1)),
                             _mm_or_si128(_mm_load_si128(p + 2), _mm_load_si128(p + 3)));
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero)) != 0xFFFF) break;
  }
  for (; i < n; i++)
    if (s[i]) break;
  /* Acquire (a compiler barrier on x86): see above. */
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return i;
}

/* 16 slots (one 128-byte sector) a step. */
__attribute__((target("avx2"))) static size_t scan_avx2(const uintptr_t *s, size_t i,
                                                        size_t n) {
  while (i < n && (i & 15u)) {
    if (s[i]) return i;
    i++;
  }
  for (; i + 16 <= n; i += 16) {
    const __m256i *p = (const __m256i *)(const void *)&s[i];
    __m256i v = _mm256_or_si256(_mm256_or_si256(_mm256_load_si256(p), _mm256_load_si256(p + 1)),
                                _mm256_or_si256(_mm256_load_si256(p + 2), _mm256_load_si256(p + 3)));
    if (!_mm256_testz_si256(v, v)) break;
  }
  for (; i < n; i++)
    if (s[i]) break;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return i;
}

#endif

/* Whether the 8 slots of a BRAVO-2D probe group (one 64-byte aligned line)
 * are all 0, read by the SSE2 scan in four loads, with its ordering;
 * false where there is no SIMD scan (the caller then reads each slot with
 * wait_slot's seq_cst load). */
static inline bool group_empty(const uintptr_t *g) {
#ifdef RM_BRAVO_SIMD
  /* One step of the SSE2 scan: the group is one aligned line. */
  _Static_assert(RM_BRAVO2D_PROBE_GROUP * sizeof(uintptr_t) == 64, "a probe group is one line");
  return scan_sse2(g, 0, RM_BRAVO2D_PROBE_GROUP) == RM_BRAVO2D_PROBE_GROUP;
#else
  (void)g;
  return false;
#endif
}

typedef size_t (*scan_fn)(const uintptr_t *, size_t, size_t);
/* The method in use (RM_BRAVO_SCAN_*); chosen at start-up. */
static int scan_method = RM_BRAVO_SCAN_PLAIN;

static bool scan_supported(int m) {
  if (m == RM_BRAVO_SCAN_PLAIN) return true;
#ifdef RM_BRAVO_SIMD
  if (m == RM_BRAVO_SCAN_SSE2) return true;
  if (m == RM_BRAVO_SCAN_AVX2) return __builtin_cpu_supports("avx2");
#endif
  return false;
}

static scan_fn scan_of(int m) {
#ifdef RM_BRAVO_SIMD
  if (m == RM_BRAVO_SCAN_SSE2) return scan_sse2;
  if (m == RM_BRAVO_SCAN_AVX2) return scan_avx2;
#endif
  (void)m;
  return scan_plain;
}

static int scan_best(void) {
  if (scan_supported(RM_BRAVO_SCAN_AVX2)) return RM_BRAVO_SCAN_AVX2;
  if (scan_supported(RM_BRAVO_SCAN_SSE2)) return RM_BRAVO_SCAN_SSE2;
  return RM_BRAVO_SCAN_PLAIN;
}

RM_API int rm_bravo_set_scan(int method) {
  if (method < RM_BRAVO_SCAN_AUTO || method > RM_BRAVO_SCAN_AVX2) return EINVAL;
  if (method == RM_BRAVO_SCAN_AUTO) method = scan_best();
  if (!scan_supported(method)) return ENOTSUP;
  rm_atomic_store_relaxed(&scan_method, method);
  return 0;
}

RM_API int rm_bravo_scan(void) { return rm_atomic_load_relaxed(&scan_method); }

RM_API size_t rm_bravo_scan_nonzero(const uintptr_t *slots, size_t from, size_t n, int method) {
  if (method == RM_BRAVO_SCAN_AUTO) method = rm_bravo_scan();
  if (!slots || !scan_supported(method)) return n;
  return scan_of(method)(slots, from, n);
}

/* Wait until no slot of slots[0..n) holds b: the flat scan. */
int rm_bravo_scan_slots(struct rm_bravo_bias *b, uintptr_t *slots, size_t n, int mode, int clk,
                        const struct timespec *abstime) {
  /* Any method finds every nonzero slot (see above); changing it while a
   * scan runs is harmless. */
  scan_fn next = scan_of(rm_atomic_load_relaxed(&scan_method));
  for (size_t i = next(slots, 0, n); i < n; i = next(slots, i + 1, n)) {
    int e = wait_slot(&slots[i], b, mode, clk, abstime);
    if (e) return e;
  }
  return 0;
}

/* Wait until no slot of t holds b.  A flat table: every slot.  A BRAVO-2D
 * table: the lock's column in every row (and, with the second probe, the
 * rest of its probe group), the only slots a reader of b ever installs b
 * in, whatever CPU it ran on (bravo2d.h). */
static int scan_table(struct rm_bravo_bias *b, struct rm_bravo_table *t, int mode, int clk,
                      const struct timespec *abstime) {
  /* The resizable family scans its current and old tables (bravo_dyn.c). */
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&t->dynamic))) return rm_bravo_dyn_scan(b, mode, clk, abstime);
  /* Acquire, pairing with the table's publication (release of slots
   * after the geometry): the mask and rows we read belong to these slots. */
  uintptr_t *slots = rm_atomic_load_acquire(&t->slots);
  if (!slots) return 0;
  uint32_t rs = rm_atomic_load_relaxed(&t->row_shift);
  if (rs != 0) {
    uintptr_t rmask = (uintptr_t)rm_atomic_load_relaxed(&t->row_mask);
    uint32_t col = rm_bravo2d_column(b, rs);
    uint32_t m = rm_atomic_load_relaxed(&t->probe_mask);
    /* NUMA sectors: the column in our own node's rows first (local
     * memory), then group by group.  Any order reads every row once after
     * W1, which is all the Dekker argument asks of W2. */
    uint32_t nr = rm_atomic_load_relaxed(&t->node_rows);
    uintptr_t first = nr ? (uintptr_t)(rm_bravo2d_row(t) & ~(nr - 1u)) : 0;
    /* With the second probe, each row's group (one cache line) is first
     * read whole in vector loads (group_empty), and only a group with a
     * nonzero slot is read slot by slot: 8 loads one by one let a reader's
     * stores to the same line take it back between them (the phase took
     * 57 ns instead of 11 over BA in the revocation experiment). */
    for (uintptr_t i = 0; i <= rmask; i++) {
      uintptr_t *row = slots + (((first + i) & rmask) << rs);
      if (m == 0) {
        int e = wait_slot(row + col, b, mode, clk, abstime);
        if (e) return e;
        continue;
      }
      uintptr_t *g = row + (col & ~m);
      if (group_empty(g)) continue;
      for (uint32_t j = 0; j <= m; j++) {
        int e = wait_slot(&g[j], b, mode, clk, abstime);
        if (e) return e;
      }
    }
    return 0;
  }
  return rm_bravo_scan_slots(b, slots, rm_atomic_load_relaxed(&t->mask) + 1, mode, clk, abstime);
}

RM_API int rm_bravo_wait_unheld(struct rm_bravo_bias *b, struct rm_bravo_table *t, int mode,
                                int clk, const struct timespec *abstime) {
  if (mode == RM_BRAVO_REVOKE_TRY) return EINVAL;
  return scan_table(b, t, mode, clk, abstime);
}

/* Call f(slot, arg) for every slot of t a reader of b can publish in (every
 * slot of a flat table; b's column, and the rest of its probe group, in
 * every row of a 2D one) until it returns true; true if one did.  The geometry is read
 * after an acquire load of the slots, as in scan_table. */
static bool each_candidate(const struct rm_bravo_bias *b, const struct rm_bravo_table *t,
                           bool (*f)(uintptr_t *slot, const void *arg), const void *arg) {
  uintptr_t *slots = rm_atomic_load_acquire(&((struct rm_bravo_table *)t)->slots);
  if (!slots) return false;
  uint32_t rs = rm_atomic_load_relaxed(&t->row_shift);
  if (rs == 0) {
    uintptr_t mask = rm_atomic_load_relaxed(&t->mask);
    for (uintptr_t i = 0; i <= mask; i++)
      if (f(&slots[i], arg)) return true;
    return false;
  }
  uintptr_t rmask = (uintptr_t)rm_atomic_load_relaxed(&t->row_mask);
  uint32_t col = rm_bravo2d_column(b, rs), m = rm_atomic_load_relaxed(&t->probe_mask);
  for (uintptr_t r = 0; r <= rmask; r++) {
    uintptr_t *row = slots + (r << rs);
    for (uint32_t j = 0; j <= m; j++)
      if (f(row + (col ^ j), arg)) return true;
  }
  return false;
}

static bool slot_holds_arg(uintptr_t *s, const void *b) {
  return rm_bravo_slot_holds(rm_atomic_load_relaxed(s), b);
}

RM_API bool rm_bravo_table_holds(const struct rm_bravo_bias *b, const struct rm_bravo_table *t) {
  return each_candidate(b, t, slot_holds_arg, b);
}

RM_API bool rm_bravo_read_hold_seen(const struct rm_bravo_bias *b, const struct rm_bravo_table *t) {
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&t->dynamic))) return rm_bravo_dyn_hold_seen(b);
  /* Acquire, as in each_candidate: the geometry belongs to these slots. */
  uintptr_t *slots = rm_atomic_load_acquire(&((struct rm_bravo_table *)t)->slots);
  if (!slots) return false;
  if (rm_atomic_load_relaxed(&t->row_shift) != 0) return each_candidate(b, t, slot_holds_arg, b);
  uintptr_t i = rm_bravo_hash(b, rm_thread_identity()) & rm_atomic_load_relaxed(&t->mask);
  return rm_bravo_slot_holds(rm_atomic_load_relaxed(&slots[i]), b);
}

/* RM_BRAVO_REVOKE_FLOOR_NS in rm_ticks() units (0 until first needed;
 * every thread computes the same value, so a race only repeats it). */
static uint64_t revoke_floor_ticks(void) {
  static uint64_t ticks;
  uint64_t t = rm_atomic_load_relaxed(&ticks);
  if (RM_UNLIKELY(t == 0)) {
    t = rm_ns_to_ticks(RM_BRAVO_REVOKE_FLOOR_NS);
    if (t == 0) t = 1;
    rm_atomic_store_relaxed(&ticks, t);
  }
  return t;
}

/* Primum non nocere: after a revocation that took [start, now), inhibit
 * re-biasing for N times its cost (Listing 1), times 2^backoff.  The
 * back-off adapts to costs the scan time does not show (readers parked
 * behind the writer): a complete revocation that finds the bias was on for
 * less than the base window (at least N x RM_BRAVO_REVOKE_FLOOR_NS) since
 * the previous window ended doubles the next window; one that finds it
 * lived longer halves it.  A give-up leaves
 * the exponent alone (the previous window may still be running).  The
 * arithmetic saturates: a revocation that lasted very long (or a huge N)
 * gives the longest window, never a wrapped-around short one.  Called by
 * writers holding A's write lock (A orders inhibit_until for slow readers,
 * who read it under A's read lock); relaxed atomics all the same, since
 * ThreadSanitizer does not see every acquisition of A (glibc's
 * pthread_rwlock_clockwrlock). */
static void set_inhibit_window(struct rm_bravo_bias *b, uint64_t start, uint64_t now,
                               bool complete) {
  uint64_t n_mult = rm_atomic_load_relaxed(&rm_bravo_table.n);
  uint64_t base;
  if (__builtin_mul_overflow(now - start, n_mult, &base)) base = UINT64_MAX;
  uint64_t prev_until = rm_atomic_load_relaxed(&b->inhibit_until);
  unsigned shift = rm_atomic_load_relaxed(&b->backoff);
  if (complete && prev_until != 0 && now >= prev_until) {
    /* The back-off judges the bias's life against N x (this revocation's
     * time), but never against less than N x RM_BRAVO_REVOKE_FLOOR_NS: a
     * scan of a few slots (BRAVO-2D's column, a small table) is far
     * shorter than what every revocation costs besides it (bravo.h). */
    uint64_t judge;
    if (__builtin_mul_overflow(revoke_floor_ticks(), n_mult, &judge)) judge = UINT64_MAX;
    if (judge < base) judge = base;
    if (now - prev_until < judge) {
      if (shift < RM_BRAVO_BACKOFF_MAX) shift++;
    } else if (shift > 0) {
      shift--;
    }
    rm_atomic_store_relaxed(&b->backoff, (uint16_t)shift);
  }
  uint64_t window = base > (UINT64_MAX >> shift) ? UINT64_MAX : base << shift;
  /* UINT64_MAX - 1 at most: "about forever", still a finite window. */
  uint64_t until = window >= UINT64_MAX - 1 - now ? UINT64_MAX - 1 : now + window;
  rm_atomic_store_relaxed(&b->inhibit_until, until);
}

static void count_revocation(struct rm_bravo_table *t, uint64_t ticks, bool complete) {
  if (RM_LIKELY(!t->stats_on && !rm_bravo_table.stats_on)) return;
  rm_thread_stat_add(RM_STAT_BRAVO_REVOKE_NS, rm_ticks_to_ns(ticks));
  if (complete) {
    rm_thread_stat_add(RM_STAT_BRAVO_REVOKE, 1);
    rm_thread_stat_add(RM_STAT_BRAVO_WRITE, 1);
  }
}

RM_API int rm_bravo_revoke_slowpath(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                    int mode, int clk, const struct timespec *abstime) {
  uint64_t start = rm_ticks();

  /* (W1) Clear the bias, keeping the count of writers that hold it off
   * (they do not hold A; a store would lose a concurrent count).  A
   * seq_cst RMW followed by a full fence (rm_fence_after_rmw: the locked
   * RMW itself on x86): the fence orders the clear before the scan's
   * loads, pairing with the reader's CAS (R1) -> re-check (R2).  Either
   * the reader's re-check sees the bias off and it backs out, or our scan
   * sees its slot and we wait for it. */
  __atomic_fetch_and(&b->rbias, ~RM_BRAVO_BIAS, __ATOMIC_SEQ_CST);
  rm_fence_after_rmw();
  RM_DEBUG_YIELD();
  int result = scan_table(b, t, mode, clk, abstime);
  uint64_t now = rm_ticks();
  set_inhibit_window(b, start, now, result == 0);
  /* Giving up (try or timeout) leaves fast readers in their slots: the bias
   * stays off, so no new reader enters by the fast path, and revoke_pending
   * makes the next writer scan even if no reader turns the bias back on.
   * A complete scan under A clears it (invariant 3: no reader could turn
   * the bias on while we hold A, so every fast hold began before W1 and
   * our scan saw it leave).  Release: a writer that reads 0 here (acquire,
   * rm_bravo_write_clear) also sees the readers' sections as done. */
  rm_atomic_store_release(&b->revoke_pending, result ? (uint16_t)1 : (uint16_t)0);
  count_revocation(t, now - start, result == 0);
  return result;
}

RM_API int rm_bravo_revoke_unlocked(struct rm_bravo_bias *b, struct rm_bravo_table *t, int mode,
                                    int clk, const struct timespec *abstime,
                                    struct rm_bravo_revocation *rv) {
  /* (W1) Count ourselves in, clearing the bias in the same RMW: no slow
   * reader can turn it on again until we count out, so once our scan
   * finds the table clear, it stays clear.  Then the full fence, as in
   * rm_bravo_revoke_slowpath. */
  rm_bravo_count_in(b);
  rm_fence_after_rmw();
  RM_DEBUG_PAUSE("bravo.revoke.counted");
  rv->start = rm_ticks();
  int e = scan_table(b, t, mode, clk, abstime);
  rv->end = rm_ticks();
  /* Holding no lock: the resizable table's policy may act now. */
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&t->dynamic))) rm_bravo_dyn_policy(rv->end);
  if (e) {
    /* Gave up: fast holds remain, revoke_pending stays set.  The inhibit
     * window is left as it was (we do not hold A); the pending flag alone
     * keeps writers correct. */
    count_revocation(t, rv->end - rv->start, false);
    rm_bravo_count_out(b);
  }
  return e;
}

RM_API void rm_bravo_revoke_finish(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                   const struct rm_bravo_revocation *rv) {
  set_inhibit_window(b, rv->start, rv->end, true);
  /* Our scan completed while we were counted in (the bias stayed off), so
   * no fast hold exists (invariant 4).  Release, as in the slowpath. */
  rm_atomic_store_release(&b->revoke_pending, (uint16_t)0);
  count_revocation(t, rv->end - rv->start, true);
  rm_bravo_count_out(b);
}

RM_API void rm_bravo_revoke_abandon(struct rm_bravo_bias *b) {
  /* The scan completed (see rm_bravo_revoke_finish), A could not be taken. */
  rm_atomic_store_release(&b->revoke_pending, (uint16_t)0);
  rm_bravo_count_out(b);
}

/* ---- the writer mutex of readmostly/bravo_wm.h ---------------------------- */

RM_API int rm_bravo_wmutex_lock_slowpath(struct rm_bravo_wmutex *m, int clk,
                                         const struct timespec *abstime) {
  uintptr_t self = rm_thread_identity();
  /* Our own identity in owner can only be our own store: a relock. */
  if (rm_atomic_load_relaxed(&m->owner) == self) return EDEADLK;
  /* Writers hold the mutex through a revocation and a critical section:
   * spin a little, then park. */
  for (unsigned i = 0; i < 128u; i++) {
    uint32_t z = 0;
    /* Acquire, as the fast path (pairs with the release in unlock). */
    if (rm_atomic_load_relaxed(&m->word) == 0u &&
        __atomic_compare_exchange_n(&m->word, &z, 1u, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      goto got;
    rm_cpu_relax();
  }
  /* 2: held and waited for, so the holder's unlock wakes someone.  A
   * waiter that takes the mutex this way leaves 2 behind, which costs at
   * most one needless wake-up.  Acquire: as above. */
  while (__atomic_exchange_n(&m->word, 2u, __ATOMIC_ACQUIRE) != 0u) {
    int e = rm_futex_wait(&m->word, 2u, abstime ? clk : CLOCK_MONOTONIC, abstime, false);
    if (e == ETIMEDOUT || e == EINVAL) return e;
  }
got:
  rm_atomic_store_relaxed(&m->owner, self);
  return 0;
}

RM_API void rm_bravo_wmutex_wake(struct rm_bravo_wmutex *m) { rm_futex_wake(&m->word, 1, false); }

RM_API RM_COLD void rm_bravo_wm_bad_unlock_abort(const void *lock) {
  fprintf(stderr,
          "readmostly: BRAVO write unlock of lock %p by a thread that does not hold its "
          "write lock\n",
          lock);
  abort();
}

/* ---- slots released by another thread (bravo.h, point 2) ------------------ */

struct foreign_arg {
  struct rm_bravo_bias *b;
  const uintptr_t *skip;
};

/* Release one hold of a->b in slot s if it holds one. */
static bool release_in_slot(uintptr_t *s, const void *arg) {
  const struct foreign_arg *a = (const struct foreign_arg *)arg;
  if (s == a->skip) return false;
  uintptr_t v = rm_atomic_load_relaxed(s);
  while (rm_bravo_slot_holds(v, a->b)) {
    uintptr_t nv = (v & RM_BRAVO_SLOT_NEST_MASK) ? v - RM_BRAVO_SLOT_NEST_ONE
                                                 : ((uintptr_t)a->b | RM_BRAVO_SLOT_RELEASED);
    RM_DEBUG_PAUSE("bravo.release_foreign.found");
    /* Release, as the owner's unlock (R3): whatever the holder did is
     * ordered before a writer that sees the slot change. */
    if (__atomic_compare_exchange_n(s, &v, nv, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
      return true;
  }
  return false;
}

/* The slots looked at are those a reader of b can publish in: the whole
 * flat table, or b's columns of a 2D table (bravo.h, after point 6). */
RM_API bool rm_bravo_release_foreign(struct rm_bravo_bias *b, struct rm_bravo_table *t,
                                     const uintptr_t *skip) {
  struct foreign_arg a = {b, skip};
  return each_candidate(b, t, release_in_slot, &a);
}

/* ---- fork ----------------------------------------------------------------
 * In the child only the forking thread runs.  Its own fast read holds sit in
 * the slot its hash names, and it keeps them: it will unlock them with the
 * tokens it holds.  Every other slot holding lock L belongs to a thread that
 * does not exist in the child:
 *  - if L's bias is on it is a read hold of that thread, and stays held, as
 *    with glibc;
 *  - if L's bias is off it was left either by a reader that lost the race
 *    with a revoking writer and was about to clear it (it held nothing), by
 *    a fast reader that a revoking writer was still waiting for (that
 *    writer, not being the forking thread, never finishes in the child, so
 *    clearing changes nothing for it), or by a fast reader of a lock whose
 *    try or timed revocation gave up (revoke_pending).  We clear them all:
 *    a lock nobody held must not block, and in the last case the reader
 *    that held L does not exist in the child, so freeing its hold is safe;
 *    the one difference from glibc is that a writer in the child gets the
 *    lock instead of waiting forever (documented in docs/bravo.md);
 *  - a slot marked RM_BRAVO_SLOT_RELEASED holds nothing (preload library).
 * L may have been freed (a program that ignored the EBUSY of destroying a
 * lock with such a hold): its bias word is read with probe_read(), which
 * never faults, and an unreadable lock's slot is cleared.
 */

/* Copy n bytes at p to out without faulting when p is not mapped.  false
 * when it is not readable. */
static bool probe_read(const void *p, void *out, size_t n) {
  struct iovec here = {out, n}, there = {(void *)(uintptr_t)p, n};
  ssize_t r = process_vm_readv(getpid(), &here, 1, &there, 1, 0);
  if (r == (ssize_t)n) return true;
  if (r >= 0 || errno == EFAULT) return false;
  /* The call is refused (seccomp, no CONFIG_CROSS_MEMORY_ATTACH): ask
   * whether the page is mapped at all (ENOMEM: it is not). */
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  unsigned char vec;
  if (mincore((void *)((uintptr_t)p & ~(page - 1)), page, &vec) != 0) return false;
  memcpy(out, p, n);
  return true;
}

/* The handler's work over one flat table (slots, mask), the forking
 * thread's own slots told by own().  A CLOSED slot of the resizable family
 * (bravo_dyn.c) stays closed. */
static void fork_clear(uintptr_t *slots, uintptr_t mask, bool (*own)(const uintptr_t *, void *),
                       void *arg) {
  if (!slots) return;
  int saved = errno;
  for (uintptr_t i = 0; i <= mask; i++) {
    uintptr_t v = slots[i], lk = RM_BRAVO_SLOT_LOCK(v);
    if (!v || v == RM_BRAVO_SLOT_CLOSED) continue;
    /* Our own slot stays, whatever it holds. */
    if (own(&slots[i], arg)) continue;
    uint32_t word = 0;
    if (!(v & RM_BRAVO_SLOT_RELEASED) &&
        probe_read((const void *)(lk + offsetof(struct rm_bravo_bias, rbias)), &word,
                   sizeof word) &&
        (word & RM_BRAVO_BIAS))
      continue;
    slots[i] = 0;
  }
  errno = saved;
}

/* A table indexed by the hash of (lock, thread): a slot is ours when our
 * hash of its lock names it. */
struct fork_hashed {
  uintptr_t self, *slots, mask;
};
static bool own_by_hash(const uintptr_t *s, void *arg) {
  const struct fork_hashed *h = arg;
  uintptr_t lk = RM_BRAVO_SLOT_LOCK(*s);
  return &h->slots[rm_bravo_hash((const void *)lk, h->self) & h->mask] == s;
}
static void fork_clear_hashed(uintptr_t *slots, uintptr_t mask) {
  struct fork_hashed h = {rm_thread_identity(), slots, mask};
  fork_clear(slots, mask, own_by_hash, &h);
}

static void bravo_fork_child(void) {
  /* A table being allocated by another thread at the fork is forgotten
   * (that thread does not exist here). */
  rm_table_fork_reset(&table_state);
  fork_clear_hashed(rm_bravo_table.slots, rm_bravo_table.mask);
  /* The resizable family (bravo_dyn.c): both live tables. */
  rm_bravo_dyn_fork_reset();
  struct rm_bravo_dtab *c = rm_bravo_dyn.cur, *o = rm_bravo_dyn.old;
  if (c) fork_clear_hashed(c->slots, c->mask);
  if (o && o != c) fork_clear_hashed(o->slots, o->mask);
}

RM_API void rm_bravo_table_fork_child(struct rm_bravo_table *t,
                                      bool (*own)(const uintptr_t *slot, void *arg), void *arg) {
  if (t && own) fork_clear(t->slots, t->mask, own, arg);
}

/* BRAVO-2D (bravo2d.h, FORK): the forking thread's slots cannot be told
 * from others by their index (the row was a CPU's), so a slot of a lock
 * whose bias is off is marked RM_BRAVO_SLOT_RELEASED rather than cleared:
 * no writer waits for a marked slot, and the forking thread's own read
 * unlock accepts the mark.  A table being allocated by another thread at
 * the fork is forgotten (that thread does not exist here). */
static void bravo2d_fork_child(void) {
  rm_table_fork_reset(&t2d_state);
  uintptr_t *slots = rm_bravo2d_table.slots;
  if (!slots) return;
  int saved = errno;
  for (uintptr_t i = 0; i <= rm_bravo2d_table.mask; i++) {
    uintptr_t v = slots[i], lk = RM_BRAVO_SLOT_LOCK(v);
    if (!v || (v & RM_BRAVO_SLOT_RELEASED)) continue;
    uint32_t word = 0;
    if (probe_read((const void *)(lk + offsetof(struct rm_bravo_bias, rbias)), &word,
                   sizeof word) &&
        (word & RM_BRAVO_BIAS))
      continue;
    slots[i] = v | RM_BRAVO_SLOT_RELEASED;
  }
  errno = saved;
}

static void bravo_fork_child_all(void) {
  bravo_fork_child();
  bravo2d_fork_child();
}

__attribute__((constructor(103))) static void bravo_ctor(void) {
  static const struct rm_thread_hooks hooks = {NULL, bravo_fork_child_all};
  rm_thread_add_hooks(&hooks);
  /* The range of rm_bravo_set_inhibit_multiplier(); messages: src/env.h. */
  rm_bravo_table.n = (uint32_t)rm_env_int("READMOSTLY_BRAVO_N", 0, 1000000, 9);
  /* The flat table's scan: the widest the CPU has, or
   * READMOSTLY_BRAVO_SCAN=plain|sse2|avx2 (one it lacks falls back to the
   * widest it has, with a message). */
  static const char *const scans[] = {"auto", "plain", "sse2", "avx2", NULL};
  int m = rm_env_choice("READMOSTLY_BRAVO_SCAN", scans, RM_BRAVO_SCAN_AUTO);
  if (rm_bravo_set_scan(m) != 0) {
    rm_env_report("READMOSTLY_BRAVO_SCAN", scans[m], "not supported by this CPU or build",
                  "the widest supported");
    rm_bravo_set_scan(RM_BRAVO_SCAN_AUTO);
  }
  if (rm_env_flag("READMOSTLY_STATS")) rm_bravo_stats_enable(true);
}
