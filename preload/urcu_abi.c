/*
 * urcu_abi.c - libreadmostly-urcu.so: FCP-RCU under liburcu's memb ABI.
 *
 * SYNOPSIS
 *   LD_PRELOAD=libreadmostly-urcu.so program args...
 *   READMOSTLY_STATS=1 LD_PRELOAD=libreadmostly-urcu.so program   (a summary at exit)
 *
 * DESCRIPTION
 *   A program (or library) compiled against liburcu 0.13 without
 *   _LGPL_SOURCE calls liburcu's default flavor through functions:
 *   urcu_memb_read_lock, urcu_memb_synchronize_rcu, urcu_memb_call_rcu and
 *   the rest of what liburcu-memb.so.8 and liburcu.so.8 export.  This
 *   library exports every one of those functions, with liburcu's
 *   signatures and semantics, implemented on readmostly's RCU
 *   (readmostly/rcu.h), so that preloading it moves the program to FCP-RCU
 *   without a rebuild.  struct rcu_head is liburcu's layout (a
 *   cds_wfcq_node, which is one pointer, then the function): the program
 *   allocates it and FCP-RCU's struct rm_rcu_head is the same two words.
 *
 *   Refusal.  liburcu's data symbols urcu_memb_gp and urcu_memb_reader (the
 *   grace-period word and the per-thread reader, which code built with
 *   _LGPL_SOURCE reads and writes inline) are not provided: a section
 *   begun inline is invisible to FCP-RCU's grace periods, so mixing would
 *   be unsafe.  At its first use (or at load) the library walks the
 *   dynamic symbol table of every loaded object; if one has an undefined
 *   reference to either symbol, it prints one line naming the object and
 *   forwards every call to the real liburcu (dlsym(RTLD_NEXT)) for the
 *   life of the process.  An object dlopen'ed later is checked when a
 *   thread registers (a reader of liburcu's inline read side must call
 *   urcu_memb_register_thread, a function, before its first section): if
 *   it inlines, the library prints the line and aborts, since calls
 *   already served by FCP-RCU cannot move to liburcu.
 *
 *   Differences from liburcu: those of readmostly/rcu.h (docs/rcu.md,
 *   "liburcu compatibility"); synchronize_rcu and rcu_barrier inside a read
 *   section return at once with a message (liburcu would wait for ever);
 *   create_call_rcu_data's flags and CPU affinity are ignored;
 *   defer_rcu needs no defer registration.  quiescent_state,
 *   thread_offline and thread_online, inline no-ops in liburcu's memb
 *   flavor, are also exported here and map to FCP-RCU's (outside a read
 *   section; inside one they do nothing, as liburcu's).
 *
 * ENVIRONMENT
 *   READMOSTLY_STATS=1: one line on stderr at exit with the grace periods,
 *   the membarriers issued and saved, and the callbacks run.
 *   READMOSTLY_URCU=liburcu: forward every call to liburcu (to rule the
 *   library out when a program misbehaves).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <readmostly/rcu.h>

#include "../src/env.h"
#include "../src/rcu_internal.h"

#define UA_EXPORT __attribute__((visibility("default")))

/* ---- liburcu's types, by layout ------------------------------------------- */

/* liburcu's struct rcu_head: { struct cds_wfcq_node { next; } next; func; }. */
struct ua_wfcq_node {
  struct ua_wfcq_node *next;
};
struct ua_rcu_head {
  struct ua_wfcq_node next;
  void (*func)(struct ua_rcu_head *head);
};
RM_STATIC_ASSERT(sizeof(struct ua_rcu_head) == sizeof(struct rm_rcu_head),
                 "struct rcu_head must be liburcu's size");
RM_STATIC_ASSERT(offsetof(struct ua_rcu_head, next) == offsetof(struct rm_rcu_head, next) &&
                     offsetof(struct ua_rcu_head, func) == offsetof(struct rm_rcu_head, func),
                 "struct rcu_head must be liburcu's layout");

