/* config.h for building gnulib's lock tests (scripts/external-suites.sh) against
 * the system's POSIX threads, as gnulib's configure would on glibc. */
#define USE_POSIX_THREADS 1
#define USE_POSIX_THREADS_WEAK 0
#define HAVE_PTHREAD_RWLOCK 1
#define HAVE_PTHREAD_RWLOCK_RDLOCK_PREFER_WRITER 0
#define HAVE_DECL_ALARM 1
#define HAVE_PTHREAD_API 1
#define HAVE_PTHREAD_MUTEX_RECURSIVE 1
#define PTHREAD_IN_USE_DETECTION_HARD 0
#define _GNU_SOURCE 1
#define _GL_ATTRIBUTE_MAYBE_UNUSED __attribute__((__unused__))
#define _GL_ATTRIBUTE_FORMAT(s) __attribute__((__format__ s))
#define _GL_ATTRIBUTE_PURE __attribute__((__pure__))
#define _GL_ATTRIBUTE_NODISCARD
#define _GL_UNUSED __attribute__((__unused__))
#define _GL_INLINE_HEADER_BEGIN
#define _GL_INLINE_HEADER_END
#define _GL_INLINE static inline
#define _GL_EXTERN_INLINE static inline
#define _GL_ATTRIBUTE_DEALLOC(f, i)
#define _GL_ATTRIBUTE_RETURNS_NONNULL
#define _Noreturn __attribute__((__noreturn__))
