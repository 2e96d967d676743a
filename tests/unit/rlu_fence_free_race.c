/*
 * rlu_fence_free_race - the fence-free synchronize against a reader whose
 * core holds several of its stores, made to happen every time.
 *
 * Built over the library with READMOSTLY_RLU_TEST_HOOKS.  The main thread
 * owns context M and never runs a section with it: it writes M's run
 * counter and local clock itself, as another thread's core would let them
 * become visible.  What M's thread "really" did, in program order:
 *
 *   section 1 (run counter 1), exit (2), enter section 3 (3), load the
 *   clock: wc - 1, from before writer W's clock step; read X's original.
 *
 * With the fence-free entry nothing orders the stores of 1, 2 and 3 before
 * that clock load: all three may sit in the store buffer while it runs.
 * W locks X, sets it to 2 and commits; its synchronize (hooks) sees M as
 * follows: at first run counter 0 and local clock 0 (nothing visible yet);
 * at its first round over unsettled contexts (hook UNSURE), run counter 2
 * (stores 1 and 2 drained, 3 not); after its membarrier (hook BARRIER),
 * run counter 3 and local clock wc - 1 (the barrier drains everything).
 *
 * Section 3 reads originals and began before the step: W must not write X
 * back before it leaves.  A synchronize that takes "the run counter moved"
 * as settled commits at once, while section 3 is open ("VIOLATION");
 * the right one issues the membarrier, sees section 3 and waits until the
 * main thread ends it (run counter 4).
 *
 * Skipped (77) when the fence-free entry does not run (no membarrier,
 * ThreadSanitizer).
 */
#define _GNU_SOURCE
#include "test.h"
#include <readmostly/rlu.h>
#include <unistd.h>

struct obj {
  long v;
};
static struct obj *X;
static rm_rlu_ctx *M, *W; /* M: the modelled reader; W: the writer */
static int armed, moved, barrier_seen, committed;

static void flag(int *f) { __atomic_store_n(f, 1, __ATOMIC_RELEASE); }
static int is(int *f) { return __atomic_load_n(f, __ATOMIC_ACQUIRE); }

/* M's counters as other threads see them. */
static void show(uint64_t run, uint64_t clock) {
  struct rm_rlu_ctx_hot *h = (struct rm_rlu_ctx_hot *)M;
  if (clock != UINT64_MAX) __atomic_store_n(&h->local_clock, clock, __ATOMIC_RELEASE);
  __atomic_store_n(&h->run_cnt, run, __ATOMIC_RELEASE);
}

static void hook(enum rm_rlu_hook p, rm_rlu_ctx *self) {
  /* W's commit only (not the synchronize of its unregistration). */
  if (!is(&armed) || is(&committed) || self != __atomic_load_n(&W, __ATOMIC_ACQUIRE)) return;
  if (p == RM_RLU_HOOK_UNSURE && !is(&moved)) {
    show(2, UINT64_MAX); /* 1 and 2 drained; 3 still buffered */
    flag(&moved);
  } else if (p == RM_RLU_HOOK_BARRIER && !is(&barrier_seen)) {
    /* The barrier drained M's core: section 3, with the clock it read
     * before W's step (W's step made the clock wc). */
    show(3, rm_rlu_clock() - 1);
    flag(&barrier_seen);
  }
}

static void *writer(void *arg) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK(self != NULL);
  rm_rlu_reader_lock(self);
  struct obj *x = X;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &x), 0);
  x->v = 2;
  __atomic_store_n(&W, self, __ATOMIC_RELEASE);
  rm_rlu_reader_unlock(self); /* commit: the hooks run inside */
  flag(&committed);
  rm_rlu_thread_unregister(self);
  return NULL;
}

int main(void) {
  CHECK_ERR(rm_rlu_init(&(struct rm_rlu_options){.flavor = RM_RLU_FINE, .fence_free = true}), 0);
  rm_rlu_test_hook = hook;
  M = rm_rlu_thread_register();
  CHECK(M != NULL);
  if (!rm_rlu_fence_free()) {
    printf("rlu_fence_free_race: the fence-free entry does not run here: skipped\n");
    rm_rlu_thread_unregister(M);
    return 77;
  }
  X = rm_rlu_alloc(sizeof *X);
  X->v = 1;
  flag(&armed);
  pthread_t t;
  pthread_create(&t, NULL, writer, NULL);
  /* The commit ends without a barrier (the bug), or the barrier shows
   * section 3 (no time limit: CTest's timeout reports a hang). */
  while (!is(&committed) && !is(&barrier_seen)) usleep(100);
  int bad = 0;
  if (!is(&barrier_seen)) {
    printf("rlu_fence_free_race: VIOLATION: the commit ended while section 3 (clock before "
           "the step) was open, without a membarrier; X is now %ld\n",
           __atomic_load_n(&X->v, __ATOMIC_ACQUIRE));
    bad = 1;
  } else {
    /* Section 3 reads the original; W waits for it, however long. */
    for (int i = 0; i < 20 && !bad; i++) {
      if (is(&committed) || __atomic_load_n(&X->v, __ATOMIC_ACQUIRE) != 1) {
        printf("rlu_fence_free_race: VIOLATION: X written back (%ld) while section 3 was open\n",
               __atomic_load_n(&X->v, __ATOMIC_ACQUIRE));
        bad = 1;
      }
      usleep(1000);
    }
  }
  show(4, UINT64_MAX); /* section 3 ends */
  pthread_join(t, NULL);
  CHECK(is(&moved));
  CHECK_EQ(X->v, 2);
  rm_rlu_thread_unregister(M);
  if (bad) return 1;
  printf("rlu_fence_free_race: the commit waited for section 3 (membarrier, then its exit)\n");
  TEST_MAIN_END();
}