struct ua_atfork { /* liburcu's struct urcu_atfork */
  void (*before_fork)(void *priv);
  void (*after_fork_parent)(void *priv);
  void (*after_fork_child)(void *priv);
  void *priv;
};

/* liburcu's struct rcu_flavor_struct (urcu/flavor.h): 14 pointers. */
struct ua_flavor {
  void (*read_lock)(void);
  void (*read_unlock)(void);
  int (*read_ongoing)(void);
  void (*read_quiescent_state)(void);
  void (*update_call_rcu)(struct ua_rcu_head *head, void (*func)(struct ua_rcu_head *head));
  void (*update_synchronize_rcu)(void);
  void (*update_defer_rcu)(void (*fct)(void *p), void *p);
  void (*thread_offline)(void);
  void (*thread_online)(void);
  void (*register_thread)(void);
  void (*unregister_thread)(void);
  void (*barrier)(void);
  void (*register_rculfhash_atfork)(struct ua_atfork *atfork);
  void (*unregister_rculfhash_atfork)(struct ua_atfork *atfork);
};
RM_STATIC_ASSERT(sizeof(struct ua_flavor) == 0x70, "liburcu's flavor table is 112 bytes");

/* ---- the choice: FCP-RCU or liburcu ------------------------------------------ */

enum { UA_UNDECIDED = 0, UA_OURS = 1, UA_LIBURCU = 2 };
static int ua_mode;
static pthread_once_t ua_once = PTHREAD_ONCE_INIT;
static bool ua_stats;

/* liburcu's functions, for forwarding (filled when forwarding is chosen). */
#define UA_FUNCS(X)                                                                       \
  X(void, urcu_memb_read_lock, (void), ())                                                \
  X(void, urcu_memb_read_unlock, (void), ())                                              \
  X(int, urcu_memb_read_ongoing, (void), ())                                              \
  X(void, urcu_memb_register_thread, (void), ())                                          \
  X(void, urcu_memb_unregister_thread, (void), ())                                        \
  X(void, urcu_memb_synchronize_rcu, (void), ())                                          \
  X(void, urcu_memb_init, (void), ())                                                     \
  X(void, urcu_memb_call_rcu, (struct ua_rcu_head * h, void (*f)(struct ua_rcu_head *)), \
    (h, f))                                                                               \
  X(void, urcu_memb_barrier, (void), ())                                                  \
  X(void, urcu_memb_defer_rcu, (void (*f)(void *), void *p), (f, p))                      \
  X(int, urcu_memb_defer_register_thread, (void), ())                                     \
  X(void, urcu_memb_defer_unregister_thread, (void), ())                                  \
  X(void, urcu_memb_defer_barrier, (void), ())                                            \
  X(void, urcu_memb_defer_barrier_thread, (void), ())                                     \
  X(void, urcu_memb_defer_exit, (void), ())                                               \
  X(void *, urcu_memb_create_call_rcu_data, (unsigned long fl, int cpu), (fl, cpu))       \
  X(void, urcu_memb_call_rcu_data_free, (void *c), (c))                                   \
  X(void *, urcu_memb_get_default_call_rcu_data, (void), ())                              \
  X(void *, urcu_memb_get_cpu_call_rcu_data, (int cpu), (cpu))                            \
  X(void *, urcu_memb_get_thread_call_rcu_data, (void), ())                               \
  X(void *, urcu_memb_get_call_rcu_data, (void), ())                                      \
  X(pthread_t, urcu_memb_get_call_rcu_thread, (void *c), (c))                             \
  X(void, urcu_memb_set_thread_call_rcu_data, (void *c), (c))                             \
  X(int, urcu_memb_set_cpu_call_rcu_data, (int cpu, void *c), (cpu, c))                   \
  X(int, urcu_memb_create_all_cpu_call_rcu_data, (unsigned long fl), (fl))                \
  X(void, urcu_memb_free_all_cpu_call_rcu_data, (void), ())                               \
  X(void, urcu_memb_call_rcu_before_fork, (void), ())                                     \
  X(void, urcu_memb_call_rcu_after_fork_parent, (void), ())                               \
  X(void, urcu_memb_call_rcu_after_fork_child, (void), ())                                \
  X(void, urcu_memb_register_rculfhash_atfork, (struct ua_atfork * a), (a))               \
  X(void, urcu_memb_unregister_rculfhash_atfork, (struct ua_atfork * a), (a))

