/*
 * rlu_torture - RLU under torture, with an oracle.
 *
 *   rlu_torture --mode accounts|list [--flavor fine|coarse] [--readers N]
 *               [--writers N] [--seconds S] [--size N] [--defer N]
 *               [--entry fenced|fence-free] [--switch-fence T]
 *               [--max-barriers N]
 *
 * accounts: a directory object points to N account objects holding 1000
 *   each.  Writers move a random amount between two or three accounts in
 *   one section, and sometimes replace an account by a fresh object (the
 *   old one freed through rm_rlu_free).  Readers sum every account in one
 *   section and must always find N * 1000; they also read one account twice,
 *   far apart in the section, and must find the same value.
 * list: a sorted list of N even keys.  Writers, in one section, remove a
 *   present key and add an absent one, so the list always holds N keys.
 *   Readers walk it and must find N keys, ascending, all even.
 *
 * pipe: the rcutorture-style test of the paper's section 4.7 (one writer,
 *   --writers - 1 fake writers, readers): see pipe_writer below.
 * --defer N: fine-grained with deferral (readers still see whole commits).
 *
 * Any violation prints what was seen and exits 1.  Run with more threads
 * than CPUs; writers yield at random between locking and committing.
 */
#define _GNU_SOURCE
#include "test.h"
#include "../../src/env.h" /* READMOSTLY_TORTURE_SCALE, as the library reads its variables */
#include <readmostly/rlu.h>
#include <readmostly/rlu_list.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <unistd.h>

#define START 1000

struct acct {
  long v;
  long pad[5];
};

static int nacct = 16;
static struct acct **dir; /* an RLU object: array of account pointers */
static struct rm_rlu_list *list;
static int stop;
static bool coarse;
static long long reads, writes;

static unsigned rnd(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return *s >> 8;
}

static void enter_update(rm_rlu_ctx *self) {
  if (coarse) rm_rlu_writer_lock(self);
  else rm_rlu_reader_lock(self);
}

static void acct_writer(unsigned seed) {
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK(self != NULL);
  long n = 0;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) || n == 0) { /* one op at least: a slow start is no failure */
    int k = 2 + (int)(rnd(&seed) % 2);
    int idx[3];
    for (int i = 0; i < k; i++) {
    again:
      idx[i] = (int)(rnd(&seed) % (unsigned)nacct);
      for (int j = 0; j < i; j++)
        if (idx[j] == idx[i]) goto again;
    }
    bool replace = rnd(&seed) % 16 == 0, replaced = false;
    enter_update(self);
    struct acct **d = RM_RLU_DEREF(self, dir);
    struct acct *p[3];
    int r = 0;
    for (int i = 0; i < k && r == 0; i++) {
      p[i] = RM_RLU_DEREF(self, d[idx[i]]);
      r = RM_RLU_TRY_LOCK(self, &p[i]);
      if (rnd(&seed) % 8 == 0) sched_yield();
    }
    if (r == 0 && replace) {
      /* Replace account idx[0] by a new object with its value; the old one
       * is freed after the commit's grace period. */
      struct acct **dc = d;
      r = RM_RLU_TRY_LOCK(self, &dc);
      if (r == 0) {
        struct acct *fresh = rm_rlu_alloc(sizeof *fresh);
        CHECK(fresh != NULL);
        fresh->v = p[0]->v;
        CHECK_ERR(rm_rlu_free(self, p[0]), 0);
        RM_RLU_ASSIGN_PTR(&dc[idx[0]], fresh);
        replaced = true;
      }
    }
    if (r != 0) {
      CHECK(!coarse);
      CHECK(r == EBUSY);
      rm_rlu_abort(self);
      sched_yield();
      continue;
    }
    if (!replaced) {
      long amt = (long)(rnd(&seed) % 50);
      p[k - 1]->v -= amt;
      p[0]->v += amt;
      if (k == 3) {
        p[0]->v -= amt / 2;
        p[1]->v += amt / 2;
      }
    }
    if (rnd(&seed) % 8 == 0) sched_yield();
    rm_rlu_reader_unlock(self);
    n++;
  }
  __atomic_fetch_add(&writes, n, __ATOMIC_RELAXED);
  rm_rlu_thread_unregister(self);
}

