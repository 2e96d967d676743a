/*
 * test_rcu_hash.c - the resizable RCU hash table (readmostly/rcu_hash.h)
 * over every RCU flavor this build has.
 *
 *   test_rcu_hash                       contract tests, every flavor (unit)
 *   test_rcu_hash --torture [options]   the torture (stress), one flavor:
 *     --flavor NAME   rwl, rcu (the library's RCU: rm_rcu_hash_*, always),
 *                     urcu-memb, urcu-mb, urcu-qsbr (with liburcu-dev)
 *     --readers R --writers W --seconds S --fixed F --volatile V
 *     --min-log M --max-log L   (the resizer picks sizes 2^M .. 2^L)
 *
 * Flavors.  "rwl" is a grace period made of a writer-preferring pthread
 * rwlock (read side: read lock; synchronize: take and drop the write lock,
 * which waits for every reader that got in before it).  It is slow, but it
 * is an RCU by the definition the table relies on, and ThreadSanitizer
 * follows it.  "rcu" is the library's RCU (readmostly/rcu.h), through the
 * instantiation rcu_hash.h makes itself.  liburcu's flavors synchronize
 * inside an uninstrumented library, so under ThreadSanitizer they are
 * skipped.
 *
 * The torture's oracle:
 *  - readers look up "fixed" keys, inserted before the threads start and
 *    never removed, while a resizer thread grows and shrinks the table
 *    between 2^M and 2^L buckets (one step at a time, several every 8th
 *    resize): any miss is a failure (a zip or unzip step that took a node
 *    out of its own bucket's chain while a reader walked it).  Writers
 *    replace the nodes of HOT of them now and then: the old node is
 *    poisoned after the grace period, and a reader must never see the
 *    poison nor miss the key;
 *  - readers look up "volatile" keys that writers keep inserting and
 *    removing: a node found must carry its key's check word; a writer
 *    poisons the word after the grace period, just before free(), so a
 *    reader that sees the poison was handed a node whose grace period
 *    ended while it held it (a missing synchronize);
 *  - writers own disjoint keys and know which are in: every insert,
 *    remove and remove_deferred must return what that state says
 *    (0, EEXIST, ENOENT);
 *  - after each resize, and at the end, every chain holds only the keys of
 *    its own bucket (the unzip ran to the end), and at the end the table
 *    holds exactly the fixed keys and the writers' present keys.
 * A run lasts --seconds, and up to twice as long again until MIN_RESIZES
 * resizes have run (never a failure: more coverage on a busy machine).
 */
#include "test.h"

#include <readmostly/rcu_hash.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef RM_TEST_HAVE_URCU
#define _LGPL_SOURCE 1 /* liburcu's inline read side, as its users build */
#include <urcu/urcu-mb.h>
#include <urcu/urcu-memb.h>
#include <urcu/urcu-qsbr.h>
#endif

/* ---- flavors ------------------------------------------------------------ */

static pthread_rwlock_t rwl;
static void rwl_setup(void) {
  pthread_rwlockattr_t a;
  pthread_rwlockattr_init(&a);
  /* Writer preference: a stream of readers must not starve synchronize. */
  pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&rwl, &a);
  pthread_rwlockattr_destroy(&a);
}
static void rwl_read_lock(void) { pthread_rwlock_rdlock(&rwl); }
static void rwl_read_unlock(void) { pthread_rwlock_unlock(&rwl); }
static void rwl_synchronize(void) {
  pthread_rwlock_wrlock(&rwl);
  pthread_rwlock_unlock(&rwl);
}
static void nothing(void) {}

RM_RCU_HASH_DEFINE(th_rwl, rwl_read_lock, rwl_read_unlock, rwl_synchronize)

/* The library's RCU: the header's own instantiation, rm_rcu_hash_*. */
static void rcu_rl(void) { rm_rcu_read_lock(); }
static void rcu_ru(void) { rm_rcu_read_unlock(); }
static void rcu_sync(void) { CHECK_ERR(rm_rcu_synchronize(), 0); }
static void rcu_reg(void) { CHECK_ERR(rm_rcu_register_thread(), 0); }
static void rcu_unreg(void) { CHECK_ERR(rm_rcu_unregister_thread(), 0); }

