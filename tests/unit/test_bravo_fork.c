/* BRAVO and fork(), and threads that exit:
 *  - the forking thread's fast and slow read holds and write holds are the
 *    child's: it can release them and then write-lock;
 *  - another thread's fast read hold stays held in the child (as glibc);
 *  - a slot left by a reader that lost the race with a revoking writer (it
 *    held nothing) never blocks the lock in the child;
 *  - locks no one held are free and usable in the child;
 *  - a slot whose lock was unmapped (freed while another thread held it
 *    fast) is cleared without the fork handler touching the lock;
 *  - threads that took fast read locks and exited leave nothing behind. */
#include "test.h"
#include <readmostly/bravo_locks.h>
#include <readmostly/thread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static rm_bravo_pft_t mine_fast = RM_BRAVO_PFT_INITIALIZER;
static rm_bravo_pft_t mine_slow = RM_BRAVO_PFT_INITIALIZER;
static rm_bravo_futexrw_t mine_write = RM_BRAVO_FUTEXRW_INITIALIZER;
static rm_bravo_pft_t others = RM_BRAVO_PFT_INITIALIZER;
static rm_bravo_pft_t stale = RM_BRAVO_PFT_INITIALIZER;
static rm_bravo_pthread_t unheld = RM_BRAVO_PTHREAD_INITIALIZER;

static int other_state;
/* A lock that another thread fast-read-holds and that is then unmapped
 * (a program that ignored EBUSY and freed it): the fork handler must not
 * touch its memory. */
static rm_bravo_pft_t *doomed;
static rm_token_t doomed_tok;

static rm_token_t fast_read(rm_bravo_pft_t *l) {
  rm_token_t t = 0;
  for (int k = 0; k < 100; k++) {
    CHECK_ERR(rm_bravo_pft_read_lock(l, &t), 0);
    if (t != RM_TOKEN_NONE) return t;
    CHECK_ERR(rm_bravo_pft_read_unlock(l, t), 0);
  }
  CHECK(!"no fast read after 100 tries");
  return 0;
}

static void other_thread(void *arg, int i) {
  (void)arg; (void)i;
  rm_token_t t = fast_read(&others);
  doomed_tok = fast_read(doomed);
  __atomic_store_n(&other_state, 1, __ATOMIC_RELEASE);
  while (__atomic_load_n(&other_state, __ATOMIC_ACQUIRE) != 2) test_sleep_ms(1);
  CHECK_ERR(rm_bravo_pft_read_unlock(&others, t), 0);
  /* The unlock touches only the slot, never the (unmapped) lock. */
  CHECK_ERR(rm_bravo_pft_read_unlock(doomed, doomed_tok), 0);
}

static void short_lived(void *arg, int i) {
  rm_bravo_pft_t *l = (rm_bravo_pft_t *)arg;
  (void)i;
  for (int k = 0; k < 1000; k++) {
    rm_token_t t;
    CHECK_ERR(rm_bravo_pft_read_lock(l, &t), 0);
    CHECK_ERR(rm_bravo_pft_read_unlock(l, t), 0);
  }
}

