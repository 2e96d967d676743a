/*
 * support/test-driver.c - stand-in for glibc's test driver (see check.h):
 * main() runs the test's do_test() (or TEST_FUNCTION) under an alarm of
 * three times its TIMEOUT.  Exit status: 77 if the test says unsupported,
 * else 1 if it returned nonzero or any check failed, else 0.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <support/check.h>
#include <support/test-driver.h>
#ifndef TIMEOUT
#define TIMEOUT DEFAULT_TIMEOUT
#endif
int rm_support_failures;

static void rm_support_timeout(int sig) {
  (void)sig;
  static const char msg[] = "test timed out\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

int main(void) {
  signal(SIGALRM, rm_support_timeout);
  alarm(3 * (TIMEOUT));
#ifdef TEST_FUNCTION
  int r = TEST_FUNCTION;
#else
  int r = do_test();
#endif
  if (r == 77) return 77;
  if (rm_support_failures) {
    fprintf(stderr, "%d check(s) failed\n", rm_support_failures);
    return 1;
  }
  return r ? 1 : 0;
}
