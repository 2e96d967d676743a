/*
 * readmostly-bench - the benchmark driver: the harness (see harness.h).
 *
 *   readmostly-bench EXPERIMENT [--impl a,b,...] [--threads 1,2,...]
 *                    [--duration S] [--reps N] [--param key=value ...]
 *                    [--csv FILE] [--iterations N] [--pin 0|1]
 *   readmostly-bench list
 *
 * Prints the machine description ('#' lines), then one CSV row per
 * measurement: experiment,impl,threads,param,rep,metric,value,unit.
 * Compare implementations within one run, as ratios of medians.  The
 * experiments are listed by `readmostly-bench list` and in
 * docs/benchmarks.md.
 */
#include "harness.h"

#include <readmostly/bravo.h>
#include <readmostly/fcp.h>

#include <errno.h>
#include <gnu/libc-version.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The experiment families; a new family is one more line. */
static const struct bench_family *const families[] = {
    &bench_rwlock_family,
    &bench_fcp_family,
    &bench_rcu_family,
    &bench_citrus_family,
    &bench_rlu_family,
    &bench_dlist_family,
    &bench_rcu_hash_family,
    &bench_rlu_resize_family,
};
#define NFAMILIES (sizeof families / sizeof families[0])

struct opts O;
int g_go, g_stop, g_ready;
static int g_started;

/* Every measured thread starts here: it counts itself as started, so that
 * bench_run_ex can wait for all of them before the clock starts (on a
 * loaded machine a thread may otherwise first run after the whole run). */
struct start {
  bench_thread_fn fn;
  void *arg;
};
static void *thread_start(void *a) {
  struct start s = *(struct start *)a;
  __atomic_add_fetch(&g_started, 1, __ATOMIC_RELEASE);
  return s.fn(s.arg);
}

