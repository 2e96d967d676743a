/* The resizable visible-readers table (readmostly/bravo_dyn.h):
 *  - a reader published before a resize (its slot in the table being
 *    closed) is found by a revocation after it: the writer waits for it;
 *    readers that arrive meanwhile publish in the new table;
 *  - the old table closes only once its readers have left: a second resize
 *    is EBUSY until then, and then succeeds;
 *  - a table used before is reopened when it becomes current again;
 *  - the policy grows the table when readers collide and shrinks it when
 *    revocations scan with no collisions;
 *  - argument checks (EINVAL, EBUSY). */
#include "test.h"
#include <readmostly/bravo_dyn.h>

static rm_bravodyn_ba_t locks[64];
#define NLOCKS (int)(sizeof locks / sizeof locks[0])

static bool is_fast(rm_token_t t) { return t != RM_TOKEN_NONE && t != 0; }
static uint32_t word(rm_bravodyn_ba_t *l) { return __atomic_load_n(&l->bias.rbias, __ATOMIC_ACQUIRE); }

static struct rm_bravo_dyn_info info(void) {
  struct rm_bravo_dyn_info d;
  CHECK_ERR(rm_bravo_dyn_get(&d), 0);
  return d;
}

/* Is tok a slot of the current table? */
static bool in_current(rm_token_t tok) {
  struct rm_bravo_dtab *c = __atomic_load_n(&rm_bravo_dyn.cur, __ATOMIC_SEQ_CST);
  uintptr_t *s = (uintptr_t *)tok;
  return s >= c->slots && s <= c->slots + c->mask;
}

static rm_token_t fast_read(rm_bravodyn_ba_t *l) {
  for (int i = 0; i < 1000; i++) {
    rm_token_t t;
    CHECK_ERR(rm_bravodyn_ba_read_lock(l, &t), 0);
    if (is_fast(t)) return t;
    CHECK_ERR(rm_bravodyn_ba_read_unlock(l, t), 0);
  }
  CHECK(!"no fast read hold after 1000 tries");
  return 0;
}

static int wstate; /* 1 started, 2 holds the lock, 3 released */
static void *writer_main(void *p) {
  rm_bravodyn_ba_t *l = (rm_bravodyn_ba_t *)p;
  __atomic_store_n(&wstate, 1, __ATOMIC_RELEASE);
  CHECK_ERR(rm_bravodyn_ba_write_lock(l), 0);
  __atomic_store_n(&wstate, 2, __ATOMIC_RELEASE);
  CHECK_ERR(rm_bravodyn_ba_write_unlock(l), 0);
  __atomic_store_n(&wstate, 3, __ATOMIC_RELEASE);
  return NULL;
}

static void arguments(void) {
  struct rm_bravo_dyn_attr a;
  CHECK_ERR(rm_bravo_dyn_attr_init(NULL), EINVAL);
  CHECK_ERR(rm_bravo_dyn_configure(NULL), EINVAL);
  CHECK_ERR(rm_bravo_dyn_attr_init(&a), 0);
  a.min_slots = 100; /* not a power of two */
  CHECK_ERR(rm_bravo_dyn_configure(&a), EINVAL);
  CHECK_ERR(rm_bravo_dyn_attr_init(&a), 0);
  a.min_slots = 64;
  a.max_slots = 32; /* min > max */
  CHECK_ERR(rm_bravo_dyn_configure(&a), EINVAL);
  CHECK_ERR(rm_bravo_dyn_attr_init(&a), 0);
  a.slots = 8; /* below 16 */
  CHECK_ERR(rm_bravo_dyn_configure(&a), EINVAL);
  CHECK_ERR(rm_bravo_dyn_attr_init(&a), 0);
  a.slots = 16;
  a.min_slots = 16;
  a.max_slots = 4096;
  a.auto_resize = 0;
  CHECK_ERR(rm_bravo_dyn_configure(&a), 0);
  CHECK_ERR(rm_bravo_dyn_configure(&a), EBUSY); /* the table exists */
  CHECK_ERR(rm_bravo_dyn_resize(100), EINVAL);
  CHECK_ERR(rm_bravo_dyn_resize(8192), EINVAL); /* above max */
  CHECK_ERR(rm_bravo_dyn_resize(8), EINVAL);    /* below min */
  CHECK_ERR(rm_bravo_dyn_get(NULL), EINVAL);
  struct rm_bravo_dyn_info d = info();
  CHECK_EQ(d.slots, 16);
  CHECK_EQ(d.old_slots, 0);
  CHECK_EQ(d.auto_resize, 0);
}

