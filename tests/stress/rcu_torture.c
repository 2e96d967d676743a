/*
 * rcu_torture - FCP-RCU under torture, after the kernel's rcutorture.
 *
 *   rcu_torture [--readers N] [--fake-writers K] [--seconds S] [--sleepy]
 *               [--switch-fence T] [--signals]
 *
 * One writer keeps replacing the element a shared pointer names and
 * retires the old one, in turn by rm_rcu_synchronize, rm_rcu_call and
 * rm_rcu_defer.  A retired element's "pipe age" grows by one per grace
 * period after its removal (a synchronize ages every element retired
 * through it; a callback ages its element and queues itself again); at age
 * 3 it is poisoned and reused.  Readers take the pointer inside a section
 * (nested sometimes, preempted or asleep inside now and then) and check
 * that the element is not poisoned and its age is 0.  Ages count only
 * grace periods that begin after the removal (the kernel's rcutorture also
 * counts one in progress, hence its limit of 1), and the first of those
 * cannot end while a reader that found the element is still inside: any
 * age above 0 seen from inside is a failure.  Fake writers
 * call rm_rcu_synchronize with random pauses.  Readers register, leave and
 * register again now and then; some go offline between bursts.
 * --switch-fence T switches the process to fence mode T seconds in, while
 * all of this runs (readers that skipped their fence must be covered by
 * the switch's barrier; the gate, readmostly/fcp.h, closes).
 *
 * --signals adds a storm of SIGUSR1 and SIGUSR2 (each handler may interrupt
 * the other) sent to every reader, fake writer and the writer, whose
 * handlers run read sections (nested 1 to 3 deep) with the readers' checks.
 * The readers then nest up to 3 deep and, between sections, go offline and
 * online, read while offline, synchronize, wait for callbacks
 * (rm_rcu_barrier), report quiescent states, and unregister and register
 * again, so that handlers land inside each of these.  A handler that leaves
 * its thread's state changed shows as a reader whose checks of
 * rm_rcu_read_ongoing() fail, as an unprotected read (poisoned or aged
 * element), or as a grace period that never ends: a watchdog fails the
 * test when no grace period completes for 30 s.
 *
 * Any failure exits 1 with counts.
 */
#include "test.h"
#include <readmostly/rcu.h>
#include <signal.h>
#include <unistd.h>

#define POOL 256
#define LIVE 0x4C495645u
#define DEAD 0xDEADDEADu

struct elem {
  struct rm_rcu_head head;
  uint32_t magic;
  uint32_t age;    /* grace periods since retirement */
  uint32_t mode;   /* how it was retired */
  struct elem *next_free, *next_retired;
} __attribute__((aligned(64)));

static struct elem pool[POOL];
static struct elem *free_list;
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct elem *current;
static int stop;
static uint64_t reads, bad_age, bad_magic, writes, fake_syncs;
static uint64_t ages_hist[4];
static int signals;                      /* --signals */
static uint64_t handler_reads, bad_state; /* --signals */

static struct elem *elem_get(void) {
  for (;;) {
    pthread_mutex_lock(&free_lock);
    struct elem *e = free_list;
    if (e) free_list = e->next_free;
    pthread_mutex_unlock(&free_lock);
    if (e) return e;
    rm_rcu_barrier(); /* callbacks still ageing elements: let them finish */
  }
}

static void elem_put(struct elem *e) {
  __atomic_store_n(&e->magic, DEAD, __ATOMIC_RELAXED);
  pthread_mutex_lock(&free_lock);
  e->next_free = free_list;
  free_list = e;
  pthread_mutex_unlock(&free_lock);
}

static void age_one(struct elem *e) {
  uint32_t a = __atomic_load_n(&e->age, __ATOMIC_RELAXED) + 1;
  __atomic_store_n(&e->age, a, __ATOMIC_RELAXED);
}

static void age_cb(struct rm_rcu_head *h) {
  struct elem *e = (struct elem *)(void *)h;
  age_one(e);
  if (__atomic_load_n(&e->age, __ATOMIC_RELAXED) >= 3) elem_put(e);
  else rm_rcu_call(&e->head, age_cb); /* callbacks may queue callbacks */
}

static void age_defer(void *p) {
  struct elem *e = (struct elem *)p;
  age_one(e);
  if (__atomic_load_n(&e->age, __ATOMIC_RELAXED) >= 3) elem_put(e);
  else rm_rcu_call(&e->head, age_cb);
}