#ifdef RM_TEST_HAVE_URCU
RM_RCU_HASH_DEFINE(th_memb, urcu_memb_read_lock, urcu_memb_read_unlock, urcu_memb_synchronize_rcu)
RM_RCU_HASH_DEFINE(th_mb, urcu_mb_read_lock, urcu_mb_read_unlock, urcu_mb_synchronize_rcu)
RM_RCU_HASH_DEFINE(th_qsbr, urcu_qsbr_read_lock, urcu_qsbr_read_unlock, urcu_qsbr_synchronize_rcu)
static void memb_rl(void) { urcu_memb_read_lock(); }
static void memb_ru(void) { urcu_memb_read_unlock(); }
static void memb_sync(void) { urcu_memb_synchronize_rcu(); }
static void memb_reg(void) { urcu_memb_register_thread(); }
static void memb_unreg(void) { urcu_memb_unregister_thread(); }
static void mb_rl(void) { urcu_mb_read_lock(); }
static void mb_ru(void) { urcu_mb_read_unlock(); }
static void mb_sync(void) { urcu_mb_synchronize_rcu(); }
static void mb_reg(void) { urcu_mb_register_thread(); }
static void mb_unreg(void) { urcu_mb_unregister_thread(); }
static void qsbr_rl(void) { urcu_qsbr_read_lock(); }
static void qsbr_ru(void) { urcu_qsbr_read_unlock(); }
static void qsbr_sync(void) { urcu_qsbr_synchronize_rcu(); }
static void qsbr_reg(void) { urcu_qsbr_register_thread(); }
static void qsbr_unreg(void) { urcu_qsbr_unregister_thread(); }
static void qsbr_qs(void) { urcu_qsbr_quiescent_state(); }
#endif

/* One flavor's instantiation, as a table the tests can loop over. */
struct flavor {
  const char *name;
  int (*init)(struct rm_rcu_hash *, size_t);
  void (*destroy)(struct rm_rcu_hash *, rm_rcu_hash_free_fn *, void *);
  struct rm_rcu_hash_node *(*lookup)(struct rm_rcu_hash *, uint64_t);
  bool (*contains)(struct rm_rcu_hash *, uint64_t);
  int (*insert)(struct rm_rcu_hash *, uint64_t, struct rm_rcu_hash_node *);
  int (*remove)(struct rm_rcu_hash *, uint64_t, rm_rcu_hash_free_fn *, void *);
  int (*remove_deferred)(struct rm_rcu_hash *, uint64_t, rm_rcu_hash_free_fn *, void *);
  int (*replace)(struct rm_rcu_hash *, uint64_t, struct rm_rcu_hash_node *, rm_rcu_hash_free_fn *,
                 void *);
  int (*resize)(struct rm_rcu_hash *, size_t);
  size_t (*count)(struct rm_rcu_hash *);
  size_t (*buckets)(struct rm_rcu_hash *);
  void (*read_lock)(void), (*read_unlock)(void), (*synchronize)(void);
  void (*reg)(void), (*unreg)(void); /* reader threads */
  void (*quiescent)(void);           /* QSBR readers, between lookups */
  bool needs_urcu;
};
#define FLAVOR(NAME, P, RL, RU, SY, REG, UNREG, QS, URCU)                                   \
  {NAME, P##_init, P##_destroy, P##_lookup, P##_contains, P##_insert, P##_remove,            \
   P##_remove_deferred, P##_replace, P##_resize, P##_count, P##_buckets, RL, RU, SY, REG,   \
   UNREG, QS, URCU}

