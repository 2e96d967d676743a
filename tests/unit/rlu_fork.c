/*
 * rlu_fork - fork() while other threads are inside RLU: the child has only
 * the forking thread, so the sections, locks and commits of the others end
 * there (rm_rlu.h, THREAD SAFETY).  Each case forks once; the child, under
 * a 10 s alarm, commits to the objects the others held and exits 0 (the
 * parent checks the status), then the parent lets its threads finish and
 * checks that nothing changed for them.  The child's first commit is of an
 * object nobody held (E): its synchronize must not wait for the threads
 * the child does not have.
 *
 *   section   T is inside a section and has locked B (its copy says 100):
 *             the child's commit used to wait for T's odd run counter for
 *             ever.  In the child B is unlocked and holds 1 (T's section
 *             never committed); the forking thread may itself be inside a
 *             section at fork() (case section-nested).
 *   deferred  max_defer 10: T committed a section into its log (C locked,
 *             copy 1) and idles: in the child the lock is gone and C is 0
 *             (no thread of the child saw the deferred update).
 *   published T's commit of D (2 -> 3) has stepped the clock and is held
 *             (test hook) before its synchronize: the child finishes it
 *             (D = 3, unlocked), as the forking thread is outside a section.
 *   published-nested  the same, but the forking thread's section began
 *             before T's step and read D = 2: the child drops T's commit
 *             (the section goes on reading 2, and D stays 2 after it).
 *   writer    coarse-grained: T holds the writer lock inside a section: the
 *             child takes the writer lock (it used to block for ever).
 *
 * Built on the library with test hooks (READMOSTLY_RLU_TEST_HOOKS); runs
 * under ThreadSanitizer too (the children start no thread).
 */
#define _GNU_SOURCE
#include "test.h"
#include <readmostly/rlu.h>
#include <sys/wait.h>
#include <unistd.h>

struct acct {
  long v;
};
static struct acct *A, *B, *C, *D, *E;
static int stage;      /* 1: T is in place; 2: T may finish */
static int hold_armed; /* the hook holds T at RM_RLU_HOOK_PUBLISHED */
static rm_rlu_ctx *held_ctx;

static void set_stage(int s) { __atomic_store_n(&stage, s, __ATOMIC_RELEASE); }
static void await_stage(int s) {
  for (int i = 0; __atomic_load_n(&stage, __ATOMIC_ACQUIRE) < s; i++) {
    if (i > 60 * 10000) {
      fprintf(stderr, "rlu_fork: no progress waiting for stage %d\n", s);
      exit(2);
    }
    usleep(100);
  }
}

static void hook(enum rm_rlu_hook p, rm_rlu_ctx *self) {
  if (p != RM_RLU_HOOK_PUBLISHED || !__atomic_load_n(&hold_armed, __ATOMIC_ACQUIRE)) return;
  if (self != __atomic_load_n(&held_ctx, __ATOMIC_ACQUIRE)) return;
  set_stage(1); /* the clock is stepped, the write clock public */
  await_stage(2);
}

static long value(rm_rlu_ctx *self, struct acct *x) {
  rm_rlu_reader_lock(self);
  long v = RM_RLU_DEREF(self, x)->v;
  rm_rlu_reader_unlock(self);
  return v;
}

/* One committed section setting *x = v; returns the try_lock results it
 * met (0 when the object was free at once). */
static int set_value(rm_rlu_ctx *self, struct acct *x, long v, bool coarse) {
  int tries = 0;
  for (;;) {
    if (coarse) rm_rlu_writer_lock(self);
    else rm_rlu_reader_lock(self);
    struct acct *p = x;
    int r = RM_RLU_TRY_LOCK(self, &p);
    if (r == 0) {
      p->v = v;
      rm_rlu_reader_unlock(self);
      return tries;
    }
    rm_rlu_abort(self);
    if (++tries > 1000) return tries; /* still locked: the child fails below */
    usleep(100);
  }
}