static void acct_reader(unsigned seed) {
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK(self != NULL);
  long n = 0;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) || n == 0) { /* one op at least: a slow start is no failure */
    rm_rlu_reader_lock(self);
    struct acct **d = RM_RLU_DEREF(self, dir);
    int probe = (int)(rnd(&seed) % (unsigned)nacct);
    long first = RM_RLU_DEREF(self, d[probe])->v;
    long sum = 0;
    for (int i = 0; i < nacct; i++) {
      sum += RM_RLU_DEREF(self, d[i])->v;
      if (i == nacct / 2 && rnd(&seed) % 4 == 0) sched_yield();
    }
    long again = RM_RLU_DEREF(self, d[probe])->v;
    rm_rlu_reader_unlock(self);
    if (sum != (long)nacct * START || first != again) {
      fprintf(stderr, "rlu_torture: VIOLATION: sum %ld (expected %ld), account %d read %ld then %ld\n",
              sum, (long)nacct * START, probe, first, again);
      exit(1);
    }
    n++;
  }
  __atomic_fetch_add(&reads, n, __ATOMIC_RELAXED);
  rm_rlu_thread_unregister(self);
}

static void list_writer(unsigned seed) {
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK(self != NULL);
  long n = 0;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) || n == 0) { /* one op at least: a slow start is no failure */
    int64_t out = 2 * (int64_t)(rnd(&seed) % (unsigned)(2 * nacct));
    int64_t in = 2 * (int64_t)(rnd(&seed) % (unsigned)(2 * nacct));
    if (in == out) continue;
    enter_update(self);
    int r = rm_rlu_list_remove_in(self, list, out);
    if (rnd(&seed) % 8 == 0) sched_yield();
    int r2 = r == 1 ? rm_rlu_list_add_in(self, list, in) : 0;
    if (r == 1 && r2 == 1) {
      rm_rlu_reader_unlock(self);
      n++;
      continue;
    }
    /* Out was absent, in was present, or a conflict: nothing applies. */
    CHECK(r != -ENOMEM && r2 != -ENOMEM);
    CHECK(!coarse || (r >= 0 && r2 >= 0));
    rm_rlu_abort(self);
  }
  __atomic_fetch_add(&writes, n, __ATOMIC_RELAXED);
  rm_rlu_thread_unregister(self);
}

static void list_reader(unsigned seed) {
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK(self != NULL);
  long n = 0;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) || n == 0) { /* one op at least: a slow start is no failure */
    rm_rlu_reader_lock(self);
    struct rm_rlu_node *x = RM_RLU_DEREF(self, list->head);
    int64_t last = INT64_MIN;
    int count = 0;
    bool bad = false;
    for (x = RM_RLU_DEREF(self, x->next); x->key != INT64_MAX; x = RM_RLU_DEREF(self, x->next)) {
      if (x->key <= last || (x->key & 1) || x->key < 0 || x->key >= 4 * nacct) bad = true;
      last = x->key;
      count++;
      if (count == nacct / 2 && rnd(&seed) % 4 == 0) sched_yield();
    }
    rm_rlu_reader_unlock(self);
    if (bad || count != nacct) {
      fprintf(stderr, "rlu_torture: VIOLATION: list of %d keys (expected %d), %s\n", count,
              nacct, bad ? "unsorted or a key never inserted" : "keys in order");
      exit(1);
    }
    n++;
  }
  __atomic_fetch_add(&reads, n, __ATOMIC_RELAXED);
  rm_rlu_thread_unregister(self);
}

static int nreaders = 4, nwriters = 2;
static bool list_mode, pipe_mode;
static unsigned defer;
static bool fence_free;

/* ---- pipe: the rcutorture-style age test of the paper's section 4.7 ----
 * One writer publishes a fresh element through the root object in a
 * section, marks the element it replaced with age 1 before committing, and
 * after the commit (whose synchronize is a grace period) ages every retired
 * element by one per commit, freeing it at PIPE_MAX.  Fake writers commit
 * sections of their own (more synchronize calls, more clock steps).
 * Readers fetch the current element and read its age: an element can be
 * seen with age 0 (current) or 1 (replaced, grace period not over), never
 * more: age 2 would mean a grace period ended while a section that could
 * see the element was still running. */
#define PIPE_MAX 10
struct pipe_elem {
  int age;       /* atomics: the writer ages retired elements outside RLU */
  long payload;  /* = ~serial, checked by readers */
  long serial;
};
struct pipe_root {
  struct pipe_elem *cur;
};
static struct pipe_root *proot;
static long pipe_hist[PIPE_MAX + 1];

