/*
 * test-skeleton.c - stand-in for the file glibc's older tests include as
 * "../test-skeleton.c" after defining TEST_FUNCTION (see support/check.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <support/xthread.h>

static void *rm_support_exit_later(void *secs) {
  sleep((unsigned)(unsigned long)secs);
  exit(0);
}
/* The process exits with status 0 after secs seconds (a test that expects
 * to block for good passes that way). */
static void delayed_exit(int secs) {
  pthread_t t;
  if (pthread_create(&t, NULL, rm_support_exit_later, (void *)(unsigned long)secs) != 0)
    FAIL_EXIT1("delayed_exit: pthread_create failed");
}
#include <support/test-driver.c>