/* In the child: set_value, then every deferred section written back. */
static int commit_value(rm_rlu_ctx *self, struct acct *x, long v, bool coarse) {
  int r = set_value(self, x, v, coarse);
  rm_rlu_sync(self);
  return r;
}

/* ---- the other threads ---------------------------------------------------- */
static void *in_section(void *arg) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  rm_rlu_reader_lock(self);
  struct acct *b = B;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &b), 0);
  b->v = 100;
  set_stage(1);
  await_stage(2);
  rm_rlu_abort(self);
  rm_rlu_thread_unregister(self);
  return NULL;
}

static void *deferring(void *arg) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  CHECK_EQ(set_value(self, C, 1, false), 0); /* deferred: C stays locked */
  set_stage(1);
  await_stage(2);
  rm_rlu_thread_unregister(self); /* flushes */
  return NULL;
}

static void *committing(void *arg) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  __atomic_store_n(&held_ctx, self, __ATOMIC_RELEASE);
  rm_rlu_reader_lock(self);
  struct acct *d = D;
  CHECK_ERR(RM_RLU_TRY_LOCK(self, &d), 0);
  d->v++;
  rm_rlu_reader_unlock(self); /* held at the hook until stage 2 */
  rm_rlu_thread_unregister(self);
  return NULL;
}

static void *writer_holder(void *arg) {
  (void)arg;
  rm_rlu_ctx *self = rm_rlu_thread_register();
  rm_rlu_writer_lock(self);
  struct acct *a = A;
  CHECK_ERR(RM_RLU_LOCK(self, &a), 0);
  a->v = 100;
  set_stage(1);
  await_stage(2);
  rm_rlu_abort(self);
  rm_rlu_thread_unregister(self);
  return NULL;
}

/* ---- the cases ------------------------------------------------------------ */
enum kase { SECTION, SECTION_NESTED, DEFERRED, PUBLISHED, PUBLISHED_NESTED, WRITER };
static const char *const names[] = {"section", "section-nested", "deferred",
                                    "published", "published-nested", "writer"};

/* In the child: exit codes name the check that failed. */
#define CHILD_CHECK(cond, code)                                              \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "rlu_fork child (%s): %s failed\n", names[k], #cond);  \
      _exit(code);                                                           \
    }                                                                        \
  } while (0)

