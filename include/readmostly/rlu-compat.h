/*
 * readmostly/rlu-compat.h - the RLU reference implementation's API
 * (github rlu-sync/rlu, rlu.h) on readmostly's RLU.
 *
 * SYNOPSIS
 *   #include <readmostly/rlu-compat.h>
 *   // or keep #include "rlu.h" and add -I<prefix>/include/readmostly/compat,
 *   // whose rlu.h includes this header.
 *
 *   RLU_INIT(RLU_TYPE_FINE_GRAINED, 1);             // before threads
 *   rlu_thread_data_t td;                           // by value, anywhere
 *   RLU_THREAD_INIT(&td);
 *   RLU_READER_LOCK(&td);
 *   node_t *n = (node_t *)RLU_DEREF(&td, list->head);
 *   if (!RLU_TRY_LOCK(&td, &n)) { RLU_ABORT(&td); goto restart; }
 *   RLU_ASSIGN_PTR(&td, &n->next, other);
 *   RLU_READER_UNLOCK(&td);
 *   RLU_THREAD_FINISH(&td);                         // every commit written back
 *
 * DESCRIPTION
 *   Every name of the reference's rlu.h is defined here, so that a program
 *   written for it compiles and runs unchanged (docs/rlu-compat.md lists each name
 *   and what we do for it).  The differences a program can notice:
 *
 *   - No thread cap: RLU_MAX_THREADS and the other RLU_MAX_* constants are
 *     defined for code that sizes its own arrays with them, but limit
 *     nothing here.
 *   - rlu_thread_data_t is small (168 bytes, the reference's is
 *     20.8 MB): a pointer to our context and the scalar fields programs
 *     touch.  It may be embedded by value and freed after
 *     RLU_THREAD_FINISH.  The thread that calls RLU_THREAD_INIT must be the
 *     one that uses it.
 *   - is_no_quiescence is accepted and ignored: our synchronize costs
 *     little when no section runs, and skipping it while one does would be
 *     unsafe.  The statistics fields (n_starts, ...) stay zero; use
 *     RLU_PRINT_STATS() or rm_rlu_stats_get().
 *   - RLU_INIT(RLU_TYPE_FINE_GRAINED, n) with n > 1 turns deferral on with
 *     a limit of n sections, as the reference does; statistics are on.
 *   - RLU_TRY_LOCK's size (sizeof(**p_p_obj)) is not needed: the copy is
 *     the whole object as allocated, whose size the header records.  A
 *     try_lock that fails for lack of memory returns 0 like a conflict.
 *   - RLU_TRY_WRITER_LOCK(self, id): every id names the same writer lock
 *     (coarse-grained sections are serialized, not partitioned by id).
 *   - RLU_FREE(NULL, p) frees at once (as the reference); outside a section
 *     RLU_FREE(self, p) frees at once too (the reference asserts).
 *   - RLU_INIT leaves every option it has no argument for at the
 *     library's default (rm_rlu_options zeroed): the fenced section entry.
 *
 *   Kept as in the reference: RLU_ALLOC is a plain allocation with the
 *   object header (rm_rlu_alloc_untracked).  RLU_ABORT does not free an
 *   object allocated in the aborted section: the program keeps it for the
 *   retry or frees it (the native rm_rlu_alloc differs, see rlu.h).
 */
#ifndef READMOSTLY_RLU_COMPAT_H
#define READMOSTLY_RLU_COMPAT_H

#include <readmostly/rlu.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RLU_TYPE_FINE_GRAINED (1)
#define RLU_TYPE_COARSE_GRAINED (2)

/* Defined for source compatibility; none of them is a limit here. */
#define RLU_MAX_THREADS (128)
#define RLU_MAX_WRITE_SETS (200)
#define RLU_MAX_FREE_NODES (100000)
#define RLU_MAX_WRITE_SET_BUFFER_SIZE (100000)
#define RLU_MAX_NESTED_WRITER_LOCKS (20)
#define RLU_MAX_WRITER_LOCKS (20000)
#define RLU_GENERAL_WRITER_LOCK (RLU_MAX_WRITER_LOCKS - 1)
#define RLU_DEFAULT_PADDING (16)

#define rlu_likely(x) __builtin_expect((x), 1)

