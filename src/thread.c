/*
 * thread.c - the per-thread registry.  See readmostly/thread.h.
 *
 * Invariants:
 *  1. A record is linked in `registry.head` from registration until its
 *     thread unregisters or exits; only its owner writes its stats (relaxed
 *     atomics, so that sums taken by other threads are race-free).
 *  2. The list, `retired` and `hooks` change only under `registry.lock`.
 *  3. After fork(), in the child, the list holds exactly the forking
 *     thread's record (if it had one).
 */
#define _GNU_SOURCE
#include <readmostly/thread.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RM_MAX_HOOKS 8

static struct {
  pthread_mutex_t lock;
  struct rm_thread *head;
  size_t count;
  uint64_t next_id;
  uint64_t retired[RM_STAT_MAX];
  struct rm_thread_hooks hooks[RM_MAX_HOOKS];
  unsigned nhooks;
  pthread_key_t key;
  int key_ok;
} registry = {.lock = PTHREAD_MUTEX_INITIALIZER, .next_id = 1};

static pthread_once_t registry_once = PTHREAD_ONCE_INIT;
static __thread struct rm_thread *self_cache;

static void unlink_locked(struct rm_thread *t) {
  for (int i = 0; i < RM_STAT_MAX; i++)
    registry.retired[i] += rm_atomic_load_relaxed(&t->stats[i]);
  if (t->prev) t->prev->next = t->next;
  else registry.head = t->next;
  if (t->next) t->next->prev = t->prev;
  t->next = t->prev = NULL;
  registry.count--;
}

static void leave(struct rm_thread *t) {
  pthread_mutex_lock(&registry.lock);
  unsigned n = registry.nhooks;
  struct rm_thread_hooks hooks[RM_MAX_HOOKS];
  memcpy(hooks, registry.hooks, sizeof hooks);
  pthread_mutex_unlock(&registry.lock);
  for (unsigned i = 0; i < n; i++)
    if (hooks[i].on_exit) hooks[i].on_exit(t);
  pthread_mutex_lock(&registry.lock);
  unlink_locked(t);
  pthread_mutex_unlock(&registry.lock);
  free(t);
}

static void key_destructor(void *p) {
  struct rm_thread *t = (struct rm_thread *)p;
  if (t && t == self_cache) {
    self_cache = NULL;
    leave(t);
  }
}

static void atfork_prepare(void) { pthread_mutex_lock(&registry.lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&registry.lock); }
static void atfork_child(void) {
  /* Only the forking thread exists now; the lock was held by it across the
   * fork (prepare), so the memory is consistent.  Re-create the mutex rather
   * than unlocking it: that is what POSIX allows in a child. */
  pthread_mutex_init(&registry.lock, NULL);
  struct rm_thread *t = registry.head;
  while (t) {
    struct rm_thread *next = t->next;
    if (t != self_cache) {
      unlink_locked(t);
      free(t);
    }
    t = next;
  }
  if (self_cache) self_cache->tid = (uint32_t)syscall(SYS_gettid);
  for (unsigned i = 0; i < registry.nhooks; i++)
    if (registry.hooks[i].on_fork_child) registry.hooks[i].on_fork_child();
}

static void registry_init_once(void) {
  registry.key_ok = pthread_key_create(&registry.key, key_destructor) == 0;
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Installed before main() so that fork handlers are in place even when no
 * thread has registered yet. */
__attribute__((constructor(102))) static void registry_ctor(void) {
  pthread_once(&registry_once, registry_init_once);
}

RM_API int rm_thread_register(void) {
  if (RM_LIKELY(self_cache != NULL)) return 0;
  pthread_once(&registry_once, registry_init_once);
  struct rm_thread *t = (struct rm_thread *)aligned_alloc(RM_CACHE_SECTOR, sizeof *t);
  if (!t) return ENOMEM;
  memset(t, 0, sizeof *t);
  t->tid = (uint32_t)syscall(SYS_gettid);
  pthread_mutex_lock(&registry.lock);
  t->id = registry.next_id++;
  t->next = registry.head;
  if (registry.head) registry.head->prev = t;
  registry.head = t;
  registry.count++;
  pthread_mutex_unlock(&registry.lock);
  self_cache = t;
  if (registry.key_ok) pthread_setspecific(registry.key, t);
  return 0;
}

RM_API struct rm_thread *rm_thread_self(void) {
  if (RM_LIKELY(self_cache != NULL)) return self_cache;
  if (rm_thread_register() != 0) return NULL;
  return self_cache;
}

RM_API void rm_thread_unregister(void) {
  struct rm_thread *t = self_cache;
  if (!t) return;
  self_cache = NULL;
  if (registry.key_ok) pthread_setspecific(registry.key, NULL);
  leave(t);
}

RM_API size_t rm_thread_count(void) {
  pthread_mutex_lock(&registry.lock);
  size_t n = registry.count;
  pthread_mutex_unlock(&registry.lock);
  return n;
}

RM_API void rm_thread_foreach(void (*fn)(struct rm_thread *, void *), void *arg) {
  pthread_mutex_lock(&registry.lock);
  for (struct rm_thread *t = registry.head; t; t = t->next) fn(t, arg);
  pthread_mutex_unlock(&registry.lock);
}

RM_API uint64_t rm_thread_stats_sum(enum rm_stat which) {
  if ((unsigned)which >= RM_STAT_MAX) return 0;
  pthread_mutex_lock(&registry.lock);
  uint64_t s = registry.retired[which];
  for (struct rm_thread *t = registry.head; t; t = t->next)
    s += rm_atomic_load_relaxed(&t->stats[which]);
  pthread_mutex_unlock(&registry.lock);
  return s;
}

RM_API void rm_thread_stats_reset(void) {
  pthread_mutex_lock(&registry.lock);
  memset(registry.retired, 0, sizeof registry.retired);
  for (struct rm_thread *t = registry.head; t; t = t->next)
    for (int i = 0; i < RM_STAT_MAX; i++) rm_atomic_store_relaxed(&t->stats[i], 0);
  pthread_mutex_unlock(&registry.lock);
}

RM_API int rm_thread_add_hooks(const struct rm_thread_hooks *hooks) {
  if (!hooks) return EINVAL;
  pthread_once(&registry_once, registry_init_once);
  pthread_mutex_lock(&registry.lock);
  int r = 0;
  if (registry.nhooks >= RM_MAX_HOOKS) r = ENOSPC;
  else registry.hooks[registry.nhooks++] = *hooks;
  pthread_mutex_unlock(&registry.lock);
  return r;
}

RM_API void rm_thread_stat_add(enum rm_stat which, uint64_t v) {
  struct rm_thread *t = rm_thread_self();
  if (!t || (unsigned)which >= RM_STAT_MAX) return;
  /* Only the owner writes; relaxed load+store keeps it a plain add. */
  rm_atomic_store_relaxed(&t->stats[which], rm_atomic_load_relaxed(&t->stats[which]) + v);
}
