/*
 * rlu.c - read-log-update (Matveev, Shavit, Felber, Marlier, SOSP 2015),
 * Algorithm 1.  The contract is in readmostly/rlu.h, the design and every
 * difference from the paper and the reference code in docs/rlu.md.
 *
 * Invariants
 *   1. An object is locked by at most one context: its header's copy pointer
 *      goes NULL -> entry (CAS, only by the locker) -> NULL (store, only by
 *      the locker, after write-back or on abort).
 *   2. A context's write clock is UINT64_MAX except during a commit, from the
 *      clock step to the end of write-back; during that time it equals the
 *      global clock value the commit's step produced.
 *   3. The global clock changes only in the clock step (clock_lock held), by
 *      one, to the value the stepping writer published as its write clock.
 *   4. A section with local clock L and a writer with write clock wc: if
 *      L >= wc the section began after the step and steals every copy of the
 *      writer; if L < wc the section reads only originals of the writer's
 *      objects and the writer's synchronize waits for it.
 *   5. A log is reset only after a synchronize that began after its objects
 *      were unlocked and its write clock reset (the commit that follows the
 *      one that used it); a log of an aborted section was never stolen from.
 *
 * Ordering points (the comments at each use name the letter; model:
 * models/rlu.pml, x86-TSO with membarrier, docs/models-rlu.md; deferral,
 * sync requests and the flush: models/rlu_defer.pml)
 *   R1  reader: run counter store (odd), full fence, clock load.  Pairs with
 *       W3: either the writer's synchronize sees the odd run counter, or the
 *       section's clock load sees the writer's step.
 *   R2  reader: clock load is acquire; pairs with W2 (release): a section
 *       that reads clock >= wc sees the writer's write clock, its locks and
 *       its finished copies.
 *   R3  reader: run counter store at exit is release; pairs with S1: the
 *       section's reads of originals happen before the write-back.
 *   L1  dereference: header load acquire; pairs with L2.
 *   L2  try_lock: CAS acq_rel; release publishes the log entry (owner,
 *       actual, size) to L1; acquire orders the copy's memcpy after the
 *       previous owner's write-back and unlock (L3).
 *   L3  unlock: release store of NULL, after the write-back.
 *   D1  dereference: the owner's write clock is loaded with acquire; pairs
 *       with W2 (via R2) and W4: a stealer sees the copy's final contents;
 *       a reader that sees UINT64_MAX after a commit sees the write-back.
 *   W1  writer: write clock store, ordered before the clock store by W2.
 *   W2  writer: clock store, release.
 *   W3  writer: full fence after the clock step, before synchronize's loads.
 *   W4  writer: write clock reset to UINT64_MAX, release, after the unlocks.
 *   W5  writer, fence-free entry: one membarrier for the contexts that
 *       have not shown a local clock >= wc; only a run counter loaded after
 *       it tells whether they are in a section (see synchronize).
 *   R4  reader: local clock store is release; pairs with S2.
 *   R5  outside a section (a committing writer): local clock store of a
 *       clock just loaded, release; pairs with S2 as R4 does (a report
 *       without a section, see report_clock).
 *   S1  synchronize: run counter loads acquire (pairs with R3).
 *   S2  synchronize: local clock loads acquire (pairs with R4): a context
 *       skipped because its clock is >= wc has finished the section we
 *       sampled, and that section's reads happen before our write-back.
 *   S3  synchronize: in_use loads acquire; pairs with U1.  A context seen
 *       free is skipped.  U2 and W3 make that safe for a registration
 *       that races with the scan.
 *   U1  unregister: in_use = 0 with release, after the context's last
 *       section (its exit, R3, comes first in program order): a writer
 *       that reads 0 (S3) has those reads ordered before its write-back.
 *   U2  register: in_use = 1, then a full fence, before the first
 *       section's clock load.  Pairs with W3 (Dekker): either a writer's
 *       scan after its clock step sees in_use = 1 (and looks at the run
 *       counter as for any context), or our first clock load sees the step
 *       (our sections begin after it: no wait needed).
 *   F1  commit: wb_active = 1, full fence, load of `forking` (fork_prepare
 *       sets it).  Pairs with F2.
 *   F2  fork_prepare: forking = 1, full fence, wb_active loads (acquire,
 *       pairing with the release that clears it).  Dekker with F1: either
 *       the committer sees forking and stands back before its write-back,
 *       or fork() waits until that write-back, its unlocks and its log
 *       reset are done.  So a fork child never finds a write-back half
 *       done (see fork_child).
 */
#define _GNU_SOURCE
#include <readmostly/rlu.h>

#include "misuse.h"
#include <readmostly/fcp.h>

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* ---- log layout ------------------------------------------------------------
 * A log entry: the fields below, then the copy's object header, then the
 * copy (the size rounded up to 16).  rm_rlu_actual() in the header reads
 * `actual` as the third word before the copy's header: keep the order. */
struct rm_rlu_entry {
  rm_rlu_ctx *owner;       /* read by other contexts: relaxed atomics */
  void *actual;
  size_t size;
  uint64_t section;        /* owner's section number when locked */
  struct rm_rlu_obj_hdr hdr; /* copy == RM_RLU_COPY_MARK */
};
RM_STATIC_ASSERT(sizeof(struct rm_rlu_entry) % 16 == 0, "copies must stay 16-aligned");
RM_STATIC_ASSERT(sizeof(struct rm_rlu_obj_hdr) == 16, "objects keep malloc's alignment");

#define ENTRY_OF_COPY(copy) ((struct rm_rlu_entry *)((char *)(copy) - sizeof(struct rm_rlu_entry)))
#define COPY_OF_ENTRY(e) ((void *)((char *)(e) + sizeof(struct rm_rlu_entry)))

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

struct chunk {
  struct chunk *next;
  size_t cap, used;
  size_t pad;
  unsigned char data[];
};
RM_STATIC_ASSERT(sizeof(struct chunk) % 16 == 0, "chunk data 16-aligned");

struct rlu_log {
  struct chunk *head, *cur;
  size_t bytes;            /* bytes of copies in the log (for max_log_bytes) */
};

struct log_mark {
  struct chunk *chunk;     /* NULL: the start of the log */
  size_t used, bytes;
};

/* ---- contexts ---------------------------------------------------------- */
struct rm_rlu_ctx {
  /* Read by other contexts (synchronize, dereference) and by the inline
   * section entry and exit (rlu.h). */
  struct rm_rlu_ctx_hot h;
  char pad0[RM_CACHE_SECTOR - sizeof(struct rm_rlu_ctx_hot)];
  /* Private to the owning thread. */
  bool holds_writer_lock;
  uint32_t wb_active;      /* a commit's write-back runs (F1, F2; fork_prepare reads it) */
  uintptr_t owner;         /* rm_thread_identity() of the registering thread (atomic) */
  uint64_t section;        /* run counter of the section that took the mark */
  size_t slot;
  struct rlu_log log[2];
  int cur;                 /* log[cur] takes this section's copies */
  struct log_mark mark;    /* log position at section entry */
  void **frees;            /* objects freed by committed (deferred) and current sections */
  size_t nfrees, capfrees;
  size_t frees_mark;       /* nfrees at section entry */
  void **allocs;           /* objects rm_rlu_alloc'd by the current section */
  size_t nallocs, capallocs;
  unsigned ndeferred;      /* committed sections whose synchronize is deferred */
  rm_rlu_ctx **unsure;     /* synchronize scratch: contexts not yet settled */
  size_t unsure_cap;
  rm_rlu_ctx *conflict_owner; /* try_lock met its lock: abort waits a little */
  uint64_t conflict_seen;  /* conflict_owner->h.unlocks then */
  /* Statistics: written by the owner with relaxed stores, read by others. */
  struct rm_rlu_stats st;
} RM_ALIGNED;

