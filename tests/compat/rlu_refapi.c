/*
 * rlu_refapi - a program written only against the RLU reference
 * implementation's API (its rlu.h names), built with readmostly's
 * compat/rlu.h first on the include path.
 *
 *   rlu_refapi fine|coarse MAX_WS THREADS MILLISECONDS
 *
 * A hash table of sorted lists of integers; thread data embedded by value
 * in a per-thread struct (as the reference benchmark does); the first
 * thread fills the table with is_no_quiescence set; then every thread runs
 * 20% updates (insert or remove, each counted) and lookups for the given
 * time.  After RLU_THREAD_FINISH the table, read without RLU, must hold
 * exactly the initial size plus the successful inserts minus the
 * successful removes, each bucket sorted.  Exit status 0 when it does.
 */
#include "rlu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct node {
  long val;
  struct node *p_next;
} node_t;

typedef struct {
  node_t *p_head;
} list_t;

#define N_BUCKETS 16
#define VAL_MIN (-1L)
#define VAL_MAX (1L << 40)

static list_t buckets[N_BUCKETS];
static int coarse;
static int stop;

typedef struct {
  long id;
  unsigned seed;
  long diff, n_ops;
  rlu_thread_data_t rlu_td; /* by value, as real code does */
  pthread_barrier_t *barrier;
  int initial, range;
} thread_data_t;

static node_t *new_node(long v, node_t *next) {
  node_t *n = (node_t *)RLU_ALLOC(sizeof(node_t));
  if (n == NULL) abort();
  n->val = v;
  n->p_next = next;
  return n;
}

static int enter_writer(rlu_thread_data_t *self) {
  RLU_READER_LOCK(self);
  if (coarse && !RLU_TRY_WRITER_LOCK(self, RLU_GENERAL_WRITER_LOCK)) {
    RLU_ABORT(self);
    return 0;
  }
  return 1;
}

static int list_contains(rlu_thread_data_t *self, list_t *l, long val) {
  node_t *prev, *next;
  RLU_READER_LOCK(self);
  prev = (node_t *)RLU_DEREF(self, l->p_head);
  next = (node_t *)RLU_DEREF(self, prev->p_next);
  while (next->val < val) {
    prev = next;
    next = (node_t *)RLU_DEREF(self, prev->p_next);
  }
  int found = next->val == val;
  RLU_READER_UNLOCK(self);
  return found;
}

static int list_add(rlu_thread_data_t *self, list_t *l, long val) {
  node_t *prev, *next;
restart:
  if (!enter_writer(self)) goto restart;
  prev = (node_t *)RLU_DEREF(self, l->p_head);
  next = (node_t *)RLU_DEREF(self, prev->p_next);
  while (next->val < val) {
    prev = next;
    next = (node_t *)RLU_DEREF(self, prev->p_next);
  }
  int result = next->val != val;
  if (result) {
    if (coarse) {
      RLU_LOCK(self, &prev);
      RLU_LOCK(self, &next);
    } else if (!RLU_TRY_LOCK(self, &prev) || !RLU_TRY_LOCK(self, &next)) {
      RLU_ABORT(self);
      goto restart;
    }
    node_t *n = new_node(val, NULL);
    RLU_ASSIGN_PTR(self, &n->p_next, next);
    RLU_ASSIGN_PTR(self, &prev->p_next, n);
    if (!RLU_IS_SAME_PTRS(n->p_next, next)) abort();
  }
  RLU_READER_UNLOCK(self);
  return result;
}

static int list_remove(rlu_thread_data_t *self, list_t *l, long val) {
  node_t *prev, *next, *after;
restart:
  if (!enter_writer(self)) goto restart;
  prev = (node_t *)RLU_DEREF(self, l->p_head);
  next = (node_t *)RLU_DEREF(self, prev->p_next);
  while (next->val < val) {
    prev = next;
    next = (node_t *)RLU_DEREF(self, prev->p_next);
  }
  int result = next->val == val;
  if (result) {
    after = (node_t *)RLU_DEREF(self, next->p_next);
    if (coarse) {
      RLU_LOCK(self, &prev);
      RLU_LOCK(self, &next);
    } else if (!RLU_TRY_LOCK(self, &prev) || !RLU_TRY_LOCK(self, &next)) {
      RLU_ABORT(self);
      goto restart;
    }
    RLU_ASSIGN_PTR(self, &prev->p_next, after);
    RLU_FREE(self, next);
  }
  RLU_READER_UNLOCK(self);
  return result;
}

