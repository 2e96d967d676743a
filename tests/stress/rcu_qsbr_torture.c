/*
 * rcu_qsbr_torture - the QSBR flavor (readmostly/rcu_qsbr.h) under
 * torture, after the kernel's rcutorture (the sibling of rcu_torture.c).
 *
 *   rcu_qsbr_torture [--readers N] [--fake-writers K] [--seconds S]
 *
 * One writer keeps replacing the element a shared pointer names and
 * retires the old one, in turn by rm_rcu_qsbr_synchronize,
 * rm_rcu_qsbr_call and rm_rcu_qsbr_defer.  A retired element's "pipe age"
 * grows by one per grace period after its removal; at age 3 it is poisoned
 * and reused (its plain `value` rewritten: under ThreadSanitizer a grace
 * period that ended early shows as a data race with a reader's plain read
 * of it).  Readers take the pointer inside a section (nested sometimes,
 * yielding the CPU inside now and then: preempted while online) and check
 * that the element is live, its age 0 and its value consistent; between
 * bursts they announce a quiescent state, and now and then go offline
 * (asleep), unregister and register again, or synchronize while online.
 * Fake writers call rm_rcu_qsbr_synchronize with random pauses, half of
 * them registered and online.  A watchdog fails the test when no grace
 * period completes for 30 s.  Any failure exits 1 with counts.
 */
#include "test.h"
#include <readmostly/rcu_qsbr.h>
#include <sched.h>
#include <unistd.h>

#define POOL 256
#define LIVE 0x4C495645u
#define DEAD 0xDEADDEADu

struct elem {
  struct rm_rcu_head head;
  uint32_t magic;  /* atomic */
  uint32_t age;    /* atomic: grace periods since retirement */
  uint64_t value;  /* plain: written only while no reader can see the element */
  uint64_t check;  /* plain: ~value */
  struct elem *next_free, *next_retired;
} __attribute__((aligned(64)));

static struct elem pool[POOL];
static struct elem *free_list;
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct elem *current;
static int stop;
static uint64_t reads, bad_age, bad_magic, bad_value, writes, fake_syncs, reader_syncs;
static uint64_t progress; /* grace periods the writer saw end */

static void elem_put(struct elem *e) {
  __atomic_store_n(&e->magic, DEAD, __ATOMIC_RELAXED);
  pthread_mutex_lock(&free_lock);
  e->next_free = free_list;
  free_list = e;
  pthread_mutex_unlock(&free_lock);
}

static struct elem *elem_get(void) {
  for (;;) {
    pthread_mutex_lock(&free_lock);
    struct elem *e = free_list;
    if (e) free_list = e->next_free;
    pthread_mutex_unlock(&free_lock);
    if (e) return e;
    CHECK_ERR(rm_rcu_qsbr_barrier(), 0); /* callbacks still ageing elements */
  }
}

/* One grace period more for e (a callback): age it, and after the third
 * poison and free it, else wait for the next. */
static void age_cb(struct rm_rcu_head *h) {
  struct elem *e = (struct elem *)(void *)h;
  uint32_t a = __atomic_add_fetch(&e->age, 1u, __ATOMIC_RELAXED);
  if (a >= 3) elem_put(e);
  else rm_rcu_qsbr_call(&e->head, age_cb);
}
static void age_defer(void *p) { age_cb(&((struct elem *)p)->head); }

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void *writer(void *arg) {
  (void)arg;
  uint64_t seed = 88172645463325252ull, n = 0;
  struct elem *sync_list = NULL;
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    struct elem *e = elem_get();
    n++;
    e->value = n;
    e->check = ~n;
    __atomic_store_n(&e->age, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&e->magic, LIVE, __ATOMIC_RELAXED);
    struct elem *old = rm_rcu_xchg_pointer(&current, e);
    __atomic_fetch_add(&writes, 1, __ATOMIC_RELAXED);
    switch (rnd(&seed) % 3) {
    case 0: { /* synchronize: ages every element retired this way */
      old->next_retired = sync_list;
      sync_list = old;
      CHECK_ERR(rm_rcu_qsbr_synchronize(), 0);
      __atomic_fetch_add(&progress, 1, __ATOMIC_RELEASE);
      struct elem **pp = &sync_list;
      while (*pp) {
        struct elem *x = *pp;
        if (__atomic_add_fetch(&x->age, 1u, __ATOMIC_RELAXED) >= 3) {
          *pp = x->next_retired;
          elem_put(x);
        } else {
          pp = &x->next_retired;
        }
      }
      break;
    }
    case 1:
      rm_rcu_qsbr_call(&old->head, age_cb);
      break;
    default:
      CHECK_ERR(rm_rcu_qsbr_defer(age_defer, old), 0);
      break;
    }
    if (rnd(&seed) % 64 == 0) test_sleep_ms(1);
  }
  return NULL;
}

static void read_one(void) {
  struct elem *p = rm_rcu_dereference(current);
  uint32_t m = __atomic_load_n(&p->magic, __ATOMIC_RELAXED);
  uint32_t a = __atomic_load_n(&p->age, __ATOMIC_RELAXED);
  if (m != LIVE) __atomic_fetch_add(&bad_magic, 1, __ATOMIC_RELAXED);
  if (a != 0) __atomic_fetch_add(&bad_age, 1, __ATOMIC_RELAXED);
  if (p->value != ~p->check) __atomic_fetch_add(&bad_value, 1, __ATOMIC_RELAXED);
}

