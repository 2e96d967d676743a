/*
 * bench/exp_dlist.c - the RLU paper's kernel doubly linked list experiment
 * (section 4.6, Fig. 9) in user space.
 *
 *   dlist   T threads on one circular doubly linked list of size=N entries
 *           (1000 by default), each entry padded to a 64-byte line (the
 *           paper's dummy nodes).  Each operation is, with probability
 *           update=P percent, an update, otherwise a forward traversal of
 *           the whole list (one read section summing every key).  An update
 *           walks forward to a random position, deletes that entry and adds
 *           a fresh one at the back, so the list keeps N entries; its old
 *           entry is freed after a grace period.  ops_per_sec counts both.
 *
 * Implementations:
 *   rlu-dlist   readmostly/rlu_dlist.h, fine-grained RLU: an update is one
 *               section (the walk, rm_rlu_dlist_del, rm_rlu_free,
 *               rm_rlu_dlist_add_tail), retried after an abort; its commit
 *               waits for the sections that could see the old entry.
 *   urcu-dlist  liburcu's cds_list_*_rcu list with the urcu-memb flavour:
 *               traversals in urcu_memb read sections with
 *               cds_list_for_each_entry_rcu; updates under one mutex
 *               (cds_list_del_rcu, cds_list_add_tail_rcu), then
 *               urcu_memb_synchronize_rcu() outside the mutex and free().
 *               Left out when liburcu-dev is not installed.
 *
 * Both sides wait for one grace period per update; RCU readers traverse
 * forward only (the only direction RCU allows), as Fig. 9 measures.
 */
#include "harness.h"

#include <readmostly/rlu.h>
#include <readmostly/rlu_dlist.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#ifdef RM_BENCH_HAVE_URCU_MEMB
#define _LGPL_SOURCE 1 /* liburcu's inline read side */
#include <urcu/urcu-memb.h>
#include <urcu/rculist.h>
#define URCU_DLIST_FLAGS 0u
#else
#define URCU_DLIST_FLAGS BENCH_IMPL_ABSENT
#endif

enum { IMPL_RLU, IMPL_URCU };
static const struct bench_impl dlist_impl_v[] = {
    {"rlu-dlist", 0, NULL},
    {"urcu-dlist", URCU_DLIST_FLAGS, NULL},
};
static const struct bench_impl_set dlist_impls = {"doubly linked lists", dlist_impl_v,
                                                  sizeof dlist_impl_v / sizeof dlist_impl_v[0]};

struct dl_shared {
  uint64_t size;
  uint64_t thresh; /* update when prng() < thresh */
  void *head;      /* RLU: the head object; RCU: the cds_list_head */
  pthread_mutex_t mutex;
  uint64_t next_key;
};

/* ---- RLU -------------------------------------------------------------------- */
/* 48 bytes, after RLU's 16-byte header: one line per entry. */
struct rlu_node {
  uint64_t key;
  struct rm_rlu_dlist link;
  uint64_t pad[1];
};
struct rlu_head {
  struct rm_rlu_dlist items;
};

static struct rlu_node *rlu_node_new(uint64_t key) {
  struct rlu_node *n = (struct rlu_node *)rm_rlu_alloc(sizeof *n);
  if (!n) bench_fatal("out of memory");
  memset(n, 0, sizeof *n);
  n->key = key;
  RM_RLU_DLIST_INIT(n, link);
  return n;
}

static void rlu_update(rm_rlu_ctx *self, struct dl_shared *sh, struct tctx *c) {
  struct rlu_head *h = (struct rlu_head *)sh->head;
  uint64_t pos = 1 + prng(&c->seed) % sh->size;
  struct rlu_node *fresh = rlu_node_new(__atomic_add_fetch(&sh->next_key, 1, __ATOMIC_RELAXED));
  for (;;) {
    rm_rlu_reader_lock(self);
    struct rlu_head *hv = RM_RLU_DEREF(self, h);
    struct rlu_node *victim = NULL;
    uint64_t i = 0;
    rm_rlu_dlist_for_each_entry(self, victim, &hv->items, link) if (++i == pos) break;
    int r = rm_rlu_dlist_del(self, &victim->link);
    if (r == 0) r = rm_rlu_free(self, victim);
    if (r == 0) r = rm_rlu_dlist_add_tail(self, &fresh->link, &hv->items);
    if (r == 0) {
      rm_rlu_reader_unlock(self);
      return;
    }
    rm_rlu_abort(self);
    if (r == ENOMEM) bench_fatal("RLU log: out of memory");
  }
}

