/* The environment parser (src/env.h) and the variables read through it.
 *
 *  - The parser: unset and empty mean the default, silently; valid values
 *    are returned; every invalid one (not a number, trailing text, out of
 *    range, overflow, an unknown word) gives the default and one line on
 *    stderr naming the variable and its value, what is valid, and the value
 *    used; a size that is not a power of two is rounded up, saying so.
 *  - The library's variables: a child process started with bad values of
 *    READMOSTLY_BRAVO_N, _BRAVO_TABLE_SLOTS, _BRAVO_HUGETLB, _STATS,
 *    _NO_MEMBARRIER and _NO_TSC prints a message naming each, and uses
 *    what the message says (N = 9, 4 slots for "3").
 * The preload library's variables are checked by CTest (preload.env.*). */
#include "test.h"
#include "../../src/env.h"

#include <fcntl.h>
#include <limits.h>
#include <readmostly/bravo.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- capturing stderr ------------------------------------------------------ */

static char captured[4096];
static int saved_fd = -1;
static FILE *cap_file;

static void capture_begin(void) {
  fflush(stderr);
  cap_file = tmpfile();
  CHECK(cap_file != NULL);
  saved_fd = dup(2);
  CHECK(saved_fd >= 0);
  CHECK(dup2(fileno(cap_file), 2) == 2);
}

/* End the capture; the text is in `captured`. */
static const char *capture_end(void) {
  fflush(stderr);
  CHECK(dup2(saved_fd, 2) == 2);
  close(saved_fd);
  rewind(cap_file);
  size_t n = fread(captured, 1, sizeof captured - 1, cap_file);
  captured[n] = '\0';
  fclose(cap_file);
  return captured;
}

#define CHECK_HAS(text, part)                                                  \
  do {                                                                         \
    if (!strstr((text), (part))) {                                             \
      fprintf(stderr, "%s:%d: expected \"%s\" in:\n%s\n", __FILE__, __LINE__,  \
              (part), (text));                                                 \
      exit(1);                                                                 \
    }                                                                          \
    CHECK(true);                                                               \
  } while (0)

#define VAR "READMOSTLY_TEST_VALUE"

/* rm_env_int with VAR set to v (NULL: unset); *msg gets what it printed. */
static long long int_of(const char *v, long long lo, long long hi, long long def,
                        const char **msg) {
  if (v) setenv(VAR, v, 1);
  else unsetenv(VAR);
  capture_begin();
  long long r = rm_env_int(VAR, lo, hi, def);
  *msg = capture_end();
  return r;
}

static void test_int(void) {
  const char *m;
  CHECK_EQ(int_of(NULL, 0, 100, 9, &m), 9);
  CHECK_EQ(strlen(m), 0);
  CHECK_EQ(int_of("", 0, 100, 9, &m), 9); /* empty: unset */
  CHECK_EQ(strlen(m), 0);
  CHECK_EQ(int_of("0", 0, 100, 9, &m), 0);
  CHECK_EQ(int_of("100", 0, 100, 9, &m), 100);
  CHECK_EQ(int_of("-7", -10, 100, 9, &m), -7);
  CHECK_EQ(strlen(m), 0);
  CHECK_EQ(int_of("-9223372036854775808", LLONG_MIN, 0, 0, &m), LLONG_MIN);
  CHECK_EQ(int_of("9223372036854775807", 0, LLONG_MAX, 0, &m), LLONG_MAX);
  CHECK_EQ(strlen(m), 0);

  /* The message: variable and value, the range, the value used. */
  CHECK_EQ(int_of("-5", 0, 1000000, 9, &m), 9);
  CHECK_HAS(m, "readmostly: " VAR "=-5 is not valid: want an integer from 0 to 1000000; "
               "using 9 (the default)\n");
  static const char *const bad[] = {"abc", "12abc", " 5", "5 ", "0x10", "+5", "-", "1e3",
                                    "101", "9223372036854775808", "-9223372036854775809",
                                    "99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_EQ(int_of(bad[i], 0, 100, 42, &m), 42);
    char want[128];
    snprintf(want, sizeof want, VAR "=%s is not valid: want an integer from 0 to 100", bad[i]);
    CHECK_HAS(m, want);
    CHECK_HAS(m, "using 42 (the default)");
    CHECK(strchr(m, '\n') == m + strlen(m) - 1); /* one line */
  }
}

