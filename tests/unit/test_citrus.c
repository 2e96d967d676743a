/*
 * test_citrus - the contract of both Citrus trees (readmostly/rcu_citrus.h,
 * readmostly/rlu_citrus.h), one thread: the empty tree, insert / remove /
 * contains and their return values, duplicates, removal of nodes with 0, 1
 * and 2 children (the successor being the right child or deeper), the
 * shape after each (the BST order of every node, checked on the structure),
 * the in-order walk and its early stop, and a long random sequence against
 * a plain array; the RLU tree fine-grained, coarse-grained and with
 * deferral.
 */
#include "test.h"
#include <readmostly/rcu_citrus.h>
#include <readmostly/rlu_citrus.h>

#define NKEYS 512

/* ---- a tree-independent view: the walk's keys ------------------------------- */
struct collect {
  int64_t keys[NKEYS + 16];
  int n;
  int stop_after; /* 0: never */
};
static int collect_fn(int64_t key, void *arg) {
  struct collect *c = (struct collect *)arg;
  CHECK(c->n < NKEYS + 16);
  c->keys[c->n++] = key;
  return c->stop_after != 0 && c->n >= c->stop_after;
}

/* ---- the two trees behind one interface ------------------------------------------ */
struct tree {
  bool rlu;
  struct rm_rcu_citrus *rc;
  struct rm_rlu_citrus *lc;
  rm_rlu_ctx *self;
};
static int t_insert(struct tree *t, int64_t k) {
  return t->rlu ? rm_rlu_citrus_insert(t->self, t->lc, k) : rm_rcu_citrus_insert(t->rc, k);
}
static int t_remove(struct tree *t, int64_t k) {
  return t->rlu ? rm_rlu_citrus_remove(t->self, t->lc, k) : rm_rcu_citrus_remove(t->rc, k);
}
static int t_contains(struct tree *t, int64_t k) {
  return t->rlu ? rm_rlu_citrus_contains(t->self, t->lc, k) : rm_rcu_citrus_contains(t->rc, k);
}
static long t_walk(struct tree *t, struct collect *c) {
  c->n = 0;
  return t->rlu ? rm_rlu_citrus_walk(t->self, t->lc, collect_fn, c)
                : rm_rcu_citrus_walk(t->rc, collect_fn, c);
}

/* The structure, read directly (one thread, no section needed for RCU;
 * inside a section for RLU).  Checks lo < key < hi at every node and
 * returns the node count; *root_key gets the key at the top. */
static long rcu_shape(struct rm_rcu_citrus_node *n, int64_t lo, int64_t hi) {
  if (n == NULL) return 0;
  CHECK(n->key > lo && n->key < hi);
  CHECK(!n->marked && n->lock == 0);
  return 1 + rcu_shape(n->child[0], lo, n->key) + rcu_shape(n->child[1], n->key, hi);
}
static long rlu_shape(rm_rlu_ctx *self, struct rm_rlu_citrus_node *n, int64_t lo, int64_t hi) {
  n = RM_RLU_DEREF(self, n);
  if (n == NULL) return 0;
  CHECK(n->key > lo && n->key < hi);
  return 1 + rlu_shape(self, n->child[0], lo, n->key) + rlu_shape(self, n->child[1], n->key, hi);
}
static long t_shape(struct tree *t) {
  if (!t->rlu) return rcu_shape(t->rc->root->child[0], INT64_MIN, INT64_MAX);
  rm_rlu_reader_lock(t->self);
  struct rm_rlu_citrus_node *root = RM_RLU_DEREF(t->self, t->lc->root);
  long n = rlu_shape(t->self, root->child[0], INT64_MIN, INT64_MAX);
  rm_rlu_reader_unlock(t->self);
  return n;
}
/* The key of the node at a path from the top ("" top, "l", "rl", ...), or
 * -1 for no node. */