static void *rlu_thread(void *arg) {
  struct tctx *c = (struct tctx *)arg;
  struct dl_shared *sh = (struct dl_shared *)c->shared;
  struct rlu_head *h = (struct rlu_head *)sh->head;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  if (!self) bench_fatal("rm_rlu_thread_register: out of memory");
  bench_ready();
  wait_go();
  uint64_t n = 0, sum = 0;
  while (!stopped()) {
    if (prng(&c->seed) < sh->thresh) {
      rlu_update(self, sh, c);
    } else {
      rm_rlu_reader_lock(self);
      struct rlu_head *hv = RM_RLU_DEREF(self, h);
      struct rlu_node *pos;
      rm_rlu_dlist_for_each_entry(self, pos, &hv->items, link) sum += pos->key;
      rm_rlu_reader_unlock(self);
    }
    n++;
  }
  c->count = n;
  c->sink = sum;
  rm_rlu_thread_unregister(self);
  return NULL;
}

static void rlu_setup(struct dl_shared *sh) {
  struct rm_rlu_options o = {.flavor = RM_RLU_FINE};
  if (rm_rlu_init(&o) != 0) bench_fatal("rm_rlu_init: contexts still registered");
  struct rlu_head *h = (struct rlu_head *)rm_rlu_alloc(sizeof *h);
  if (!h) bench_fatal("out of memory");
  RM_RLU_DLIST_INIT(h, items);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  if (!self) bench_fatal("rm_rlu_thread_register: out of memory");
  rm_rlu_reader_lock(self);
  for (uint64_t i = 0; i < sh->size; i++)
    if (rm_rlu_dlist_add_tail(self, &rlu_node_new(++sh->next_key)->link, &RM_RLU_DEREF(self, h)->items))
      bench_fatal("RLU: cannot fill the list");
  rm_rlu_reader_unlock(self);
  rm_rlu_thread_unregister(self);
  sh->head = h;
}

static void rlu_teardown(struct dl_shared *sh) {
  struct rlu_head *h = (struct rlu_head *)sh->head;
  struct rm_rlu_dlist *l = h->items.next;
  while (l != &h->items) {
    struct rm_rlu_dlist *nx = l->next;
    rm_rlu_free(NULL, rm_rlu_dlist_entry(l, struct rlu_node, link));
    l = nx;
  }
  rm_rlu_free(NULL, h);
}

/* ---- liburcu ------------------------------------------------------------------ */
#ifdef RM_BENCH_HAVE_URCU_MEMB
struct urcu_node {
  uint64_t key;
  struct cds_list_head link;
  uint64_t pad[5];
};

static void *urcu_thread(void *arg) {
  struct tctx *c = (struct tctx *)arg;
  struct dl_shared *sh = (struct dl_shared *)c->shared;
  struct cds_list_head *head = (struct cds_list_head *)sh->head;
  urcu_memb_register_thread();
  bench_ready();
  wait_go();
  uint64_t n = 0, sum = 0;
  while (!stopped()) {
    if (prng(&c->seed) < sh->thresh) {
      struct urcu_node *fresh = (struct urcu_node *)calloc(1, sizeof *fresh);
      if (!fresh) bench_fatal("out of memory");
      fresh->key = __atomic_add_fetch(&sh->next_key, 1, __ATOMIC_RELAXED);
      uint64_t pos = 1 + prng(&c->seed) % sh->size, i = 0;
      struct urcu_node *victim = NULL;
      pthread_mutex_lock(&sh->mutex);
      cds_list_for_each_entry(victim, head, link) if (++i == pos) break;
      cds_list_del_rcu(&victim->link);
      cds_list_add_tail_rcu(&fresh->link, head);
      pthread_mutex_unlock(&sh->mutex);
      urcu_memb_synchronize_rcu();
      free(victim);
    } else {
      urcu_memb_read_lock();
      struct urcu_node *pos;
      cds_list_for_each_entry_rcu(pos, head, link) sum += pos->key;
      urcu_memb_read_unlock();
    }
    n++;
  }
  c->count = n;
  c->sink = sum;
  urcu_memb_unregister_thread();
  return NULL;
}