void bench_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("readmostly-bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}

void bench_fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("readmostly-bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

/* ---- parameters --------------------------------------------------------- */
static const struct bench_param *param_decl(const struct bench_exp *e, const char *key) {
  for (const struct bench_param *p = e->params; p && p->key; p++)
    if (strcmp(p->key, key) == 0) return p;
  return NULL;
}

const char *bench_param(const char *key) {
  for (int i = 0; i < O.nparam; i++)
    if (strcmp(O.pkey[i], key) == 0) return O.pval[i];
  const struct bench_param *p = param_decl(O.e, key);
  if (!p) bench_fatal("experiment %s reads undeclared parameter %s", O.exp, key);
  return p->def;
}

/* A comma-separated list of integers in [min, max]: NULL when s is one,
 * else what is wrong with it (in why[]).  Empty elements ("1,,2", "1,"),
 * signs, spaces and trailing characters are errors. */
static const char *parse_uints(const char *s, uint64_t min, uint64_t max, uint64_t *out, int maxn,
                               int *n, char *why, size_t whylen) {
  *n = 0;
  const char *p = s;
  for (;;) {
    const char *q = p;
    while (*q >= '0' && *q <= '9') q++;
    size_t len = strcspn(p, ",");
    if (len == 0) {
      snprintf(why, whylen, "an empty element");
      return why;
    }
    if ((size_t)(q - p) != len || len > 19) {
      snprintf(why, whylen, "'%.*s' is not an integer", (int)len, p);
      return why;
    }
    uint64_t v = strtoull(p, NULL, 10);
    if (v < min || v > max) {
      snprintf(why, whylen, "%llu is out of range", (unsigned long long)v);
      return why;
    }
    if (*n == maxn) {
      if (maxn == 1) snprintf(why, whylen, "a list where one value is wanted");
      else snprintf(why, whylen, "more than %d values", maxn);
      return why;
    }
    out[(*n)++] = v;
    if (p[len] == 0) return NULL;
    p += len + 1;
  }
}

int bench_param_uints(const char *key, uint64_t *out, int max) {
  const struct bench_param *d = param_decl(O.e, key);
  char why[128];
  int n;
  if (!d || parse_uints(bench_param(key), d->min, d->max, out, max, &n, why, sizeof why))
    bench_fatal("parameter %s of %s was not checked", key, O.exp);
  return n;
}

uint64_t bench_param_uint(const char *key) {
  uint64_t v;
  bench_param_uints(key, &v, 1);
  return v;
}

bool bench_parse_prob(const char *s, double *p) {
  char *end;
  double a = strtod(s, &end), b = 1;
  if (end == s) return false;
  if (*end == '/') {
    const char *q = end + 1;
    b = strtod(q, &end);
    if (end == q || b <= 0) return false;
  }
  if (*end) return false;
  *p = a / b;
  return *p >= 0 && *p <= 1;
}

bool bench_parse_percent(const char *s, double *p) {
  char *end;
  *p = strtod(s, &end);
  return end != s && *end == 0 && *p >= 0 && *p <= 100;
}

/* Split a comma-separated list into elements of at most 31 characters;
 * returns the count, or -1 (an empty or too long element, or too many). */
static int split_list(const char *val, char (*text)[32], int max) {
  int n = 0;
  for (const char *p = val;; n++) {
    size_t len = strcspn(p, ",");
    if (len == 0 || len > 31 || n == max) return -1;
    snprintf(text[n], 32, "%.*s", (int)len, p);
    if (!p[len]) return n + 1;
    p += len + 1;
  }
}

int bench_param_percents(const char *key, double *out, char (*text)[32], int max) {
  int n = split_list(bench_param(key), text, max);
  for (int i = 0; i < n; i++)
    if (!bench_parse_percent(text[i], &out[i])) n = -1;
  if (n < 0) bench_fatal("parameter %s of %s was not checked", key, O.exp);
  return n;
}

/* The declared parameters of e with their defaults, for messages. */
static void param_names(const struct bench_exp *e, char *buf, size_t len) {
  size_t off = 0;
  buf[0] = 0;
  for (const struct bench_param *p = e->params; p && p->key && off < len; p++)
    off += (size_t)snprintf(buf + off, len - off, "%s%s=%s (%s)", off ? ", " : "", p->key, p->def,
                            p->help);
}

/* Check one --param against the experiment's declarations; exit 2 naming
 * the key or value and what is valid. */
static void param_check(const char *key, const char *val) {
  const struct bench_exp *e = O.e;
  const struct bench_param *d = param_decl(e, key);
  if (!d) {
    char names[256];
    param_names(e, names, sizeof names);
    if (!names[0]) bench_usage_error("unknown parameter '%s': %s takes no --param", key, O.exp);
    bench_usage_error("unknown parameter '%s' for %s; its parameters: %s", key, O.exp, names);
  }
  for (int i = 0; i < O.nparam; i++)
    if (strcmp(O.pkey[i], key) == 0) bench_usage_error("--param %s given twice", key);
  char why[128];
  uint64_t tmp[MAXLIST];
  int n;
  switch (d->kind) {
  case BENCH_P_UINTS:
  case BENCH_P_UINT:
    if (parse_uints(val, d->min, d->max, tmp, d->kind == BENCH_P_UINT ? 1 : MAXLIST, &n, why,
                    sizeof why))
      bench_usage_error("bad %s=%s (%s): want %s in %llu..%llu (%s; default %s)", key, val, why,
                        d->kind == BENCH_P_UINT ? "one integer" : "comma-separated integers",
                        (unsigned long long)d->min, (unsigned long long)d->max, d->help, d->def);
    break;
  case BENCH_P_PROBS: {
    char buf[512];
    if (snprintf(buf, sizeof buf, "%s", val) >= (int)sizeof buf)
      bench_usage_error("bad %s=%s: too long", key, val);
    const char *p = buf;
    for (n = 0;; n++) {
      size_t len = strcspn(p, ",");
      char one[64];
      double pr;
      snprintf(one, sizeof one, "%.*s", (int)(len < 63 ? len : 63), p);
      if (len == 0 || len > 62 || !bench_parse_prob(one, &pr) || n == MAXLIST)
        bench_usage_error("bad %s=%s ('%s'): want comma-separated probabilities in [0, 1] such as "
                          "1/2 or 0.001, at most %d (%s; default %s)",
                          key, val, one, MAXLIST, d->help, d->def);
      if (!p[len]) break;
      p += len + 1;
    }
    break;
  }
  case BENCH_P_PERCENTS: {
    char text[MAXLIST][32];
    double pc;
    n = split_list(val, text, MAXLIST);
    for (int i = 0; i < n; i++)
      if (!bench_parse_percent(text[i], &pc)) n = -1;
    if (n < 0)
      bench_usage_error("bad %s=%s: want comma-separated percentages in [0, 100] such as 0.1,1, "
                        "at most %d (%s; default %s)",
                        key, val, MAXLIST, d->help, d->def);
    break;
  }
  case BENCH_P_CHOICE: {
    size_t vl = strlen(val);
    bool ok = false;
    for (const char *c = d->choices; *c && !ok;) {
      size_t len = strcspn(c, "|");
      ok = len == vl && strncmp(c, val, len) == 0;
      c += len + (c[len] == '|');
    }
    if (!ok)
      bench_usage_error("bad %s=%s: want one of %s (%s; default %s)", key, val, d->choices, d->help,
                        d->def);
    break;
  }
  }
}

/* ---- output ---------------------------------------------------------------- */
void emit(const char *impl, int threads, const char *par, int rep, const char *metric, double value,
          const char *unit) {
  char row[512];
  snprintf(row, sizeof row, "%s,%s,%d,%s,%d,%s,%.6g,%s\n", O.exp, impl, threads, par, rep, metric,
           value, unit);
  fputs(row, stdout);
  fflush(stdout);
  if (O.csv) {
    fputs(row, O.csv);
    fflush(O.csv);
  }
}

/* With READMOSTLY_STATS=1 in the environment (which turns BRAVO's counters
 * on at start-up), experiments that call this after a run also report how
 * often BRAVO locks revoked and what a revocation cost, to explain a
 * throughput figure.  Counters are reset before each run (stats_begin). */
static int stats_wanted(void) {
  const char *s = getenv("READMOSTLY_STATS");
  return s && *s && strcmp(s, "0") != 0;
}
static uint64_t fcp_fast0, fcp_mb0, fcp_parks0;
void stats_begin(void) {
  if (!stats_wanted()) return;
  rm_bravo_stats_reset();
  rm_fcp_domain_t *d = rm_fcp_default_domain();
  fcp_fast0 = __atomic_load_n(&d->consensus_fast, __ATOMIC_RELAXED);
  fcp_mb0 = __atomic_load_n(&d->consensus_membarrier, __ATOMIC_RELAXED);
  fcp_parks0 = __atomic_load_n(&d->writer_parks, __ATOMIC_RELAXED);
}
void stats_emit(const char *impl, int threads, const char *par, int rep, double secs) {
  if (stats_wanted() && strcmp(impl, "prwlock") == 0) {
    /* How prwlock's writers reached consensus: from reports alone, or with
     * a membarrier; and how often one parked waiting for a reader. */
    rm_fcp_domain_t *d = rm_fcp_default_domain();
    emit(impl, threads, par, rep, "consensus_fast_per_sec",
         (double)(__atomic_load_n(&d->consensus_fast, __ATOMIC_RELAXED) - fcp_fast0) / secs, "1/s");
    emit(impl, threads, par, rep, "consensus_membarrier_per_sec",
         (double)(__atomic_load_n(&d->consensus_membarrier, __ATOMIC_RELAXED) - fcp_mb0) / secs, "1/s");
    emit(impl, threads, par, rep, "writer_parks_per_sec",
         (double)(__atomic_load_n(&d->writer_parks, __ATOMIC_RELAXED) - fcp_parks0) / secs, "1/s");
    return;
  }
  if (!stats_wanted() || strncmp(impl, "bravo", 5) != 0) return;
  struct rm_bravo_stats s;
  rm_bravo_stats_get(&s);
  uint64_t slow = s.slow_bias_off + s.slow_collision + s.slow_raced;
  emit(impl, threads, par, rep, "revocations_per_sec", (double)s.revocations / secs, "1/s");
  emit(impl, threads, par, rep, "ns_per_revocation",
       s.revocations ? (double)s.revoke_ns / (double)s.revocations : 0.0, "ns");
  emit(impl, threads, par, rep, "fast_read_share",
       s.fast_reads + slow ? (double)s.fast_reads / (double)(s.fast_reads + slow) : 0.0, "1");
}

static void describe_machine(FILE *f) {
  char model[256] = "unknown";
  FILE *ci = fopen("/proc/cpuinfo", "r");
  if (ci) {
    char line[512];
    while (fgets(line, sizeof line, ci))
      if (strncmp(line, "model name", 10) == 0) {
        char *p = strchr(line, ':');
        if (p) {
          p += 2;
          p[strcspn(p, "\n")] = 0;
          snprintf(model, sizeof model, "%s", p);
        }
        break;
      }
    fclose(ci);
  }
  struct utsname u;
  uname(&u);
  time_t now = time(NULL);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
  fprintf(f, "# machine: %s; %ld online CPUs (%ld configured); %.1f GiB RAM\n", model,
          sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF),
          (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) / 1073741824.0);
  fprintf(f, "# system: %s %s %s; glibc %s; compiler %s\n", u.sysname, u.release, u.machine,
          gnu_get_libc_version(), __VERSION__);
  fprintf(f, "# bravo: table %zu slots; N = %u; threads %s; date %s\n", rm_bravo_table_size(),
          rm_bravo_inhibit_multiplier(),
          O.pin ? "pinned one per CPU when they fit (else free)" : "free (unpinned)", date);
}

/* ---- statistics ------------------------------------------------------------ */
int bench_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

uint64_t bench_quantile(const uint64_t *sorted, size_t n, double q) {
  if (n == 0) return 0;
  size_t r = (size_t)(q * (double)n + 0.999999); /* nearest rank: ceil(q n) */
  if (r < 1) r = 1;
  if (r > n) r = n;
  return sorted[r - 1];
}

/* ---- running threads ---------------------------------------------------------- */
double bench_run(int n, struct tctx *ctx, bench_thread_fn *fns) {
  return bench_run_ex(n, ctx, fns, n, 0);
}

double bench_run_ex(int n, struct tctx *ctx, bench_thread_fn *fns, int npin, int nready) {
  pthread_t *th = (pthread_t *)calloc((size_t)n, sizeof *th);
  if (!th) bench_fatal("out of memory");
  __atomic_store_n(&g_go, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_stop, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_ready, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_started, 0, __ATOMIC_RELAXED);
  struct start *st = (struct start *)calloc((size_t)n, sizeof *st);
  if (!st) bench_fatal("out of memory");
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  for (int i = 0; i < n; i++) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (O.pin && npin <= ncpu && i < npin) {
      /* One thread per CPU: otherwise the scheduler sometimes starts two
       * spinning threads on one CPU and the run measures sched_yield. */
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(i % ncpu, &set);
      pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    }
    st[i].fn = fns[i];
    st[i].arg = &ctx[i];
    int e = pthread_create(&th[i], &attr, thread_start, &st[i]);
    pthread_attr_destroy(&attr);
    if (e) bench_fatal("pthread_create: %s", strerror(e));
  }
  while (__atomic_load_n(&g_started, __ATOMIC_ACQUIRE) < n ||
         __atomic_load_n(&g_ready, __ATOMIC_ACQUIRE) < nready)
    usleep(100);
  usleep(2000);
  uint64_t t0 = rm_now_ns();
  __atomic_store_n(&g_go, 1, __ATOMIC_RELEASE);
  struct timespec d = {(time_t)O.duration, (long)((O.duration - (double)(time_t)O.duration) * 1e9)};
  while (nanosleep(&d, &d) == -1 && errno == EINTR) {
  }
  __atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
  uint64_t t1 = rm_now_ns();
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  free(th);
  free(st);
  return (double)(t1 - t0) / 1e9;
}