#define UA_PTR(ret, name, params, args) ret(*name) params;
static struct {
  UA_FUNCS(UA_PTR)
} real;

static const char *ua_reason = "";

static void ua_resolve(void) {
#define UA_SYM(ret, name, params, args)                                                  \
  real.name = (ret(*) params)dlsym(RTLD_NEXT, #name);                                    \
  if (!real.name) {                                                                      \
    fprintf(stderr, "readmostly-urcu: forwarding to liburcu, but %s is not loaded\n", #name); \
    abort();                                                                             \
  }
  UA_FUNCS(UA_SYM)
#undef UA_SYM
}

/* An object's dynamic symbols: the address of an entry of its dynamic
 * section (already relocated by the dynamic linker on this platform, except
 * in read-only dynamic sections such as the vDSO's). */
static const void *ua_dynptr(const struct dl_phdr_info *info, ElfW(Addr) p) {
  return (const void *)(p < info->dlpi_addr ? p + info->dlpi_addr : p);
}

/* The number of entries of the dynamic symbol table, from DT_HASH (its
 * chain count) or DT_GNU_HASH (past the last chain of the last bucket). */
static size_t ua_nsyms(const uint32_t *hash, const uint32_t *gnu) {
  if (hash) return hash[1];
  if (!gnu) return 0;
  uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
  const uint32_t *buckets = gnu + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
  const uint32_t *chains = buckets + nbuckets;
  uint32_t last = 0;
  for (uint32_t b = 0; b < nbuckets; b++)
    if (buckets[b] > last) last = buckets[b];
  if (last < symoffset) return symoffset;
  while (!(chains[last - symoffset] & 1u)) last++;
  return (size_t)last + 1;
}

/* Which of liburcu's inline-only data symbols the object needs, or NULL. */
static const char *ua_inlines(const struct dl_phdr_info *info) {
  const ElfW(Dyn) *dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn) return NULL;
  const ElfW(Sym) *sym = NULL;
  const char *str = NULL;
  const uint32_t *hash = NULL, *gnu = NULL;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    switch (dyn->d_tag) {
    case DT_SYMTAB: sym = (const ElfW(Sym) *)ua_dynptr(info, dyn->d_un.d_ptr); break;
    case DT_STRTAB: str = (const char *)ua_dynptr(info, dyn->d_un.d_ptr); break;
    case DT_HASH: hash = (const uint32_t *)ua_dynptr(info, dyn->d_un.d_ptr); break;
    case DT_GNU_HASH: gnu = (const uint32_t *)ua_dynptr(info, dyn->d_un.d_ptr); break;
    default: break;
    }
  }
  if (!sym || !str) return NULL;
  size_t n = ua_nsyms(hash, gnu);
  for (size_t i = 1; i < n; i++) {
    if (sym[i].st_shndx != SHN_UNDEF) continue;
    const char *s = str + sym[i].st_name;
    if (strcmp(s, "urcu_memb_gp") == 0 || strcmp(s, "urcu_memb_reader") == 0) return s;
  }
  return NULL;
}

struct ua_scan {
  unsigned long long from_adds; /* objects loaded up to this count were checked */
  unsigned long long adds;
  char name[512];
  const char *sym;
};
static unsigned long long ua_scanned_adds; /* under ua_scan_lock */
static pthread_mutex_t ua_scan_lock = PTHREAD_MUTEX_INITIALIZER;