static uint64_t rnd(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

static __thread volatile sig_atomic_t sig_registered;
/* Threads whose signal handlers read register first (readmostly/rcu.h,
 * "Signal handlers"). */
static void register_for_signals(void) {
  if (!signals) return;
  CHECK_ERR(rm_rcu_register_thread(), 0);
  sig_registered = 1;
}

static void *writer(void *arg) {
  (void)arg;
  struct elem *retired = NULL; /* retired by synchronize, still ageing */
  uint64_t seed = 88172645463325252ull;
  unsigned i = 0;
  register_for_signals();
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    struct elem *n = elem_get();
    n->age = 0;
    n->mode = i % 3;
    __atomic_store_n(&n->magic, LIVE, __ATOMIC_RELAXED);
    struct elem *old = rm_rcu_xchg_pointer(&current, n);
    switch (old->mode) {
    case 0:
      old->next_retired = retired;
      retired = old;
      CHECK_ERR(rm_rcu_synchronize(), 0);
      /* Every element retired before this grace period ages by one. */
      for (struct elem **pp = &retired; *pp;) {
        struct elem *e = *pp;
        age_one(e);
        if (e->age >= 3) {
          *pp = e->next_retired;
          elem_put(e);
        } else {
          pp = &e->next_retired;
        }
      }
      break;
    case 1:
      rm_rcu_call(&old->head, age_cb);
      break;
    default:
      rm_rcu_defer(age_defer, old);
      break;
    }
    __atomic_fetch_add(&writes, 1, __ATOMIC_RELAXED);
    i++;
    if (rnd(&seed) % 64 == 0) usleep(50);
  }
  /* Drain: age the synchronize-retired elements out, run callbacks. */
  while (retired) {
    CHECK_ERR(rm_rcu_synchronize(), 0);
    for (struct elem **pp = &retired; *pp;) {
      struct elem *e = *pp;
      age_one(e);
      if (e->age >= 3) {
        *pp = e->next_retired;
        elem_put(e);
      } else {
        pp = &e->next_retired;
      }
    }
  }
  return NULL;
}

static int sleepy;

/* One read of the shared element inside `depth` nested sections, with the
 * oracle's checks; returns the age it saw. */
static uint32_t read_once(uint64_t *seed, int depth) {
  for (int i = 0; i < depth; i++) rm_rcu_read_lock();
  if (!rm_rcu_read_ongoing()) __atomic_fetch_add(&bad_state, 1, __ATOMIC_RELAXED);
  struct elem *e = rm_rcu_dereference(current);
  uint64_t r = rnd(seed);
  if (r % 1024 == 0) sched_yield();                 /* preempted inside */
  else if (sleepy && r % 4096 == 1) usleep(200);    /* asleep inside */
  uint32_t m = __atomic_load_n(&e->magic, __ATOMIC_RELAXED);
  uint32_t a = __atomic_load_n(&e->age, __ATOMIC_RELAXED);
  for (int i = 0; i < depth; i++) rm_rcu_read_unlock();
  if (m != LIVE) __atomic_fetch_add(&bad_magic, 1, __ATOMIC_RELAXED);
  if (a > 0) __atomic_fetch_add(&bad_age, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&ages_hist[a > 3 ? 3 : a], 1, __ATOMIC_RELAXED);
  return a;
}

/* --signals: the handler reads (both signals; each may interrupt the
 * other).  It must leave its thread as it found it: whether the thread was
 * inside a section is the same after as before. */
static __thread uint64_t sig_seed;
static void on_signal(int sig) {
  (void)sig;
  int saved = errno;
  /* ThreadSanitizer delivers signals at its own safe points, where a read
   * lock of an unregistered thread (which allocates) is reported as a
   * signal-unsafe call: there, handlers read only in registered threads. */
  if (!TEST_UNDER_TSAN || sig_registered) {
    if (sig_seed == 0) sig_seed = 0xA5A5A5A5A5A5ull ^ (uint64_t)(uintptr_t)&sig_seed;
    bool before = rm_rcu_read_ongoing();
    read_once(&sig_seed, 1 + (int)(rnd(&sig_seed) % 3));
    if (rm_rcu_read_ongoing() != before) __atomic_fetch_add(&bad_state, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&handler_reads, 1, __ATOMIC_RELAXED);
  }
  errno = saved;
}

/* --signals: what a reader does between sections, chosen at random, so
 * that handlers land inside each. */