#define NO_CLOCK UINT64_MAX
#define SEG_SLOTS 64

struct segment {
  rm_rlu_ctx *slot[SEG_SLOTS];
  struct segment *next;
};

static struct {
  uint32_t clock_lock RM_ALIGNED;  /* the clock step (committing writers only) */
  size_t high RM_ALIGNED;          /* slots below this may be live */
  struct segment *segs;
  size_t nslots;
  size_t nlive;
  pthread_mutex_t reg_lock;
  pthread_mutex_t writer_lock;     /* coarse-grained flavor */
  struct rm_rlu_options opt;
  struct rm_rlu_stats retired;     /* counters of departed contexts */
  pthread_key_t key;
  uint32_t key_made;      /* key created (rm_rlu_alloc asks for the caller's context) */
  pthread_once_t key_once;
  bool dom_ready;                   /* rm_rlu_dom is set up (under reg_lock) */
  /* The fence-free entry's automatic end (barrier_note): */
  struct rm_fcp_rate barriers;      /* membarriers synchronizes issued */
  uint32_t closing;                 /* CAS 0 -> 1: one thread closes the gate */
  uint32_t forking;                 /* fork_prepare to fork_parent / fork_child (F2) */
} g = {
    .reg_lock = PTHREAD_MUTEX_INITIALIZER,
    .writer_lock = PTHREAD_MUTEX_INITIALIZER,
    .opt = {.flavor = RM_RLU_FINE, .log_chunk = 4096},
    .key_once = PTHREAD_ONCE_INIT,
};

/* The clock and the entry mode, read by every section entry (rlu.h). */
RM_API struct rm_rlu_global rm_rlu_global;
/* Closed until the fence-free entry is chosen and a thread registers in
 * membarrier mode (rlu.h). */
RM_API struct rm_fcp_domain rm_rlu_dom = {.gate = RM_FCP_GATE_CLOSED};

#ifdef READMOSTLY_RLU_TEST_HOOKS
RM_API void (*rm_rlu_test_hook)(enum rm_rlu_hook point, rm_rlu_ctx *self);
#define HOOK(p, c) do { if (rm_rlu_test_hook) rm_rlu_test_hook((p), (c)); } while (0)
#else
#define HOOK(p, c) ((void)0)
#endif

#define STAT(c, field)                                                    \
  do {                                                                    \
    if (RM_UNLIKELY(g.opt.stats))                                         \
      rm_atomic_store_relaxed(&(c)->st.field, (c)->st.field + 1);         \
  } while (0)

/* ---- misuse (rlu.h, ERRORS; src/misuse.h) ---------------------------------- */
RM_API void rm_rlu_null_ctx(const char *fn) {
  fprintf(stderr, "readmostly: %s: NULL context (rm_rlu_thread_register() gives each thread one)\n",
          fn);
  fflush(stderr);
  abort();
}
#define CTX_CHECK(c, fn)                               \
  do {                                                 \
    if (RM_UNLIKELY((c) == NULL)) rm_rlu_null_ctx(fn); \
  } while (0)

/* ---- segments ---------------------------------------------------------- */
static rm_rlu_ctx **slot_ref(size_t i) {
  struct segment *s = rm_atomic_load_acquire(&g.segs);
  for (size_t k = i / SEG_SLOTS; k > 0; k--) s = rm_atomic_load_acquire(&s->next);
  return &s->slot[i % SEG_SLOTS];
}

/* ---- logs -------------------------------------------------------------- */
static void log_reset(struct rlu_log *l) {
  for (struct chunk *c = l->head; c != NULL; c = c->next) c->used = 0;
  l->cur = l->head;
  l->bytes = 0;
}

static void log_free(struct rlu_log *l) {
  struct chunk *c = l->head;
  while (c != NULL) {
    struct chunk *n = c->next;
    free(c);
    c = n;
  }
  l->head = l->cur = NULL;
  l->bytes = 0;
}

/* Room for one entry of `need` bytes at the end of the log; NULL when
 * memory or max_log_bytes says no.  The space is not taken yet: the caller
 * writes the entry, then log_claim()s it, so that a walk of the log
 * (log_each, also in a fork child, where the owner may have stopped
 * anywhere) only meets entries that are whole. */
static struct rm_rlu_entry *log_reserve(rm_rlu_ctx *c, struct rlu_log *l, size_t need) {
  /* The limit is per section (bytes since its first write, c->mark): the
   * log may also hold deferred sections and aborted ones' dead entries. */
  if (g.opt.max_log_bytes != 0 && l->bytes - c->mark.bytes + need > g.opt.max_log_bytes) return NULL;
  struct chunk *ch = l->cur;
  if (ch == NULL || ch->cap - ch->used < need) {
    struct chunk *nx = ch != NULL ? ch->next : l->head;
    if (nx == NULL || nx->cap < need) {
      size_t cap = g.opt.log_chunk;
      if (ch != NULL && ch->cap * 2 > cap) cap = ch->cap * 2;
      if (cap > ((size_t)1 << 20)) cap = (size_t)1 << 20;
      if (cap < need) cap = need;
      struct chunk *n = malloc(sizeof(struct chunk) + cap);
      if (n == NULL) return NULL;
      n->cap = cap;
      n->used = 0;
      n->next = nx;
      if (ch != NULL) ch->next = n;
      else l->head = n;
      nx = n;
      STAT(c, log_chunks);
    }
    ch = nx;
    l->cur = ch;
  }
  return (struct rm_rlu_entry *)(ch->data + ch->used);
}

/* Take the `need` bytes log_reserve gave for an entry now written.  The
 * release store keeps the entry's stores before the one that takes it in
 * (for a fork child's walk: it sees what the owner's thread had stored,
 * in that thread's order up to some point). */
static void log_claim(struct rlu_log *l, size_t need) {
  rm_atomic_store_release(&l->cur->used, l->cur->used + need);
  l->bytes += need;
}

static void log_mark(struct rlu_log *l, struct log_mark *m) {
  m->chunk = l->cur;
  m->used = l->cur != NULL ? l->cur->used : 0;
  m->bytes = l->bytes;
}

/* Call fn on every entry from mark m to the end of the log. */
static void log_each(struct rlu_log *l, const struct log_mark *m,
                     void (*fn)(rm_rlu_ctx *c, struct rm_rlu_entry *e), rm_rlu_ctx *c) {
  struct chunk *ch = m->chunk != NULL ? m->chunk : l->head;
  size_t off = m->chunk != NULL ? m->used : 0;
  for (; ch != NULL; ch = ch->next, off = 0) {
    while (off < ch->used) {
      struct rm_rlu_entry *e = (struct rm_rlu_entry *)(ch->data + off);
      off += sizeof *e + round16(e->size);
      fn(c, e);
    }
    if (ch == l->cur) break;
  }
}

/* The section's first write (try_lock, free, the writer lock): remember
 * where its copies and frees begin, for an abort. */
static void first_write(rm_rlu_ctx *c) {
  if (c->h.is_writer) return;
  c->h.is_writer = 1;
  c->section = c->h.run_cnt;
  c->frees_mark = c->nfrees;
  log_mark(&c->log[c->cur], &c->mark);
}

static void entry_unlock(rm_rlu_ctx *c, struct rm_rlu_entry *e) {
  (void)c;
  /* L3: release; a section that sees NULL sees the object as written back. */
  rm_atomic_store_release(&RM_RLU_HDR(e->actual)->copy, NULL);
}

static void entry_write_back(rm_rlu_ctx *c, struct rm_rlu_entry *e) {
  if (e->actual == NULL) return; /* an aborted section's entry (see rm_rlu_abort) */
  memcpy(e->actual, COPY_OF_ENTRY(e), e->size);
  entry_unlock(c, e);
}

/* An aborted section's entry: unlock its object and leave the entry dead
 * in the log (write-back skips it). */