static int ua_scan_one(struct dl_phdr_info *info, size_t size, void *arg) {
  struct ua_scan *s = (struct ua_scan *)arg;
  if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) return 1;
  s->adds = info->dlpi_adds;
  /* Nothing loaded since the last scan: stop at the first object. */
  if (s->from_adds != 0 && info->dlpi_adds == s->from_adds) return 1;
  const char *sym = ua_inlines(info);
  if (!sym) return 0;
  const char *n = info->dlpi_name;
  if (!n || !*n) n = program_invocation_name; /* the main program */
  snprintf(s->name, sizeof s->name, "%s", n);
  s->sym = sym;
  return 1;
}

/* Scan the loaded objects not scanned yet: the name of the first that
 * inlines (in s), or s->sym NULL. */
static void ua_scan(struct ua_scan *s) {
  memset(s, 0, sizeof *s);
  pthread_mutex_lock(&ua_scan_lock);
  s->from_adds = ua_scanned_adds;
  dl_iterate_phdr(ua_scan_one, s);
  if (!s->sym && s->adds) ua_scanned_adds = s->adds;
  pthread_mutex_unlock(&ua_scan_lock);
}

static void ua_stats_print(void);

static void ua_decide(void) {
  static const char *const modes[] = {"readmostly", "liburcu", NULL};
  int mode = UA_OURS;
  ua_stats = rm_env_flag("READMOSTLY_STATS");
  if (rm_env_choice("READMOSTLY_URCU", modes, 0) == 1) {
    mode = UA_LIBURCU;
    ua_reason = "READMOSTLY_URCU=liburcu";
  } else {
    struct ua_scan s;
    ua_scan(&s);
    if (s.sym) {
      fprintf(stderr,
              "readmostly-urcu: %s uses liburcu's inline read side (%s): every urcu_memb_* "
              "call goes to liburcu\n",
              s.name, s.sym);
      mode = UA_LIBURCU;
      ua_reason = "an object inlines liburcu's read side";
    }
  }
  if (mode == UA_LIBURCU) ua_resolve();
  if (ua_stats) atexit(ua_stats_print);
  /* Release: the resolved pointers before the mode that sends callers to
   * them (a thread that reads the mode without passing the once). */
  rm_atomic_store_release(&ua_mode, mode);
}

/* Acquire pairs with ua_decide's release: a thread that reads UA_LIBURCU
 * also reads the resolved pointers. */
RM_INLINE bool ua_forward(void) {
  int m = rm_atomic_load_acquire(&ua_mode);
  if (RM_LIKELY(m == UA_OURS)) return false;
  if (m == UA_UNDECIDED) {
    pthread_once(&ua_once, ua_decide);
    m = rm_atomic_load_acquire(&ua_mode);
  }
  return m == UA_LIBURCU;
}

/* The two mutexes of this file are held across fork() (taken before,
 * released in both processes after), so that a child never finds one held
 * by a thread it does not have (a fork while another thread registers). */
static pthread_mutex_t ua_nodes_lock = PTHREAD_MUTEX_INITIALIZER;
static void ua_prepare(void) {
  pthread_mutex_lock(&ua_scan_lock);
  pthread_mutex_lock(&ua_nodes_lock);
}
static void ua_release(void) {
  pthread_mutex_unlock(&ua_nodes_lock);
  pthread_mutex_unlock(&ua_scan_lock);
}

/* Decide at load: the line about an inlining object comes first, and a
 * program whose constructors use RCU finds the choice made (if they run
 * before this one, their first call makes it). */
__attribute__((constructor)) static void ua_ctor(void) {
  pthread_atfork(ua_prepare, ua_release, ua_release);
  (void)ua_forward();
}

/* ---- statistics ---------------------------------------------------------------- */