static void between_sections(uint64_t r) {
  switch (r % 7) {
  case 0: /* offline for a moment, online */
    rm_rcu_thread_offline();
    for (volatile int i = 0; i < 200; i++) {
    }
    rm_rcu_thread_online();
    break;
  case 1: { /* a section while offline (the thread stays offline) */
    rm_rcu_thread_offline();
    uint64_t s = r;
    read_once(&s, 1 + (int)((r >> 8) % 2));
    rm_rcu_thread_online();
    break;
  }
  case 2:
    CHECK_ERR(rm_rcu_synchronize(), 0);
    break;
  case 3:
    if ((r >> 8) % 8 == 0) CHECK_ERR(rm_rcu_barrier(), 0);
    break;
  case 4:
    sig_registered = 0;
    CHECK_ERR(rm_rcu_unregister_thread(), 0);
    CHECK_ERR(rm_rcu_register_thread(), 0);
    sig_registered = 1;
    break;
  case 5:
    rm_rcu_quiescent_state();
    break;
  default:
    break;
  }
  if (rm_rcu_read_ongoing()) __atomic_fetch_add(&bad_state, 1, __ATOMIC_RELAXED);
}

static void *reader(void *arg) {
  uint64_t seed = 0x9E3779B97F4A7C15ull * (uint64_t)((intptr_t)arg + 1);
  uint64_t n = 0;
  register_for_signals();
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    uint64_t r0 = rnd(&seed);
    int depth = signals ? 1 + (int)(r0 % 3) : (r0 % 8 == 0 ? 2 : 1);
    read_once(&seed, depth);
    if (signals && rm_rcu_read_ongoing()) __atomic_fetch_add(&bad_state, 1, __ATOMIC_RELAXED);
    n++;
    uint64_t r = rnd(&seed);
    if (signals && n % 64 == 0) {
      between_sections(r >> 4);
    } else if (!signals && n % 20000 == 0) { /* leave and come back, or idle offline */
      if (r & 1) {
        rm_rcu_unregister_thread();
        rm_rcu_register_thread();
      } else {
        rm_rcu_thread_offline();
        usleep(100);
        rm_rcu_thread_online();
      }
    }
  }
  __atomic_fetch_add(&reads, n, __ATOMIC_RELAXED);
  sig_registered = 0;
  rm_rcu_unregister_thread();
  return NULL;
}

/* --signals: the storm.  Victims are the threads below; the main thread
 * joins them only after this one stopped. */
static pthread_t victims[96];
static int nvictims;
static void *signaller(void *a) {
  (void)a;
  uint64_t seed = 0x5161u;
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    for (int i = 0; i < nvictims; i++)
      pthread_kill(victims[i], rnd(&seed) & 1 ? SIGUSR1 : SIGUSR2);
    if (rnd(&seed) % 4 == 0) sched_yield();
  }
  return NULL;
}

/* --signals: fail instead of hanging when grace periods stop completing. */
static void *watchdog(void *a) {
  (void)a;
  uint64_t last = 0;
  int still = 0;
  for (;;) {
    struct rm_rcu_stats st;
    rm_rcu_get_stats(&st);
    uint64_t now = st.grace_periods + __atomic_load_n(&writes, __ATOMIC_RELAXED);
    still = now == last ? still + 1 : 0;
    last = now;
    if (still >= 30) {
      printf("FAIL: no grace period and no write completed for 30 s (a grace period hangs)\n");
      fflush(stdout);
      _exit(1);
    }
    if (__atomic_load_n(&stop, __ATOMIC_ACQUIRE) == 2) break;
    sleep(1);
  }
  return NULL;
}

static void *fake_writer(void *arg) {
  uint64_t seed = 0xC0FFEEull + (uint64_t)(intptr_t)arg;
  register_for_signals();
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    CHECK_ERR(rm_rcu_synchronize(), 0);
    __atomic_fetch_add(&fake_syncs, 1, __ATOMIC_RELAXED);
    usleep((useconds_t)(rnd(&seed) % 200));
  }
  return NULL;
}

static double switch_after = -1;
static void *switcher(void *a) {
  (void)a;
  usleep((useconds_t)(switch_after * 1e6));
  rm_fcp_switch_to_fence();
  return NULL;
}

