/*
 * readmostly/rlu.h - read-log-update: RCU-style readers, writers that update
 * several objects atomically.
 *
 * SYNOPSIS
 *   #include <readmostly/rlu.h>
 *   rm_rlu_init(&(struct rm_rlu_options){.flavor = RM_RLU_FINE});  // optional
 *   rm_rlu_ctx *self = rm_rlu_thread_register();    // once per thread
 *   struct node *n = rm_rlu_alloc(sizeof *n);        // objects carry a header
 *
 *   restart:
 *     rm_rlu_reader_lock(self);                      // section: never blocks
 *     struct node *p = RM_RLU_DEREF(self, head);     // every shared pointer
 *     ...
 *     if (RM_RLU_TRY_LOCK(self, &p) != 0) {          // p now points to a copy
 *       rm_rlu_abort(self);                          // fine-grained: conflict
 *       goto restart;
 *     }
 *     p->val = 7;                                    // writes go to the copy
 *     rm_rlu_assign_ptr(&p->next, other);            // store actual pointers
 *     rm_rlu_reader_unlock(self);                    // commit: all or nothing
 *
 *   rm_rlu_thread_unregister(self);                  // or thread exit
 *
 * DESCRIPTION
 *   RLU (Matveev, Shavit, Felber, Marlier, SOSP 2015) gives readers what RCU
 *   gives them (no lock, no atomic read-modify-write, never blocked) and
 *   lets a writer change several objects in one section: a concurrent
 *   section sees either every copy the writer made or none of them.  This is
 *   Algorithm 1 of the paper, with the changes docs/rlu.md lists.
 *
 *   Objects.  rm_rlu_alloc(size) returns memory of any size preceded by a
 *   16-byte header (the copy pointer and the size); objects keep malloc's
 *   alignment.  Every pointer to a shared object must be read through
 *   rm_rlu_dereference() inside a section, and stored with
 *   rm_rlu_assign_ptr() (which stores the object's actual address even when
 *   given a copy).  rm_rlu_free() inside a section frees the object after
 *   the section's commit has waited for every section that could see it;
 *   outside a section (ctx NULL) it frees at once.  An object that
 *   rm_rlu_alloc() allocates inside a section of the calling thread is
 *   freed by that section's abort (nothing of an aborted section stays
 *   behind: the links to it are in discarded copies), and makes the
 *   section a writer (its exit commits): after rm_rlu_abort() the caller
 *   must not use it, free it or link it in a retry.
 *   rm_rlu_alloc_untracked() returns the same object without either: an
 *   abort leaves it to the caller, to keep for the retry or to free with
 *   rm_rlu_free(NULL, obj).  That is the reference implementation's
 *   RLU_ALLOC, and readmostly/rlu-compat.h maps RLU_ALLOC to it.
 *
 *   Contexts.  Each thread that enters sections owns a context, obtained
 *   from rm_rlu_thread_register().  There is no limit on their number:
 *   contexts live in a registry that grows by segments of 64, and the slot
 *   of a context returned by rm_rlu_thread_unregister() (or by the exit of
 *   its thread) is reused by the next registration.  A writer's
 *   synchronize looks at slots below the high-water mark of live contexts
 *   and skips free slots and idle contexts at the cost of a load or two.
 *   An idle context holds no log memory (512 bytes in all); logs are
 *   allocated on a thread's first write and freed when it unregisters.
 *
 *   Sections.  rm_rlu_reader_lock() enters a section: it marks the context
 *   active (odd run counter), executes a full fence, and copies the global
 *   clock into the context's local clock.  rm_rlu_dereference() returns the
 *   object itself, the caller's own copy, or - when the object is locked by
 *   a writer that is committing with a write clock not later than the
 *   caller's local clock - that writer's copy ("stealing").
 *   rm_rlu_try_lock() locks an object for the section: it installs, with a
 *   CAS, a pointer to a copy in the caller's write-log, copies the object
 *   there and returns the copy, which the section then modifies.
 *   rm_rlu_reader_unlock() leaves the section and, if it locked anything,
 *   commits: the writer publishes its write clock and advances the global
 *   clock (one step, see THE WRITE CLOCK), waits for every section that
 *   started before (synchronize), writes the copies back, unlocks the
 *   objects, disables stealing and swaps its two logs (the log just used is
 *   reused only after the next commit's synchronize).
 *
 *   Flavors (rm_rlu_init, process-wide, before contexts exist).
 *   RM_RLU_FINE: per-object locks.  rm_rlu_try_lock() returns EBUSY when
 *   another context holds the object; the caller must rm_rlu_abort() (which
 *   unlocks everything the section locked and discards its copies) and
 *   retry the section.  RM_RLU_COARSE: writers are serialized by one writer
 *   lock, taken with rm_rlu_writer_lock() instead of rm_rlu_reader_lock()
 *   (or, inside a section, with rm_rlu_try_writer_lock(), which may fail);
 *   a section that holds it never sees EBUSY and never has to abort.
 *   Readers of both flavors are the same.
 *
 *   Deferral (fine-grained, rm_rlu_options.max_defer = N > 1; the paper's
 *   section 3.7).  A writer's commit only closes the section in its log: the
 *   objects stay locked, the copies private, and the clock, synchronize and
 *   write-back are skipped until N sections have accumulated, or another
 *   writer's rm_rlu_try_lock() meets one of the locked objects (EBUSY for
 *   it, and a sync request for the owner, served at the owner's next
 *   rm_rlu_reader_lock(), rm_rlu_abort() or rm_rlu_sync_checkpoint()), or
 *   the owner calls rm_rlu_sync() or unregisters (or exits).  THIS GIVES UP
 *   LINEARIZABILITY: until then, sections of other threads do not see the
 *   deferred updates, even sections that begin after the writer's
 *   rm_rlu_reader_unlock() returned (the writer's own sections do see
 *   them).  Use it where readers tolerate stale data between sync points,
 *   and call rm_rlu_sync() where they must not.  A deferring thread that
 *   stops calling RLU keeps its objects locked (other writers abort and
 *   retry) until it syncs or exits.  A try_lock of an object locked by one
 *   of the caller's own deferred sections returns EBUSY and makes the next
 *   checkpoint flush.  A section that holds the writer lock
 *   (rm_rlu_writer_lock(), rm_rlu_try_writer_lock()) is never deferred: its
 *   exit commits it, with the deferred sections before it, and then
 *   releases the lock.
 *
 *   Write skew.  RLU locks what a section writes, not what it reads: two
 *   sections may each read an object the other writes and both commit.  A
 *   section whose decision depends on an object it does not modify must
 *   lock that object too (rm_rlu_try_lock() without changing the copy).
 *
 * THE WRITE CLOCK
 *   The paper's commit reads the global clock, publishes clock+1 as its
 *   write clock, then increments the clock.  Another writer may increment
 *   the clock in between; a section that started at the new value then sees
 *   the first writer's write clock go from "infinite" (read the object) to a
 *   value not later than its own clock (steal the copy) while it runs, and
 *   sees half of that commit.  Here the three steps run under a small
 *   spinlock taken by committing writers only (never by readers), so the
 *   clock cannot move between the read and the advance: a section either
 *   read the clock before the advance (it reads originals of every object
 *   the writer locked, and the writer waits for it) or after it (it steals
 *   every copy).  docs/rlu.md gives the interleaving and the ordering table.
 *
 *   Logs.  A write-log is a chain of chunks; a section that writes more than
 *   the chain holds gets a new chunk (copies never move, so readers holding
 *   a pointer into the log stay valid).  When memory is exhausted, or the
 *   log would exceed rm_rlu_options.max_log_bytes, rm_rlu_try_lock()
 *   returns ENOMEM with the object unlocked; the caller aborts the section,
 *   and nothing of it is applied.
 *
 * SECTION ENTRY
 *   By default rm_rlu_reader_lock() executes the paper's full fence between
 *   marking the context active and reading the clock.  With
 *   rm_rlu_options.fence_free it does not, as long as the FCP core
 *   (readmostly/fcp.h) runs in membarrier mode: a writer's synchronize then
 *   cannot trust a run counter it loads (the reader's stores may not be
 *   visible yet, while its clock load already returned); it waits a few
 *   microseconds for each context to show a section that read the new
 *   clock (busy readers do at their next entry), issues one membarrier for
 *   the others, and then waits for them as with the fenced entry.  Each
 *   thread that registers then also holds a record of a private
 *   FCP domain, so that FCP's switch to fence mode (when membarrier fails,
 *   or by rm_fcp_switch_to_fence()) covers it.  Without membarrier (also
 *   with READMOSTLY_NO_MEMBARRIER=1), and under ThreadSanitizer, the option
 *   is ignored.  rm_rlu_fence_free()
 *   tells which entry runs.  Registered threads that stay idle, and threads
 *   that wait for a CPU (more threads than CPUs), cost every synchronize a
 *   membarrier (the free slots of unregistered contexts do not): when
 *   synchronizes issue more than
 *   rm_rlu_options.fence_free_max_barriers of them per second (measured
 *   over windows of at least 100 ms; default 5000), RLU goes back to the
 *   fenced entry for the rest of the process (or until rm_rlu_init()
 *   chooses again), since a fence per section then costs less.  Unregister
 *   threads that stop using RLU.
 *
 *
 * RETURN VALUES
 *   rm_rlu_init() returns 0, EINVAL for a bad option, or EBUSY while
 *   contexts are registered.  rm_rlu_thread_register() returns a context or
 *   NULL (errno ENOMEM).  rm_rlu_try_lock() returns 0 (the pointer now names
 *   the caller's copy), EBUSY (locked by another context, fine-grained;
 *   abort and retry), ENOMEM (the log could not grow; abort), or EPERM
 *   outside a section (see ERRORS).  rm_rlu_lock() (coarse-grained)
 *   returns 0 or ENOMEM (EPERM outside a section).  rm_rlu_free() returns
 *   0 or ENOMEM (the free list could not grow; abort).
 *   rm_rlu_try_writer_lock() returns 0, EBUSY when another context holds
 *   the writer lock (abort and retry), or EPERM outside a section.
 *   rm_rlu_init() returns EINVAL for max_defer > 1 with the coarse-grained
 *   flavor.
 *
 * ERRORS
 *   Misuse is a bug: entering a section inside a section, leaving or
 *   aborting one that was not entered, try_lock outside a section, a NULL
 *   context, unregistering a context twice.  Debug builds of the library
 *   (no NDEBUG) abort with a message.  Release builds check the ones that
 *   would hang other threads or break the registry, and go on, with a
 *   one-line warning on stderr (once per kind of misuse):
 *     - rm_rlu_reader_unlock() or rm_rlu_abort() outside a section is
 *       ignored (it would leave the context "inside" for ever, and every
 *       writer waiting for it);
 *     - rm_rlu_try_lock() (and rm_rlu_lock()) and rm_rlu_try_writer_lock()
 *       outside a section return EPERM and change nothing (no lock, no
 *       write flag for the next section to trip on);
 *     - rm_rlu_thread_unregister() of a context that is not registered (a
 *       second call) or that another thread owns (a stale pointer to a
 *       reused context) is ignored.
 *   A NULL context (a thread that did not register) makes every build
 *   print a message and abort, in rm_rlu_reader_lock(),
 *   rm_rlu_writer_lock(), rm_rlu_try_lock(), rm_rlu_lock(),
 *   rm_rlu_try_writer_lock(), rm_rlu_abort(), rm_rlu_sync() and
 *   rm_rlu_sync_checkpoint() (rm_rlu_reader_unlock() and
 *   rm_rlu_dereference() come after an entry that checked).  The rest (a
 *   section inside a section, unregistering inside a section) is not
 *   checked in release builds.  The checks above are in the library, whose
 *   build decides between the assertion and the warning; the assertions
 *   inline in rm_rlu_reader_lock() (a section inside a section) follow the
 *   caller's NDEBUG.
 *
 * THREAD SAFETY
 *   A context belongs to the thread that registered it.  A thread that exits
 *   without rm_rlu_thread_unregister() is unregistered by a key destructor:
 *   a section left open is aborted, a commit already made is kept.
 *
 *   fork(): the child has only the forking thread; the contexts of the
 *   other threads are unregistered there, whatever they were doing.  An
 *   open section of theirs ends (its locks are released, nothing of it
 *   applied), and so do their deferred sections (max_defer > 1): updates
 *   no thread of the child had seen are not in the child.  A commit that
 *   had stepped the clock is finished in the child (written back), unless
 *   the forking thread is inside a section that began before that step:
 *   then it is dropped, and that section goes on reading what it read.
 *   The writer lock held by another thread is free in the child.  The
 *   forking thread's own contexts, sections and locks carry on.  fork()
 *   waits for commits that are writing back (microseconds).
 *
 * STATISTICS
 *   With rm_rlu_options.stats set, each context counts, on slow paths only,
 *   commits, aborts, steals, synchronize calls, the contexts they waited
 *   for and the rounds of their wait loops, and log chunks allocated; rm_rlu_stats_get() sums live and departed contexts.
 *   Section entry and exit never count.
 */