typedef size_t obj_size_t;
typedef struct rm_rlu_obj_hdr rlu_obj_header_t;
#define RLU_OBJ_HEADER_SIZE (sizeof(rlu_obj_header_t))
#define RLU_MOVE_PTR_BACK(p_obj, offset) ((intptr_t *)(((unsigned char *)(p_obj)) - (offset)))
#define RLU_OBJ_TO_H(p_obj) ((rlu_obj_header_t *)RLU_MOVE_PTR_BACK(p_obj, RLU_OBJ_HEADER_SIZE))
#define RLU_GET_COPY(p_obj) \
  ((intptr_t *)rm_atomic_load_acquire(&RLU_OBJ_TO_H(p_obj)->copy))
#define RLU_PTR_IS_LOCKED(p_obj_copy) ((p_obj_copy) != NULL)
#define RLU_IS_UNLOCKED(p_obj) (!RLU_PTR_IS_LOCKED(RLU_GET_COPY(p_obj)))

typedef struct rlu_thread_data {
  rm_rlu_ctx *ctx;              /* ours; NULL before RLU_THREAD_INIT */
  long uniq_id;                 /* the context's slot in the registry */
  char is_check_locks;          /* always 1 */
  char is_write_detected;
  char is_steal;
  int type;                     /* RLU_TYPE_* given to RLU_INIT */
  int max_write_sets;
  volatile unsigned long run_counter;   /* not maintained */
  volatile long local_version;          /* not maintained */
  volatile long local_commit_version;   /* not maintained */
  volatile long is_no_quiescence;       /* accepted, ignored */
  volatile long is_sync;                /* not maintained */
  volatile long writer_version;         /* not maintained */
  long n_starts, n_finish, n_writers, n_writer_writeback, n_pure_readers, n_aborts,
      n_steals, n_writer_sync_waits, n_writeback_q_iters, n_sync_requests,
      n_sync_and_writeback;             /* stay zero: see RLU_PRINT_STATS */
} rlu_thread_data_t;

static inline void rlu_init(int type, int max_write_sets) {
  /* Every field: those not named here are zero, the library's defaults
   * (the fenced section entry, 5000 membarriers a second), also for
   * fields added later. */
  struct rm_rlu_options o;
  memset(&o, 0, sizeof o);
  o.flavor = type == RLU_TYPE_COARSE_GRAINED ? RM_RLU_COARSE : RM_RLU_FINE;
  o.max_defer = type == RLU_TYPE_COARSE_GRAINED || max_write_sets < 1 ? 0u
                                                                      : (unsigned)max_write_sets;
  o.stats = true;
  (void)rm_rlu_init(&o); /* EBUSY when threads are registered: kept as is */
}
static inline void rlu_finish(void) {}
static inline void rlu_print_stats(void) { rm_rlu_stats_print(stdout); }

static inline void rlu_thread_init(rlu_thread_data_t *self) {
  memset(self, 0, sizeof *self);
  self->ctx = rm_rlu_thread_register();
  if (self->ctx == NULL) {
    fprintf(stderr, "rlu_thread_init: out of memory\n");
    abort();
  }
  self->uniq_id = (long)rm_rlu_ctx_id(self->ctx);
  self->is_check_locks = 1;
  self->is_steal = 1;
  struct rm_rlu_options o;
  rm_rlu_options_get(&o);
  self->type = o.flavor == RM_RLU_COARSE ? RLU_TYPE_COARSE_GRAINED : RLU_TYPE_FINE_GRAINED;
  self->max_write_sets = o.max_defer > 1 ? (int)o.max_defer : 1;
}
static inline void rlu_thread_finish(rlu_thread_data_t *self) {
  rm_rlu_thread_unregister(self->ctx); /* flushes deferred sections */
  self->ctx = NULL;
}

/* The reference's allocation: an RLU_ABORT does not free it (the program
 * keeps it for the retry or frees it itself), and it does not make the
 * section a writer. */
static inline intptr_t *rlu_alloc(obj_size_t obj_size) {
  return (intptr_t *)rm_rlu_alloc_untracked(obj_size);
}
static inline void rlu_free(rlu_thread_data_t *self, intptr_t *p_obj) {
  (void)rm_rlu_free(self != NULL ? self->ctx : NULL, p_obj);
}