static void ua_stats_print(void) {
  if (rm_atomic_load_relaxed(&ua_mode) == UA_LIBURCU) {
    fprintf(stderr, "readmostly-urcu: pid=%d forwarded to liburcu (%s): no statistics\n",
            (int)getpid(), ua_reason);
    return;
  }
  struct rm_rcu_stats st;
  rm_rcu_get_stats(&st);
  struct rm_fcp_domain *d = &rm_rcu_dom;
  fprintf(stderr,
          "readmostly-urcu: pid=%d impl=fcp-rcu grace_periods=%llu sync_calls=%llu "
          "sync_shared=%llu consensus_membarrier=%llu consensus_fast=%llu consensus_fenced=%llu "
          "callbacks_run=%llu callback_batches=%llu membarrier_mode=%d\n",
          (int)getpid(), (unsigned long long)st.grace_periods,
          (unsigned long long)st.sync_calls, (unsigned long long)st.sync_shared,
          (unsigned long long)rm_atomic_load_relaxed(&d->consensus_membarrier),
          (unsigned long long)rm_atomic_load_relaxed(&d->consensus_fast),
          (unsigned long long)rm_atomic_load_relaxed(&d->consensus_fenced),
          (unsigned long long)st.callbacks_run, (unsigned long long)st.callback_batches,
          (int)rm_fcp_membarrier_mode());
}

/* ---- read side -------------------------------------------------------------------- */

/* FWD: a function with a value returns liburcu's; FWDV: a void one. */
#define FWD(name, args)                                   \
  do {                                                    \
    if (RM_UNLIKELY(ua_forward())) return real.name args; \
  } while (0)
#define FWDV(name, args)              \
  do {                                \
    if (RM_UNLIKELY(ua_forward())) {  \
      real.name args;                 \
      return;                         \
    }                                 \
  } while (0)

UA_EXPORT void urcu_memb_read_lock(void) {
  FWDV(urcu_memb_read_lock, ());
  rm_rcu_read_lock();
}

UA_EXPORT void urcu_memb_read_unlock(void) {
  FWDV(urcu_memb_read_unlock, ());
  rm_rcu_read_unlock();
}

UA_EXPORT int urcu_memb_read_ongoing(void) {
  FWD(urcu_memb_read_ongoing, ());
  return rm_rcu_read_ongoing();
}

/* ---- registration ----------------------------------------------------------------- */

UA_EXPORT void urcu_memb_register_thread(void) {
  FWDV(urcu_memb_register_thread, ());
  /* An object loaded since the last check that reads inline would now
   * register this thread with liburcu's list behind our back (see the top
   * of this file). */
  struct ua_scan s;
  ua_scan(&s);
  if (s.sym) {
    fprintf(stderr,
            "readmostly-urcu: %s, loaded after the program started, uses liburcu's inline "
            "read side (%s): FCP-RCU cannot hand over to liburcu now, aborting\n",
            s.name, s.sym);
    abort();
  }
  int e = rm_rcu_register_thread();
  if (e) {
    fprintf(stderr, "readmostly-urcu: urcu_memb_register_thread: %s\n", strerror(e));
    abort();
  }
}

UA_EXPORT void urcu_memb_unregister_thread(void) {
  FWDV(urcu_memb_unregister_thread, ());
  if (rm_rcu_unregister_thread() != 0)
    fprintf(stderr, "readmostly-urcu: urcu_memb_unregister_thread inside a read section "
                    "(ignored)\n");
}

UA_EXPORT void urcu_memb_init(void) {
  FWDV(urcu_memb_init, ());
  (void)rm_rcu_domain();
}

/* Inline no-ops in liburcu's memb flavor; FCP-RCU's report the version
 * (sparing grace periods a membarrier).  Inside a section liburcu's do
 * nothing, and so do these. */
UA_EXPORT void urcu_memb_quiescent_state(void) {
  if (ua_forward() || rm_rcu_read_ongoing()) return;
  rm_rcu_quiescent_state();
}
UA_EXPORT void urcu_memb_thread_offline(void) {
  if (ua_forward() || rm_rcu_read_ongoing()) return;
  rm_rcu_thread_offline();
}
UA_EXPORT void urcu_memb_thread_online(void) {
  if (ua_forward() || rm_rcu_read_ongoing()) return;
  rm_rcu_thread_online();
}

/* ---- grace periods and callbacks -------------------------------------------------- */

UA_EXPORT void urcu_memb_synchronize_rcu(void) {
  FWDV(urcu_memb_synchronize_rcu, ());
  (void)rm_rcu_synchronize_as("synchronize_rcu");
}

