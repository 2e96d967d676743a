/* Torture test of readmostly/rlu_rhash.h: a resizer thread keeps resizing
 * the table between B and 2B buckets while writers insert and remove keys
 * and readers look keys up, more threads than CPUs.
 *
 *   rlu_rhash_torture [--flavor fine|coarse] [--defer N] [--readers R]
 *                     [--writers W] [--buckets B] [--stable S] [--range K]
 *                     [--seconds T] [--min-resizes M] [--batch K] [--inject]
 *
 * Oracle:
 *  (a) stable keys (inserted before the start, never removed) are found by
 *      every lookup of a reader, whatever the resize is doing;
 *  (b) each writer owns a range of K keys and knows which of them are
 *      present: every add or remove returns what that knowledge predicts,
 *      and a lookup of its own key right after sees it so;
 *  (c) at the end the table holds exactly the stable keys and the keys the
 *      writers believe present (lookups, count in one section, and size);
 *  (d) a reader's count (one section) is never below S nor above S + W K;
 *  (e) at the end the root carries no progress hint.
 * --batch K: K bucket pairs per resize section (rm_rlu_rhash_set_batch).
 * With --inject one resize in 4 fails with ENOMEM at a random step
 * (RM_RLU_RHASH_INJECT), so the undo runs under the same load; it must
 * leave the bucket count as it was.
 * The run lasts T seconds and at least until M resizes (--min-resizes,
 * default 2: a grow and a shrink) have completed and every writer has done
 * 200 operations: a slow machine makes it longer, never a failure.
 * (Mutants checked: a merge that does not lock the partner head loses
 * writers' adds, (b); the root switched to the new array before the
 * buckets are split, (a) fails at once; a hint one step ahead of the
 * commits, (a) in every variant; no removal of the hint before an undo,
 * (a) under --inject; the root's section leaving the hint, (e).)
 */
#include "test.h"
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

static _Thread_local uint64_t inject_step = UINT64_MAX; /* resizer only */
static bool inject(size_t k) { return k != SIZE_MAX && (uint64_t)k == inject_step; }
#define RM_RLU_RHASH_INJECT(k) inject(k)
/* The root's progress hint after every 2 resize sections (64 in the
 * header), so that a table of 64 buckets has it most of a resize. */
#define RM_RLU_RHASH_HINT_EVERY 2
#include <readmostly/rlu_rhash.h>

static struct rm_rlu_rhash *H;
static unsigned nreaders = 6, nwriters = 2;
static size_t buckets = 64;
static uint64_t nstable = 512, range = 256;
static double seconds = 2;
static unsigned defer, min_resizes = 2, batch = 1;
static bool coarse, do_inject;
static atomic_int stop_flag;
static atomic_ulong resizes, injected, writer_ops_min_done;

#define STABLE_KEY(i) ((uint64_t)(i) * 2 + 1)                      /* odd */
#define WRITER_KEY(w, i) (((uint64_t)(w) * range + (uint64_t)(i)) * 2) /* even */

static uint64_t rnd(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * UINT64_C(0x2545F4914F6CDD1D);
}

static void fail(const char *what, uint64_t key) {
  fprintf(stderr, "rlu_rhash_torture: %s (key %llu)\n", what, (unsigned long long)key);
  exit(1);
}

static void *reader(void *arg) {
  uint64_t s = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  if (!self) fail("register", 0);
  uint64_t n = 0;
  while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
    uint64_t k = STABLE_KEY(rnd(&s) % nstable);
    if (rm_rlu_rhash_contains(self, H, k) != 1) fail("(a) a stable key was not found", k);
    (void)rm_rlu_rhash_contains(self, H, WRITER_KEY(0, rnd(&s) % (range * nwriters)));
    if (++n % 4096 == 0) {
      size_t c = rm_rlu_rhash_count(self, H);
      if (c < nstable || c > nstable + range * nwriters) fail("(d) count out of bounds", c);
    }
  }
  rm_rlu_thread_unregister(self);
  return NULL;
}

struct writer {
  unsigned w;
  bool *have;
  pthread_t t;
};

static void *writer(void *arg) {
  struct writer *me = (struct writer *)arg;
  uint64_t s = me->w * 0x51ED27ull + 7;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  if (!self) fail("register", 0);
  uint64_t ops = 0;
  bool counted = false;
  while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
    uint64_t i = rnd(&s) % range, k = WRITER_KEY(me->w, i);
    int r = me->have[i] ? rm_rlu_rhash_remove(self, H, k) : rm_rlu_rhash_add(self, H, k);
    if (r != 1) fail(me->have[i] ? "(b) remove of a key the writer had added" : "(b) add of a key the writer had removed", k);
    me->have[i] = !me->have[i];
    if (rm_rlu_rhash_contains(self, H, k) != me->have[i]) fail("(b) own update not seen", k);
    uint64_t j = rnd(&s) % range;
    if (rm_rlu_rhash_contains(self, H, WRITER_KEY(me->w, j)) != me->have[j])
      fail("(b) own key seen wrong", WRITER_KEY(me->w, j));
    if (++ops == 200 && !counted) {
      counted = true;
      atomic_fetch_add(&writer_ops_min_done, 1);
    }
  }
  rm_rlu_thread_unregister(self); /* writes back deferred sections */
  return NULL;
}

