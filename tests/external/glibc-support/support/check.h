/*
 * support/check.h - our stand-in for the header of the same name in glibc's
 * test harness, so that glibc's own rwlock tests (nptl/tst-rwlock*.c) build
 * outside glibc's tree (scripts/external-suites.sh).  Same meaning as
 * glibc's: TEST_* record a failure and go on, FAIL_EXIT* exit at once; the
 * driver (test-driver.c) exits 1 if anything was recorded.
 */
#ifndef RM_GLIBC_SUPPORT_CHECK_H
#define RM_GLIBC_SUPPORT_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int rm_support_failures;

#define rm_support_fail(...)                                                    \
  (fprintf(stderr, "%s:%d: ", __FILE__, __LINE__), fprintf(stderr, __VA_ARGS__), \
   fputc('\n', stderr), rm_support_failures++)

#define FAIL(...) rm_support_fail(__VA_ARGS__)
#define FAIL_EXIT(status, ...)    \
  do {                            \
    rm_support_fail(__VA_ARGS__); \
    exit(status);                 \
  } while (0)
#define FAIL_EXIT1(...) FAIL_EXIT(1, __VA_ARGS__)
#define FAIL_RET(...)             \
  do {                            \
    rm_support_fail(__VA_ARGS__); \
    return 1;                     \
  } while (0)
#define FAIL_UNSUPPORTED(...)         \
  do {                                \
    fprintf(stderr, __VA_ARGS__);     \
    fputc('\n', stderr);              \
    exit(77);                         \
  } while (0)
#define TEST_VERIFY(expr)                                 \
  do {                                                    \
    if (!(expr)) rm_support_fail("not true: %s", #expr);  \
  } while (0)
#define TEST_VERIFY_EXIT(expr)                        \
  do {                                                \
    if (!(expr)) FAIL_EXIT1("not true: %s", #expr);   \
  } while (0)
#define TEST_COMPARE(a, b)                                                   \
  do {                                                                       \
    long long a_ = (long long)(a), b_ = (long long)(b);                      \
    if (a_ != b_) rm_support_fail("%s == %lld, %s == %lld", #a, a_, #b, b_); \
  } while (0)
#define verbose_printf(...) printf(__VA_ARGS__)

static inline void support_record_failure(void) { rm_support_failures++; }
#endif