static inline void rlu_reader_lock(rlu_thread_data_t *self) {
  self->is_write_detected = 0;
  rm_rlu_reader_lock(self->ctx);
}
static inline void rlu_reader_unlock(rlu_thread_data_t *self) { rm_rlu_reader_unlock(self->ctx); }
static inline void rlu_abort(rlu_thread_data_t *self) { rm_rlu_abort(self->ctx); }

static inline int rlu_try_lock(rlu_thread_data_t *self, intptr_t **p_p_obj, size_t obj_size) {
  (void)obj_size;
  self->is_write_detected = 1;
  return rm_rlu_try_lock(self->ctx, (void **)p_p_obj) == 0;
}
static inline void rlu_lock(rlu_thread_data_t *self, intptr_t **p_p_obj, unsigned int obj_size) {
  (void)obj_size;
  self->is_write_detected = 1;
  if (rm_rlu_lock(self->ctx, (void **)p_p_obj) != 0) {
    fprintf(stderr, "rlu_lock: out of memory for the write-log\n");
    abort();
  }
}
static inline int rlu_try_writer_lock(rlu_thread_data_t *self, int writer_lock_id) {
  (void)writer_lock_id;
  return rm_rlu_try_writer_lock(self->ctx) == 0;
}

static inline intptr_t *rlu_deref_slow_path(rlu_thread_data_t *self, intptr_t *p_obj) {
  return (intptr_t *)rm_rlu_dereference(self->ctx, p_obj);
}
static inline int rlu_cmp_ptrs(intptr_t *p_obj_1, intptr_t *p_obj_2) {
  return rm_rlu_same(p_obj_1, p_obj_2);
}
static inline void rlu_assign_pointer(intptr_t **p_ptr, intptr_t *p_obj) {
  rm_rlu_assign_ptr(p_ptr, p_obj);
}
static inline void rlu_sync_checkpoint(rlu_thread_data_t *self) {
  rm_rlu_sync_checkpoint(self->ctx);
}

#define RLU_INIT(type, max_write_sets) rlu_init((type), (max_write_sets));
#define RLU_FINISH() rlu_finish();
#define RLU_PRINT_STATS() rlu_print_stats()

#define RLU_THREAD_INIT(self) rlu_thread_init(self)
#define RLU_THREAD_FINISH(self) rlu_thread_finish(self)

#define RLU_READER_LOCK(self) rlu_reader_lock(self)
#define RLU_READER_UNLOCK(self) rlu_reader_unlock(self)

#define RLU_ALLOC(obj_size) ((void *)rlu_alloc(obj_size))
#define RLU_FREE(self, p_obj) rlu_free((self), (intptr_t *)(p_obj))

#define RLU_TRY_WRITER_LOCK(self, writer_lock_id) rlu_try_writer_lock((self), (writer_lock_id))
#define RLU_LOCK(self, p_p_obj) rlu_lock((self), (intptr_t **)(p_p_obj), sizeof(**(p_p_obj)))
#define RLU_TRY_LOCK(self, p_p_obj) \
  rlu_try_lock((self), (intptr_t **)(p_p_obj), sizeof(**(p_p_obj)))
#define RLU_ABORT(self) rlu_abort(self)

#define RLU_IS_SAME_PTRS(p_obj_1, p_obj_2) rlu_cmp_ptrs((intptr_t *)(p_obj_1), (intptr_t *)(p_obj_2))
#define RLU_ASSIGN_PTR(self, p_ptr, p_obj) \
  rlu_assign_pointer((intptr_t **)(p_ptr), (intptr_t *)(p_obj))

#define RLU_DEREF(self, p_obj) RLU_DEREF_INTERNAL((self), (intptr_t *)(p_obj))
#define RLU_DEREF_INTERNAL(self, p_obj) ((intptr_t *)rm_rlu_dereference((self)->ctx, (p_obj)))

/* The paper's spellings (Listing 2). */
#define rlu_dereference(self, p_obj) RLU_DEREF((self), (p_obj))
#define rlu_assign_ptr(self, p_ptr, p_obj) RLU_ASSIGN_PTR((self), (p_ptr), (p_obj))

#ifdef __cplusplus
}
#endif
#endif /* READMOSTLY_RLU_COMPAT_H */