static unsigned rnd(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return *s >> 8;
}

static void *worker(void *arg) {
  thread_data_t *d = (thread_data_t *)arg;
  rlu_thread_data_t *self = &d->rlu_td;
  RLU_THREAD_INIT(self);
  if (d->id == 0) {
    self->is_no_quiescence = 1;
    int i = 0;
    while (i < d->initial) {
      long k = (long)(rnd(&d->seed) % (unsigned)d->range) + 1;
      if (list_add(self, &buckets[k % N_BUCKETS], k)) i++;
    }
    self->is_no_quiescence = 0;
  }
  pthread_barrier_wait(d->barrier);
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
    unsigned op = rnd(&d->seed) % 100;
    long k = (long)(rnd(&d->seed) % (unsigned)d->range) + 1;
    list_t *l = &buckets[k % N_BUCKETS];
    if (op < 10) d->diff += list_add(self, l, k);
    else if (op < 20) d->diff -= list_remove(self, l, k);
    else (void)list_contains(self, l, k);
    d->n_ops++;
  }
  RLU_THREAD_FINISH(self);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: rlu_refapi fine|coarse MAX_WS THREADS MILLISECONDS\n");
    return 2;
  }
  coarse = !strcmp(argv[1], "coarse");
  int max_ws = atoi(argv[2]), nthreads = atoi(argv[3]), ms = atoi(argv[4]);
  RLU_INIT(coarse ? RLU_TYPE_COARSE_GRAINED : RLU_TYPE_FINE_GRAINED, max_ws);
  for (int b = 0; b < N_BUCKETS; b++)
    buckets[b].p_head = new_node(VAL_MIN, new_node(VAL_MAX, NULL));
  thread_data_t *data = (thread_data_t *)calloc((size_t)nthreads, sizeof *data);
  pthread_t *t = (pthread_t *)calloc((size_t)nthreads, sizeof *t);
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)nthreads + 1);
  const int initial = 256;
  for (int i = 0; i < nthreads; i++) {
    data[i].id = i;
    data[i].seed = 77u * (unsigned)i + 1;
    data[i].barrier = &barrier;
    data[i].initial = initial;
    data[i].range = 2 * initial;
    pthread_create(&t[i], NULL, worker, &data[i]);
  }
  pthread_barrier_wait(&barrier);
  usleep((useconds_t)ms * 1000);
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  long expect = initial, ops = 0;
  for (int i = 0; i < nthreads; i++) {
    pthread_join(t[i], NULL);
    expect += data[i].diff;
    ops += data[i].n_ops;
  }
  /* No RLU from here: RLU_THREAD_FINISH wrote every commit back. */
  long size = 0;
  int bad = 0;
  for (int b = 0; b < N_BUCKETS; b++) {
    long last = VAL_MIN - 1;
    for (node_t *n = buckets[b].p_head; n != NULL; n = n->p_next) {
      if (n->val <= last) bad = 1;
      if (n->val != VAL_MIN && n->val != VAL_MAX) {
        size++;
        if (n->val % N_BUCKETS != b) bad = 1;
      }
      last = n->val;
      if (!RLU_IS_UNLOCKED(n)) bad = 1;
    }
  }
  printf("rlu_refapi: %s max_ws=%d threads=%d: %ld operations, size %ld (expected %ld)%s\n",
         argv[1], max_ws, nthreads, ops, size, expect, bad ? ", BROKEN LIST" : "");
  RLU_PRINT_STATS();
  RLU_FINISH();
  for (int b = 0; b < N_BUCKETS; b++) {
    node_t *n = buckets[b].p_head;
    while (n != NULL) {
      node_t *next = n->p_next;
      RLU_FREE(NULL, n);
      n = next;
    }
  }
  pthread_barrier_destroy(&barrier);
  free(data);
  free(t);
  return size == expect && !bad ? 0 : 1;
}