struct tctx *ctx_new(int n, void *lock) {
  struct tctx *c = (struct tctx *)aligned_alloc(128, sizeof(struct tctx) * (size_t)n);
  if (!c) bench_fatal("out of memory");
  memset(c, 0, sizeof(struct tctx) * (size_t)n);
  for (int i = 0; i < n; i++) {
    c[i].lock = lock;
    c[i].idx = i;
    c[i].n = n;
    c[i].seed = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1) ^ rm_now_ns();
    if (!c[i].seed) c[i].seed = 1;
  }
  return c;
}

uint64_t ctx_sum(const struct tctx *c, int from, int to) {
  uint64_t s = 0;
  for (int i = from; i < to; i++) s += c[i].count;
  return s;
}

/* ---- options and the experiment table ------------------------------------------- */
static const struct bench_exp *exp_find(const char *name) {
  for (size_t f = 0; f < NFAMILIES; f++)
    for (size_t i = 0; i < families[f]->n; i++)
      if (strcmp(families[f]->exps[i].name, name) == 0) return &families[f]->exps[i];
  return NULL;
}

/* Every implementation set some experiment uses, each once. */
static size_t all_sets(const struct bench_impl_set **out, size_t max) {
  size_t n = 0;
  for (size_t f = 0; f < NFAMILIES; f++)
    for (size_t i = 0; i < families[f]->n; i++)
      for (const struct bench_impl_set *const *s = families[f]->exps[i].sets; *s; s++) {
        size_t k = 0;
        while (k < n && out[k] != *s) k++;
        if (k == n && n < max) out[n++] = *s;
      }
  return n;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: readmostly-bench EXPERIMENT [--impl a,b,...] [--threads 1,2,...]\n"
          "                        [--duration SECONDS] [--reps N] [--param key=value ...]\n"
          "                        [--csv FILE] [--iterations N] [--pin 0|1]\n"
          "       readmostly-bench list\n\nexperiments:\n");
  for (size_t fa = 0; fa < NFAMILIES; fa++)
    for (size_t i = 0; i < families[fa]->n; i++) {
      const struct bench_exp *e = &families[fa]->exps[i];
      fprintf(f, "  %-13s %s\n", e->name, e->what);
      for (const struct bench_param *p = e->params; p && p->key; p++)
        fprintf(f, "  %-13s   --param %s=%s  %s\n", "", p->key, p->def, p->help);
    }
  fprintf(f, "implementations:");
  /* Each name once, even when two sets carry it. */
  const struct bench_impl_set *sets[16];
  size_t ns = all_sets(sets, 16);
  for (size_t s = 0; s < ns; s++)
    for (size_t i = 0; i < sets[s]->n; i++) {
      const struct bench_impl *im = &sets[s]->v[i];
      if (im->flags & (BENCH_IMPL_HIDDEN | BENCH_IMPL_ABSENT)) continue;
      bool dup = false;
      for (size_t t = 0; t < s && !dup; t++)
        for (size_t j = 0; j < sets[t]->n && !dup; j++)
          dup = strcmp(sets[t]->v[j].name, im->name) == 0;
      if (!dup) fprintf(f, " %s", im->name);
    }
  fprintf(f, "\n");
}