static const struct flavor flavors[] = {
    FLAVOR("rwl", th_rwl, rwl_read_lock, rwl_read_unlock, rwl_synchronize, nothing, nothing,
           nothing, false),
    FLAVOR("rcu", rm_rcu_hash, rcu_rl, rcu_ru, rcu_sync, rcu_reg, rcu_unreg, nothing, false),
#ifdef RM_TEST_HAVE_URCU
    FLAVOR("urcu-memb", th_memb, memb_rl, memb_ru, memb_sync, memb_reg, memb_unreg, nothing, true),
    FLAVOR("urcu-mb", th_mb, mb_rl, mb_ru, mb_sync, mb_reg, mb_unreg, nothing, true),
    FLAVOR("urcu-qsbr", th_qsbr, qsbr_rl, qsbr_ru, qsbr_sync, qsbr_reg, qsbr_unreg, qsbr_qs, true),
#endif
};
#define NFLAVORS (sizeof flavors / sizeof flavors[0])

/* ---- items ---------------------------------------------------------------- */

#define CHECK_MAGIC 0x5eed5eed5eed5eedull
#define POISON 0xdeaddeaddeaddeadull

struct item {
  struct rm_rcu_hash_node node;
  uint64_t check; /* key ^ CHECK_MAGIC while live; POISON once freed */
};

static struct item *item_new(uint64_t key) {
  struct item *it = (struct item *)malloc(sizeof *it);
  if (!it) abort();
  it->check = key ^ CHECK_MAGIC;
  return it;
}

static uint64_t freed_count;
static void item_free(struct rm_rcu_hash_node *n, void *arg) {
  (void)arg;
  struct item *it = rm_rcu_hash_entry(n, struct item, node);
  /* An atomic store, so that the compiler cannot drop it before free(). */
  __atomic_store_n(&it->check, POISON, __ATOMIC_RELAXED);
  __atomic_fetch_add(&freed_count, 1, __ATOMIC_RELAXED);
  free(it);
}

/* White-box check, mutex held: every node sits in its own bucket, and the
 * chains hold `expect` nodes in all (expect < 0: do not count). */
static void check_clean(struct rm_rcu_hash *h, long expect) {
  pthread_mutex_lock(&h->lock);
  struct rm_rcu_hash_table *t = h->table;
  long n = 0;
  for (size_t i = 0; i <= t->mask; i++)
    for (struct rm_rcu_hash_node *p = t->heads[i]; p; p = p->next, n++) {
      if ((rm_rcu_hash_mix(p->key) & t->mask) != i) {
        fprintf(stderr, "key %llu in bucket %zu of %zu, belongs in %zu\n",
                (unsigned long long)p->key, i, t->mask + 1,
                (size_t)(rm_rcu_hash_mix(p->key) & t->mask));
        exit(1);
      }
    }
  if (expect >= 0) CHECK_EQ(n, expect);
  CHECK_EQ(h->count, (size_t)n);
  pthread_mutex_unlock(&h->lock);
}

/* ---- contract tests ------------------------------------------------------- */

static struct rm_rcu_hash_node *retired_node;
static void retire_keep(struct rm_rcu_hash_node *n, void *arg) {
  (void)arg;
  retired_node = n;
}

static void check_all(const struct flavor *f, struct rm_rcu_hash *h, uint64_t nkeys) {
  f->read_lock();
  for (uint64_t k = 0; k < nkeys; k++) {
    struct rm_rcu_hash_node *n = f->lookup(h, k * 7919);
    CHECK(n != NULL);
    CHECK_EQ(n->key, k * 7919);
    CHECK_EQ(rm_rcu_hash_entry(n, struct item, node)->check, (k * 7919) ^ CHECK_MAGIC);
  }
  f->read_unlock();
  CHECK(!f->contains(h, 1)); /* 1 is no multiple of 7919 */
}

/* vm.overcommit_memory is 0 (heuristic: refuses a request larger than
 * memory and swap) or 2 (strict). */
static __attribute__((unused)) bool overcommit_limited(void) {
  FILE *fp = fopen("/proc/sys/vm/overcommit_memory", "r");
  int mode = 1;
  if (fp) {
    if (fscanf(fp, "%d", &mode) != 1) mode = 1;
    fclose(fp);
  }
  return mode != 1;
}