UA_EXPORT void urcu_memb_call_rcu(struct ua_rcu_head *head,
                                  void (*func)(struct ua_rcu_head *head)) {
  FWDV(urcu_memb_call_rcu, (head, func));
  /* Same layout (asserted above); the function receives the pointer it
   * was given. */
  rm_rcu_call((struct rm_rcu_head *)(void *)head, (void (*)(struct rm_rcu_head *))(void *)func);
}

UA_EXPORT void urcu_memb_barrier(void) {
  FWDV(urcu_memb_barrier, ());
  (void)rm_rcu_barrier_as("rcu_barrier");
}

UA_EXPORT void urcu_memb_defer_rcu(void (*fct)(void *p), void *p) {
  FWDV(urcu_memb_defer_rcu, (fct, p));
  (void)rm_rcu_defer(fct, p); /* EDEADLK: said on stderr, fct not called */
}

/* defer_rcu needs no registration here: its nodes go to the call_rcu
 * queues, whose barrier is rcu_barrier's. */
UA_EXPORT int urcu_memb_defer_register_thread(void) {
  FWD(urcu_memb_defer_register_thread, ());
  return 0;
}
UA_EXPORT void urcu_memb_defer_unregister_thread(void) {
  FWDV(urcu_memb_defer_unregister_thread, ());
}
UA_EXPORT void urcu_memb_defer_exit(void) { FWDV(urcu_memb_defer_exit, ()); }
UA_EXPORT void urcu_memb_defer_barrier(void) {
  FWDV(urcu_memb_defer_barrier, ());
  (void)rm_rcu_barrier_as("defer_barrier");
}
UA_EXPORT void urcu_memb_defer_barrier_thread(void) {
  FWDV(urcu_memb_defer_barrier_thread, ());
  (void)rm_rcu_barrier_as("defer_barrier_thread");
}

/* call_rcu data objects: liburcu's struct call_rcu_data is opaque to
 * programs, so ours travels under its name. */
UA_EXPORT void *urcu_memb_create_call_rcu_data(unsigned long flags, int cpu_affinity) {
  FWD(urcu_memb_create_call_rcu_data, (flags, cpu_affinity));
  struct rm_rcu_call_data *c = NULL;
  return rm_rcu_call_data_create(&c) == 0 ? c : NULL;
}
UA_EXPORT void urcu_memb_call_rcu_data_free(void *c) {
  FWDV(urcu_memb_call_rcu_data_free, (c));
  /* liburcu ignores NULL and the default object. */
  if (c && c != rm_rcu_call_data_default()) (void)rm_rcu_call_data_free(c);
}
UA_EXPORT void *urcu_memb_get_default_call_rcu_data(void) {
  FWD(urcu_memb_get_default_call_rcu_data, ());
  return rm_rcu_call_data_default();
}
UA_EXPORT void *urcu_memb_get_cpu_call_rcu_data(int cpu) {
  FWD(urcu_memb_get_cpu_call_rcu_data, (cpu));
  return rm_rcu_call_data_cpu(cpu);
}
UA_EXPORT void *urcu_memb_get_thread_call_rcu_data(void) {
  FWD(urcu_memb_get_thread_call_rcu_data, ());
  return rm_rcu_call_data_thread();
}
UA_EXPORT void *urcu_memb_get_call_rcu_data(void) {
  FWD(urcu_memb_get_call_rcu_data, ());
  return rm_rcu_call_data_current();
}
UA_EXPORT pthread_t urcu_memb_get_call_rcu_thread(void *c) {
  FWD(urcu_memb_get_call_rcu_thread, (c));
  return rm_rcu_call_data_worker(c);
}
UA_EXPORT void urcu_memb_set_thread_call_rcu_data(void *c) {
  FWDV(urcu_memb_set_thread_call_rcu_data, (c));
  rm_rcu_call_data_set_thread(c);
}
/* 0, or a negative error code with errno set to it, as liburcu. */
UA_EXPORT int urcu_memb_set_cpu_call_rcu_data(int cpu, void *c) {
  FWD(urcu_memb_set_cpu_call_rcu_data, (cpu, c));
  int e = rm_rcu_call_data_set_cpu(cpu, c);
  if (e) errno = e;
  return -e;
}
UA_EXPORT int urcu_memb_create_all_cpu_call_rcu_data(unsigned long flags) {
  FWD(urcu_memb_create_all_cpu_call_rcu_data, (flags));
  int e = rm_rcu_call_data_create_per_cpu();
  if (e) errno = e;
  return -e;
}
UA_EXPORT void urcu_memb_free_all_cpu_call_rcu_data(void) {
  FWDV(urcu_memb_free_all_cpu_call_rcu_data, ());
  (void)rm_rcu_call_data_free_per_cpu();
}
UA_EXPORT void urcu_memb_call_rcu_before_fork(void) {
  FWDV(urcu_memb_call_rcu_before_fork, ());
  rm_rcu_call_before_fork();
}
UA_EXPORT void urcu_memb_call_rcu_after_fork_parent(void) {
  FWDV(urcu_memb_call_rcu_after_fork_parent, ());
  rm_rcu_call_after_fork_parent();
}
UA_EXPORT void urcu_memb_call_rcu_after_fork_child(void) {
  FWDV(urcu_memb_call_rcu_after_fork_child, ());
  rm_rcu_call_after_fork_child();
}