/* `readmostly-bench list`: usage, then the glossary: every implementation
 * name with its meaning, then the other names results carry. */
static const char *listed[4 * MAXLIST];
static size_t nlisted;
static bool was_listed(const char *name) {
  for (size_t i = 0; i < nlisted; i++)
    if (strcmp(listed[i], name) == 0) return true;
  return false;
}
static void list_glossary(FILE *f) {
  fprintf(f, "glossary:\n");
  const struct bench_impl_set *sets[16];
  size_t ns = all_sets(sets, 16);
  for (size_t s = 0; s < ns; s++)
    for (size_t i = 0; i < sets[s]->n; i++) {
      const struct bench_impl *im = &sets[s]->v[i];
      if ((im->flags & (BENCH_IMPL_HIDDEN | BENCH_IMPL_ABSENT)) || was_listed(im->name)) continue;
      if (nlisted < sizeof listed / sizeof listed[0]) listed[nlisted++] = im->name;
      const char *m = bench_glossary(im->name);
      fprintf(f, "  %-18s %s\n", im->name, m ? m : "(no description yet)");
    }
  bench_glossary_others(f, was_listed);
}

static bool sel_has(const char *name) {
  for (int i = 0; i < O.nimpl; i++)
    if (strcmp(O.impl[i].name, name) == 0) return true;
  return false;
}