static int64_t t_at(struct tree *t, const char *path) {
  int64_t k = -1;
  if (!t->rlu) {
    struct rm_rcu_citrus_node *n = t->rc->root->child[0];
    for (const char *p = path; *p && n; p++) n = n->child[*p == 'r'];
    return n ? n->key : -1;
  }
  rm_rlu_reader_lock(t->self);
  struct rm_rlu_citrus_node *n = RM_RLU_DEREF(t->self, t->lc->root);
  n = RM_RLU_DEREF(t->self, n->child[0]);
  for (const char *p = path; *p && n; p++) n = RM_RLU_DEREF(t->self, n->child[*p == 'r']);
  if (n) k = n->key;
  rm_rlu_reader_unlock(t->self);
  return k;
}

/* The set is exactly ref[]: contains, walk (ascending), structure. */
static void check_set(struct tree *t, const char *ref, int nkeys) {
  static struct collect c;
  c.stop_after = 0;
  long n = t_walk(t, &c);
  long expect = 0;
  for (int k = 0; k < nkeys; k++) {
    expect += ref[k];
    CHECK_EQ(t_contains(t, k), ref[k]);
  }
  CHECK_EQ(n, expect);
  CHECK_EQ(c.n, expect);
  for (int i = 1; i < c.n; i++) CHECK(c.keys[i - 1] < c.keys[i]);
  for (int i = 0; i < c.n; i++) CHECK(c.keys[i] >= 0 && c.keys[i] < nkeys && ref[c.keys[i]]);
  CHECK_EQ(t_shape(t), expect);
}

static void test_contract(struct tree *t) {
  char ref[100] = {0};
  /* Empty tree. */
  check_set(t, ref, 100);
  CHECK_EQ(t_remove(t, 5), 0);
  CHECK_EQ(t_contains(t, 5), 0);
  /* Insert, duplicates. */
  static const int keys[] = {50, 30, 70, 20, 40, 60, 80, 35, 45, 65, 75, 85, 90};
  for (unsigned i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    CHECK_EQ(t_insert(t, keys[i]), 1);
    CHECK_EQ(t_insert(t, keys[i]), 0);
    ref[keys[i]] = 1;
  }
  check_set(t, ref, 100);
  /*            50
   *       30        70
   *     20  40    60    80
   *        35 45    65 75  85
   *                          90          */
  CHECK_EQ(t_at(t, ""), 50);
  CHECK_EQ(t_at(t, "lrl"), 35);
  CHECK_EQ(t_at(t, "rrrr"), 90);
  /* A leaf. */
  CHECK_EQ(t_remove(t, 20), 1);
  CHECK_EQ(t_remove(t, 20), 0);
  ref[20] = 0;
  CHECK_EQ(t_at(t, "ll"), -1);
  check_set(t, ref, 100);
  /* One child (right): 60 -> 65 takes its place. */
  CHECK_EQ(t_remove(t, 60), 1);
  ref[60] = 0;
  CHECK_EQ(t_at(t, "rl"), 65);
  check_set(t, ref, 100);
  /* One child (left): 40 loses 45, then 40 -> 35. */
  CHECK_EQ(t_remove(t, 45), 1);
  ref[45] = 0;
  CHECK_EQ(t_remove(t, 40), 1);
  ref[40] = 0;
  CHECK_EQ(t_at(t, "lr"), 35);
  check_set(t, ref, 100);
  /* Two children, the successor is the right child (85 for 80). */
  CHECK_EQ(t_remove(t, 80), 1);
  ref[80] = 0;
  CHECK_EQ(t_at(t, "rr"), 85);
  CHECK_EQ(t_at(t, "rrl"), 75);
  CHECK_EQ(t_at(t, "rrr"), 90);
  check_set(t, ref, 100);
  /* Two children, the successor deeper: 50's right subtree is 70 with left
   * child 65, so 65 takes the top and 70 loses its left child. */
  CHECK_EQ(t_remove(t, 50), 1);
  ref[50] = 0;
  CHECK_EQ(t_at(t, ""), 65);
  CHECK_EQ(t_at(t, "rl"), -1);
  CHECK_EQ(t_at(t, "r"), 70);
  check_set(t, ref, 100);
  /* Two children, the successor deeper and with a right child: 70 gets
   * the left child 67, which gets the right child 68. */
  CHECK_EQ(t_insert(t, 67), 1);
  CHECK_EQ(t_insert(t, 68), 1);
  ref[67] = ref[68] = 1;
  CHECK_EQ(t_remove(t, 65), 1); /* top: successor 67 (under 70), its right child 68 */
  ref[65] = 0;
  CHECK_EQ(t_at(t, ""), 67);
  CHECK_EQ(t_at(t, "rl"), 68);
  check_set(t, ref, 100);
  /* Early stop of the walk. */
  static struct collect c;
  c.stop_after = 3;
  CHECK_EQ(t_walk(t, &c), 3);
  CHECK_EQ(c.keys[0], 30);
  CHECK_EQ(c.keys[2], 67);
  /* Remove everything. */
  for (int k = 0; k < 100; k++) {
    CHECK_EQ(t_remove(t, k), ref[k]);
    ref[k] = 0;
  }
  check_set(t, ref, 100);
  /* Negative and extreme keys. */
  CHECK_EQ(t_insert(t, INT64_MIN), 1);
  CHECK_EQ(t_insert(t, -7), 1);
  CHECK_EQ(t_insert(t, INT64_MAX - 1), 1);
  CHECK_EQ(t_contains(t, INT64_MIN), 1);
  CHECK_EQ(t_contains(t, -7), 1);
  CHECK_EQ(t_contains(t, INT64_MAX - 1), 1);
  CHECK_EQ(t_remove(t, -7), 1);
  CHECK_EQ(t_remove(t, INT64_MIN), 1);
  CHECK_EQ(t_remove(t, INT64_MAX - 1), 1);
  check_set(t, ref, 100);
}

