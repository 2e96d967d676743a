/*
 * torture_pthread.c - a program that only knows pthread_rwlock_t, with an
 * oracle: writers move a multi-word record through a sentinel state, readers
 * check it is never torn.  Readers mix plain, recursive, try and timed read
 * locks; writers mix plain, try and timed write locks.  Usage:
 *   torture_pthread READERS WRITERS SECONDS
 * Run with more threads than cores under LD_PRELOAD (and, to revoke on
 * every write, READMOSTLY_BRAVO_N=0).  Exit 1 on any violation.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NLOCKS 4
#define WORDS 8
#define SENTINEL (-1L)
static struct {
  pthread_rwlock_t l;
  long w[WORDS];
  long readers_inside; /* atomically counted: never nonzero under a writer */
} obj[NLOCKS];
static int stop;
static long violations, reads, writes;

static unsigned long rnd(unsigned long *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void check_record(int k) {
  long v = obj[k].w[0];
  for (int i = 1; i < WORDS; i++)
    if (obj[k].w[i] != v + i || v == SENTINEL) {
      __atomic_fetch_add(&violations, 1, __ATOMIC_RELAXED);
      return;
    }
}

static void *reader(void *a) {
  unsigned long s = (unsigned long)(uintptr_t)a * 2654435761u + 1;
  long n = 0;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
    int k = (int)(rnd(&s) % NLOCKS), how = (int)(rnd(&s) % 8), depth = 1;
    int e;
    if (how == 0) {
      e = pthread_rwlock_tryrdlock(&obj[k].l);
      if (e == EBUSY) continue;
    } else if (how == 1) {
      struct timespec t;
      clock_gettime(CLOCK_MONOTONIC, &t);
      t.tv_nsec += 200000;
      if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
      e = pthread_rwlock_clockrdlock(&obj[k].l, CLOCK_MONOTONIC, &t);
      if (e == ETIMEDOUT) continue;
    } else {
      e = pthread_rwlock_rdlock(&obj[k].l);
    }
    if (e) {
      fprintf(stderr, "torture: read lock returned %d\n", e);
      exit(1);
    }
    if (how == 2) { /* recursive */
      if (pthread_rwlock_rdlock(&obj[k].l) != 0) exit(1);
      depth = 2;
    }
    __atomic_fetch_add(&obj[k].readers_inside, 1, __ATOMIC_ACQ_REL);
    check_record(k);
    if ((n & 1023) == 0) sched_yield(); /* be preempted inside now and then */
    /* Now and then a long section: writers that wait for it hold the
     * underlying lock and give way to the readers that park behind them. */
    if ((n & 4095) == 2048) usleep(3000);
    check_record(k);
    __atomic_fetch_sub(&obj[k].readers_inside, 1, __ATOMIC_ACQ_REL);
    while (depth--)
      if (pthread_rwlock_unlock(&obj[k].l) != 0) exit(1);
    n++;
  }
  __atomic_fetch_add(&reads, n, __ATOMIC_RELAXED);
  return NULL;
}

static void *writer(void *a) {
  unsigned long s = (unsigned long)(uintptr_t)a * 40503u + 7;
  long n = 0;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
    int k = (int)(rnd(&s) % NLOCKS), how = (int)(rnd(&s) % 4), e;
    if (how == 0) {
      e = pthread_rwlock_trywrlock(&obj[k].l);
      if (e == EBUSY) continue;
    } else if (how == 1) {
      struct timespec t;
      clock_gettime(CLOCK_REALTIME, &t);
      t.tv_nsec += 500000;
      if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
      e = pthread_rwlock_timedwrlock(&obj[k].l, &t);
      if (e == ETIMEDOUT) continue;
    } else {
      e = pthread_rwlock_wrlock(&obj[k].l);
    }
    if (e) {
      fprintf(stderr, "torture: write lock returned %d\n", e);
      exit(1);
    }
    if (__atomic_load_n(&obj[k].readers_inside, __ATOMIC_ACQUIRE) != 0)
      __atomic_fetch_add(&violations, 1, __ATOMIC_RELAXED);
    long base = obj[k].w[0] + 1000;
    for (int i = 0; i < WORDS; i++) obj[k].w[i] = SENTINEL;
    for (int i = 0; i < WORDS; i++) obj[k].w[i] = base + i;
    if (pthread_rwlock_unlock(&obj[k].l) != 0) exit(1);
    n++;
    if ((n & 15) == 0) usleep(50); /* leave room for the bias to come back */
  }
  __atomic_fetch_add(&writes, n, __ATOMIC_RELAXED);
  return NULL;
}

int main(int argc, char **argv) {
  int nr = argc > 1 ? atoi(argv[1]) : 6, nw = argc > 2 ? atoi(argv[2]) : 2;
  double secs = argc > 3 ? atof(argv[3]) : 2;
  alarm((unsigned)secs + 120);
  const char *ep = getenv("EXPECT_PRELOAD");
  if (ep && strcmp(ep, "1") == 0 && !dlsym(RTLD_DEFAULT, "readmostly_preload_active")) {
    fprintf(stderr, "torture: the interposer is not loaded\n");
    return 1;
  }
  for (int k = 0; k < NLOCKS; k++) {
    if (k % 2) pthread_rwlock_init(&obj[k].l, NULL);
    else {
      pthread_rwlock_t z = PTHREAD_RWLOCK_INITIALIZER;
      obj[k].l = z;
    }
    for (int i = 0; i < WORDS; i++) obj[k].w[i] = i;
  }
  pthread_t t[64];
  int n = 0;
  for (int i = 0; i < nr && n < 64; i++) pthread_create(&t[n++], NULL, reader, (void *)(uintptr_t)(i + 1));
  for (int i = 0; i < nw && n < 64; i++) pthread_create(&t[n++], NULL, writer, (void *)(uintptr_t)(i + 1));
  struct timespec d = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
  nanosleep(&d, NULL);
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  for (int k = 0; k < NLOCKS; k++) {
    check_record(k);
    if (pthread_rwlock_destroy(&obj[k].l) != 0) violations++;
  }
  printf("torture_pthread: %d readers, %d writers: %ld reads, %ld writes, %ld violations\n", nr, nw,
         reads, writes, violations);
  return violations != 0 || reads == 0 || (nw > 0 && writes == 0);
}