/* The implementations e accepts, for messages. */
static void impl_names(const struct bench_exp *e, char *buf, size_t len) {
  size_t off = 0;
  buf[0] = 0;
  for (const struct bench_impl_set *const *s = e->sets; *s; s++)
    for (size_t i = 0; i < (*s)->n && off < len; i++) {
      const struct bench_impl *im = &(*s)->v[i];
      if (im->flags & (BENCH_IMPL_HIDDEN | BENCH_IMPL_ABSENT | e->exclude)) continue;
      bool dup = false;
      for (const struct bench_impl_set *const *t = e->sets; t < s && !dup; t++)
        for (size_t j = 0; j < (*t)->n && !dup; j++)
          dup = !((*t)->v[j].flags & (BENCH_IMPL_HIDDEN | BENCH_IMPL_ABSENT | e->exclude)) &&
                strcmp((*t)->v[j].name, im->name) == 0;
      if (!dup) off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "", im->name);
    }
}

static void choose_impls(const char *implarg) {
  const struct bench_exp *e = O.e;
  if (!implarg) {
    for (const struct bench_impl_set *const *s = e->sets; *s; s++)
      for (size_t i = 0; i < (*s)->n && O.nimpl < MAXLIST; i++) {
        const struct bench_impl *im = &(*s)->v[i];
        if ((im->flags & (BENCH_IMPL_HIDDEN | BENCH_IMPL_ABSENT | e->exclude)) || sel_has(im->name))
          continue;
        O.impl[O.nimpl++] = (struct bench_sel){*s, i, im->name};
      }
    return;
  }
  char valid[2048];
  impl_names(e, valid, sizeof valid);
  for (const char *p = implarg;;) {
    size_t len = strcspn(p, ",");
    char t[64];
    snprintf(t, sizeof t, "%.*s", (int)(len < 63 ? len : 63), p);
    if (len == 0)
      bench_usage_error("bad --impl '%s' (an empty element): want comma-separated names among %s",
                        implarg, valid);
    /* The first set that has the name and does not exclude it, else the
     * first that has it (a lock named like an RCU flavour, say). */
    const struct bench_impl_set *set = NULL;
    size_t idx = 0;
    for (int pass = 0; pass < 2 && !set; pass++)
      for (const struct bench_impl_set *const *s = e->sets; *s && !set; s++)
        for (size_t i = 0; i < (*s)->n; i++)
          if (strlen((*s)->v[i].name) == len && strncmp((*s)->v[i].name, p, len) == 0 &&
              (pass == 1 || !((*s)->v[i].flags & e->exclude))) {
            set = *s;
            idx = i;
            break;
          }
    if (!set)
      bench_usage_error("unknown implementation '%s' for %s%s; valid: %s", t, O.exp,
                        strncmp(t, "ck-", 3) == 0    ? " (built without libck-dev?)"
                        : strncmp(t, "urcu", 4) == 0 ? " (built without liburcu-dev?)"
                                                     : "",
                        valid);
    if (set->v[idx].flags & e->exclude)
      bench_usage_error("%s %s; %s needs one (valid: %s)", t, e->exclude_why, O.exp, valid);
    if (set->v[idx].flags & BENCH_IMPL_ABSENT) {
      fprintf(stderr, "readmostly-bench: %s is not built in (its library was not found when "
              "readmostly-bench was configured): skipped\n", t);
      if (!p[len]) break;
      p += len + 1;
      continue;
    }
    if (O.nimpl == MAXLIST) bench_usage_error("more than %d implementations", MAXLIST);
    if (!sel_has(set->v[idx].name)) O.impl[O.nimpl++] = (struct bench_sel){set, idx, set->v[idx].name};
    if (!p[len]) break;
    p += len + 1;
  }
}