/* A long random sequence against an array. */
static void test_random(struct tree *t, unsigned seed) {
  static char ref[NKEYS];
  memset(ref, 0, sizeof ref);
  for (int i = 0; i < 30000; i++) {
    seed = seed * 1103515245u + 12345u;
    int64_t k = (int64_t)((seed >> 8) % NKEYS);
    int op = (int)((seed >> 24) % 3);
    if (op == 0) {
      CHECK_EQ(t_insert(t, k), !ref[k]);
      ref[k] = 1;
    } else if (op == 1) {
      CHECK_EQ(t_remove(t, k), ref[k]);
      ref[k] = 0;
    } else {
      CHECK_EQ(t_contains(t, k), ref[k]);
    }
    if (i % 5000 == 4999) check_set(t, ref, NKEYS);
  }
  check_set(t, ref, NKEYS);
}

static void run_rcu(void) {
  struct tree t = {false, rm_rcu_citrus_create(), NULL, NULL};
  CHECK(t.rc != NULL);
  test_contract(&t);
  test_random(&t, 1);
  rm_rcu_citrus_destroy(t.rc);
  CHECK_EQ(rm_rcu_barrier(), 0); /* removed nodes freed by their callbacks */
}

static void run_rlu(enum rm_rlu_flavor flavor, unsigned defer) {
  struct rm_rlu_options o = {.flavor = flavor, .max_defer = defer, .stats = true};
  CHECK_EQ(rm_rlu_init(&o), 0);
  struct tree t = {true, NULL, rm_rlu_citrus_create_flavor(flavor == RM_RLU_COARSE), NULL};
  CHECK(t.lc != NULL);
  t.self = rm_rlu_thread_register();
  CHECK(t.self != NULL);
  test_contract(&t);
  test_random(&t, 2);
  rm_rlu_sync(t.self);
  rm_rlu_thread_unregister(t.self);
  rm_rlu_citrus_destroy(t.lc);
}

int main(void) {
  run_rcu();
  run_rlu(RM_RLU_FINE, 0);
  run_rlu(RM_RLU_COARSE, 0);
  run_rlu(RM_RLU_FINE, 10);
  TEST_MAIN_END();
}