/* A reader in the old table is found by a later revocation. */
static void reader_in_old_table(void) {
  rm_bravodyn_ba_t *l = &locks[0], *m = &locks[1];
  rm_token_t t1 = fast_read(l);
  CHECK(in_current(t1));
  CHECK_ERR(rm_bravo_dyn_resize(64), 0);
  struct rm_bravo_dyn_info d = info();
  CHECK_EQ(d.slots, 64);
  CHECK_EQ(d.old_slots, 16); /* t1 keeps it open */
  CHECK(!in_current(t1));
  /* Another reader now publishes in the new table. */
  rm_token_t t2 = fast_read(m);
  CHECK(in_current(t2));
  /* The old table cannot close yet: a second resize is refused. */
  CHECK_ERR(rm_bravo_dyn_resize(256), EBUSY);
  /* A writer of l must find t1 in the old table and wait for it. */
  wstate = 0;
  pthread_t w;
  CHECK_EQ(pthread_create(&w, NULL, writer_main, l), 0);
  for (int i = 0; i < 5000 && word(l) < RM_BRAVO_REVOKER; i++) test_sleep_ms(1);
  CHECK(word(l) >= RM_BRAVO_REVOKER); /* revoking */
  test_sleep_ms(30);
  CHECK_EQ(__atomic_load_n(&wstate, __ATOMIC_ACQUIRE), 1); /* t1 keeps it out */
  /* Readers of l meanwhile go through A (the bias is off). */
  rm_token_t t3;
  CHECK_ERR(rm_bravodyn_ba_read_lock(l, &t3), 0);
  CHECK_EQ(t3, RM_TOKEN_NONE);
  CHECK_ERR(rm_bravodyn_ba_read_unlock(l, t3), 0);
  CHECK_ERR(rm_bravodyn_ba_read_unlock(l, t1), 0);
  CHECK_EQ(pthread_join(w, NULL), 0);
  CHECK_EQ(wstate, 3);
  CHECK_ERR(rm_bravodyn_ba_read_unlock(m, t2), 0);
  /* Now the old table closes, and the resize goes through. */
  CHECK_ERR(rm_bravo_dyn_resize(256), 0);
  d = info();
  CHECK_EQ(d.slots, 256);
  /* The 16-slot table was closed; 64 may still be closing or closed. */
  CHECK(d.old_slots == 0 || d.old_slots == 64);
}

/* Back to a table used before: its slots are reopened. */
static void reuse(void) {
  CHECK_ERR(rm_bravo_dyn_resize(16), 0);
  CHECK_EQ(info().slots, 16);
  for (int i = 0; i < 4; i++) {
    rm_token_t t = fast_read(&locks[i]);
    CHECK(in_current(t));
    CHECK_EQ(*(uintptr_t *)t, (uintptr_t)&locks[i]);
    CHECK_ERR(rm_bravodyn_ba_read_unlock(&locks[i], t), 0);
  }
}

/* The policy tests loop until the policy acts or 30 s pass, not for a
 * number of rounds: the policy evaluates every so many nanoseconds, so on
 * a slow or loaded machine (ThreadSanitizer, ctest -j) a round count ran
 * out before the first evaluation. */

/* The policy grows a table whose readers collide. */
static void policy_grows(void) {
  CHECK_ERR(rm_bravo_dyn_resize(16), 0);
  rm_bravo_dyn_set_auto(true);
  struct rm_bravo_dyn_info d0 = info();
  rm_token_t t[NLOCKS];
  struct timespec end = test_deadline_ms(CLOCK_MONOTONIC, 30000);
  for (int round = 0; !test_deadline_passed(CLOCK_MONOTONIC, &end) && info().grows == d0.grows;
       round++) {
    /* One thread holding 64 locks at once in 16 slots: collisions. */
    for (int i = 0; i < NLOCKS; i++) CHECK_ERR(rm_bravodyn_ba_read_lock(&locks[i], &t[i]), 0);
    for (int i = NLOCKS - 1; i >= 0; i--) CHECK_ERR(rm_bravodyn_ba_read_unlock(&locks[i], t[i]), 0);
    if (round % 64 == 63) test_sleep_ms(1);
  }
  struct rm_bravo_dyn_info d = info();
  CHECK(d.grows > d0.grows);
  CHECK(d.slots > 16);
  CHECK(d.collisions > d0.collisions);
  rm_bravo_dyn_set_auto(false);
}

/* ... and shrinks one that only costs revocations. */
static void policy_shrinks(void) {
  for (int i = 0; i < 1000 && rm_bravo_dyn_resize(4096) == EBUSY; i++) test_sleep_ms(1);
  CHECK_EQ(info().slots, 4096);
  rm_bravo_dyn_set_auto(true);
  struct rm_bravo_dyn_info d0 = info();
  rm_bravodyn_ba_t *l = &locks[0];
  struct timespec end = test_deadline_ms(CLOCK_MONOTONIC, 30000);
  while (!test_deadline_passed(CLOCK_MONOTONIC, &end) && info().shrinks == d0.shrinks) {
    rm_token_t t;
    CHECK_ERR(rm_bravodyn_ba_read_lock(l, &t), 0); /* turns the bias on (N = 0) */
    CHECK_ERR(rm_bravodyn_ba_read_unlock(l, t), 0);
    CHECK_ERR(rm_bravodyn_ba_write_lock(l), 0); /* revokes: a scan of the table */
    CHECK_ERR(rm_bravodyn_ba_write_unlock(l), 0);
  }
  struct rm_bravo_dyn_info d = info();
  CHECK(d.shrinks > d0.shrinks);
  CHECK(d.slots < 4096);
  rm_bravo_dyn_set_auto(false);
}

int main(void) {
  CHECK_ERR(rm_bravo_set_inhibit_multiplier(0), 0);
  for (int i = 0; i < NLOCKS; i++) CHECK_ERR(rm_bravodyn_ba_init(&locks[i]), 0);
  arguments();
  reader_in_old_table();
  reuse();
  policy_grows();
  policy_shrinks();
  for (int i = 0; i < NLOCKS; i++) CHECK_ERR(rm_bravodyn_ba_destroy(&locks[i]), 0);
  TEST_MAIN_END();
}