static void contract(const struct flavor *f) {
  struct rm_rcu_hash h;
  f->reg();
  CHECK_ERR(f->init(&h, 0), EINVAL);
  CHECK_ERR(f->init(&h, 3), EINVAL);
  CHECK_ERR(f->init(&h, RM_RCU_HASH_MAX_BUCKETS * 2), EINVAL);
  CHECK_ERR(f->init(&h, 4), 0);
  CHECK_EQ(f->buckets(&h), 4);
  CHECK_EQ(f->count(&h), 0);
  CHECK(!f->contains(&h, 42));

  /* insert, lookup, duplicate, missing */
  struct item *a = item_new(42), *dup = item_new(42);
  CHECK_ERR(f->insert(&h, 42, &a->node), 0);
  CHECK_ERR(f->insert(&h, 42, &dup->node), EEXIST);
  CHECK_ERR(f->insert(&h, 43, NULL), EINVAL);
  free(dup); /* never linked: the caller's to free at once */
  CHECK(f->contains(&h, 42));
  f->read_lock();
  CHECK(f->lookup(&h, 42) == &a->node);
  CHECK(f->lookup(&h, 41) == NULL);
  f->read_unlock();
  CHECK_EQ(f->count(&h), 1);
  CHECK_ERR(f->remove(&h, 41, item_free, NULL), ENOENT);
  CHECK_ERR(f->remove_deferred(&h, 41, retire_keep, NULL), ENOENT);
  CHECK_ERR(f->remove_deferred(&h, 42, NULL, NULL), EINVAL);

  /* remove: synchronize, then free_fn once */
  uint64_t freed0 = freed_count;
  CHECK_ERR(f->remove(&h, 42, item_free, NULL), 0);
  CHECK_EQ(freed_count, freed0 + 1);
  CHECK(!f->contains(&h, 42));
  CHECK_ERR(f->remove(&h, 42, item_free, NULL), ENOENT);
  /* remove with no free_fn hands the node back untouched */
  struct item *b = item_new(7);
  CHECK_ERR(f->insert(&h, 7, &b->node), 0);
  CHECK_ERR(f->remove(&h, 7, NULL, NULL), 0);
  CHECK_EQ(b->check, 7 ^ CHECK_MAGIC);
  /* remove_deferred: retire_fn gets the node, no free */
  CHECK_ERR(f->insert(&h, 7, &b->node), 0); /* a removed node may be reinserted */
  retired_node = NULL;
  CHECK_ERR(f->remove_deferred(&h, 7, retire_keep, NULL), 0);
  CHECK(retired_node == &b->node);
  CHECK(!f->contains(&h, 7));
  f->synchronize();
  free(b);
  CHECK_EQ(f->count(&h), 0);

  /* replace: the new node takes the old one's place (one bucket, so the
   * replaced node has successors), free_fn gets the old one */
  CHECK_ERR(f->resize(&h, 1), 0);
  struct item *r1 = item_new(9), *r2 = item_new(9), *r3 = item_new(9), *r4 = item_new(9);
  CHECK_ERR(f->replace(&h, 9, &r2->node, item_free, NULL), ENOENT);
  CHECK_ERR(f->insert(&h, 11, &r3->node), 0);
  CHECK_ERR(f->insert(&h, 10, &r4->node), 0);
  CHECK_ERR(f->insert(&h, 9, &r1->node), 0); /* chain: 9, 10, 11 */
  CHECK_ERR(f->replace(&h, 9, NULL, item_free, NULL), EINVAL);
  freed0 = freed_count;
  CHECK_ERR(f->replace(&h, 9, &r2->node, item_free, NULL), 0); /* r1 freed */
  CHECK_EQ(freed_count, freed0 + 1);
  CHECK_EQ(f->count(&h), 3);
  f->read_lock();
  CHECK(f->lookup(&h, 9) == &r2->node);
  CHECK(f->lookup(&h, 10) == &r4->node);
  CHECK(f->lookup(&h, 11) == &r3->node);
  f->read_unlock();
  check_clean(&h, 3);
  for (uint64_t k = 9; k <= 11; k++) CHECK_ERR(f->remove(&h, k, item_free, NULL), 0);
  CHECK_EQ(f->count(&h), 0);
  CHECK_ERR(f->resize(&h, 4), 0);

  /* keys that collide in the low bits of the key itself still spread */
  const uint64_t nkeys = 1000;
  for (uint64_t k = 0; k < nkeys; k++) {
    struct item *it = item_new(k * 7919);
    CHECK_ERR(f->insert(&h, k * 7919, &it->node), 0);
  }
  CHECK_EQ(f->count(&h), nkeys);
  check_clean(&h, (long)nkeys);

  /* resize through many sizes, one step and several steps at a time,
   * keeping every key */
  static const size_t sizes[] = {8, 16, 1,  2,    4,  32, 1024, 1, 4096, 2048,
                                 64, 1, 65536, 4, 4, 128, 256, 512, 2, 1};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    CHECK_ERR(f->resize(&h, sizes[i]), 0);
    CHECK_EQ(f->buckets(&h), sizes[i]);
    check_clean(&h, (long)nkeys);
    check_all(f, &h, nkeys);
  }
  CHECK_ERR(f->resize(&h, 0), EINVAL);
  CHECK_ERR(f->resize(&h, 48), EINVAL);
  CHECK_ERR(f->resize(&h, RM_RCU_HASH_MAX_BUCKETS * 2), EINVAL);
  CHECK_EQ(f->buckets(&h), 1);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && !TEST_UNDER_TSAN
  /* 2^40 heads (8 TiB) cannot be allocated: ENOMEM, nothing changed.
   * (Sanitizer allocators abort on such a request instead; a kernel that
   * overcommits without limit would hand the memory out.) */
  if (overcommit_limited()) {
    CHECK_ERR(f->resize(&h, RM_RCU_HASH_MAX_BUCKETS), ENOMEM);
    CHECK_EQ(f->buckets(&h), 1);
    check_clean(&h, (long)nkeys);
    check_all(f, &h, nkeys);
  }