static void *reader(void *arg) {
  uint64_t seed = 0x9E3779B97F4A7C15ull * (uint64_t)((uintptr_t)arg + 1), local = 0;
  CHECK_ERR(rm_rcu_qsbr_register_thread(), 0);
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    unsigned burst = 1 + (unsigned)(rnd(&seed) % 64);
    for (unsigned i = 0; i < burst; i++) {
      uint64_t r = rnd(&seed);
      rm_rcu_qsbr_read_lock();
      read_one();
      if (r % 8 == 0) { /* nested */
        rm_rcu_qsbr_read_lock();
        read_one();
        rm_rcu_qsbr_read_unlock();
      }
      if (r % 512 == 1) sched_yield(); /* preempted inside, online */
      read_one();
      rm_rcu_qsbr_read_unlock();
      local++;
    }
    rm_rcu_qsbr_quiescent_state();
    uint64_t r = rnd(&seed) % 1024;
    if (r < 8) { /* asleep, offline */
      rm_rcu_qsbr_thread_offline();
      test_sleep_ms(1);
      rm_rcu_qsbr_thread_online();
    } else if (r < 10) { /* leave and come back */
      CHECK_ERR(rm_rcu_qsbr_unregister_thread(), 0);
      sched_yield();
      CHECK_ERR(rm_rcu_qsbr_register_thread(), 0);
    } else if (r < 11) { /* synchronize while online */
      CHECK_ERR(rm_rcu_qsbr_synchronize(), 0);
      __atomic_fetch_add(&reader_syncs, 1, __ATOMIC_RELAXED);
    }
  }
  __atomic_fetch_add(&reads, local, __ATOMIC_RELAXED);
  CHECK_ERR(rm_rcu_qsbr_unregister_thread(), 0);
  return NULL;
}

static void *fake_writer(void *arg) {
  uint64_t seed = 0xD1B54A32D192ED03ull * (uint64_t)((uintptr_t)arg + 1);
  bool registered = ((uintptr_t)arg % 2) == 1;
  if (registered) CHECK_ERR(rm_rcu_qsbr_register_thread(), 0);
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    CHECK_ERR(rm_rcu_qsbr_synchronize(), 0);
    __atomic_fetch_add(&fake_syncs, 1, __ATOMIC_RELAXED);
    struct timespec ts = {0, (long)(rnd(&seed) % 200000)};
    nanosleep(&ts, NULL);
    if (registered) rm_rcu_qsbr_quiescent_state();
  }
  return NULL;
}

int main(int argc, char **argv) {
  int nreaders = 6, nfake = 2;
  double seconds = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--readers")) nreaders = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--fake-writers")) nfake = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
  }
  const char *scale = getenv("READMOSTLY_TORTURE_SCALE");
  if (scale && atoi(scale) > 0) seconds *= atoi(scale);
  for (int i = 1; i < POOL; i++) elem_put(&pool[i]);
  pool[0].value = 0;
  pool[0].check = ~(uint64_t)0;
  pool[0].magic = LIVE;
  current = &pool[0];
  pthread_t w, rd[64], fk[16];
  if (nreaders > 64) nreaders = 64;
  if (nfake > 16) nfake = 16;
  for (int i = 0; i < nreaders; i++)
    CHECK_EQ(pthread_create(&rd[i], NULL, reader, (void *)(uintptr_t)i), 0);
  for (int i = 0; i < nfake; i++)
    CHECK_EQ(pthread_create(&fk[i], NULL, fake_writer, (void *)(uintptr_t)i), 0);
  CHECK_EQ(pthread_create(&w, NULL, writer, NULL), 0);
  uint64_t last = 0, t_last = 0;
  for (long ms = 0; ms < (long)(seconds * 1000); ms += 10) {
    test_sleep_ms(10);
    uint64_t p = __atomic_load_n(&progress, __ATOMIC_ACQUIRE) +
                 __atomic_load_n(&fake_syncs, __ATOMIC_RELAXED);
    if (p != last) {
      last = p;
      t_last = (uint64_t)ms;
    } else if ((uint64_t)ms - t_last > 30000) {
      fprintf(stderr, "FAIL: no grace period for 30 s\n");
      exit(1);
    }
  }
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < nreaders; i++) pthread_join(rd[i], NULL);
  for (int i = 0; i < nfake; i++) pthread_join(fk[i], NULL);
  pthread_join(w, NULL);
  CHECK_ERR(rm_rcu_qsbr_barrier(), 0);
  struct rm_rcu_stats st;
  rm_rcu_qsbr_get_stats(&st);
  printf("reads %llu writes %llu fake syncs %llu reader syncs %llu grace periods %llu "
         "callbacks %llu; bad age %llu bad magic %llu bad value %llu\n",
         (unsigned long long)reads, (unsigned long long)writes, (unsigned long long)fake_syncs,
         (unsigned long long)reader_syncs, (unsigned long long)st.grace_periods,
         (unsigned long long)st.callbacks_run, (unsigned long long)bad_age,
         (unsigned long long)bad_magic, (unsigned long long)bad_value);
  CHECK(writes > 0 && reads > 0);
  CHECK_EQ(bad_age, 0);
  CHECK_EQ(bad_magic, 0);
  CHECK_EQ(bad_value, 0);
  TEST_MAIN_END();
}
