/*
 * misuse.h - the library's one way to report a careless call it detects
 * (internal: not installed).
 *
 *   static uint32_t said;
 *   rm_misuse(&said, "rm_rlu_abort outside a section (ignored)");
 *
 * In a library built with assertions (no NDEBUG) the call aborts with the
 * message and the caller's file and line, as RM_ASSERT does.  Built with
 * NDEBUG it prints "readmostly: <message>" on stderr the first time for
 * *said (one flag per kind of misuse) and returns: the caller then does
 * what the message says (returns an error, ignores the call).
 */
#ifndef READMOSTLY_MISUSE_H
#define READMOSTLY_MISUSE_H

#include <readmostly/platform.h>

void rm_misuse_at(const char *file, int line, uint32_t *said, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define rm_misuse(said, ...) rm_misuse_at(__FILE__, __LINE__, (said), __VA_ARGS__)

#endif /* READMOSTLY_MISUSE_H */