#define CHILD_CHECK(c)                                                  \
  do {                                                                  \
    if (!(c)) {                                                         \
      fprintf(stderr, "child: %s:%d: %s\n", __FILE__, __LINE__, #c);    \
      _exit(1);                                                         \
    }                                                                   \
  } while (0)

int main(void) {
  CHECK_ERR(rm_bravo_set_inhibit_multiplier(0), 0); /* bias returns at once */

  /* Threads that used the fast path and exited leave no slot behind. */
  rm_bravo_pft_t gone = RM_BRAVO_PFT_INITIALIZER;
  size_t before = rm_thread_count();
  for (int round = 0; round < 3; round++) test_run_threads(6, short_lived, &gone);
  CHECK_EQ(rm_thread_count(), before);
  CHECK_ERR(rm_bravo_pft_write_trylock(&gone), 0);
  CHECK_ERR(rm_bravo_pft_write_unlock(&gone), 0);

  /* Set up the holds. */
  rm_token_t tf = fast_read(&mine_fast);
  rm_token_t ts;
  rm_bravo_pft_write_lock(&mine_slow); /* bias off after this */
  rm_bravo_pft_write_unlock(&mine_slow);
  CHECK_ERR(rm_bravo_set_inhibit_multiplier(1000000u), 0);
  mine_slow.bias.inhibit_until = UINT64_MAX; /* keep it slow */
  CHECK_ERR(rm_bravo_pft_read_lock(&mine_slow, &ts), 0);
  CHECK_EQ(ts, RM_TOKEN_NONE);
  CHECK_ERR(rm_bravo_set_inhibit_multiplier(0), 0);
  CHECK_ERR(rm_bravo_futexrw_write_lock(&mine_write), 0);

  doomed = (rm_bravo_pft_t *)mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(doomed != MAP_FAILED);
  CHECK_ERR(rm_bravo_pft_init(doomed), 0);
  pthread_t th;
  struct test_thread_arg_ oa = {other_thread, NULL, 0};
  CHECK_EQ(pthread_create(&th, NULL, test_thread_main_, &oa), 0);
  while (__atomic_load_n(&other_state, __ATOMIC_ACQUIRE) != 1) test_sleep_ms(1);

  /* The lost race, made deterministic: a reader installed `stale` in a slot,
   * a writer cleared RBias and went away, and the reader has not yet taken
   * its slot back when fork() happens.  (We install it by hand.) */
  rm_token_t tst = fast_read(&stale);
  CHECK_ERR(rm_bravo_pft_read_unlock(&stale, tst), 0);
  CHECK_EQ(stale.bias.rbias, 1);
  /* The loser is another thread: use a slot other than our own (the
   * forking thread is never mid-way through a read lock in the child). */
  uintptr_t idx = (uintptr_t)((uintptr_t *)tst - rm_bravo_table.slots);
  uintptr_t *slot = &rm_bravo_table.slots[(idx + 1) & rm_bravo_table.mask];
  CHECK(rm_bravo_table.mask > 0);
  CHECK_EQ(*slot, 0);
  stale.bias.rbias = 0;            /* a writer revoked ... */
  *slot = (uintptr_t)&stale.bias;  /* ... while the loser's slot was in */

  uintptr_t *doomed_slot = (uintptr_t *)doomed_tok;
  CHECK_EQ(*doomed_slot, (uintptr_t)doomed);
  CHECK_EQ(munmap(doomed, 4096), 0);

  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    alarm(20); /* a hang in the child is a failure, not a stuck test */
    rm_token_t t;
    /* The forking thread's holds are the child's. */
    CHILD_CHECK(rm_bravo_pft_write_trylock(&mine_fast) == EBUSY);
    CHILD_CHECK(rm_bravo_pft_read_unlock(&mine_fast, tf) == 0);
    CHILD_CHECK(rm_bravo_pft_write_lock(&mine_fast) == 0);
    CHILD_CHECK(rm_bravo_pft_write_unlock(&mine_fast) == 0);
    CHILD_CHECK(rm_bravo_pft_write_trylock(&mine_slow) == EBUSY);
    CHILD_CHECK(rm_bravo_pft_read_unlock(&mine_slow, ts) == 0);
    CHILD_CHECK(rm_bravo_pft_write_lock(&mine_slow) == 0);
    CHILD_CHECK(rm_bravo_pft_write_unlock(&mine_slow) == 0);
    CHILD_CHECK(rm_bravo_futexrw_read_trylock(&mine_write, &t) == EBUSY);
    CHILD_CHECK(rm_bravo_futexrw_write_unlock(&mine_write) == 0);
    CHILD_CHECK(rm_bravo_futexrw_read_lock(&mine_write, &t) == 0);
    CHILD_CHECK(rm_bravo_futexrw_read_unlock(&mine_write, t) == 0);
    /* The other thread's fast hold remains (it never unlocks here). */
    CHILD_CHECK(rm_bravo_pft_write_trylock(&others) == EBUSY);
    CHILD_CHECK(rm_bravo_pft_read_lock(&others, &t) == 0); /* readers still fine */
    CHILD_CHECK(rm_bravo_pft_read_unlock(&others, t) == 0);
    /* The lost race's slot is gone: re-bias, then a writer must revoke and
     * must not wait for anyone. */
    CHILD_CHECK(*slot == 0);
    CHILD_CHECK(rm_bravo_pft_read_lock(&stale, &t) == 0);
    CHILD_CHECK(rm_bravo_pft_read_unlock(&stale, t) == 0);
    CHILD_CHECK(stale.bias.rbias == 1);
    CHILD_CHECK(rm_bravo_pft_write_lock(&stale) == 0);
    CHILD_CHECK(rm_bravo_pft_write_unlock(&stale) == 0);
    /* The unmapped lock's slot was cleared without reading the lock (its
     * bias cannot be known; it cannot be taken any more anyway). */
    CHILD_CHECK(*doomed_slot == 0);
    /* A lock no one held is free; threads work in the child. */
    struct timespec dl = test_deadline_ms(CLOCK_MONOTONIC, 1000);
    CHILD_CHECK(rm_bravo_pthread_write_timedlock(&unheld, CLOCK_MONOTONIC, &dl) == 0);
    CHILD_CHECK(rm_bravo_pthread_write_unlock(&unheld) == 0);
    rm_bravo_pft_t fresh = RM_BRAVO_PFT_INITIALIZER;
    if (!TEST_UNDER_TSAN) test_run_threads(3, short_lived, &fresh);
    CHILD_CHECK(rm_bravo_pft_write_lock(&fresh) == 0);
    CHILD_CHECK(rm_bravo_pft_write_unlock(&fresh) == 0);
    /* Only the forking thread may remain registered (if it ever was). */
    CHILD_CHECK(rm_thread_count() <= 1);
    _exit(0);
  }
  int st = 0;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  if (WIFSIGNALED(st)) fprintf(stderr, "child killed by signal %d\n", WTERMSIG(st));
  CHECK(WIFEXITED(st));
  CHECK_EQ(WEXITSTATUS(st), 0);

  /* Parent: undo the staged slot and release everything. */
  *slot = 0;
  __atomic_store_n(&other_state, 2, __ATOMIC_RELEASE);
  pthread_join(th, NULL);
  CHECK_ERR(rm_bravo_pft_read_unlock(&mine_fast, tf), 0);
  CHECK_ERR(rm_bravo_pft_read_unlock(&mine_slow, ts), 0);
  CHECK_ERR(rm_bravo_futexrw_write_unlock(&mine_write), 0);
  CHECK_ERR(rm_bravo_pft_write_trylock(&others), 0);
  CHECK_ERR(rm_bravo_pft_write_unlock(&others), 0);
  TEST_MAIN_END();
}