static void pipe_writer(unsigned seed) {
  rm_rlu_ctx *self = rm_rlu_thread_register();
  struct pipe_elem *retired[PIPE_MAX];
  int nret = 0;
  long serial = 1, n = 0;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) || n == 0) { /* one op at least: a slow start is no failure */
    struct pipe_elem *e = malloc(sizeof *e);
    CHECK(e != NULL);
    e->age = 0;
    e->serial = ++serial;
    e->payload = ~e->serial;
    enter_update(self);
    struct pipe_root *r = proot;
    int rc = RM_RLU_TRY_LOCK(self, &r);
    if (rc != 0) {
      CHECK_ERR(rc, EBUSY);
      rm_rlu_abort(self);
      free(e);
      continue;
    }
    struct pipe_elem *old = r->cur;
    __atomic_store_n(&r->cur, e, __ATOMIC_RELEASE); /* plain object: not an RLU pointer */
    __atomic_store_n(&old->age, 1, __ATOMIC_RELEASE);
    if (rnd(&seed) % 8 == 0) sched_yield();
    rm_rlu_reader_unlock(self); /* grace period inside */
    /* Age everything retired earlier, including `old`. */
    for (int i = 0; i < nret; i++) __atomic_fetch_add(&retired[i]->age, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&old->age, 2, __ATOMIC_RELEASE);
    if (nret == PIPE_MAX) {
      free(retired[0]);
      memmove(retired, retired + 1, sizeof retired[0] * (PIPE_MAX - 1));
      nret--;
    }
    retired[nret++] = old;
    n++;
  }
  for (int i = 0; i < nret; i++) free(retired[i]);
  __atomic_fetch_add(&writes, n, __ATOMIC_RELAXED);
  rm_rlu_thread_unregister(self);
}

static void pipe_fake_writer(unsigned seed) {
  rm_rlu_ctx *self = rm_rlu_thread_register();
  long *mine = rm_rlu_alloc(sizeof *mine);
  *mine = 0;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
    enter_update(self);
    long *p = mine;
    CHECK_ERR(RM_RLU_TRY_LOCK(self, &p), 0);
    (*p)++;
    rm_rlu_reader_unlock(self);
    if (rnd(&seed) % 4 == 0) usleep(rnd(&seed) % 100);
  }
  rm_rlu_thread_unregister(self);
  rm_rlu_free(NULL, mine);
}

static void pipe_reader(unsigned seed) {
  rm_rlu_ctx *self = rm_rlu_thread_register();
  long n = 0, hist[PIPE_MAX + 1] = {0};
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) || n == 0) { /* one op at least: a slow start is no failure */
    rm_rlu_reader_lock(self);
    struct pipe_root *r = RM_RLU_DEREF(self, proot);
    struct pipe_elem *e = __atomic_load_n(&r->cur, __ATOMIC_ACQUIRE);
    if (rnd(&seed) % 4 == 0) sched_yield();
    int age = __atomic_load_n(&e->age, __ATOMIC_ACQUIRE);
    long payload = e->payload, serial = e->serial;
    rm_rlu_reader_unlock(self);
    if (age > 1 || payload != ~serial) {
      fprintf(stderr, "rlu_torture: VIOLATION: pipe element %ld seen at age %d (payload %s)\n",
              serial, age, payload == ~serial ? "intact" : "corrupt");
      exit(1);
    }
    hist[age < PIPE_MAX ? age : PIPE_MAX]++;
    n++;
  }
  for (int i = 0; i <= PIPE_MAX; i++) __atomic_fetch_add(&pipe_hist[i], hist[i], __ATOMIC_RELAXED);
  __atomic_fetch_add(&reads, n, __ATOMIC_RELAXED);
  rm_rlu_thread_unregister(self);
}

static void worker(void *arg, int i) {
  (void)arg;
  unsigned seed = 0x9e3779b9u * (unsigned)(i + 1);
  if (pipe_mode) {
    if (i == 0) pipe_writer(seed);
    else if (i < nwriters) pipe_fake_writer(seed);
    else pipe_reader(seed);
    return;
  }
  if (i < nwriters) list_mode ? list_writer(seed) : acct_writer(seed);
  else list_mode ? list_reader(seed) : acct_reader(seed);
}

static double switch_after = -1; /* --switch-fence T: fence mode T seconds in */
/* --max-barriers N: rm_rlu_options.fence_free_max_barriers.  By default
 * never: the fence-free runs keep the fence-free entry to the end (8
 * threads on 2 CPUs issue thousands of membarriers a second, which would
 * close it at once); a low N closes it while sections run. */
static unsigned max_barriers = UINT_MAX;