static void urcu_setup(struct dl_shared *sh) {
  struct cds_list_head *head = (struct cds_list_head *)malloc(sizeof *head);
  if (!head) bench_fatal("out of memory");
  CDS_INIT_LIST_HEAD(head);
  for (uint64_t i = 0; i < sh->size; i++) {
    struct urcu_node *n = (struct urcu_node *)calloc(1, sizeof *n);
    if (!n) bench_fatal("out of memory");
    n->key = ++sh->next_key;
    cds_list_add_tail_rcu(&n->link, head);
  }
  sh->head = head;
}

static void urcu_teardown(struct dl_shared *sh) {
  struct cds_list_head *head = (struct cds_list_head *)sh->head, *l, *t;
  cds_list_for_each_safe(l, t, head) free(caa_container_of(l, struct urcu_node, link));
  free(head);
}
#endif

/* ---- the experiment --------------------------------------------------------------- */
static void exp_dlist(const struct bench_exp *e) {
  (void)e;
  double pc[MAXLIST];
  char text[MAXLIST][32];
  int np = bench_param_percents("update", pc, text, MAXLIST);
  uint64_t size = bench_param_uint("size");
  for (int pi = 0; pi < np; pi++) {
    char par[64];
    snprintf(par, sizeof par, "update=%.31s", text[pi]);
    double p = pc[pi] / 100.0;
    uint64_t th = p >= 1.0 ? UINT64_MAX : (uint64_t)(p * 18446744073709551616.0);
    for (int ti = 0; ti < O.nthreads; ti++) {
      int n = O.threads[ti];
      for (int rep = 1; rep <= O.reps; rep++)
        for (int i = 0; i < O.nimpl; i++) {
          size_t k = O.impl[i].idx;
          struct dl_shared sh;
          memset(&sh, 0, sizeof sh);
          sh.size = size;
          sh.thresh = th;
          pthread_mutex_init(&sh.mutex, NULL);
          bench_thread_fn fns[MAXLIST * 4];
          if (k == IMPL_RLU) rlu_setup(&sh);
#ifdef RM_BENCH_HAVE_URCU_MEMB
          else urcu_setup(&sh);
#else
          else bench_fatal("urcu-dlist is not built in");
#endif
          struct tctx *c = ctx_new(n, NULL);
          for (int j = 0; j < n; j++) {
            c[j].shared = &sh;
#ifdef RM_BENCH_HAVE_URCU_MEMB
            fns[j] = k == IMPL_RLU ? rlu_thread : urcu_thread;
#else
            fns[j] = rlu_thread;
#endif
          }
          double secs = bench_run_ex(n, c, fns, n, n);
          emit(O.impl[i].name, n, par, rep, "ops_per_sec", (double)ctx_sum(c, 0, n) / secs,
               "ops/s");
          free(c);
          if (k == IMPL_RLU) rlu_teardown(&sh);
#ifdef RM_BENCH_HAVE_URCU_MEMB
          else urcu_teardown(&sh);
#endif
          pthread_mutex_destroy(&sh.mutex);
        }
    }
  }
}

static const struct bench_param p_dlist[] = {
    {"update", BENCH_P_PERCENTS, "0.1,1", 0, 0, NULL, "percent of operations that update"},
    {"size", BENCH_P_UINT, "1000", 1, 1u << 24, NULL, "entries in the list"},
    BENCH_PARAM_END};

static const struct bench_exp dlist_exps[] = {
    {"dlist", "doubly linked list (RLU paper Fig. 9): forward traversals and update=P % "
              "delete+add, ops/s",
     {&dlist_impls, NULL}, 0, NULL, p_dlist, true, exp_dlist, 0},
};
const struct bench_family bench_dlist_family = {"dlist", dlist_exps,
                                                sizeof dlist_exps / sizeof dlist_exps[0]};
