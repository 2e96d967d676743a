/* The global BRAVO table's first allocation, raced by many threads:
 *  - every thread sees the same table size, a power of two, the one the
 *    environment asks for when it asks;
 *  - fast read holds taken while other threads are still inside the first
 *    allocation work (a reader installed in the table is seen by a writer);
 *  - under ThreadSanitizer, no caller writes the table's mask after the
 *    table is published (a caller that found no table and was overtaken
 *    once stored it again while fast readers read it).
 * The table is allocated once per process, so the race runs in fresh
 * processes: this program runs itself ROUNDS times with --child. */
#include "test.h"
#include <readmostly/bravo_locks.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 8
#define ROUNDS 20

static pthread_barrier_t start;
static rm_bravo_pthread_t lock = RM_BRAVO_PTHREAD_INITIALIZER;
static size_t seen[THREADS];
static long shared_value;

static void racer(void *arg, int i) {
  (void)arg;
  pthread_barrier_wait(&start);
  seen[i] = rm_bravo_table_size();
  for (int k = 0; k < 2000; k++) {
    rm_token_t t;
    CHECK_ERR(rm_bravo_pthread_read_lock(&lock, &t), 0);
    long v = __atomic_load_n(&shared_value, __ATOMIC_RELAXED);
    CHECK(v % 2 == 0); /* a writer leaves it even */
    CHECK_ERR(rm_bravo_pthread_read_unlock(&lock, t), 0);
    if (i == 0 && k % 100 == 0) {
      CHECK_ERR(rm_bravo_pthread_write_lock(&lock), 0);
      __atomic_store_n(&shared_value, shared_value + 1, __ATOMIC_RELAXED);
      __atomic_store_n(&shared_value, shared_value + 1, __ATOMIC_RELAXED);
      CHECK_ERR(rm_bravo_pthread_write_unlock(&lock), 0);
    }
  }
}

static int child(void) {
  CHECK_EQ(pthread_barrier_init(&start, NULL, THREADS), 0);
  test_run_threads(THREADS, racer, NULL);
  size_t n = seen[0];
  CHECK(n != 0 && (n & (n - 1)) == 0);
  for (int i = 1; i < THREADS; i++) CHECK_EQ(seen[i], n);
  const char *env = getenv("READMOSTLY_BRAVO_TABLE_SLOTS");
  if (env) CHECK_EQ(n, strtoull(env, NULL, 10));
  CHECK_EQ(rm_bravo_table_size(), n);
  return 0;
}

static void run_children(const char *self, const char *slots) {
  for (int r = 0; r < ROUNDS; r++) {
    pid_t p = fork();
    CHECK(p >= 0);
    if (p == 0) {
      if (slots)
        setenv("READMOSTLY_BRAVO_TABLE_SLOTS", slots, 1);
      else
        unsetenv("READMOSTLY_BRAVO_TABLE_SLOTS");
      execl(self, self, "--child", (char *)NULL);
      _exit(127);
    }
    int st;
    CHECK_EQ(waitpid(p, &st, 0), p);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      fprintf(stderr, "round %d (slots %s): child status %#x\n", r, slots ? slots : "default",
              st);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--child") == 0) return child();
  static char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  CHECK(len > 0);
  self[len] = '\0';
  run_children(self, NULL);     /* the default size */
  run_children(self, "1");      /* one slot: the mask stays 0 */
  run_children(self, "65536");
  TEST_MAIN_END();
}