#ifndef READMOSTLY_RLU_H
#define READMOSTLY_RLU_H

#include <readmostly/platform.h>
#include <readmostly/fcp.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rm_rlu_ctx rm_rlu_ctx;

enum rm_rlu_flavor {
  RM_RLU_FINE = 0,   /* per-object locks, abort and retry */
  RM_RLU_COARSE = 1, /* one writer lock, sections never abort */
};

struct rm_rlu_options {
  enum rm_rlu_flavor flavor;
  unsigned max_defer;    /* fine-grained: defer synchronize over up to this many
                            sections (0 or 1: no deferral); see DEFERRAL */
  bool stats;            /* count slow-path events per context */
  size_t log_chunk;      /* first chunk of a write-log, bytes (0: 4096) */
  size_t max_log_bytes;  /* a section's copies beyond this fail (0: no limit) */
  bool fence_free;       /* section entry without a fence (see SECTION ENTRY) */
  unsigned fence_free_max_barriers; /* fence-free: above this many membarriers a
                            second, the fenced entry for good (0: 5000; UINT_MAX: never) */
};

/*
 * The object header, just before every object rm_rlu_alloc() returns.
 *
 *   copy   NULL                 unlocked
 *          RM_RLU_COPY_MARK     this object is itself a copy in a write-log
 *          anything else        locked: points to the copy in the owner's log
 *   size   the size given to rm_rlu_alloc (copies have the same)
 *
 * copy is written only with CAS (lock) and release stores (unlock), and
 * read with acquire loads (rm_rlu.c's ordering table, letters L1-L3).
 */