/* liburcu's struct urcu_atfork has no link field: one node of ours per
 * registration (liburcu's lock-free hash table registers one). */
struct ua_atfork_node {
  struct rm_rcu_atfork a;
  struct ua_atfork *user;
  struct ua_atfork_node *next;
};
static struct ua_atfork_node *ua_nodes; /* under ua_nodes_lock */

static void ua_before(void *p) {
  struct ua_atfork *u = (struct ua_atfork *)p;
  if (u->before_fork) u->before_fork(u->priv);
}
static void ua_parent(void *p) {
  struct ua_atfork *u = (struct ua_atfork *)p;
  if (u->after_fork_parent) u->after_fork_parent(u->priv);
}
static void ua_child(void *p) {
  struct ua_atfork *u = (struct ua_atfork *)p;
  if (u->after_fork_child) u->after_fork_child(u->priv);
}

UA_EXPORT void urcu_memb_register_rculfhash_atfork(struct ua_atfork *u) {
  FWDV(urcu_memb_register_rculfhash_atfork, (u));
  struct ua_atfork_node *n = (struct ua_atfork_node *)calloc(1, sizeof *n);
  if (!n) {
    fprintf(stderr, "readmostly-urcu: cannot register a fork handler (out of memory)\n");
    abort();
  }
  n->a.before_fork = ua_before;
  n->a.after_fork_parent = ua_parent;
  n->a.after_fork_child = ua_child;
  n->a.priv = u;
  n->user = u;
  pthread_mutex_lock(&ua_nodes_lock);
  n->next = ua_nodes;
  ua_nodes = n;
  pthread_mutex_unlock(&ua_nodes_lock);
  rm_rcu_register_atfork(&n->a);
}

UA_EXPORT void urcu_memb_unregister_rculfhash_atfork(struct ua_atfork *u) {
  FWDV(urcu_memb_unregister_rculfhash_atfork, (u));
  struct ua_atfork_node *n = NULL;
  pthread_mutex_lock(&ua_nodes_lock);
  for (struct ua_atfork_node **pp = &ua_nodes; *pp; pp = &(*pp)->next)
    if ((*pp)->user == u) {
      n = *pp;
      *pp = n->next;
      break;
    }
  pthread_mutex_unlock(&ua_nodes_lock);
  if (!n) return;
  rm_rcu_unregister_atfork(&n->a);
  free(n);
}

/* ---- the flavor table and data ------------------------------------------------------ */

static void ua_noop(void) {}

/* As liburcu's memb table: quiescent_state, offline and online are its
 * no-ops.  Each entry is one of the functions above, so it forwards too. */