static void entry_abort(rm_rlu_ctx *c, struct rm_rlu_entry *e) {
  if (e->actual == NULL) return;
  entry_unlock(c, e);
  e->actual = NULL;
}

/* ---- options ----------------------------------------------------------- */
RM_API int rm_rlu_init(const struct rm_rlu_options *opt) {
  struct rm_rlu_options o = {.flavor = RM_RLU_FINE, .log_chunk = 4096};
  if (opt != NULL) o = *opt;
  if ((o.flavor != RM_RLU_FINE && o.flavor != RM_RLU_COARSE) ||
      (o.flavor == RM_RLU_COARSE && o.max_defer > 1))
    return EINVAL;
  if (o.log_chunk == 0) o.log_chunk = 4096;
  o.log_chunk = round16(o.log_chunk);
  pthread_mutex_lock(&g.reg_lock);
  if (g.nlive != 0) {
    pthread_mutex_unlock(&g.reg_lock);
    return EBUSY;
  }
#ifdef RM_TSAN
  /* ThreadSanitizer cannot see the order a membarrier gives. */
  o.fence_free = false;
#endif
  if (o.fence_free && !rm_membarrier_available()) o.fence_free = false;
  if (o.fence_free && !g.dom_ready) {
    rm_fcp_domain_init_static(&rm_rlu_dom); /* closed until a thread registers */
    g.dom_ready = true;
  }
  if (o.fence_free_max_barriers == 0) o.fence_free_max_barriers = 5000;
  /* No thread is registered (checked above), so no section runs and no
   * thread opens the gate (registration does, after this returns): we may
   * set it closed, which also forgets an automatic close (barrier_note).
   * A switch of the whole process to fence mode that closes it meanwhile
   * (SHUT) and that we overwrite costs nothing: the gate opens only while
   * FCP's mode says membarrier, and the switch has cleared that first. */
  rm_atomic_store_seq_cst(&rm_rlu_dom.gate, RM_FCP_GATE_CLOSED);
  rm_fcp_rate_reset(&g.barriers);
  rm_atomic_store_relaxed(&g.closing, 0u);
  g.opt = o;
  rm_atomic_store_relaxed(&rm_rlu_global.fence_free, o.fence_free ? 1u : 0u);
  pthread_mutex_unlock(&g.reg_lock);
  return 0;
}

/* What section entry tests: the gate opens only with fence_free chosen and
 * FCP in membarrier mode, and closes on rm_rlu_init(), FCP's switch to
 * fence mode and close_fence_free(). */
RM_API bool rm_rlu_fence_free(void) {
  return !(rm_atomic_load_relaxed(&rm_rlu_dom.gate) & RM_FCP_GATE_CLOSED);
}

RM_API void rm_rlu_options_get(struct rm_rlu_options *out) {
  pthread_mutex_lock(&g.reg_lock);
  *out = g.opt;
  pthread_mutex_unlock(&g.reg_lock);
}

RM_API size_t rm_rlu_ctx_id(const rm_rlu_ctx *c) { return c->slot; }

RM_API uint64_t rm_rlu_clock(void) { return rm_atomic_load_acquire(&rm_rlu_global.clock); }

/* ---- registration ------------------------------------------------------ */
static void stats_add(struct rm_rlu_stats *to, const struct rm_rlu_stats *from) {
  to->commits += rm_atomic_load_relaxed(&from->commits);
  to->aborts += rm_atomic_load_relaxed(&from->aborts);
  to->conflicts += rm_atomic_load_relaxed(&from->conflicts);
  to->steals += rm_atomic_load_relaxed(&from->steals);
  to->syncs += rm_atomic_load_relaxed(&from->syncs);
  to->sync_waits += rm_atomic_load_relaxed(&from->sync_waits);
  to->sync_wait_iters += rm_atomic_load_relaxed(&from->sync_wait_iters);
  to->log_chunks += rm_atomic_load_relaxed(&from->log_chunks);
  to->frees += rm_atomic_load_relaxed(&from->frees);
  to->deferred += rm_atomic_load_relaxed(&from->deferred);
  to->sync_requests += rm_atomic_load_relaxed(&from->sync_requests);
  to->barriers += rm_atomic_load_relaxed(&from->barriers);
}

static void on_thread_exit(void *arg) {
  rm_rlu_ctx *c = arg;
  if (c != NULL && rm_atomic_load_relaxed(&c->h.in_use)) {
    if (c->h.run_cnt & 1) rm_rlu_abort(c);
    rm_rlu_thread_unregister(c);
  }
}

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