static void test_pow2(void) {
  setenv(VAR, "3", 1);
  capture_begin();
  CHECK_EQ(rm_env_pow2(VAR, 1, 1u << 24, 4096), 4);
  CHECK_HAS(capture_end(), "readmostly: " VAR "=3 is not a power of two; using 4 (rounded up)\n");
  setenv(VAR, "1024", 1);
  capture_begin();
  CHECK_EQ(rm_env_pow2(VAR, 1, 1u << 24, 4096), 1024);
  CHECK_EQ(strlen(capture_end()), 0);
  setenv(VAR, "1", 1);
  CHECK_EQ(rm_env_pow2(VAR, 1, 1u << 24, 4096), 1);
  setenv(VAR, "16777217", 1); /* above the range: the default, not rounding */
  capture_begin();
  CHECK_EQ(rm_env_pow2(VAR, 1, 1u << 24, 4096), 4096);
  CHECK_HAS(capture_end(), VAR "=16777217 is not valid: want an integer from 1 to 16777216; "
                           "using 4096 (the default)");
  setenv(VAR, "0", 1);
  capture_begin();
  CHECK_EQ(rm_env_pow2(VAR, 1, 1u << 24, 4096), 4096);
  CHECK_HAS(capture_end(), VAR "=0 is not valid");
  unsetenv(VAR);
  CHECK_EQ(rm_env_pow2(VAR, 1, 1u << 24, 4096), 4096);
}

static void test_flag(void) {
  static const char *const on[] = {"1", "yes", "ON", "True"};
  static const char *const off[] = {"0", "no", "Off", "FALSE", ""};
  capture_begin();
  for (size_t i = 0; i < 4; i++) {
    setenv(VAR, on[i], 1);
    CHECK(rm_env_flag(VAR));
  }
  for (size_t i = 0; i < 5; i++) {
    setenv(VAR, off[i], 1);
    CHECK(!rm_env_flag(VAR));
  }
  unsetenv(VAR);
  CHECK(!rm_env_flag(VAR));
  CHECK_EQ(strlen(capture_end()), 0);
  setenv(VAR, "2", 1);
  capture_begin();
  CHECK(!rm_env_flag(VAR));
  CHECK_HAS(capture_end(), "readmostly: " VAR "=2 is not valid: want 0 or 1 "
                           "(or no/yes, off/on, false/true); using 0 (the default)\n");
}

/* A flag whose default is on (READMOSTLY_BRAVO2D_PROBE2): unset or empty
 * keeps the default, and a value that is not a flag says so. */
static void test_bool_default_on(void) {
  unsetenv(VAR);
  capture_begin();
  CHECK(rm_env_bool(VAR, true));
  setenv(VAR, "", 1);
  CHECK(rm_env_bool(VAR, true));
  setenv(VAR, "off", 1);
  CHECK(!rm_env_bool(VAR, true));
  setenv(VAR, "0", 1);
  CHECK(!rm_env_bool(VAR, true));
  setenv(VAR, "1", 1);
  CHECK(rm_env_bool(VAR, true));
  CHECK_EQ(strlen(capture_end()), 0);
  setenv(VAR, "2", 1);
  capture_begin();
  CHECK(rm_env_bool(VAR, true));
  CHECK_HAS(capture_end(), "readmostly: " VAR "=2 is not valid: want 0 or 1 "
                           "(or no/yes, off/on, false/true); using 1 (the default)\n");
  unsetenv(VAR);
}