UA_EXPORT const struct ua_flavor urcu_memb_flavor = {
    .read_lock = urcu_memb_read_lock,
    .read_unlock = urcu_memb_read_unlock,
    .read_ongoing = urcu_memb_read_ongoing,
    .read_quiescent_state = ua_noop,
    .update_call_rcu = urcu_memb_call_rcu,
    .update_synchronize_rcu = urcu_memb_synchronize_rcu,
    .update_defer_rcu = urcu_memb_defer_rcu,
    .thread_offline = ua_noop,
    .thread_online = ua_noop,
    .register_thread = urcu_memb_register_thread,
    .unregister_thread = urcu_memb_unregister_thread,
    .barrier = urcu_memb_barrier,
    .register_rculfhash_atfork = urcu_memb_register_rculfhash_atfork,
    .unregister_rculfhash_atfork = urcu_memb_unregister_rculfhash_atfork,
};

/* Read only by liburcu's inline read side, which never runs over this
 * library (see "Refusal"); kept for the symbol's sake, and true. */
UA_EXPORT int urcu_memb_has_sys_membarrier = 1;

/* liburcu's futex fallback for kernels without futex (urcu/futex.h calls
 * it when the system call fails with ENOSYS).  Linux has futex: the
 * system call itself, which implements every operation the fallback
 * does.  The mutex and condition variable are the fallback's, exported by
 * liburcu as weak objects; nothing here uses them. */
UA_EXPORT pthread_mutex_t __urcu_compat_futex_lock = PTHREAD_MUTEX_INITIALIZER;
UA_EXPORT pthread_cond_t __urcu_compat_futex_cond = PTHREAD_COND_INITIALIZER;

static int ua_futex(int32_t *uaddr, int op, int32_t val, const struct timespec *timeout,
                    int32_t *uaddr2, int32_t val3) {
  long r = syscall(SYS_futex, uaddr, op, val, timeout, uaddr2, val3);
  return r < 0 ? -1 : (int)r;
}
UA_EXPORT int compat_futex_noasync(int32_t *uaddr, int op, int32_t val,
                                   const struct timespec *timeout, int32_t *uaddr2,
                                   int32_t val3) {
  return ua_futex(uaddr, op, val, timeout, uaddr2, val3);
}
UA_EXPORT int compat_futex_async(int32_t *uaddr, int op, int32_t val,
                                 const struct timespec *timeout, int32_t *uaddr2, int32_t val3) {
  return ua_futex(uaddr, op, val, timeout, uaddr2, val3);
}

/* ---- pointers (liburcu's *_sym functions) ------------------------------------------- */

/* liburcu's rcu_dereference(p) without _LGPL_SOURCE loads p at the call
 * site and passes the value here, which returns it after a dependency
 * barrier (nothing but on Alpha). */
UA_EXPORT void *rcu_dereference_sym(void *p) {
  /* The caller loaded p (liburcu's macro passes the pointer's value); an
   * acquire fence orders that load before every later one of the caller,
   * and costs only a compiler barrier on x86. */
  rm_fence_acquire();
  return p;
}
/* Release: the object's initialisation before the pointer's publication
 * (liburcu: a write barrier, then the store).  Returns v, as liburcu. */
UA_EXPORT void *rcu_set_pointer_sym(void **p, void *v) {
  rm_atomic_store_release(p, v);
  return v;
}
/* Full barriers before and after, as liburcu's uatomic_xchg/cmpxchg. */
UA_EXPORT void *rcu_xchg_pointer_sym(void **p, void *v) {
  return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
UA_EXPORT void *rcu_cmpxchg_pointer_sym(void **p, void *old, void *_new) {
  __atomic_compare_exchange_n(p, &old, _new, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return old;
}

/* Tests and tools look this up (dlsym(RTLD_DEFAULT)) to know the library
 * is there: 1 while FCP-RCU serves the calls, 2 when they go to liburcu. */
UA_EXPORT int readmostly_urcu_active(void) { return ua_forward() ? 2 : 1; }