/* "VAR=value" is this process's environment already. */
static bool env_in_force(const char *assign) {
  const char *eq = strchr(assign, '=');
  char name[64];
  snprintf(name, sizeof name, "%.*s", (int)(eq - assign), assign);
  const char *v = getenv(name);
  return v && strcmp(v, eq + 1) == 0;
}

/* Run this program again for one implementation, with `assign` in its
 * environment: the same arguments but --impl NAME and no --csv; its CSV
 * rows are passed on (stdout and the --csv file), its '#' lines and header
 * dropped.  Returns its exit status. */
static int run_child(int argc, char **argv, const char *name, const char *assign) {
  char **av = (char **)calloc((size_t)argc + 3, sizeof *av);
  if (!av) bench_fatal("out of memory");
  int n = 0;
  av[n++] = argv[0];
  av[n++] = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--impl") == 0 || strcmp(argv[i], "--csv") == 0) continue;
    av[n++] = argv[i];
    av[n++] = argv[i + 1];
  }
  av[n++] = (char *)"--impl";
  av[n++] = (char *)name;
  av[n] = NULL;
  fflush(stdout);
  int fd[2];
  if (pipe(fd) != 0) bench_fatal("pipe: %s", strerror(errno));
  pid_t pid = fork();
  if (pid < 0) bench_fatal("fork: %s", strerror(errno));
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    close(fd[1]);
    char *a = strdup(assign);
    if (!a || putenv(a) != 0 || setenv("READMOSTLY_BENCH_CHILD", "1", 1) != 0) _exit(1);
    execv("/proc/self/exe", av);
    fprintf(stderr, "readmostly-bench: cannot run itself again: %s\n", strerror(errno));
    _exit(1);
  }
  close(fd[1]);
  free(av);
  FILE *in = fdopen(fd[0], "r");
  if (!in) bench_fatal("fdopen: %s", strerror(errno));
  char line[1024];
  while (fgets(line, sizeof line, in)) {
    if (line[0] == '#' || strncmp(line, "experiment,", 11) == 0) continue;
    fputs(line, stdout);
    fflush(stdout);
    if (O.csv) {
      fputs(line, O.csv);
      fflush(O.csv);
    }
  }
  fclose(in);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  fprintf(stderr, "readmostly-bench: the run of %s (%s) ended by signal %d\n", name, assign,
          WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  return 1;
}

