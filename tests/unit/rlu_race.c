/*
 * rlu_race - the write-clock race, made to happen every time.
 *
 * Built twice over a library compiled with READMOSTLY_RLU_TEST_HOOKS: once
 * with our commit (unit.rlu_race: must see no half commit) and once with the
 * paper's order, READMOSTLY_RLU_NAIVE_CLOCK (unit.rlu_race.naive: must print
 * the violation; CTest checks for it).
 *
 * Objects A = 1 and B = 1.  Writer W1 moves 1 from A to B and commits; it is
 * held (hook CLOCK_READ) after reading the global clock t and before
 * publishing its write clock.  Writer W2 then commits an unrelated object C:
 * with the naive order the clock becomes t + 1 at once; with ours W2 waits
 * for the clock step (hook CLOCK_BUSY).  Reader R enters a section (local
 * clock t + 1 naive, t ours), reads A (W1's write clock is still "infinite":
 * the original, 1), lets W1 go on, waits until W1 has published (hook
 * PUBLISHED), and reads B.  Naive: W1 published t + 1 <= R's clock, so R
 * steals B's copy (2) and sees A + B = 3, half of W1's commit.  Ours: W1's
 * write clock t + 1 is later than R's t, R reads B's original (1), and W1's
 * synchronize waits for R.
 */
#define _GNU_SOURCE
#include "test.h"
#include <readmostly/rlu.h>
#include <unistd.h>

struct acct {
  long v;
};
static struct acct *A, *B, *C;
static rm_rlu_ctx *w1, *w2; /* set by their threads before use */
static int armed, w1_window, w2_blocked, w2_done, r_read_a, w1_published;

static void flag(int *f) { __atomic_store_n(f, 1, __ATOMIC_RELEASE); }
static int is(int *f) { return __atomic_load_n(f, __ATOMIC_ACQUIRE); }
static void await(int *f, const char *what) {
  for (int i = 0; !is(f); i++) {
    if (i > 60 * 10000) {
      fprintf(stderr, "rlu_race: no progress waiting for %s\n", what);
      exit(2);
    }
    usleep(100);
  }
}

static void hook(enum rm_rlu_hook p, rm_rlu_ctx *self) {
  if (!is(&armed)) return;
  rm_rlu_ctx *c1 = __atomic_load_n(&w1, __ATOMIC_ACQUIRE);
  rm_rlu_ctx *c2 = __atomic_load_n(&w2, __ATOMIC_ACQUIRE);
  if (self == c1 && p == RM_RLU_HOOK_CLOCK_READ) {
    flag(&w1_window);
    await(&r_read_a, "the reader's read of A");
  } else if (self == c1 && p == RM_RLU_HOOK_PUBLISHED) {
    flag(&w1_published);
  } else if (self == c2 && p == RM_RLU_HOOK_CLOCK_BUSY) {
    flag(&w2_blocked);
  }
}

static void *writer1(void *arg) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  __atomic_store_n(&w1, self, __ATOMIC_RELEASE);
  rm_rlu_reader_lock(w1);
  struct acct *a = A, *b = B;
  CHECK_ERR(RM_RLU_TRY_LOCK(w1, &a), 0);
  CHECK_ERR(RM_RLU_TRY_LOCK(w1, &b), 0);
  a->v--;
  b->v++;
  rm_rlu_reader_unlock(w1);
  rm_rlu_thread_unregister(w1);
  return NULL;
}

static void *writer2(void *arg) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  __atomic_store_n(&w2, self, __ATOMIC_RELEASE);
  await(&w1_window, "W1 in its window");
  rm_rlu_reader_lock(w2);
  struct acct *c = C;
  CHECK_ERR(RM_RLU_TRY_LOCK(w2, &c), 0);
  c->v++;
  rm_rlu_reader_unlock(w2);
  flag(&w2_done);
  rm_rlu_thread_unregister(w2);
  return NULL;
}

int main(void) {
  rm_rlu_test_hook = hook;
  rm_rlu_ctx *r = rm_rlu_thread_register();
  A = rm_rlu_alloc(sizeof *A);
  B = rm_rlu_alloc(sizeof *B);
  C = rm_rlu_alloc(sizeof *C);
  A->v = 1;
  B->v = 1;
  C->v = 0;
  pthread_t t1, t2;
  flag(&armed);
  pthread_create(&t1, NULL, writer1, NULL);
  pthread_create(&t2, NULL, writer2, NULL);
  /* W2's commit done (naive) or W2 waiting for the clock step (ours). */
  while (!is(&w2_done) && !is(&w2_blocked)) usleep(100);
  rm_rlu_reader_lock(r);
  long a = RM_RLU_DEREF(r, A)->v;
  flag(&r_read_a);
  await(&w1_published, "W1's publication");
  long b = RM_RLU_DEREF(r, B)->v;
  rm_rlu_reader_unlock(r);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  printf("rlu_race: reader saw A=%ld B=%ld (W2 %s)\n", a, b,
         is(&w2_blocked) ? "waited for the clock step" : "committed inside W1's window");
  if (a + b != 2) {
    printf("rlu_race: VIOLATION: half commit (A + B = %ld, expected 2)\n", a + b);
    return 1;
  }
  CHECK_EQ(A->v + B->v, 2);
  CHECK_EQ(C->v, 1);
  rm_rlu_thread_unregister(r);
  TEST_MAIN_END();
}