struct rm_rlu_obj_hdr {
  void *copy;
  size_t size;
};
#define RM_RLU_COPY_MARK ((void *)(uintptr_t)1)
#define RM_RLU_HDR(obj) ((struct rm_rlu_obj_hdr *)(obj) - 1)

RM_API int rm_rlu_init(const struct rm_rlu_options *opt);
RM_API void rm_rlu_options_get(struct rm_rlu_options *out);
/* The context's slot number: small, unique among live contexts, reused. */
RM_API size_t rm_rlu_ctx_id(const rm_rlu_ctx *self);
RM_API rm_rlu_ctx *rm_rlu_thread_register(void);
RM_API void rm_rlu_thread_unregister(rm_rlu_ctx *self);

RM_API void *rm_rlu_alloc(size_t size);
RM_API void *rm_rlu_alloc_untracked(size_t size);
RM_API int rm_rlu_free(rm_rlu_ctx *self, void *obj);

/*
 * The part of a context that section entry and exit touch, inline here
 * (the rest of struct rm_rlu_ctx is private to rlu.c).  Other contexts
 * read run_cnt, local_clock, write_clock, unlocks and in_use;
 * sync_request is written by other writers (deferral).  is_writer and
 * deferred are the owner's.
 */
struct rm_rlu_ctx_hot {
  uint64_t run_cnt;        /* odd: inside a section */
  uint64_t local_clock;    /* the clock this section read */
  uint64_t write_clock;    /* UINT64_MAX: nothing to steal */
  uint64_t unlocks;        /* bumped (release) after each batch of unlocks */
  uint32_t sync_request;   /* deferral: another writer needs our locks */
  uint8_t is_writer;       /* this section locked or freed something */
  uint8_t deferred;        /* deferred sections wait in the log */
  uint8_t in_use;          /* registered (synchronize skips free slots) */
};
/* The global clock, and whether the fence-free entry is chosen
 * (rm_rlu_options.fence_free; writers read it).  The clock sits 64 bytes
 * into its sector, away from the address bits 0-11 of the contexts' run
 * counters (readmostly/fcp.h, struct rm_fcp_domain, "4K aliasing"). */