/* --threads, --reps, --iterations: exit 2 naming the value and the range. */
static void opt_uints(const char *opt, const char *v, uint64_t min, uint64_t max, uint64_t *out,
                      int maxn, int *n) {
  char why[128];
  if (parse_uints(v, min, max, out, maxn, n, why, sizeof why))
    bench_usage_error("bad %s '%s' (%s): want %s in %llu..%llu", opt, v, why,
                      maxn > 1 ? "comma-separated integers" : "one integer",
                      (unsigned long long)min, (unsigned long long)max);
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "list") == 0) {
    usage(stdout);
    list_glossary(stdout);
    return 0;
  }
  O.exp = argv[1];
  O.e = exp_find(O.exp);
  if (!O.e) {
    fprintf(stderr, "readmostly-bench: unknown experiment '%s'\n", O.exp);
    usage(stderr);
    return 2;
  }
  O.duration = 1.0;
  O.reps = 3;
  O.pin = 1;
  O.threads[0] = 1;
  O.threads[1] = 2;
  O.threads[2] = 4;
  O.nthreads = 3;
  const char *csvpath = NULL;
  char *implarg = NULL;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "readmostly-bench: %s needs a value\n", a);
      return 2;
    }
    i++;
    if (strcmp(a, "--impl") == 0) implarg = argv[i];
    else if (strcmp(a, "--threads") == 0) {
      uint64_t t[MAXLIST];
      opt_uints("--threads", v, 1, 1024, t, MAXLIST, &O.nthreads);
      for (int k = 0; k < O.nthreads; k++) O.threads[k] = (int)t[k];
    } else if (strcmp(a, "--duration") == 0) {
      char *end;
      O.duration = strtod(v, &end);
      if (end == v || *end || !(O.duration > 0 && O.duration < 3600))
        bench_usage_error("bad --duration '%s': want seconds, more than 0 and less than 3600 "
                          "(e.g. 0.5)", v);
    } else if (strcmp(a, "--reps") == 0) {
      uint64_t r;
      int n;
      opt_uints("--reps", v, 1, 1000, &r, 1, &n);
      O.reps = (int)r;
    } else if (strcmp(a, "--iterations") == 0) {
      int n;
      opt_uints("--iterations", v, 1, UINT64_C(1) << 40, &O.iterations, 1, &n);
    } else if (strcmp(a, "--param") == 0) {
      char *eq = strchr(argv[i], '=');
      if (!eq || eq == argv[i]) bench_usage_error("bad --param '%s': want key=value", argv[i]);
      if (O.nparam == 16) bench_usage_error("more than 16 --param");
      char *key = strndup(argv[i], (size_t)(eq - argv[i]));
      if (!key) bench_fatal("out of memory");
      param_check(key, eq + 1);
      O.pkey[O.nparam] = key;
      O.pval[O.nparam++] = eq + 1;
    } else if (strcmp(a, "--csv") == 0) csvpath = v;
    else if (strcmp(a, "--pin") == 0) {
      if (strcmp(v, "1") && strcmp(v, "0")) bench_usage_error("bad --pin '%s': want 0 or 1", v);
      O.pin = v[0] == '1';
    } else {
      fprintf(stderr, "readmostly-bench: unknown option %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  choose_impls(implarg);
  O.child = getenv("READMOSTLY_BENCH_CHILD") != NULL;
  /* Implementations whose mode must be in force from the start run later,
   * each in a child process (bench_impl.env). */
  struct bench_sel later[MAXLIST];
  int nlater = 0, keep = 0;
  for (int k = 0; k < O.nimpl; k++) {
    const char *env = O.impl[k].set->v[O.impl[k].idx].env;
    if (env && !env_in_force(env)) later[nlater++] = O.impl[k];
    else O.impl[keep++] = O.impl[k];
  }
  O.nimpl = keep;
  if (csvpath) {
    O.csv = fopen(csvpath, "w");
    if (!O.csv) {
      fprintf(stderr, "readmostly-bench: %s: %s\n", csvpath, strerror(errno));
      return 1;
    }
  }
  describe_machine(stdout);
  const char *hdr = "experiment,impl,threads,param,rep,metric,value,unit\n";
  fputs(hdr, stdout);
  if (O.csv) {
    describe_machine(O.csv);
    fputs(hdr, O.csv);
  }
  O.e->run(O.e);
  int rc = 0;
  for (int k = 0; k < nlater && rc == 0; k++)
    rc = run_child(argc, argv, later[k].name, later[k].set->v[later[k].idx].env);
  if (O.csv) fclose(O.csv);
  return rc;
}