static void *timer(void *arg) {
  double secs = *(double *)arg;
  if (switch_after >= 0 && switch_after < secs) {
    usleep((useconds_t)(switch_after * 1e6));
    rm_fcp_switch_to_fence(); /* while sections run: RLU's gate closes */
    CHECK(!rm_rlu_fence_free());
    secs -= switch_after;
  }
  usleep((useconds_t)(secs * 1e6));
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  return NULL;
}

int main(int argc, char **argv) {
  double seconds = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--mode")) {
      list_mode = !strcmp(argv[i + 1], "list");
      pipe_mode = !strcmp(argv[i + 1], "pipe");
    }
    else if (!strcmp(argv[i], "--flavor")) coarse = !strcmp(argv[i + 1], "coarse");
    else if (!strcmp(argv[i], "--readers")) nreaders = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--writers")) nwriters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--size")) nacct = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--defer")) defer = (unsigned)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--entry")) fence_free = !strcmp(argv[i + 1], "fence-free");
    else if (!strcmp(argv[i], "--switch-fence")) switch_after = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--max-barriers")) max_barriers = (unsigned)atoi(argv[i + 1]);
    else {
      fprintf(stderr, "usage: rlu_torture --mode accounts|list|pipe [--flavor fine|coarse] "
                      "[--readers N] [--writers N] [--seconds S] [--size N] [--defer N] "
                      "[--entry fenced|fence-free] [--switch-fence T] [--max-barriers N]\n");
      return 2;
    }
  }
  seconds *= (double)rm_env_int("READMOSTLY_TORTURE_SCALE", 1, 1000, 1);
  struct rm_rlu_options o = {.flavor = coarse ? RM_RLU_COARSE : RM_RLU_FINE, .stats = true,
                             .log_chunk = 256, .max_defer = defer,
                             .fence_free = fence_free, .fence_free_max_barriers = max_barriers};
  CHECK_ERR(rm_rlu_init(&o), 0);
  if (pipe_mode) {
    proot = rm_rlu_alloc(sizeof *proot);
    proot->cur = calloc(1, sizeof *proot->cur);
    proot->cur->payload = ~0L;
  } else if (list_mode) {
    list = rm_rlu_list_create_flavor(coarse);
    CHECK(list != NULL);
    rm_rlu_ctx *self = rm_rlu_thread_register();
    for (int k = 0; k < nacct; k++) CHECK_EQ(rm_rlu_list_add(self, list, 4 * k), 1);
    rm_rlu_thread_unregister(self);
  } else {
    dir = rm_rlu_alloc(sizeof(struct acct *) * (size_t)nacct);
    for (int i = 0; i < nacct; i++) {
      dir[i] = rm_rlu_alloc(sizeof(struct acct));
      dir[i]->v = START;
    }
  }
  pthread_t t;
  pthread_create(&t, NULL, timer, &seconds);
  test_run_threads(nreaders + nwriters, worker, NULL);
  pthread_join(t, NULL);
  struct rm_rlu_stats st;
  rm_rlu_stats_get(&st);
  printf("rlu_torture: %s %s, %d readers %d writers: %lld reads, %lld writes, aborts %llu, "
         "steals %llu, syncs %llu, sync waits %llu, deferred %llu, sync requests %llu, "
         "membarriers %llu, entry %s\n",
         pipe_mode ? "pipe" : list_mode ? "list" : "accounts", coarse ? "coarse" : "fine", nreaders, nwriters, reads,
         writes, (unsigned long long)st.aborts, (unsigned long long)st.steals,
         (unsigned long long)st.syncs, (unsigned long long)st.sync_waits,
         (unsigned long long)st.deferred, (unsigned long long)st.sync_requests,
         (unsigned long long)st.barriers, rm_rlu_fence_free() ? "fence-free" : "fenced");
  CHECK(reads > 0);
  CHECK(nwriters == 0 || writes > 0);
  if (pipe_mode) {
    printf("rlu_torture: pipe ages seen:");
    for (int i = 0; i <= PIPE_MAX; i++) printf(" %ld", pipe_hist[i]);
    printf("\n");
    free(proot->cur);
    rm_rlu_free(NULL, proot);
  } else if (list_mode) {
    rm_rlu_list_destroy(list);
  } else {
    long sum = 0;
    for (int i = 0; i < nacct; i++) {
      sum += dir[i]->v;
      rm_rlu_free(NULL, dir[i]);
    }
    CHECK_EQ(sum, (long)nacct * START);
    rm_rlu_free(NULL, dir);
  }
  TEST_MAIN_END();
}