struct rm_rlu_global {
  uint8_t pad_lead[RM_CACHE_SECTOR / 2];
  uint64_t clock;
  uint32_t fence_free;
} RM_ALIGNED;
extern RM_API struct rm_rlu_global rm_rlu_global;
/* RLU's FCP domain: a record per thread for the fence-free entry, and the
 * gate (readmostly/fcp.h, "The gate") that section entry tests: open only
 * while the fence-free entry is chosen and the process is in membarrier
 * mode; the switch to fence mode closes it for good. */
extern RM_API struct rm_fcp_domain rm_rlu_dom;

RM_API void rm_rlu_checkpoint_slowpath(rm_rlu_ctx *self);
RM_API void rm_rlu_reader_unlock_slowpath(rm_rlu_ctx *self);
/* A NULL context given to fn: a message and abort() (see ERRORS). */
RM_API void rm_rlu_null_ctx(const char *fn) __attribute__((noreturn, cold));

/* Enter a section (see DESCRIPTION and SECTION ENTRY).  Ordering letters
 * R1, R2, R4 refer to src/rlu.c's table.  Model: models/rlu.pml. */
RM_INLINE void rm_rlu_reader_lock(rm_rlu_ctx *self) {
  /* A thread that never registered: say so, not a bare SIGSEGV. */
  if (RM_UNLIKELY(self == NULL)) rm_rlu_null_ctx("rm_rlu_reader_lock");
  struct rm_rlu_ctx_hot *h = (struct rm_rlu_ctx_hot *)self;
  RM_ASSERT(!(h->run_cnt & 1), "rm_rlu_reader_lock: already inside a section");
  if (RM_UNLIKELY(h->deferred)) rm_rlu_checkpoint_slowpath(self);
  /* is_writer is 0 here: every end of a section that wrote (the unlock's
   * slow path, an abort) clears it. */
  RM_ASSERT(!h->is_writer, "rm_rlu_reader_lock: the last section's write flag is still set");
  rm_atomic_store_relaxed(&h->run_cnt, h->run_cnt + 1);
  /* R1: the odd run counter before the clock load: a full fence (pairs
   * with the writer's fence after its clock step, W3), or, while RLU's
   * gate is open (fence-free entry, membarrier mode), the writer's
   * membarrier (W5).  The gate is loaded after the store (the compiler
   * barrier keeps that order in the CPU's program order): a reader that
   * saw it open loaded it before the barrier of a switch to fence mode,
   * which closes it first, reached its CPU (fcp.h, "The gate"). */
  rm_compiler_barrier();
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&rm_rlu_dom.gate) & RM_FCP_GATE_CLOSED))
    rm_fence_store_load();
  /* R2: acquire, pairs with the clock step's release (W2). */
  uint64_t l = rm_atomic_load_acquire(&rm_rlu_global.clock);
  /* R4: release, pairs with synchronize's S2. */
  rm_atomic_store_release(&h->local_clock, l);
}