#endif

  /* inserts and removes after resizes land in the right buckets */
  CHECK_ERR(f->resize(&h, 64), 0);
  for (uint64_t k = 0; k < nkeys; k += 2) CHECK_ERR(f->remove(&h, k * 7919, item_free, NULL), 0);
  CHECK_EQ(f->count(&h), nkeys / 2);
  check_clean(&h, (long)(nkeys / 2));
  CHECK_ERR(f->resize(&h, 2), 0);
  for (uint64_t k = 0; k < nkeys; k += 2) {
    struct item *it = item_new(k * 7919);
    CHECK_ERR(f->insert(&h, k * 7919, &it->node), 0);
  }
  check_clean(&h, (long)nkeys);
  check_all(f, &h, nkeys);

  freed0 = freed_count;
  f->destroy(&h, item_free, NULL);
  CHECK_EQ(freed_count, freed0 + nkeys);
  f->unreg();
  printf("contract %s: ok\n", f->name);
}

/* ---- torture -------------------------------------------------------------- */

struct torture {
  const struct flavor *f;
  struct rm_rcu_hash h;
  unsigned readers, writers, min_log, max_log;
  uint64_t fixed, volat;
  int stop;
  uint64_t lookups, hits, resizes, inserts, removes, replaces;
};

/* The torture runs on past --seconds until this many resizes have run (at
 * most twice as long again). */
#define MIN_RESIZES 300

/* Writers replace the nodes of the first HOT fixed keys. */
#define HOT 16

