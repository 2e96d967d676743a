/*
 * cross_unlock.c - another thread's unlock meets a reader that is backing
 * out of its slot (docs/preload.md, "Unlock by another thread").
 *
 * Y read-locks L (a fast hold) and hands the hold over; R starts a read
 * lock of L and, between its CAS into a slot and its re-check of the bias,
 * stalls; writer W revokes the bias and waits for the slots of L; main
 * unlocks L, which releases "some" hold: it finds R's slot first (we pick L
 * so that R's slot comes before Y's in the table) and marks it released.
 * R then sees the bias off and backs out.  If its back-out wiped the mark,
 * the release would be lost: Y's slot would stay, and W would wait for it
 * for ever (ETIMEDOUT here).  The back-out must pass the release on, and W
 * must get the lock.
 *
 * The stall is made certain by the debug-yield build of the interposer with
 * READMOSTLY_DEBUG_PAUSE=bravo.read.installed:300000 (every reader pauses
 * 300 ms after its CAS) and READMOSTLY_BRAVO_TABLE_SLOTS=4096 (so that we
 * can compute the slots).  Run without them, and on glibc alone, the same
 * sequence must end the same way: W gets the lock, nothing stays held.
 *
 * Under READMOSTLY_RWLOCK=bravo2d the releaser looks at the lock's column
 * row by row, so R runs on CPU 0 (row 0, looked at first) and Y on CPU 1
 * (with READMOSTLY_BRAVO2D_NODES=off, so that the rows are the CPUs'; the
 * pause is then bravo2d.read.installed).  Exit 77 if CPUs 0 and 1 are not
 * both allowed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <readmostly/bravo.h>
#include <sched.h>

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);    \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)
#define CHECK_ERR(call, err)                                                   \
  do {                                                                         \
    int e_ = (call);                                                           \
    if (e_ != (err)) {                                                         \
      fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d\n", __FILE__,    \
              __LINE__, #call, e_, strerror(e_), (err));                       \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static void sleep_ms(int ms) {
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&d, &d) == -1 && errno == EINTR) {
  }
}

#define NCAND 256
static pthread_rwlock_t cand[NCAND];
static pthread_rwlock_t *L;
static int stage;
static uintptr_t id_y, id_r;

/* BRAVO-2D mode: pin the calling thread to `cpu`. */
static int two_d;
static void pin_if_2d(int cpu) {
  if (!two_d) return;
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  CHECK(sched_setaffinity(0, sizeof s, &s) == 0);
  sched_yield();
}

static void wait_stage(int v) {
  while (__atomic_load_n(&stage, __ATOMIC_ACQUIRE) < v) sleep_ms(1);
}

static void *y_main(void *a) {
  (void)a;
  pin_if_2d(1);
  __atomic_store_n(&id_y, rm_thread_identity(), __ATOMIC_RELEASE);
  wait_stage(1);
  CHECK_ERR(pthread_rwlock_rdlock(L), 0); /* handed to main, never unlocked here */
  __atomic_store_n(&stage, 2, __ATOMIC_RELEASE);
  return NULL;
}

static void *r_main(void *a) {
  (void)a;
  pin_if_2d(0);
  __atomic_store_n(&id_r, rm_thread_identity(), __ATOMIC_RELEASE);
  wait_stage(3);
  CHECK_ERR(pthread_rwlock_rdlock(L), 0);
  CHECK_ERR(pthread_rwlock_unlock(L), 0);
  return NULL;
}

static int w_result = -1;
static void *w_main(void *a) {
  (void)a;
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += 5;
  w_result = pthread_rwlock_timedwrlock(L, &dl);
  if (w_result == 0) CHECK_ERR(pthread_rwlock_unlock(L), 0);
  return NULL;
}

int main(void) {
  alarm(60);
  int preload = dlsym(RTLD_DEFAULT, "readmostly_preload_active") != NULL;
  const char *impl = getenv("READMOSTLY_RWLOCK");
  two_d = preload && impl && strcmp(impl, "bravo2d") == 0;
  if (two_d) {
    cpu_set_t s;
    CHECK(sched_getaffinity(0, sizeof s, &s) == 0);
    if (!CPU_ISSET(0, &s) || !CPU_ISSET(1, &s)) {
      printf("cross_unlock: BRAVO-2D needs CPUs 0 and 1, skipped\n");
      return 77;
    }
  }
  const char *slots = two_d ? NULL : getenv("READMOSTLY_BRAVO_TABLE_SLOTS");
  uintptr_t mask = slots ? (uintptr_t)strtoul(slots, NULL, 0) - 1 : 0;
  pthread_t y, r, w;
  CHECK(pthread_create(&y, NULL, y_main, NULL) == 0);
  CHECK(pthread_create(&r, NULL, r_main, NULL) == 0);
  while (!__atomic_load_n(&id_y, __ATOMIC_ACQUIRE) || !__atomic_load_n(&id_r, __ATOMIC_ACQUIRE))
    sleep_ms(1);
  /* A lock whose slot for R comes before its slot for Y. */
  L = &cand[0];
  if (mask)
    for (int i = 0; i < NCAND; i++) {
      uintptr_t iy = rm_bravo_hash(&cand[i], id_y) & mask;
      uintptr_t ir = rm_bravo_hash(&cand[i], id_r) & mask;
      if (ir < iy) {
        L = &cand[i];
        break;
      }
    }
  CHECK_ERR(pthread_rwlock_init(L, NULL), 0);
  for (int i = 0; i < 3; i++) { /* turn the bias on */
    CHECK_ERR(pthread_rwlock_rdlock(L), 0);
    CHECK_ERR(pthread_rwlock_unlock(L), 0);
  }
  __atomic_store_n(&stage, 1, __ATOMIC_RELEASE); /* Y takes its hold */
  wait_stage(2);
  __atomic_store_n(&stage, 3, __ATOMIC_RELEASE); /* R starts, stalls after its CAS */
  sleep_ms(50);
  CHECK(pthread_create(&w, NULL, w_main, NULL) == 0); /* W revokes, waits for slots */
  sleep_ms(50);
  CHECK_ERR(pthread_rwlock_unlock(L), 0); /* releases a hold: Y's, in effect */
  CHECK(pthread_join(w, NULL) == 0);
  CHECK(pthread_join(r, NULL) == 0);
  CHECK(pthread_join(y, NULL) == 0);
  if (w_result != 0) {
    fprintf(stderr, "cross_unlock: the writer got %d (%s): a release was lost\n", w_result,
            strerror(w_result));
    return 1;
  }
  /* Nothing stays held. */
  CHECK_ERR(pthread_rwlock_trywrlock(L), 0);
  CHECK_ERR(pthread_rwlock_unlock(L), 0);
  CHECK_ERR(pthread_rwlock_destroy(L), 0);
  printf("cross_unlock (%s%s): passed\n", preload ? "preload" : "glibc",
         mask ? ", slots computed" : "");
  return 0;
}