/* Leave a section; commit when it wrote. */
RM_API void rm_rlu_unlock_misuse(void);
RM_INLINE void rm_rlu_reader_unlock(rm_rlu_ctx *self) {
  struct rm_rlu_ctx_hot *h = (struct rm_rlu_ctx_hot *)self;
  uint64_t r = h->run_cnt;
  /* Outside a section an odd counter would make every writer wait for this
   * context for ever: refuse (an assertion in debug builds). */
  if (RM_UNLIKELY(!(r & 1))) {
    rm_rlu_unlock_misuse();
    return;
  }
  /* R3: release; the section's reads of originals happen before a
   * writer's write-back that saw this store (S1). */
  rm_atomic_store_release(&h->run_cnt, r + 1);
  if (RM_UNLIKELY(h->is_writer)) rm_rlu_reader_unlock_slowpath(self);
}

RM_INLINE bool rm_rlu_in_section(const rm_rlu_ctx *self) {
  return (((const struct rm_rlu_ctx_hot *)self)->run_cnt & 1) != 0;
}

RM_API void rm_rlu_abort(rm_rlu_ctx *self);
RM_API void rm_rlu_sync(rm_rlu_ctx *self);
RM_API void rm_rlu_sync_checkpoint(rm_rlu_ctx *self);

RM_API void *rm_rlu_deref_slowpath(rm_rlu_ctx *self, void *obj, void *copy);

/*
 * rm_rlu_dereference: the version of obj this section must read.  The
 * common case (the object is not locked, or obj is already a copy) is one
 * acquire load here; the rest is out of line.
 */