static void run(enum kase k) {
  bool coarse = k == WRITER;
  struct rm_rlu_options o = {.flavor = coarse ? RM_RLU_COARSE : RM_RLU_FINE,
                             .max_defer = k == DEFERRED ? 10 : 0};
  CHECK_ERR(rm_rlu_init(&o), 0);
  A = rm_rlu_alloc(sizeof *A);
  B = rm_rlu_alloc(sizeof *B);
  C = rm_rlu_alloc(sizeof *C);
  D = rm_rlu_alloc(sizeof *D);
  E = rm_rlu_alloc(sizeof *E);
  E->v = 0;
  A->v = 1;
  B->v = 1;
  C->v = 0;
  D->v = 2;
  set_stage(0);
  rm_rlu_ctx *self = rm_rlu_thread_register();
  bool nested = k == SECTION_NESTED || k == PUBLISHED_NESTED;
  if (k == PUBLISHED_NESTED) {
    rm_rlu_reader_lock(self); /* before T's clock step */
    CHECK_EQ(RM_RLU_DEREF(self, D)->v, 2);
  }
  __atomic_store_n(&hold_armed, k == PUBLISHED || k == PUBLISHED_NESTED, __ATOMIC_RELEASE);
  pthread_t t;
  void *(*fn)(void *) = k == DEFERRED                          ? deferring
                        : k == PUBLISHED || k == PUBLISHED_NESTED ? committing
                        : k == WRITER                          ? writer_holder
                                                               : in_section;
  CHECK_EQ(pthread_create(&t, NULL, fn, NULL), 0);
  await_stage(1);
  if (k == SECTION_NESTED) rm_rlu_reader_lock(self);
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    alarm(10);
    if (k == PUBLISHED_NESTED) {
      /* Our section read D = 2 before T's step: it still does. */
      CHILD_CHECK(RM_RLU_DEREF(self, D)->v == 2, 10);
      CHILD_CHECK(RM_RLU_DEREF(self, D) == D, 11);
    }
    if (nested) rm_rlu_reader_unlock(self);
    /* First a commit of an object nobody held: its synchronize must not
     * wait for threads the child does not have. */
    CHILD_CHECK(commit_value(self, E, 7, coarse) == 0, 9);
    CHILD_CHECK(E->v == 7, 8);
    switch (k) {
    case SECTION:
    case SECTION_NESTED:
      CHILD_CHECK(value(self, B) == 1, 12);
      CHILD_CHECK(RM_RLU_HDR(B)->copy == NULL, 13);
      CHILD_CHECK(commit_value(self, B, 5, false) == 0, 14);
      CHILD_CHECK(B->v == 5, 15);
      break;
    case DEFERRED:
      CHILD_CHECK(value(self, C) == 0, 16);
      CHILD_CHECK(commit_value(self, C, 5, false) == 0, 17);
      CHILD_CHECK(C->v == 5, 18);
      break;
    case PUBLISHED:
      CHILD_CHECK(value(self, D) == 3, 19);
      CHILD_CHECK(D->v == 3, 20);
      CHILD_CHECK(commit_value(self, D, 5, false) == 0, 21);
      CHILD_CHECK(D->v == 5, 22);
      break;
    case PUBLISHED_NESTED:
      CHILD_CHECK(value(self, D) == 2, 23);
      CHILD_CHECK(commit_value(self, D, 5, false) == 0, 24);
      CHILD_CHECK(D->v == 5, 25);
      break;
    case WRITER:
      CHILD_CHECK(value(self, A) == 1, 26);
      CHILD_CHECK(commit_value(self, A, 5, true) == 0, 27);
      CHILD_CHECK(A->v == 5, 28);
      break;
    }
    /* No context but ours. */
    rm_rlu_thread_unregister(self);
    CHILD_CHECK(rm_rlu_init(NULL) == 0, 30);
    _exit(0);
  }
  int st = 0;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fprintf(stderr, "rlu_fork: case %s: child %s %d\n", names[k],
            WIFSIGNALED(st) ? "killed by signal" : "exited with",
            WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  CHECK(WIFEXITED(st));
  CHECK_EQ(WEXITSTATUS(st), 0);
  /* The parent goes on as if nothing happened. */
  if (nested) rm_rlu_reader_unlock(self);
  set_stage(2);
  CHECK_EQ(pthread_join(t, NULL), 0);
  __atomic_store_n(&hold_armed, 0, __ATOMIC_RELEASE);
  CHECK_EQ(A->v, 1);
  CHECK_EQ(B->v, 1);
  CHECK_EQ(C->v, k == DEFERRED ? 1 : 0);
  CHECK_EQ(D->v, k == PUBLISHED || k == PUBLISHED_NESTED ? 3 : 2);
  rm_rlu_thread_unregister(self);
  rm_rlu_free(NULL, A);
  rm_rlu_free(NULL, B);
  rm_rlu_free(NULL, C);
  rm_rlu_free(NULL, D);
  rm_rlu_free(NULL, E);
  printf("ok %s\n", names[k]);
}

/* rlu_fork [CASE]: every case, or the one named. */
int main(int argc, char **argv) {
  rm_rlu_test_hook = hook;
  int ran = 0;
  for (int k = SECTION; k <= WRITER; k++)
    if (argc < 2 || !strcmp(argv[1], names[k])) {
      run((enum kase)k);
      ran++;
    }
  CHECK(ran > 0);
  TEST_MAIN_END();
}