static void make_key(void) {
  (void)pthread_key_create(&g.key, on_thread_exit);
  /* Before the first context exists: a fork() with contexts always runs
   * the handlers. */
  (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
  rm_atomic_store_release(&g.key_made, 1u);
}

RM_API rm_rlu_ctx *rm_rlu_thread_register(void) {
  pthread_once(&g.key_once, make_key);
  pthread_mutex_lock(&g.reg_lock);
  rm_rlu_ctx *c = NULL;
  size_t i;
  for (i = 0; i < g.nslots; i++) {
    rm_rlu_ctx *s = *slot_ref(i);
    if (!rm_atomic_load_relaxed(&s->h.in_use)) {
      c = s;
      break;
    }
  }
  if (c == NULL) {
    if (i % SEG_SLOTS == 0) {
      struct segment *s = calloc(1, sizeof *s);
      if (s == NULL) goto nomem;
      if (g.segs == NULL) {
        rm_atomic_store_release(&g.segs, s);
      } else {
        struct segment *t = g.segs;
        while (t->next != NULL) t = t->next;
        rm_atomic_store_release(&t->next, s);
      }
    }
    c = aligned_alloc(RM_CACHE_SECTOR, sizeof *c);
    if (c == NULL) goto nomem;
    memset(c, 0, sizeof *c);
    c->slot = i;
    c->h.write_clock = NO_CLOCK;
    /* Published with release: synchronize reads the slot with acquire. */
    rm_atomic_store_release(slot_ref(i), c);
    g.nslots = i + 1;
  }
  /* U2: in use before the fence at the end (see there). */
  rm_atomic_store_relaxed(&c->h.in_use, (uint8_t)1);
  rm_atomic_store_relaxed(&c->owner, rm_thread_identity());
  c->h.is_writer = 0;
  c->cur = 0;
  /* The run counter is kept across reuse: a synchronize may have sampled
   * the previous owner's value and waits only for it to change. */
  if (c->slot + 1 > rm_atomic_load_relaxed(&g.high))
    rm_atomic_store_seq_cst(&g.high, c->slot + 1);
  g.nlive++;
  bool ff = g.opt.fence_free;
  pthread_mutex_unlock(&g.reg_lock);
  /* Fence-free entry: this thread gets a record of RLU's FCP domain.  The
   * first claim in the process lets readers skip their fence (FCP's mode);
   * if membarrier later fails, FCP's switch to fence mode waits for every
   * thread with a record, ours included, to pass a barrier. */
  if (ff && rm_fcp_self(&rm_rlu_dom) == NULL) {
    rm_rlu_thread_unregister(c);
    errno = ENOMEM;
    return NULL;
  }
  /* The claim set FCP's mode up: open the gate if the process is in
   * membarrier mode (a no-op otherwise, and once open). */
  if (ff) rm_fcp_gate_open(&rm_rlu_dom);
  (void)pthread_setspecific(g.key, c);
  /* U2: a writer whose synchronize read `high` before our store above (and
   * so does not look at this slot), or read our slot's in_use before our
   * store of 1 (and so skips it), stepped the clock before its fence (W3);
   * this fence pairs with that one, so our first section reads that
   * clock. */
  rm_fence_store_load();
  return c;
nomem:
  pthread_mutex_unlock(&g.reg_lock);
  errno = ENOMEM;
  return NULL;
}

static void synchronize(rm_rlu_ctx *self, uint64_t wc);
static void flush(rm_rlu_ctx *c);

/* Count context c out: its statistics go to the retired ones, its slot is
 * free (reg_lock held, or in a fork child).  U1: release, after the
 * context's last section's exit (R3): a synchronize that reads 0 (S3) and
 * skips it has that section's reads ordered before its write-back. */
static void slot_release(rm_rlu_ctx *c) {
  stats_add(&g.retired, &c->st);
  memset(&c->st, 0, sizeof c->st);
  rm_atomic_store_release(&c->h.in_use, (uint8_t)0);
  g.nlive--;
}

/* Lower the high-water mark over trailing free slots (reg_lock held, or in
 * a fork child). */
static void high_lower(void) {
  size_t h = rm_atomic_load_relaxed(&g.high);
  while (h > 0 && !rm_atomic_load_relaxed(&(*slot_ref(h - 1))->h.in_use)) h--;
  rm_atomic_store_seq_cst(&g.high, h);
}

RM_API void rm_rlu_thread_unregister(rm_rlu_ctx *c) {
  if (c == NULL) return;
  /* Acquire: a context we see in use shows its owner (stored before the
   * registration's unlock of reg_lock, and read here by another thread
   * only when it is careless). */
  if (RM_UNLIKELY(!rm_atomic_load_acquire(&c->h.in_use))) {
    /* Twice: counted out twice, the registry's count went wrong (and
     * rm_rlu_init() said EBUSY for ever). */
    static uint32_t said;
    rm_misuse(&said, "rm_rlu_thread_unregister: context not registered (ignored)");
    return;
  }
  if (RM_UNLIKELY(rm_atomic_load_relaxed(&c->owner) != rm_thread_identity())) {
    /* Another thread's (a stale pointer to a context that was reused):
     * taking it away would leave that thread with a free context. */
    static uint32_t said;
    rm_misuse(&said, "rm_rlu_thread_unregister: context of another thread (ignored)");
    return;
  }
  RM_ASSERT(!(c->h.run_cnt & 1), "rm_rlu_thread_unregister inside a section");
  flush(c); /* deferred sections are committed, never lost */
  /* The log used by the last commit may still be read by stealers that
   * started before that commit finished: one more grace period, then both
   * logs are free. */
  if (c->log[c->cur ^ 1].head != NULL || c->log[c->cur].head != NULL) {
    /* Our last unlocks before the run counter loads (as W3). */
    rm_fence_store_load();
    synchronize(c, rm_rlu_clock() + 1);
  }
  if (g.dom_ready) (void)rm_fcp_domain_leave(&rm_rlu_dom); /* the caller's record, if any */
  pthread_mutex_lock(&g.reg_lock);
  /* Under reg_lock, which fork_prepare holds across fork(): a fork child
   * finds the logs and arrays whole or gone, never half freed. */
  log_free(&c->log[0]);
  log_free(&c->log[1]);
  free(c->frees);
  c->frees = NULL;
  c->nfrees = c->capfrees = 0;
  free(c->allocs);
  c->allocs = NULL;
  c->nallocs = c->capallocs = 0;
  free(c->unsure);
  c->unsure = NULL;
  c->unsure_cap = 0;
  slot_release(c);
  high_lower();
  pthread_mutex_unlock(&g.reg_lock);
  if (pthread_getspecific(g.key) == c) (void)pthread_setspecific(g.key, NULL);
}

/* ---- objects ----------------------------------------------------------- */
/* An object with its header, the caller's to link or free (the reference
 * implementation's RLU_ALLOC; rlu-compat.h uses it). */
RM_API void *rm_rlu_alloc_untracked(size_t size) {
  struct rm_rlu_obj_hdr *h = malloc(sizeof *h + (size ? size : 1));
  if (h == NULL) return NULL;
  h->copy = NULL;
  h->size = size;
  return h + 1;
}

/* Inside a section of the calling thread's context the object is
 * remembered: an abort frees it (nothing of an aborted section stays
 * behind), and the section counts as a writer (its exit takes the slow
 * path, which forgets the list). */
RM_API void *rm_rlu_alloc(size_t size) {
  void *obj = rm_rlu_alloc_untracked(size);
  if (obj == NULL) return NULL;
  struct rm_rlu_obj_hdr *h = RM_RLU_HDR(obj);
  rm_rlu_ctx *c = rm_atomic_load_acquire(&g.key_made) ? (rm_rlu_ctx *)pthread_getspecific(g.key) : NULL;
  if (c != NULL && (c->h.run_cnt & 1)) {
    if (c->nallocs == c->capallocs) {
      size_t n = c->capallocs ? c->capallocs * 2 : 16;
      void **a = realloc(c->allocs, n * sizeof *a);
      if (a == NULL) {
        free(h);
        return NULL;
      }
      c->allocs = a;
      c->capallocs = n;
    }
    first_write(c);
    c->allocs[c->nallocs++] = h + 1;
  }
  return h + 1;
}

RM_API int rm_rlu_free(rm_rlu_ctx *c, void *obj) {
  if (obj == NULL) return 0;
  obj = rm_rlu_actual(obj);
  if (c == NULL || !(c->h.run_cnt & 1)) {
    free(RM_RLU_HDR(obj));
    return 0;
  }
  first_write(c);
  if (c->nfrees == c->capfrees) {
    size_t n = c->capfrees ? c->capfrees * 2 : 16;
    void **f = realloc(c->frees, n * sizeof *f);
    if (f == NULL) return ENOMEM;
    c->frees = f;
    c->capfrees = n;
  }
  first_write(c);
  c->frees[c->nfrees++] = obj;
  return 0;
}

/* ---- sections ---------------------------------------------------------- */
RM_STATIC_ASSERT(offsetof(struct rm_rlu_ctx, h) == 0, "rlu.h casts a context to its hot part");

/* Deferral: a writer asked for our locks (the inline entry saw `deferred`). */
RM_API void rm_rlu_checkpoint_slowpath(rm_rlu_ctx *c) {
  if (c->ndeferred != 0 && rm_atomic_load_relaxed(&c->h.sync_request)) flush(c);
}

RM_API void *rm_rlu_deref_slowpath(rm_rlu_ctx *c, void *obj, void *copy) {
  struct rm_rlu_entry *e = ENTRY_OF_COPY(copy);
  rm_rlu_ctx *owner = rm_atomic_load_relaxed(&e->owner);
  if (owner == c) return copy;
  RM_DEBUG_YIELD();
  /* D1: acquire; pairs with W2 (through R2: the clock we read is the step's
   * or later, so this load sees the write clock it published) and with W4. */
  uint64_t wc = rm_atomic_load_acquire(&owner->h.write_clock);
  if (wc <= c->h.local_clock) {
    STAT(c, steals);
    return copy;
  }
  return obj;
}

static void free_pending(rm_rlu_ctx *c) {
  for (size_t i = 0; i < c->nfrees; i++) free(RM_RLU_HDR(c->frees[i]));
  if (g.opt.stats) rm_atomic_store_relaxed(&c->st.frees, c->st.frees + c->nfrees);
  c->nfrees = 0;
}

RM_API int rm_rlu_try_lock(rm_rlu_ctx *c, void **pobj) {
  CTX_CHECK(c, "rm_rlu_try_lock");
  if (RM_UNLIKELY(!(c->h.run_cnt & 1))) {
    /* Nothing is locked and the write flag stays clear (it used to be set
     * outside a section, and the next section entry tripped on it). */
    static uint32_t said;
    rm_misuse(&said, "rm_rlu_try_lock outside a section (returns EPERM)");
    return EPERM;
  }
  void *obj = rm_rlu_actual(*pobj);
  struct rm_rlu_obj_hdr *h = RM_RLU_HDR(obj);
  first_write(c);
  /* L1 again: a lock we see comes with its entry. */
  void *copy = rm_atomic_load_acquire(&h->copy);
  if (copy != NULL) {
  locked:;
    struct rm_rlu_entry *oe = ENTRY_OF_COPY(copy);
    rm_rlu_ctx *owner = rm_atomic_load_relaxed(&oe->owner);
    if (owner == c) {
      if (oe->section == c->section) {
        *pobj = copy;
        return 0;
      }
      /* Locked by one of our deferred sections: its copy must not change
       * under an abort of this one.  Fail; our checkpoint will flush. */
      rm_atomic_store_relaxed(&c->h.sync_request, 1u);
      STAT(c, conflicts);
      return EBUSY;
    }
    c->conflict_owner = owner;
    c->conflict_seen = rm_atomic_load_acquire(&owner->h.unlocks);
    if (g.opt.max_defer > 1) {
      /* Ask the owner to flush (an atomic store: several requesters may
       * ask at once).  If it has already flushed, the store is harmless:
       * its next checkpoint flushes nothing. */
      rm_atomic_store_relaxed(&owner->h.sync_request, 1u);
      STAT(c, sync_requests);
    }
    STAT(c, conflicts);
    return EBUSY;
  }
  size_t need = sizeof(struct rm_rlu_entry) + round16(h->size);
  struct rm_rlu_entry *e = log_reserve(c, &c->log[c->cur], need);
  if (e == NULL) return ENOMEM;
  rm_atomic_store_relaxed(&e->owner, c);
  e->actual = obj;
  e->size = h->size;
  e->section = c->section;
  e->hdr.copy = RM_RLU_COPY_MARK;
  e->hdr.size = h->size;
  copy = COPY_OF_ENTRY(e);
  /* In the log before the CAS: a fork child that finds the object locked
   * by us finds the entry too (fork_child). */
  log_claim(&c->log[c->cur], need);
  void *expect = NULL;
  /* L2: release publishes the entry to L1 readers; acquire orders our copy
   * after the previous owner's write-back (its unlock is L3). */
  if (!rm_atomic_cas_acq_rel(&h->copy, &expect, copy)) {
    /* Give the space back: the entry is the last thing in the log.  Then
     * treat the winner's lock as if we had seen it first (the CAS's
     * acquire on failure gives us its entry). */
    struct chunk *ch = c->log[c->cur].cur;
    ch->used -= need;
    c->log[c->cur].bytes -= need;
    copy = expect;
    goto locked;
  }
  memcpy(copy, obj, h->size);
  *pobj = copy;
  return 0;
}

RM_API int rm_rlu_lock(rm_rlu_ctx *c, void **pobj) {
  CTX_CHECK(c, "rm_rlu_lock");
  int r = rm_rlu_try_lock(c, pobj);
  RM_ASSERT(r != EBUSY, "rm_rlu_lock: object locked by another context (coarse-grained "
                        "sections must hold the writer lock)");
  return r;
}

RM_API void rm_rlu_writer_lock(rm_rlu_ctx *c) {
  CTX_CHECK(c, "rm_rlu_writer_lock");
  RM_ASSERT(!(c->h.run_cnt & 1), "rm_rlu_writer_lock inside a section (use try_writer_lock)");
  pthread_mutex_lock(&g.writer_lock);
  c->holds_writer_lock = true;
  rm_rlu_reader_lock(c);
  first_write(c); /* the exit must release the lock */
}

RM_API int rm_rlu_try_writer_lock(rm_rlu_ctx *c) {
  CTX_CHECK(c, "rm_rlu_try_writer_lock");
  if (RM_UNLIKELY(!(c->h.run_cnt & 1))) {
    /* Taken here, no section exit would release it. */
    static uint32_t said;
    rm_misuse(&said, "rm_rlu_try_writer_lock outside a section (returns EPERM)");
    return EPERM;
  }
  if (c->holds_writer_lock) return 0;
  if (pthread_mutex_trylock(&g.writer_lock) != 0) return EBUSY;
  c->holds_writer_lock = true;
  first_write(c);
  return 0;
}

static void release_writer_lock(rm_rlu_ctx *c) {
  if (c->holds_writer_lock) {
    c->holds_writer_lock = false;
    pthread_mutex_unlock(&g.writer_lock);
  }
}

/* ---- synchronize ------------------------------------------------------- */
/* Has o shown a section that read the clock at wc or later?  S2: acquire,
 * pairs with R4: that section read the clock after every earlier section
 * of o had left (its R3 precedes R4 in o's program order), and every later
 * section of o reads the clock after it, so reads wc or later too.  This
 * holds whatever o's run counter looks like, with either entry. */
static bool reported(rm_rlu_ctx *o, uint64_t wc) {
  return rm_atomic_load_acquire(&o->h.local_clock) >= wc;
}

/* R5: report, outside a section, the clock we read now, as a section entry
 * reports it (R4): every earlier section of ours has left (their exits
 * come before this release store), and every later one loads the clock
 * after this load, so reads this value or later.  Writers report while
 * they commit, so that other writers' fence-free synchronizes settle them
 * without a membarrier (they are outside sections, with the clock of
 * their last entry, until they enter again). */
static void report_clock(rm_rlu_ctx *c) {
  RM_ASSERT(!(c->h.run_cnt & 1), "report_clock inside a section");
  uint64_t t = rm_atomic_load_acquire(&rm_rlu_global.clock);
  if (t > c->h.local_clock) rm_atomic_store_release(&c->h.local_clock, t);
}

/* Wait for the section of o with run counter r, if it began before the
 * step that produced wc.  r must be the truth: loaded after W3 (fenced
 * entry) or after W5 (fence-free), see synchronize. */
static void wait_section(rm_rlu_ctx *self, rm_rlu_ctx *o, uint64_t r, uint64_t wc) {
  if (!(r & 1)) return;
  /* S2: acquire, pairs with R4.  A clock >= wc may come from a later
   * section than the one whose run counter we sampled: that section
   * began after the step, and the sampled one is over. */
  if (reported(o, wc)) return; /* began after the step */
  STAT(self, sync_waits);
  rm_backoff_t b = RM_BACKOFF_INIT;
  uint64_t iters = 0;
  for (;;) {
    rm_backoff_wait(&b);
    iters++;
    report_clock(self);
    if (rm_atomic_load_acquire(&o->h.run_cnt) != r) break; /* S1 */
    if (reported(o, wc)) break; /* S2 */
  }
  /* Counted once per waited-for context, after the wait (statistics on). */
  if (RM_UNLIKELY(g.opt.stats))
    rm_atomic_store_relaxed(&self->st.sync_wait_iters, self->st.sync_wait_iters + iters);
}

/* Readers of this process may have skipped their fence.  Acquire on
 * fence_free: a writer that reads 0 after close_fence_free() follows its
 * barrier. */
static bool readers_unfenced(void) {
  return rm_atomic_load_acquire(&rm_rlu_global.fence_free) &&
         !(rm_atomic_load_acquire(&rm_fcp_mode) & RM_FCP_WRITERS_FENCE);
}

/* W5: every thread of the process passes a full barrier (FCP's switch to
 * fence mode stands in when membarrier fails; it returns once every thread
 * with a record has passed one). */
static void barrier_all(void) {
  if (rm_membarrier() != 0) rm_fcp_switch_to_fence();
}

/* Back to the fenced entry for good, as FCP's switch to fence mode does for
 * the whole process (fcp.h, "The gate"), but for RLU alone: (1) close the
 * gate (an RMW, SHUT: registrations no longer open it), so that sections
 * from now on fence; (2) one barrier: a section whose entry still saw the
 * gate open loaded it before the barrier reached its CPU, and its run
 * counter store came first, so it is visible after the barrier; (3)
 * fence_free = 0 (release): writers that read it (acquire, after (2))
 * trust run counters after their own fence (W3), as with the fenced entry.
 * Writers that still read 1 use the fence-free wait, which is correct
 * with either entry. */
static void close_fence_free(void) {
  uint32_t z = 0;
  if (!rm_atomic_cas_acq_rel(&g.closing, &z, 1u)) return; /* another thread does it */
  __atomic_fetch_or(&rm_rlu_dom.gate, RM_FCP_GATE_CLOSED | RM_FCP_GATE_SHUT, __ATOMIC_SEQ_CST);
  barrier_all();
  rm_atomic_store_release(&rm_rlu_global.fence_free, 0u);
}

/* Called for every membarrier a synchronize issues: closes the fence-free
 * entry when a window of at least 100 ms saw more than
 * fence_free_max_barriers a second (rm_fcp_rate_note).  A window, not 64
 * barriers alone as FCP's automatic switch uses: a thread preempted for a
 * millisecond makes every commit of that millisecond issue one (hundreds,
 * at 20 % updates on 2 threads), which says nothing about the steady
 * rate. */
#define BARRIER_WINDOW_NS 100000000ull
static void barrier_note(void) {
  unsigned rate = g.opt.fence_free_max_barriers;
  if (rate != UINT_MAX && rm_fcp_rate_note(&g.barriers, rate, BARRIER_WINDOW_NS))
    close_fence_free();
}

/*
 * Wait until every section that began before the clock reached wc is over.
 *
 * Fenced entry: after W3, an even run counter means "not in a section that
 * began before the step", and an odd one that changes means that section
 * has left (R1/W3 Dekker: a later section's run counter store is visible
 * before its clock load).
 *
 * Fence-free entry: before a barrier the run counter we load says nothing
 * about o's latest section.  o's core may hold several of its stores in
 * its store buffer - run counter r + 1, r + 2, r + 3 - while its section
 * r + 3 has already loaded the clock from before our step: we then load
 * r (even, or odd with an old local clock), then r + 2, and o is in a
 * section that reads originals we are about to write back.  (Treating "the
 * counter moved" as settled was a bug that tears a section just as one run
 * in about 20 of stress.rlu.accounts.fence-free.debug-yield once showed;
 * unit.rlu_fence_free_race plays it.)  So before
 * the barrier only a report settles a context: its local clock at wc or
 * later (reported()).  Busy readers report at their next entry, within a
 * section's time; for the rest one membarrier (W5) makes every store
 * visible, after which the fenced reasoning holds: a section whose run
 * counter store follows o's barrier also loads the clock after it, and so
 * after our step.  As in FCP (rm_fcp_wait), whose records settle before
 * the barrier only by reporting the new version.
 */
static void synchronize(rm_rlu_ctx *self, uint64_t wc) {
  STAT(self, syncs);
  report_clock(self);
  bool unfenced = readers_unfenced();
  size_t n = rm_atomic_load_acquire(&g.high);
  if (unfenced && self->unsure_cap < n) {
    size_t cap = n < 16 ? 16 : n * 2;
    rm_rlu_ctx **p = realloc(self->unsure, cap * sizeof *p);
    if (p != NULL) {
      self->unsure = p;
      self->unsure_cap = cap;
    } else {
      barrier_all(); /* no room to remember: settle everything now */
      unfenced = false;
    }
  }
  size_t nunsure = 0;
  struct segment *s = rm_atomic_load_acquire(&g.segs);
  for (size_t i = 0; i < n && s != NULL; i++) {
    if (i > 0 && i % SEG_SLOTS == 0) {
      s = rm_atomic_load_acquire(&s->next);
      if (s == NULL) break;
    }
    rm_rlu_ctx *o = rm_atomic_load_acquire(&s->slot[i % SEG_SLOTS]);
    if (o == NULL || o == self) continue;
    /* S3: a free slot has no section to wait for (U1), and one that is
     * being taken has none that began before our step (U2).  Not skipped,
     * it looked like an idle thread: with the fence-free entry it cost
     * every synchronize a membarrier. */
    if (!rm_atomic_load_acquire(&o->h.in_use)) continue;
    if (unfenced) {
      if (!reported(o, wc)) self->unsure[nunsure++] = o;
      continue;
    }
    /* S1: acquire pairs with R3. */
    wait_section(self, o, rm_atomic_load_acquire(&o->h.run_cnt), wc);
  }
  if (nunsure == 0) return;
  /* Busy readers report within microseconds; idle ones never will. */
  for (unsigned round = 0; round < 16 && nunsure != 0; round++) {
    HOOK(RM_RLU_HOOK_UNSURE, self);
    report_clock(self); /* a writer polling us meanwhile settles */
    for (size_t k = 0; k < nunsure;) {
      if (reported(self->unsure[k], wc)) self->unsure[k] = self->unsure[--nunsure];
      else k++;
    }
    for (int j = 0; j < 32 && nunsure != 0; j++) rm_cpu_relax();
  }
  if (nunsure == 0) return;
  STAT(self, barriers);
  barrier_all();
  barrier_note();
  HOOK(RM_RLU_HOOK_BARRIER, self);
  /* After W5 the run counter is the truth, as after W3 with fenced entry. */
  for (size_t k = 0; k < nunsure; k++) {
    rm_rlu_ctx *o = self->unsure[k];
    wait_section(self, o, rm_atomic_load_acquire(&o->h.run_cnt), wc);
  }
}

/* ---- commit ------------------------------------------------------------ */
static uint64_t clock_step(rm_rlu_ctx *c) {
#ifdef READMOSTLY_RLU_NAIVE_CLOCK
  /* The paper's order (Algorithm 1 lines 45-46), for the race test only. */
  uint64_t t = rm_atomic_load_acquire(&rm_rlu_global.clock);
  HOOK(RM_RLU_HOOK_CLOCK_READ, c);
  rm_atomic_store_release(&c->h.write_clock, t + 1);
  rm_atomic_fetch_add_seq_cst(&rm_rlu_global.clock, 1);
  HOOK(RM_RLU_HOOK_PUBLISHED, c);
  return t + 1;
#else
  uint32_t z = 0;
  if (!rm_atomic_cas_acquire(&g.clock_lock, &z, 1u)) {
    HOOK(RM_RLU_HOOK_CLOCK_BUSY, c);
    rm_backoff_t b = RM_BACKOFF_INIT;
    do {
      rm_backoff_wait(&b);
      z = 0;
    } while (rm_atomic_load_relaxed(&g.clock_lock) != 0 ||
             !rm_atomic_cas_acquire(&g.clock_lock, &z, 1u));
  }
  /* Only clock_lock holders write the clock: it cannot move until we
   * store t + 1 below, so the write clock we publish is the value the
   * clock will have. */
  uint64_t t = rm_atomic_load_relaxed(&rm_rlu_global.clock);
  HOOK(RM_RLU_HOOK_CLOCK_READ, c);
  /* W1: ordered before the clock store by W2's release. */
  rm_atomic_store_relaxed(&c->h.write_clock, t + 1);
  /* W2: release; a section whose clock load (R2) reads t + 1 or later sees
   * our write clock, the locks we took and the copies we finished.  Later
   * steps are by clock_lock holders that acquired it after our release. */
  rm_atomic_store_release(&rm_rlu_global.clock, t + 1);
  rm_atomic_store_release(&g.clock_lock, 0u);
  HOOK(RM_RLU_HOOK_PUBLISHED, c);
  return t + 1;
#endif
}

/* The write-back and everything after it in a commit run between these
 * two: fork() waits for them (fork_prepare), so that a fork child never
 * meets a commit that has unlocked some of its objects and not others
 * (after an unlock, another writer may free the object: the child could
 * no longer tell an entry it must finish from one it must not touch). */
static void writeback_begin(rm_rlu_ctx *c) {
  for (;;) {
    rm_atomic_store_relaxed(&c->wb_active, 1u);
    /* F1: our wb_active store before the load of `forking` (pairs with
     * F2 in fork_prepare). */
    rm_fence_store_load();
    if (RM_LIKELY(!rm_atomic_load_relaxed(&g.forking))) return;
    /* A fork is being prepared: stand back until it is done (nothing is
     * written back yet; the child finishes or drops this commit). */
    rm_atomic_store_release(&c->wb_active, 0u);
    rm_backoff_t b = RM_BACKOFF_INIT;
    while (rm_atomic_load_acquire(&g.forking)) rm_backoff_wait(&b);
  }
}
static void writeback_end(rm_rlu_ctx *c) {
  /* Release: fork_prepare's acquire load of 0 orders the write-back, the
   * unlocks and the log reset before the fork. */
  rm_atomic_store_release(&c->wb_active, 0u);
}

static void commit(rm_rlu_ctx *c) {
  struct rlu_log *l = &c->log[c->cur];
  c->ndeferred = 0;
  c->h.deferred = 0;
  rm_atomic_store_relaxed(&c->h.sync_request, 0u);
  uint64_t wc = clock_step(c);
  /* W3: the clock store before synchronize's run counter loads (pairs with
   * R1). */
  rm_fence_store_load();
  synchronize(c, wc);
  RM_DEBUG_YIELD();
  writeback_begin(c);
  struct log_mark all = {0};
  log_each(l, &all, entry_write_back, c);
  /* W4: release; a section that sees "no stealing" sees the write-back. */
  rm_atomic_store_release(&c->h.write_clock, NO_CLOCK);
  rm_atomic_store_release(&c->h.unlocks, c->h.unlocks + 1);
  free_pending(c);
  /* Swap: the other log was last used by the previous commit; the
   * synchronize above began after that commit unlocked its objects, so no
   * section can still be reading it (invariant 5). */
  c->cur ^= 1;
  log_reset(&c->log[c->cur]);
  writeback_end(c);
}

/* Commit whatever deferred sections left in the log (outside a section). */
static void flush(rm_rlu_ctx *c) {
  if (c->log[c->cur].bytes != 0 || c->nfrees != 0) commit(c);
  c->ndeferred = 0;
  c->h.deferred = 0;
  rm_atomic_store_relaxed(&c->h.sync_request, 0u);
}

RM_API void rm_rlu_sync(rm_rlu_ctx *c) {
  CTX_CHECK(c, "rm_rlu_sync");
  RM_ASSERT(!(c->h.run_cnt & 1), "rm_rlu_sync inside a section");
  flush(c);
}

RM_API void rm_rlu_sync_checkpoint(rm_rlu_ctx *c) {
  CTX_CHECK(c, "rm_rlu_sync_checkpoint");
  RM_ASSERT(!(c->h.run_cnt & 1), "rm_rlu_sync_checkpoint inside a section");
  if (c->ndeferred != 0 && rm_atomic_load_relaxed(&c->h.sync_request)) flush(c);
}

RM_API void rm_rlu_unlock_misuse(void) {
  static uint32_t said;
  rm_misuse(&said, "rm_rlu_reader_unlock outside a section (ignored)");
}

/* The exit of a section that wrote (rm_rlu_reader_unlock, rlu.h, has
 * already stored the even run counter, R3). */
RM_API void rm_rlu_reader_unlock_slowpath(rm_rlu_ctx *c) {
  {
    c->h.is_writer = 0;
    c->nallocs = 0; /* the section's objects are the program's now */
    STAT(c, commits);
    if (g.opt.max_defer > 1 && !c->holds_writer_lock) {
      /* Deferral (model: models/rlu_defer.pml): the section is committed
       * into the log; its copies stay private (write clock UINT64_MAX) and
       * its objects locked until a flush: at max_defer sections, or when
       * another writer asks (sync_request, then our checkpoint).  Never
       * a section that holds the writer lock: returning here kept the lock
       * (nothing else releases it), and the thread's next writer lock
       * deadlocked on itself, other threads' for ever.  Its flush commits
       * the deferred sections before it too. */
      c->ndeferred++;
      c->h.deferred = 1;
      if (c->ndeferred < g.opt.max_defer && !rm_atomic_load_relaxed(&c->h.sync_request)) {
        STAT(c, deferred);
        return;
      }
    }
    flush(c);
  }
  release_writer_lock(c);
}

RM_API void rm_rlu_abort(rm_rlu_ctx *c) {
  CTX_CHECK(c, "rm_rlu_abort");
  if (RM_UNLIKELY(!(c->h.run_cnt & 1))) {
    /* As rm_rlu_reader_unlock outside a section: the counter would turn
     * odd, and every writer wait for this context for ever. */
    static uint32_t said;
    rm_misuse(&said, "rm_rlu_abort outside a section (ignored)");
    return;
  }
  /* The section stays open (odd run counter) while its objects are
   * unlocked: until it ends, no writer that locks one after us can free it
   * (its synchronize waits for us), so a fork child that finds us here
   * may still read the headers our entries name (fork_child). */
  if (c->h.is_writer) {
    struct rlu_log *l = &c->log[c->cur];
    /* Our write clock is UINT64_MAX: nobody stole these copies.  But a
     * section may have loaded an object's copy pointer before our unlock
     * and still be reading the entry's header (its owner, then the owner's
     * write clock, rm_rlu_deref_slowpath): the space must not be reused
     * before a quiescence.  The entries stay in the log, dead, until the
     * log is reset after a later commit's synchronize (invariant 5), as
     * committed ones do.  (Truncating here let a new copy overwrite a
     * header a reader was reading: ThreadSanitizer saw it, 1 run in 3 of
     * stress.rlu_dlist.fine.debug-yield.)  A section retried after an
     * abort therefore grows the log by its copies until the next commit. */
    log_each(l, &c->mark, entry_abort, c);
    rm_atomic_store_release(&c->h.unlocks, c->h.unlocks + 1);
    /* Objects the section allocated: nothing can reach them (links to them
     * were written only into its copies, now dead). */
    for (size_t i = 0; i < c->nallocs; i++) free(RM_RLU_HDR(c->allocs[i]));
    c->nallocs = 0;
    c->nfrees = c->frees_mark;
    c->h.is_writer = 0;
  }
  /* R3 as at a section's exit: release; the section's reads happen before
   * the write-back of a writer that sees the even counter (S1). */
  rm_atomic_store_release(&c->h.run_cnt, c->h.run_cnt + 1);
  STAT(c, aborts);
  release_writer_lock(c);
  rm_rlu_sync_checkpoint(c);
  if (c->conflict_owner != NULL) {
    /* We aborted because another context holds an object we need: retrying
     * at once would only meet it again.  Wait, a bounded while and without
     * sleeping (the owner may be idle with deferred locks), until it has
     * released a batch of locks. */
    rm_rlu_ctx *o = c->conflict_owner;
    c->conflict_owner = NULL;
    rm_backoff_t b = RM_BACKOFF_INIT;
    for (unsigned i = 0; i < RM_BACKOFF_SPINS + RM_BACKOFF_YIELDS; i++) {
      if (rm_atomic_load_acquire(&o->h.unlocks) != c->conflict_seen) break;
      rm_backoff_wait(&b);
    }
  }
}

/* ---- fork ------------------------------------------------------------------
 * In the child only the forking thread runs.  A context of another thread
 * would stay registered: inside a section (odd run counter: the child's
 * first commit waited for it for ever), holding object locks (EBUSY for
 * ever), the writer lock, or the clock step's spinlock.  fork_child
 * releases every context the forking thread does not own, as the FCP core
 * releases other threads' records (fcp.c).  It reads what that thread had
 * stored, in its program order up to some point; fork_prepare (reg_lock
 * held across fork(), and no write-back running: F1/F2) and the order of
 * the owner's stores (log_claim, the abort inside its section) keep every
 * object that a context's current log names allocated, so its header can
 * be read:
 *
 *   - outside a commit, the log's live entries are objects the context
 *     holds locked (deferred sections, the open one), or objects its open
 *     section protects (a try_lock whose CAS failed, an abort between an
 *     unlock and the entry's death): unlock each one whose header still
 *     points to its entry, without writing back (nobody could steal these
 *     copies: the write clock was UINT64_MAX).  Deferred updates of the
 *     other thread are therefore not in the child; no thread of the child
 *     had seen them.
 *   - a commit between its clock step (write clock wc published, clock at
 *     wc) and its write-back (which F1/F2 keep from having begun):
 *     sections that began after the step may have stolen its copies,
 *     those before it read originals.  If the forking thread is in a
 *     section that began before the step (local clock < wc; the commit's
 *     synchronize is then still waiting for it), drop the commit as above
 *     (that section goes on reading originals); otherwise finish it: write
 *     back and unlock each entry still locked by it.  A step half done
 *     (write clock public, clock not yet stored) is dropped.
 *
 * The released context's logs are freed unless the forking thread is in a
 * section (which may hold a stolen copy: then they are leaked); its free
 * lists are leaked (a realloc may have been half done; objects queued for
 * free stay allocated); it is counted out and its slot can be reused. */
static bool fork_complete; /* fork_child: finish (true) or drop the commit */

static void fork_entry(rm_rlu_ctx *c, struct rm_rlu_entry *e) {
  if (e->actual == NULL) return; /* dead: an aborted section's */
  struct rm_rlu_obj_hdr *h = RM_RLU_HDR(e->actual);
  if (rm_atomic_load_relaxed(&h->copy) != COPY_OF_ENTRY(e)) return; /* not ours (any more) */
  if (fork_complete) memcpy(e->actual, COPY_OF_ENTRY(e), e->size);
  entry_unlock(c, e);
}

static void fork_prepare(void) {
  pthread_mutex_lock(&g.reg_lock);
  rm_atomic_store_relaxed(&g.forking, 1u);
  /* F2: our `forking` store before the wb_active loads (pairs with F1). */
  rm_fence_store_load();
  uintptr_t me = rm_thread_identity();
  for (size_t i = 0; i < g.nslots; i++) {
    rm_rlu_ctx *c = *slot_ref(i);
    if (rm_atomic_load_relaxed(&c->owner) == me) continue; /* fork() from a signal handler */
    rm_backoff_t b = RM_BACKOFF_INIT;
    while (rm_atomic_load_acquire(&c->wb_active)) rm_backoff_wait(&b);
  }
}

static void fork_parent(void) {
  rm_atomic_store_release(&g.forking, 0u);
  pthread_mutex_unlock(&g.reg_lock);
}

static void fork_child(void) {
  /* Atomic accesses below where other threads use atomics too (nothing
   * runs concurrently here; it keeps ThreadSanitizer's model whole). */
  uintptr_t me = rm_thread_identity();
  /* Our own contexts: is one inside a section (and from which clock), does
   * one hold the writer lock? */
  bool in_section = false, holds_writer = false;
  uint64_t oldest = NO_CLOCK;
  for (size_t i = 0; i < g.nslots; i++) {
    rm_rlu_ctx *c = *slot_ref(i);
    if (!rm_atomic_load_relaxed(&c->h.in_use) || rm_atomic_load_relaxed(&c->owner) != me) continue;
    if (rm_atomic_load_relaxed(&c->h.run_cnt) & 1) {
      in_section = true;
      uint64_t l = rm_atomic_load_relaxed(&c->h.local_clock);
      if (l < oldest) oldest = l;
    }
    holds_writer |= c->holds_writer_lock;
  }
  uint64_t clock = rm_atomic_load_relaxed(&rm_rlu_global.clock);
  for (size_t i = 0; i < g.nslots; i++) {
    rm_rlu_ctx *c = *slot_ref(i);
    if (!rm_atomic_load_relaxed(&c->h.in_use) || rm_atomic_load_relaxed(&c->owner) == me) continue;
    uint64_t wc = rm_atomic_load_relaxed(&c->h.write_clock);
    fork_complete = wc != NO_CLOCK && wc <= clock && !(in_section && oldest < wc);
    struct log_mark all = {0};
    log_each(&c->log[c->cur], &all, fork_entry, c);
    rm_atomic_store_relaxed(&c->h.unlocks, rm_atomic_load_relaxed(&c->h.unlocks) + 1);
    rm_atomic_store_relaxed(&c->h.write_clock, NO_CLOCK);
    uint64_t r = rm_atomic_load_relaxed(&c->h.run_cnt);
    if (r & 1) rm_atomic_store_relaxed(&c->h.run_cnt, r + 1);
    rm_atomic_store_relaxed(&c->h.sync_request, 0u);
    rm_atomic_store_relaxed(&c->wb_active, 0u);
    c->h.is_writer = 0;
    c->h.deferred = 0;
    c->ndeferred = 0;
    c->holds_writer_lock = false;
    c->conflict_owner = NULL;
    for (int k = 0; k < 2; k++) {
      if (!in_section) log_free(&c->log[k]);
      c->log[k].head = c->log[k].cur = NULL;
      c->log[k].bytes = 0;
    }
    c->frees = NULL;
    c->nfrees = c->capfrees = c->frees_mark = 0;
    c->allocs = NULL;
    c->nallocs = c->capallocs = 0;
    c->unsure = NULL;
    c->unsure_cap = 0;
    slot_release(c);
  }
  high_lower();
  rm_atomic_store_relaxed(&g.clock_lock, 0u); /* a step of a thread that is gone */
  if (rm_atomic_load_relaxed(&g.closing)) {
    /* A thread that is gone was closing the fence-free entry: finish (no
     * other thread runs, so no barrier is needed). */
    __atomic_fetch_or(&rm_rlu_dom.gate, RM_FCP_GATE_CLOSED | RM_FCP_GATE_SHUT, __ATOMIC_SEQ_CST);
    rm_atomic_store_relaxed(&rm_rlu_global.fence_free, 0u);
  }
  rm_atomic_store_relaxed(&g.forking, 0u);
  if (!holds_writer) pthread_mutex_init(&g.writer_lock, NULL); /* a thread that is gone */
  pthread_mutex_unlock(&g.reg_lock); /* ours: fork_prepare took it */
}

/* ---- statistics -------------------------------------------------------- */
RM_API void rm_rlu_stats_get(struct rm_rlu_stats *out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&g.reg_lock);
  stats_add(out, &g.retired);
  for (size_t i = 0; i < g.nslots; i++) {
    rm_rlu_ctx *c = *slot_ref(i);
    if (rm_atomic_load_relaxed(&c->h.in_use)) stats_add(out, &c->st);
  }
  pthread_mutex_unlock(&g.reg_lock);
}

RM_API void rm_rlu_stats_print(FILE *f) {
  struct rm_rlu_stats s;
  rm_rlu_stats_get(&s);
  fprintf(f,
          "rlu: commits=%llu aborts=%llu conflicts=%llu steals=%llu syncs=%llu "
          "sync_waits=%llu sync_wait_iters=%llu log_chunks=%llu frees=%llu deferred=%llu sync_requests=%llu "
          "barriers=%llu clock=%llu entry=%s%s\n",
          (unsigned long long)s.commits, (unsigned long long)s.aborts,
          (unsigned long long)s.conflicts, (unsigned long long)s.steals,
          (unsigned long long)s.syncs, (unsigned long long)s.sync_waits,
          (unsigned long long)s.sync_wait_iters,
          (unsigned long long)s.log_chunks, (unsigned long long)s.frees,
          (unsigned long long)s.deferred, (unsigned long long)s.sync_requests,
          (unsigned long long)s.barriers,
          (unsigned long long)rm_rlu_clock(), rm_rlu_fence_free() ? "fence-free" : "fenced",
          g.opt.stats ? "" : " (statistics off)");
}