static void *resizer(void *arg) {
  (void)arg;
  uint64_t s = 0xC0FFEE;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  if (!self) fail("register", 0);
  while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
    size_t cur = rm_rlu_rhash_buckets(self, H), want = cur == buckets ? 2 * buckets : buckets;
    inject_step = UINT64_MAX;
    if (do_inject && rnd(&s) % 4 == 0) inject_step = rnd(&s) % (buckets + 1); /* +1: the root */
    int r = rm_rlu_rhash_resize(self, H, want);
    if (inject_step != UINT64_MAX) {
      if (r != ENOMEM) fail("an injected ENOMEM was not returned", (uint64_t)r);
      if (rm_rlu_rhash_buckets(self, H) != cur) fail("ENOMEM changed the size", cur);
      atomic_fetch_add(&injected, 1);
    } else {
      if (r != 0) fail("resize failed", (uint64_t)r);
      if (rm_rlu_rhash_buckets(self, H) != want) fail("resize: wrong size", want);
      atomic_fetch_add(&resizes, 1);
    }
  }
  inject_step = UINT64_MAX;
  rm_rlu_thread_unregister(self);
  return NULL;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--inject")) { do_inject = true; continue; }
    if (!v) goto usage;
    i++;
    if (!strcmp(a, "--flavor")) coarse = !strcmp(v, "coarse");
    else if (!strcmp(a, "--defer")) defer = (unsigned)atoi(v);
    else if (!strcmp(a, "--readers")) nreaders = (unsigned)atoi(v);
    else if (!strcmp(a, "--writers")) nwriters = (unsigned)atoi(v);
    else if (!strcmp(a, "--buckets")) buckets = (size_t)atol(v);
    else if (!strcmp(a, "--stable")) nstable = (uint64_t)atol(v);
    else if (!strcmp(a, "--range")) range = (uint64_t)atol(v);
    else if (!strcmp(a, "--seconds")) seconds = atof(v);
    else if (!strcmp(a, "--min-resizes")) min_resizes = (unsigned)atoi(v);
    else if (!strcmp(a, "--batch")) batch = (unsigned)atoi(v);
    else goto usage;
  }
  if (nwriters < 1 || range < 1 || nstable < 1) goto usage;
  {
    const char *sc = getenv("READMOSTLY_TORTURE_SCALE");
    if (sc && atof(sc) > 0) seconds *= atof(sc);
  }
  struct rm_rlu_options o;
  memset(&o, 0, sizeof o);
  o.flavor = coarse ? RM_RLU_COARSE : RM_RLU_FINE;
  o.max_defer = defer;
  CHECK_EQ(rm_rlu_init(&o), 0);
  H = rm_rlu_rhash_create(buckets, coarse);
  CHECK(H != NULL);
  rm_rlu_rhash_set_batch(H, batch);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK(self != NULL);
  for (uint64_t i = 0; i < nstable; i++) CHECK_EQ(rm_rlu_rhash_add(self, H, STABLE_KEY(i)), 1);
  rm_rlu_sync(self);

  pthread_t rt[64], zt;
  struct writer wr[64];
  if (nreaders > 64 || nwriters > 64) goto usage;
  for (unsigned w = 0; w < nwriters; w++) {
    wr[w].w = w;
    wr[w].have = (bool *)calloc(range, sizeof(bool));
    CHECK(wr[w].have != NULL);
    CHECK_EQ(pthread_create(&wr[w].t, NULL, writer, &wr[w]), 0);
  }
  for (unsigned r = 0; r < nreaders; r++)
    CHECK_EQ(pthread_create(&rt[r], NULL, reader, (void *)(uintptr_t)(r + 1)), 0);
  CHECK_EQ(pthread_create(&zt, NULL, resizer, NULL), 0);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    usleep(20000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double el = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (el >= seconds && atomic_load(&resizes) >= min_resizes &&
        atomic_load(&writer_ops_min_done) >= nwriters)
      break;
  }
  atomic_store(&stop_flag, 1);
  CHECK_EQ(pthread_join(zt, NULL), 0);
  for (unsigned r = 0; r < nreaders; r++) CHECK_EQ(pthread_join(rt[r], NULL), 0);
  for (unsigned w = 0; w < nwriters; w++) CHECK_EQ(pthread_join(wr[w].t, NULL), 0);

  /* (c) the final set */
  size_t expect = nstable;
  for (uint64_t i = 0; i < nstable; i++)
    if (rm_rlu_rhash_contains(self, H, STABLE_KEY(i)) != 1) fail("(c) stable key missing", STABLE_KEY(i));
  for (unsigned w = 0; w < nwriters; w++)
    for (uint64_t i = 0; i < range; i++) {
      expect += wr[w].have[i];
      if (rm_rlu_rhash_contains(self, H, WRITER_KEY(w, i)) != wr[w].have[i])
        fail("(c) writer key wrong at the end", WRITER_KEY(w, i));
    }
  CHECK_EQ(rm_rlu_rhash_count(self, H), expect);
  rm_rlu_sync(self);
  CHECK_EQ(rm_rlu_rhash_size(H), expect);
  /* (e) no resize runs: no hint may be left (a resize undone by ENOMEM
   * takes its hint away before the undo) */
  CHECK(H->root->ntab == NULL && H->root->done == 0);
  printf("rlu_rhash_torture: %lu resizes, %lu injected failures, %zu keys at the end\n",
         atomic_load(&resizes), atomic_load(&injected), expect);
  rm_rlu_thread_unregister(self);
  rm_rlu_rhash_destroy(H);
  for (unsigned w = 0; w < nwriters; w++) free(wr[w].have);
  TEST_MAIN_END();
usage:
  fprintf(stderr, "usage: rlu_rhash_torture [--flavor fine|coarse] [--defer N] [--readers R] "
                  "[--writers W] [--buckets B] [--stable S] [--range K] [--seconds T] [--min-resizes M] [--batch K] "
                  "[--inject]\n");
  return 2;
}
