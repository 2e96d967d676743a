/*
 * fork_release.c - fork() while another thread releases the forking
 * thread's passive read hold (READMOSTLY_RWLOCK=prwlock; docs/preload.md,
 * "fork()").
 *
 * Main read-locks L (a passive hold in its FCP record).  Thread X unlocks
 * L, which takes main's hold away in three steps: it marks the record's
 * `nest` RM_FCP_NEST_BUSY, issues a membarrier, then clears the hold.  Main
 * forks between the first and the last step.  X does not exist in the
 * child, so nothing there would ever clear the mark: the child's unlock of
 * its hold, and its write lock, must still work (they spun for ever on the
 * mark before the fork handler cleared it).
 *
 * The window is made certain by the debug-yield build of the interposer
 * with READMOSTLY_DEBUG_PAUSE=fcp.release_foreign.busy:500000 (X pauses
 * 500 ms with the mark set).  Without it the test exits 77 (skipped): the
 * child could not know whether X's release came before the fork.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);    \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static pthread_rwlock_t L = PTHREAD_RWLOCK_INITIALIZER;

static void sleep_ms(int ms) {
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&d, &d) == -1 && errno == EINTR) {
  }
}

static int x_result = -1;
static void *x_main(void *a) {
  (void)a;
  x_result = pthread_rwlock_unlock(&L); /* releases main's hold */
  return NULL;
}

int main(void) {
  const char *mode = getenv("READMOSTLY_RWLOCK");
  const char *pause = getenv("READMOSTLY_DEBUG_PAUSE");
  if (!dlsym(RTLD_DEFAULT, "readmostly_preload_active") || !mode || strcmp(mode, "prwlock") ||
      !pause || !strstr(pause, "fcp.release_foreign.busy")) {
    printf("fork_release: needs the interposer in prwlock mode with the pause; skipped\n");
    return 77;
  }
  alarm(60);
  CHECK(pthread_rwlock_rdlock(&L) == 0);
  pthread_t x;
  CHECK(pthread_create(&x, NULL, x_main, NULL) == 0);
  sleep_ms(100); /* X has marked our record and pauses */
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    alarm(10); /* a spin on the mark kills the child */
    int e = pthread_rwlock_unlock(&L);
    if (e != 0) {
      fprintf(stderr, "child: unlock of our own hold returned %d\n", e);
      _exit(1);
    }
    if (pthread_rwlock_wrlock(&L) != 0 || pthread_rwlock_unlock(&L) != 0) _exit(2);
    if (pthread_rwlock_rdlock(&L) != 0 || pthread_rwlock_rdlock(&L) != 0) _exit(3);
    if (pthread_rwlock_unlock(&L) != 0 || pthread_rwlock_unlock(&L) != 0) _exit(4);
    _exit(0);
  }
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid);
  if (WIFSIGNALED(st)) fprintf(stderr, "fork_release: child killed by signal %d\n", WTERMSIG(st));
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  CHECK(pthread_join(x, NULL) == 0);
  CHECK(x_result == 0);
  /* X released our hold in the parent: the lock is free. */
  CHECK(pthread_rwlock_trywrlock(&L) == 0);
  CHECK(pthread_rwlock_unlock(&L) == 0);
  printf("fork_release: passed\n");
  return 0;
}
