/* bench/locks.c - the lock implementation set (see locks.h). */
#include "locks.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(IMPL_READ_ONLY == BENCH_IMPL_READ_ONLY && IMPL_HIDDEN == BENCH_IMPL_HIDDEN,
               "impls.h's flags are the harness's");

#define LOCK_NAME(ID, NAME, T, FL) {NAME, FL, NULL},
static const struct bench_impl lock_names[] = {ALL_IMPLS(LOCK_NAME)};
const struct bench_impl_set bench_locks = {"locks", lock_names, NLOCKS};

struct lock_desc {
  size_t size, align;
  void (*init)(void *);
  void (*fini)(void *);
};
#define LOCK_DESC(ID, NAME, T, FL) {sizeof(T), _Alignof(T), ID##_init, ID##_fini},
static const struct lock_desc lock_desc[] = {ALL_IMPLS(LOCK_DESC)};

void *lock_new(size_t idx) {
  const struct lock_desc *d = &lock_desc[idx];
  size_t al = d->align < 128 ? 128 : d->align;
  size_t sz = (d->size + al - 1) / al * al;
  void *l = aligned_alloc(al, sz);
  if (!l) bench_fatal("out of memory");
  memset(l, 0, sz);
  d->init(l);
  return l;
}

void lock_free(size_t idx, void *l) {
  lock_desc[idx].fini(l);
  free(l);
}

size_t lock_index(const char *name) {
  for (size_t i = 0; i < NLOCKS; i++)
    if (strcmp(lock_names[i].name, name) == 0) return i;
  bench_fatal("lock %s is not built in", name);
}