RM_INLINE void *rm_rlu_dereference(rm_rlu_ctx *self, void *obj) {
  if (obj == NULL) return NULL;
  /* L1: acquire pairs with the locker's CAS (L2), so a copy pointer we see
   * comes with the log entry written before the CAS. */
  void *copy = rm_atomic_load_acquire(&RM_RLU_HDR(obj)->copy);
  if (RM_LIKELY(copy == NULL || copy == RM_RLU_COPY_MARK)) return obj;
  return rm_rlu_deref_slowpath(self, obj, copy);
}
#define RM_RLU_DEREF(self, p) ((__typeof__(p))rm_rlu_dereference((self), (void *)(p)))

RM_API int rm_rlu_try_lock(rm_rlu_ctx *self, void **pobj);
#define RM_RLU_TRY_LOCK(self, pp) rm_rlu_try_lock((self), (void **)(pp))
RM_API int rm_rlu_lock(rm_rlu_ctx *self, void **pobj);
#define RM_RLU_LOCK(self, pp) rm_rlu_lock((self), (void **)(pp))

RM_API void rm_rlu_writer_lock(rm_rlu_ctx *self);
RM_API int rm_rlu_try_writer_lock(rm_rlu_ctx *self);

/* The object's actual address (obj may be a copy); NULL stays NULL. */
RM_INLINE void *rm_rlu_actual(void *obj) {
  if (obj != NULL && rm_atomic_load_relaxed(&RM_RLU_HDR(obj)->copy) == RM_RLU_COPY_MARK) {
    /* A copy's log entry records the actual object just before the copy's
     * header (struct rm_rlu_entry in rlu.c: owner, actual, ...). */
    return ((void **)RM_RLU_HDR(obj))[-3];
  }
  return obj;
}
RM_INLINE bool rm_rlu_same(void *a, void *b) { return rm_rlu_actual(a) == rm_rlu_actual(b); }
/* Store a pointer to obj's actual address into *slot (slot is usually a
 * field of a copy, written back at commit; release for the rare slot read
 * by sections directly). */
RM_INLINE void rm_rlu_assign_ptr(void *slot, void *obj) {
  rm_atomic_store_release((void **)slot, rm_rlu_actual(obj));
}
#define RM_RLU_ASSIGN_PTR(slot, obj) rm_rlu_assign_ptr((void *)(slot), (void *)(obj))

struct rm_rlu_stats {
  uint64_t commits;        /* sections that locked something and committed */
  uint64_t aborts;         /* rm_rlu_abort calls */
  uint64_t conflicts;      /* try_lock found the object locked by another */
  uint64_t steals;         /* dereferences that returned another's copy */
  uint64_t syncs;          /* synchronize calls */
  uint64_t sync_waits;     /* contexts a synchronize had to wait for */
  uint64_t log_chunks;     /* log chunks allocated */
  uint64_t frees;          /* objects freed after a commit */
  uint64_t deferred;       /* sections whose synchronize was deferred */
  uint64_t sync_requests;  /* requests sent to a deferring owner */
  uint64_t sync_wait_iters; /* rounds of synchronize's wait loop (each one
                               back-off step: a cpu_relax, a yield or a
                               short sleep), summed over all waits */
  uint64_t barriers;       /* membarriers issued by synchronize (fence-free) */
};
RM_API void rm_rlu_stats_get(struct rm_rlu_stats *out);
RM_API void rm_rlu_stats_print(FILE *f);

/* True when sections enter without a fence (fence_free asked for, membarrier
 * registered, and FCP not switched to fence mode). */
RM_API bool rm_rlu_fence_free(void);

/* The global clock, for tests and statistics. */
RM_API uint64_t rm_rlu_clock(void);

#ifdef READMOSTLY_RLU_TEST_HOOKS
/* Test builds only: called at the commit's race points. */
enum rm_rlu_hook {
  RM_RLU_HOOK_CLOCK_READ = 1, /* commit read the clock, write clock not yet public */
  RM_RLU_HOOK_PUBLISHED,      /* write clock public and clock advanced */
  RM_RLU_HOOK_CLOCK_BUSY,     /* another commit holds the clock step */
  RM_RLU_HOOK_UNSURE,         /* fence-free synchronize: a round over unsettled contexts */
  RM_RLU_HOOK_BARRIER,        /* fence-free synchronize: its membarrier has returned */
};
extern RM_API void (*rm_rlu_test_hook)(enum rm_rlu_hook point, rm_rlu_ctx *self);
#endif

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_RLU_H */
