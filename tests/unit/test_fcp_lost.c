/* membarrier() fails after registration (fcp.h, "If membarrier fails after
 * registration"): the process installs a seccomp filter that makes the
 * system call return EPERM, as a sandbox set up after start-up would.  A
 * writer that needs a barrier must then not go on as if one had run: the
 * process switches to fence mode for good (readers fence, writers trust
 * their fence), settling each thread by a report or a context switch.
 *  - before the filter: membarrier mode;
 *  - a consensus that needs a barrier (an idle thread holds a record and
 *    never reports) completes, and the mode is fence mode afterwards, with
 *    RM_FCP_BARRIER_LOST set;
 *  - readers and writers keep mutual exclusion through and after the switch
 *    (the torture oracle: writers keep two words equal; readers check them),
 *    with a reader that stays inside its section across the failure. */
#include "test.h"
#include <readmostly/prwlock.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static rm_prwlock_t lock = RM_PRWLOCK_INITIALIZER;
static volatile uint64_t a, b; /* equal outside write sections */
static int stop, errors, idle_go;
static uint64_t reads;

static int deny_membarrier(void) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_membarrier, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0)
    return errno;
  return 0;
}

/* Holds a record of the default domain and then does nothing with it: a
 * consensus cannot count it without a barrier. */
static void *idle_main(void *p) {
  (void)p;
  CHECK_ERR(rm_prwlock_read_lock(&lock), 0);
  CHECK_ERR(rm_prwlock_read_unlock(&lock), 0);
  while (!__atomic_load_n(&idle_go, __ATOMIC_ACQUIRE)) test_sleep_ms(5);
  return NULL;
}

static void *reader_main(void *p) {
  long slow = (long)(intptr_t)p;
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    CHECK_ERR(rm_prwlock_read_lock(&lock), 0);
    uint64_t x = a;
    if (slow) test_sleep_ms(20); /* inside the section across writes */
    uint64_t y = b;
    if (x != y) __atomic_fetch_add(&errors, 1, __ATOMIC_RELAXED);
    CHECK_ERR(rm_prwlock_read_unlock(&lock), 0);
    __atomic_fetch_add(&reads, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

static void write_once(void) {
  CHECK_ERR(rm_prwlock_write_lock(&lock), 0);
  uint64_t v = a + 1;
  a = v;
  for (volatile int i = 0; i < 100; i++) {
  }
  b = v;
  CHECK_ERR(rm_prwlock_write_unlock(&lock), 0);
}

int main(void) {
  if (TEST_UNDER_TSAN) TEST_SKIP("ThreadSanitizer's runtime and a seccomp filter do not mix");
  CHECK_ERR(rm_prwlock_read_lock(&lock), 0); /* claims our record: mode set */
  CHECK_ERR(rm_prwlock_read_unlock(&lock), 0);
  if (!rm_fcp_membarrier_mode()) TEST_SKIP("no membarrier: fence mode from the start");
  pthread_t idle, rd[3];
  CHECK_EQ(pthread_create(&idle, NULL, idle_main, NULL), 0);
  for (long i = 0; i < 3; i++) CHECK_EQ(pthread_create(&rd[i], NULL, reader_main, (void *)(intptr_t)(i == 0)), 0);
  test_sleep_ms(50);
  for (int i = 0; i < 200; i++) write_once(); /* with membarriers */
  CHECK(rm_fcp_membarrier_mode());
  int e = deny_membarrier();
  if (e) TEST_SKIP("cannot install a seccomp filter here");
  CHECK_ERR(rm_membarrier(), EPERM); /* the filter works */
  uint64_t before = __atomic_load_n(&reads, __ATOMIC_RELAXED);
  for (int i = 0; i < 2000; i++) write_once();
  CHECK(!rm_fcp_membarrier_mode());
  CHECK(rm_atomic_load_acquire(&rm_fcp_mode) & RM_FCP_BARRIER_LOST);
  CHECK(rm_atomic_load_acquire(&rm_fcp_mode) & RM_FCP_WRITERS_FENCE);
  test_sleep_ms(100);
  for (int i = 0; i < 200; i++) write_once(); /* fence mode from here */
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  __atomic_store_n(&idle_go, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < 3; i++) CHECK_EQ(pthread_join(rd[i], NULL), 0);
  CHECK_EQ(pthread_join(idle, NULL), 0);
  CHECK(__atomic_load_n(&reads, __ATOMIC_RELAXED) > before); /* readers kept going */
  CHECK_EQ(errors, 0);
  TEST_MAIN_END();
}