/* Fixed keys are odd, volatile keys even, both spread over 64 bits. */
static uint64_t fixed_key(uint64_t i) { return (i * 0x9E3779B97F4A7C15ull) | 1; }
static uint64_t volatile_key(uint64_t i) { return (i * 0xC2B2AE3D27D4EB4Full) & ~1ull; }

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void *reader(void *arg) {
  struct torture *t = (struct torture *)arg;
  const struct flavor *f = t->f;
  uint64_t seed = (uint64_t)(uintptr_t)&seed | 1, lookups = 0, hits = 0;
  f->reg();
  while (!__atomic_load_n(&t->stop, __ATOMIC_RELAXED)) {
    uint64_t r = rnd(&seed);
    /* Half the fixed lookups go to the HOT keys whose nodes writers replace. */
    uint64_t fi = (r >> 16) & 1 ? r % t->fixed : r % (t->fixed < HOT ? t->fixed : HOT);
    uint64_t fk = fixed_key(fi), vk = volatile_key((r >> 32) % t->volat);
    f->read_lock();
    struct rm_rcu_hash_node *n = f->lookup(&t->h, fk);
    if (!n || n->key != fk) {
      fprintf(stderr, "FAIL: fixed key %llu missed (%s, table of %zu buckets)\n",
              (unsigned long long)fk, f->name, rm_atomic_load_acquire(&t->h.table)->mask + 1);
      exit(1);
    }
    /* Hold it a while every 8th time (see below for the volatile keys). */
    if ((r & 7) == 4)
      for (int i = 0; i < 200; i++) rm_cpu_relax();
    uint64_t fc = __atomic_load_n(&rm_rcu_hash_entry(n, struct item, node)->check,
                                  __ATOMIC_RELAXED);
    if (fc != (fk ^ CHECK_MAGIC)) {
      fprintf(stderr, "FAIL: fixed key %llu with check %llx%s\n", (unsigned long long)fk,
              (unsigned long long)fc, fc == POISON ? " (replaced and freed under a reader)" : "");
      exit(1);
    }
    n = f->lookup(&t->h, vk);
    if (n) {
      /* Hold the node a while (every 4th time), as a reader that uses what
       * it found does, then check it: a writer that freed it without a
       * grace period has poisoned it by then. */
      if ((r & 3) == 0)
        for (int i = 0; i < 200; i++) rm_cpu_relax();
      uint64_t c = __atomic_load_n(&rm_rcu_hash_entry(n, struct item, node)->check,
                                   __ATOMIC_RELAXED);
      if (n->key != vk || c != (vk ^ CHECK_MAGIC)) {
        fprintf(stderr, "FAIL: key %llu found with key %llu, check %llx%s\n",
                (unsigned long long)vk, (unsigned long long)n->key, (unsigned long long)c,
                c == POISON ? " (freed under a reader)" : "");
        exit(1);
      }
      hits++;
    }
    f->read_unlock();
    f->quiescent();
    lookups += 2;
  }
  f->unreg();
  __atomic_fetch_add(&t->lookups, lookups, __ATOMIC_RELAXED);
  __atomic_fetch_add(&t->hits, hits, __ATOMIC_RELAXED);
  return NULL;
}

struct writer_arg {
  struct torture *t;
  unsigned id;
  pthread_t th;
  unsigned char *present; /* per owned key */
  uint64_t inserts, removes, replaces;
};

/* remove_deferred's retire_fn: a local list freed after the writer's own
 * synchronize. */
struct retired {
  struct rm_rcu_hash_node *n[32];
  unsigned len;
};
static void retire_list(struct rm_rcu_hash_node *n, void *arg) {
  struct retired *r = (struct retired *)arg;
  r->n[r->len++] = n;
}
static void retired_flush(const struct flavor *f, struct retired *r) {
  if (!r->len) return;
  f->synchronize();
  for (unsigned i = 0; i < r->len; i++) item_free(r->n[i], NULL);
  r->len = 0;
}

/* Writers are not registered with the flavor (they never read; a QSBR
 * writer must not be online while it waits for the table's mutex). */