int main(int argc, char **argv) {
  int nreaders = 6, nfake = 2;
  double seconds = 2;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--readers") && i + 1 < argc) nreaders = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--fake-writers") && i + 1 < argc) nfake = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--sleepy")) sleepy = 1;
    else if (!strcmp(argv[i], "--switch-fence") && i + 1 < argc) switch_after = atof(argv[++i]);
    else if (!strcmp(argv[i], "--signals")) signals = 1;
    else {
      fprintf(stderr, "usage: rcu_torture [--readers N] [--fake-writers K] [--seconds S] [--sleepy] "
                      "[--switch-fence T] [--signals]\n");
      return 2;
    }
  }
  const char *scale = getenv("READMOSTLY_TORTURE_SCALE");
  if (scale && atof(scale) > 0) seconds *= atof(scale);
  for (int i = 1; i < POOL; i++) elem_put(&pool[i]);
  pool[0].magic = LIVE;
  current = &pool[0];
  printf("rcu_torture: %d readers, %d fake writers, %.1f s, %s, %s mode%s\n", nreaders, nfake,
         seconds, sleepy ? "sleepy" : "busy", rm_fcp_membarrier_mode() ? "membarrier" : "fence",
         signals ? ", signal storm" : "");
  pthread_t w, rd[64], fk[16], sg, wd;
  CHECK(nreaders <= 64 && nfake <= 16);
  if (signals) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask); /* SIGUSR1 may interrupt SIGUSR2's handler and back */
    CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
    CHECK_EQ(sigaction(SIGUSR2, &sa, NULL), 0);
    CHECK_EQ(pthread_create(&wd, NULL, watchdog, NULL), 0);
  }
  for (int i = 0; i < nreaders; i++) CHECK_EQ(pthread_create(&rd[i], NULL, reader, (void *)(intptr_t)i), 0);
  for (int i = 0; i < nfake; i++) CHECK_EQ(pthread_create(&fk[i], NULL, fake_writer, (void *)(intptr_t)i), 0);
  CHECK_EQ(pthread_create(&w, NULL, writer, NULL), 0);
  if (signals) {
    for (int i = 0; i < nreaders; i++) victims[nvictims++] = rd[i];
    for (int i = 0; i < nfake; i++) victims[nvictims++] = fk[i];
    victims[nvictims++] = w;
    CHECK_EQ(pthread_create(&sg, NULL, signaller, NULL), 0);
  }
  pthread_t sw;
  if (switch_after >= 0) CHECK_EQ(pthread_create(&sw, NULL, switcher, NULL), 0);
  usleep((useconds_t)(seconds * 1e6));
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  if (signals) pthread_join(sg, NULL); /* no signal to a thread that is joined */
  if (switch_after >= 0) {
    pthread_join(sw, NULL);
    CHECK(!rm_fcp_membarrier_mode());
    CHECK(rm_rcu_domain()->gate & RM_FCP_GATE_SHUT);
  }
  pthread_join(w, NULL);
  for (int i = 0; i < nreaders; i++) pthread_join(rd[i], NULL);
  for (int i = 0; i < nfake; i++) pthread_join(fk[i], NULL);
  for (int i = 0; i < 5; i++) CHECK_ERR(rm_rcu_barrier(), 0); /* chains of three callbacks */
  if (signals) {
    __atomic_store_n(&stop, 2, __ATOMIC_RELEASE);
    pthread_join(wd, NULL);
    printf("signal handlers read %llu times\n", (unsigned long long)handler_reads);
    if (bad_state) {
      printf("FAIL: %llu times a thread's section state was not what it should be\n",
             (unsigned long long)bad_state);
      return 1;
    }
    CHECK(handler_reads > 0);
  }
  struct rm_rcu_stats st;
  rm_rcu_get_stats(&st);
  printf("reads %llu (age 0: %llu, 1: %llu, 2: %llu, 3+: %llu), writes %llu, fake syncs %llu, "
         "grace periods %llu (shared %llu of %llu calls), callbacks %llu in %llu batches\n",
         (unsigned long long)reads, (unsigned long long)ages_hist[0],
         (unsigned long long)ages_hist[1], (unsigned long long)ages_hist[2],
         (unsigned long long)ages_hist[3], (unsigned long long)writes,
         (unsigned long long)fake_syncs, (unsigned long long)st.grace_periods,
         (unsigned long long)st.sync_shared, (unsigned long long)st.sync_calls,
         (unsigned long long)st.callbacks_run, (unsigned long long)st.callback_batches);
  if (bad_age || bad_magic) {
    printf("FAIL: %llu reads saw an element at age >= 1, %llu saw a poisoned one\n",
           (unsigned long long)bad_age, (unsigned long long)bad_magic);
    return 1;
  }
  CHECK(reads > 0 && writes > 0);
  /* Every element is back in the pool or current: none lost. */
  int nfree = 0;
  for (struct elem *e = free_list; e; e = e->next_free) nfree++;
  CHECK_EQ(nfree, POOL - 1);
  printf("ok\n");
  return 0;
}
