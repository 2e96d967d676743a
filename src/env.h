/*
 * env.h - the one reader of readmostly's environment variables (internal:
 * the library, the preload library and every later primitive use it; it is
 * not installed).
 *
 * SYNOPSIS
 *   #include "env.h"
 *   unsigned n = (unsigned)rm_env_int("READMOSTLY_BRAVO_N", 0, 1000000, 9);
 *   size_t s = rm_env_pow2("READMOSTLY_BRAVO_TABLE_SLOTS", 1, 1u << 24, dflt);
 *   bool on = rm_env_flag("READMOSTLY_STATS");
 *   static const char *const modes[] = {"bravo", "prwlock", NULL};
 *   int m = rm_env_choice("READMOSTLY_RWLOCK", modes, 0);
 *
 * DESCRIPTION
 *   Each function reads one variable with getenv() and returns the value to
 *   use.  Unset or empty means the default, silently.  Any other value that
 *   cannot be used as given is named in one line on stderr, with what is
 *   valid and the value used instead, for example
 *
 *     readmostly: READMOSTLY_BRAVO_N=-5 is not valid: want an integer from
 *       0 to 1000000; using 9 (the default)
 *     readmostly: READMOSTLY_BRAVO_TABLE_SLOTS=3 is not a power of two;
 *       using 4 (rounded up)
 *
 *   (one line each).  Integers are decimal, an optional '-' and digits,
 *   nothing else (no blanks, no "0x", no unit).  Flags take 0 or 1 (also
 *   no/yes, off/on, false/true, in any case).  A value is read when the
 *   code that needs it starts (usually a constructor), so each message
 *   appears once per process.
 *
 *   rm_env_report() prints the line in the same form, for readers of
 *   values with a syntax of their own (READMOSTLY_DEBUG_PAUSE).
 *
 * THREAD SAFETY
 *   As getenv(): safe while nobody calls setenv() at the same time.
 */
#ifndef READMOSTLY_SRC_ENV_H
#define READMOSTLY_SRC_ENV_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An integer in [lo, hi]; def (which should lie in it) otherwise. */
long long rm_env_int(const char *name, long long lo, long long hi, long long def);
/* An integer in [lo, hi] rounded up to a power of two (saying so); def
 * otherwise.  lo >= 1 and hi a power of two. */
size_t rm_env_pow2(const char *name, size_t lo, size_t hi, size_t def);
/* A flag; false when unset, empty or not valid. */
bool rm_env_flag(const char *name);
/* A flag; def when unset, empty or not valid. */
bool rm_env_bool(const char *name, bool def);
/* The index of the value in the NULL-terminated list `choices`; def when
 * unset, empty or not in the list. */
int rm_env_choice(const char *name, const char *const *choices, int def);
/* "readmostly: NAME=VALUE PROBLEM; using USED" on stderr. */
void rm_env_report(const char *name, const char *value, const char *problem, const char *used);

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_SRC_ENV_H */