static void *writer(void *arg) {
  struct writer_arg *w = (struct writer_arg *)arg;
  struct torture *t = w->t;
  const struct flavor *f = t->f;
  uint64_t seed = 0x1234567ull * (w->id + 1), owned = 0;
  for (uint64_t i = w->id; i < t->volat; i += t->writers) owned++;
  struct retired ret = {{0}, 0};
  while (!__atomic_load_n(&t->stop, __ATOMIC_RELAXED)) {
    uint64_t r = rnd(&seed);
    if ((r >> 48) % 8 == 0) { /* a fixed key gets a new node: never absent */
      uint64_t fk = fixed_key((r >> 8) % (t->fixed < HOT ? t->fixed : HOT));
      struct item *it = item_new(fk);
      CHECK_ERR(f->replace(&t->h, fk, &it->node, item_free, NULL), 0);
      w->replaces++;
      continue;
    }
    uint64_t j = r % owned, key = volatile_key(w->id + j * t->writers);
    if (w->present[j]) {
      if ((r >> 40) % 16 == 0) {
        struct item *dup = item_new(key);
        CHECK_ERR(f->insert(&t->h, key, &dup->node), EEXIST);
        free(dup);
      }
      if ((r >> 32) & 1) {
        CHECK_ERR(f->remove(&t->h, key, item_free, NULL), 0);
      } else {
        CHECK_ERR(f->remove_deferred(&t->h, key, retire_list, &ret), 0);
        if (ret.len == 32) retired_flush(f, &ret);
      }
      w->present[j] = 0;
      w->removes++;
    } else {
      if ((r >> 40) % 16 == 0) CHECK_ERR(f->remove(&t->h, key, item_free, NULL), ENOENT);
      struct item *it = item_new(key);
      CHECK_ERR(f->insert(&t->h, key, &it->node), 0);
      w->present[j] = 1;
      w->inserts++;
    }
  }
  retired_flush(f, &ret);
  return NULL;
}

