/* support/test-driver.h - stand-in for glibc's test harness header.  See check.h. */
#ifndef RM_GLIBC_SUPPORT_TEST_DRIVER_H
#define RM_GLIBC_SUPPORT_TEST_DRIVER_H
#define DEFAULT_TIMEOUT 20 /* seconds, as glibc's */
#endif
