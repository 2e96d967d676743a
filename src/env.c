/*
 * env.c - the one reader of readmostly's environment variables (env.h).
 */
#include "env.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void rm_env_report(const char *name, const char *value, const char *problem, const char *used) {
  /* One fprintf, so that lines of racing threads do not interleave. */
  fprintf(stderr, "readmostly: %s=%s %s; using %s\n", name, value, problem, used);
}

/* The variable's value, or NULL when unset or empty (use the default). */
static const char *env_value(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

/* A decimal integer: an optional '-' and at least one digit, nothing else,
 * within long long.  True and *out on success. */
static bool parse_int(const char *s, long long *out) {
  bool neg = *s == '-';
  if (neg) s++;
  if (*s < '0' || *s > '9') return false;
  unsigned long long v = 0, lim = neg ? (unsigned long long)LLONG_MAX + 1u : LLONG_MAX;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    unsigned d = (unsigned)(*s - '0');
    if (v > (lim - d) / 10u) return false; /* would overflow */
    v = v * 10u + d;
  }
  /* -(LLONG_MIN) does not fit: build the negative value from v - 1. */
  *out = neg ? (v == 0 ? 0 : -(long long)(v - 1u) - 1) : (long long)v;
  return true;
}

static bool int_in(const char *v, long long lo, long long hi, long long *x) {
  return parse_int(v, x) && *x >= lo && *x <= hi;
}

static void bad_int(const char *name, const char *v, long long lo, long long hi,
                    const char *used) {
  char want[96];
  snprintf(want, sizeof want, "is not valid: want an integer from %lld to %lld", lo, hi);
  rm_env_report(name, v, want, used);
}

long long rm_env_int(const char *name, long long lo, long long hi, long long def) {
  const char *v = env_value(name);
  long long x;
  if (!v) return def;
  if (int_in(v, lo, hi, &x)) return x;
  char used[48];
  snprintf(used, sizeof used, "%lld (the default)", def);
  bad_int(name, v, lo, hi, used);
  return def;
}

size_t rm_env_pow2(const char *name, size_t lo, size_t hi, size_t def) {
  const char *v = env_value(name);
  long long x, lim = hi > (size_t)LLONG_MAX ? LLONG_MAX : (long long)hi;
  if (!v) return def;
  char used[48];
  if (!int_in(v, (long long)lo, lim, &x)) {
    snprintf(used, sizeof used, "%zu (the default)", def);
    bad_int(name, v, (long long)lo, lim, used);
    return def;
  }
  size_t p = 1;
  while (p < (size_t)x) p <<= 1;
  if (p != (size_t)x) {
    snprintf(used, sizeof used, "%zu (rounded up)", p);
    rm_env_report(name, v, "is not a power of two", used);
  }
  return p;
}

bool rm_env_bool(const char *name, bool def) {
  static const char *const no[] = {"0", "no", "off", "false"};
  static const char *const yes[] = {"1", "yes", "on", "true"};
  const char *v = env_value(name);
  if (!v) return def;
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
    if (strcasecmp(v, no[i]) == 0) return false;
    if (strcasecmp(v, yes[i]) == 0) return true;
  }
  rm_env_report(name, v, "is not valid: want 0 or 1 (or no/yes, off/on, false/true)",
                def ? "1 (the default)" : "0 (the default)");
  return def;
}

bool rm_env_flag(const char *name) { return rm_env_bool(name, false); }

int rm_env_choice(const char *name, const char *const *choices, int def) {
  const char *v = env_value(name);
  if (!v) return def;
  int n = 0;
  for (; choices[n]; n++)
    if (strcmp(v, choices[n]) == 0) return n;
  /* "is not valid: want a, b or c" */
  char want[160];
  size_t len = (size_t)snprintf(want, sizeof want, "is not valid: want ");
  for (int i = 0; i < n && len < sizeof want; i++)
    len += (size_t)snprintf(want + len, sizeof want - len, "%s%s",
                            i == 0 ? "" : i == n - 1 ? " or " : ", ", choices[i]);
  char used[64];
  snprintf(used, sizeof used, "%s (the default)", choices[def]);
  rm_env_report(name, v, want, used);
  return def;
}