static void *resizer(void *arg) {
  struct torture *t = (struct torture *)arg;
  const struct flavor *f = t->f;
  uint64_t seed = 0xfeedfacecafeull, resizes = 0;
  unsigned log = t->min_log;
  while (!__atomic_load_n(&t->stop, __ATOMIC_RELAXED)) {
    /* Mostly one doubling or halving (a random walk), every 8th time a
     * jump of several steps. */
    uint64_t r = rnd(&seed);
    if (r % 8 == 0) log = t->min_log + (unsigned)((r >> 8) % (t->max_log - t->min_log + 1));
    else if (log == t->min_log || (log < t->max_log && (r >> 8) % 2)) log++;
    else log--;
    size_t target = (size_t)1 << log;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_ERR(f->resize(&t->h, target), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* Writers wait for the mutex during a resize: leave them as much time
     * again (up to 20 ms), so that slow grace periods do not starve them. */
    long ns = (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec);
    struct timespec pause = {0, ns < 20000000L ? ns : 20000000L};
    nanosleep(&pause, NULL);
    CHECK_EQ(f->buckets(&t->h), target);
    check_clean(&t->h, -1);
    resizes++;
    __atomic_store_n(&t->resizes, resizes, __ATOMIC_RELAXED);
  }
  return NULL;
}

static int torture(int argc, char **argv) {
  struct torture t;
  memset(&t, 0, sizeof t);
  const char *fname = "rwl";
  double seconds = 2;
  t.readers = 4;
  t.writers = 2;
  t.fixed = 2000;
  t.volat = 256;
  t.min_log = 4;
  t.max_log = 10;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--flavor")) fname = argv[i + 1];
    else if (!strcmp(argv[i], "--readers")) t.readers = (unsigned)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--writers")) t.writers = (unsigned)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--fixed")) t.fixed = (uint64_t)atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--volatile")) t.volat = (uint64_t)atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--min-log")) t.min_log = (unsigned)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--max-log")) t.max_log = (unsigned)atoi(argv[i + 1]);
    else {
      fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  const char *scale = getenv("READMOSTLY_TORTURE_SCALE");
  if (scale && atof(scale) > 0) seconds *= atof(scale);
  for (size_t i = 0; i < NFLAVORS; i++)
    if (!strcmp(flavors[i].name, fname)) t.f = &flavors[i];
  if (!t.f) {
    if (!strncmp(fname, "urcu", 4)) TEST_SKIP("built without liburcu-dev");
    fprintf(stderr, "unknown flavor %s\n", fname);
    return 2;
  }
  if (TEST_UNDER_TSAN && t.f->needs_urcu)
    TEST_SKIP("liburcu's grace periods are invisible to ThreadSanitizer");
  if (t.volat < t.writers) t.writers = (unsigned)t.volat;
  if (t.max_log > 30) t.max_log = 30;
  if (t.min_log > t.max_log) t.min_log = t.max_log;
  const struct flavor *f = t.f;

  CHECK_ERR(f->init(&t.h, (size_t)1 << t.min_log), 0);
  for (uint64_t i = 0; i < t.fixed; i++) {
    struct item *it = item_new(fixed_key(i));
    CHECK_ERR(f->insert(&t.h, fixed_key(i), &it->node), 0);
  }
  pthread_t *rt = (pthread_t *)calloc(t.readers, sizeof *rt);
  struct writer_arg *wa = (struct writer_arg *)calloc(t.writers ? t.writers : 1, sizeof *wa);
  pthread_t rz;
  CHECK(rt && wa);
  for (unsigned i = 0; i < t.readers; i++) CHECK_ERR(pthread_create(&rt[i], NULL, reader, &t), 0);
  for (unsigned i = 0; i < t.writers; i++) {
    wa[i].t = &t;
    wa[i].id = i;
    wa[i].present = (unsigned char *)calloc(t.volat / t.writers + 1, 1);
    CHECK(wa[i].present);
    CHECK_ERR(pthread_create(&wa[i].th, NULL, writer, &wa[i]), 0);
  }
  CHECK_ERR(pthread_create(&rz, NULL, resizer, &t), 0);
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&ts, NULL);
  /* On a busy machine (or with slow grace periods) go on, up to twice as
   * long again, until MIN_RESIZES resizes have run: the race windows are
   * around them.  Never a failure, only more coverage. */
  for (int i = 0; i < 40 && __atomic_load_n(&t.resizes, __ATOMIC_RELAXED) < MIN_RESIZES; i++) {
    double d = seconds / 20;
    struct timespec step = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    nanosleep(&step, NULL);
  }
  __atomic_store_n(&t.stop, 1, __ATOMIC_RELAXED);
  clock_gettime(CLOCK_MONOTONIC, &end);
  double elapsed =
      (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
  for (unsigned i = 0; i < t.readers; i++) pthread_join(rt[i], NULL);
  pthread_join(rz, NULL);
  uint64_t present = 0;
  for (unsigned i = 0; i < t.writers; i++) {
    pthread_join(wa[i].th, NULL);
    t.inserts += wa[i].inserts;
    t.removes += wa[i].removes;
    t.replaces += wa[i].replaces;
  }

  /* Final state: exactly the fixed keys and the writers' present keys. */
  f->reg();
  f->read_lock();
  for (uint64_t i = 0; i < t.fixed; i++) CHECK(f->lookup(&t.h, fixed_key(i)) != NULL);
  for (unsigned w = 0; w < t.writers; w++) {
    uint64_t j = 0;
    for (uint64_t i = w; i < t.volat; i += t.writers, j++) {
      bool in = f->lookup(&t.h, volatile_key(i)) != NULL;
      CHECK_EQ(in, wa[w].present[j]);
      present += in;
    }
  }
  f->read_unlock();
  f->unreg();
  check_clean(&t.h, (long)(t.fixed + present));
  CHECK(t.resizes > 0);
  CHECK(t.readers == 0 || t.lookups > 0);
  printf("torture %s: %u readers, %u writers, %.1f s: %llu lookups (%llu volatile hits), "
         "%llu resizes, %llu inserts, %llu removes, %llu replaces, final %zu buckets\n",
         f->name, t.readers, t.writers, elapsed, (unsigned long long)t.lookups,
         (unsigned long long)t.hits, (unsigned long long)t.resizes,
         (unsigned long long)t.inserts, (unsigned long long)t.removes,
         (unsigned long long)t.replaces, t.h.table->mask + 1);
  f->destroy(&t.h, item_free, NULL);
  for (unsigned i = 0; i < t.writers; i++) free(wa[i].present);
  free(wa);
  free(rt);
  TEST_MAIN_END();
}

int main(int argc, char **argv) {
  rwl_setup();
  if (argc > 1 && !strcmp(argv[1], "--torture")) return torture(argc, argv);
  for (size_t i = 0; i < NFLAVORS; i++) {
    if (TEST_UNDER_TSAN && flavors[i].needs_urcu) {
      printf("contract %s: skipped under ThreadSanitizer\n", flavors[i].name);
      continue;
    }
    contract(&flavors[i]);
  }
  TEST_MAIN_END();
}