static void test_choice(void) {
  static const char *const modes[] = {"bravo", "passthrough", "prwlock", NULL};
  setenv(VAR, "prwlock", 1);
  CHECK_EQ(rm_env_choice(VAR, modes, 0), 2);
  setenv(VAR, "bravo", 1);
  CHECK_EQ(rm_env_choice(VAR, modes, 0), 0);
  unsetenv(VAR);
  CHECK_EQ(rm_env_choice(VAR, modes, 1), 1);
  setenv(VAR, "Prwlock", 1); /* names are exact */
  capture_begin();
  CHECK_EQ(rm_env_choice(VAR, modes, 0), 0);
  CHECK_HAS(capture_end(), "readmostly: " VAR "=Prwlock is not valid: want bravo, passthrough "
                           "or prwlock; using bravo (the default)\n");
  unsetenv(VAR);
}

/* ---- the library's own variables, in a fresh process ----------------------- */

/* The child: constructors have run; use what they read and print it. */
static int child_main(void) {
  printf("n=%u slots=%zu\n", rm_bravo_inhibit_multiplier(), rm_bravo_table_size());
  return 0;
}

/* Run this program as a child with `env` added; returns its stderr and
 * (in *out) its stdout. */
static void run_child(const char *const *env, char *err, size_t errn, char *out, size_t outn) {
  int pe[2], po[2];
  CHECK(pipe(pe) == 0 && pipe(po) == 0);
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(pe[1], 2);
    dup2(po[1], 1);
    close(pe[0]);
    close(po[0]);
    for (const char *const *e = env; *e; e++) putenv((char *)*e);
    execl("/proc/self/exe", "test_env", "--child", (char *)NULL);
    _exit(127);
  }
  close(pe[1]);
  close(po[1]);
  size_t ne = 0, no = 0;
  ssize_t r;
  while (ne < errn - 1 && (r = read(pe[0], err + ne, errn - 1 - ne)) > 0) ne += (size_t)r;
  while (no < outn - 1 && (r = read(po[0], out + no, outn - 1 - no)) > 0) no += (size_t)r;
  err[ne] = out[no] = '\0';
  close(pe[0]);
  close(po[0]);
  int st;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_library_variables(void) {
  static const char *const env[] = {
      "READMOSTLY_BRAVO_N=-5",        "READMOSTLY_BRAVO_TABLE_SLOTS=3",
      "READMOSTLY_BRAVO_HUGETLB=sure", "READMOSTLY_STATS=maybe",
      "READMOSTLY_NO_MEMBARRIER=2",   "READMOSTLY_NO_TSC=x",
      NULL};
  char err[4096], out[256];
  run_child(env, err, sizeof err, out, sizeof out);
  CHECK_HAS(err, "READMOSTLY_BRAVO_N=-5 is not valid: want an integer from 0 to 1000000; "
                 "using 9 (the default)");
  CHECK_HAS(err, "READMOSTLY_BRAVO_TABLE_SLOTS=3 is not a power of two; using 4 (rounded up)");
  CHECK_HAS(err, "READMOSTLY_BRAVO_HUGETLB=sure is not valid: want 0 or 1");
  CHECK_HAS(err, "READMOSTLY_STATS=maybe is not valid");
  CHECK_HAS(err, "READMOSTLY_NO_MEMBARRIER=2 is not valid");
#if defined(__x86_64__)
  CHECK_HAS(err, "READMOSTLY_NO_TSC=x is not valid");
#endif
  CHECK_HAS(out, "n=9 slots=4\n");

  /* Good values: silence, and they are used. */
  static const char *const good[] = {"READMOSTLY_BRAVO_N=0", "READMOSTLY_BRAVO_TABLE_SLOTS=64",
                                     "READMOSTLY_STATS=1", NULL};
  run_child(good, err, sizeof err, out, sizeof out);
  CHECK_EQ(strlen(err), 0);
  CHECK_HAS(out, "n=0 slots=64\n");
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--child") == 0) return child_main();
  test_int();
  test_pow2();
  test_flag();
  test_bool_default_on();
  test_choice();
  test_library_variables();
  TEST_MAIN_END();
}
