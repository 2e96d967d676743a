/*
 * rcu_call_impl.h - call_rcu, rcu_barrier, defer_rcu, call_rcu data objects
 * and the fork protocol, written once for every RCU flavor (internal: not
 * installed).  Model of the queue, the worker's batches and the barrier's
 * markers: models/rcu_cb.pml (docs/models-rcu.md).  The flavor's .c file includes it once, after defining:
 *
 *   RM_CALL(name)         its public name for `name` (rm_rcu_##name, ...)
 *   CALL_PREFIX           the same prefix as a string, for messages
 *   CALL_FLAVOR_TAG       a number no other flavor uses: each call data
 *                         object carries its flavor's, and a function of
 *                         one flavor given the other's object returns
 *                         EINVAL (CALL_MINE)
 *   CALL_TLS_T, CALL_TLS  the thread-local state (fields `state`, for
 *                         RM_RCU_IN_CALLBACK, and `crd`, the thread's object)
 *   CALL_FLAVOR_INIT()    make the flavor's domain (once)
 *   CALL_IN_SECTION()     is the calling thread inside a read section?
 *   CALL_END_SECTIONS()   end the sections a callback left open
 *   CALL_SYNC_AS(name)    the flavor's synchronize, `name` for messages
 *   CALL_QUIESCE()        before a barrier's wait: take the thread out of
 *                         grace periods' way (a record, or NULL);
 *   CALL_RESUME(r)        ... and back after it
 *   CALL_PIN_BEGIN()      hold off the flavor's grace periods for a few
 *                         instructions, if this thread can (true), else
 *                         false (the caller takes crd_lock instead);
 *   CALL_PIN_END()        ... and let them go
 *   CALL_WORKER_BUSY()    a worker is about to run callbacks (which may read)
 *   CALL_WORKER_IDLE()    ... and is done with them: it idles now
 *   STAT_ADD(field, n)    the flavor's statistics (callbacks_run,
 *                         callback_batches)
 *
 * and gets the public call functions, static call_fork_prepare(),
 * call_fork_parent() and call_fork_child() for its pthread_atfork
 * handlers, and RM_CALL(barrier_as)(name) (internal).  Each flavor has its
 * own objects, workers, default object, per-CPU array and fork state: the
 * flavors' callbacks wait for their own flavor's grace periods only.
 *
 * This is a template, not an operations table: every call into the flavor
 * is direct, and the memb flavor's paths are the ones it had before the
 * qsbr flavor existed, plus the flavor tag checks.
 */

/* A multi-producer, single-consumer intrusive queue with a stub node:
 * producers exchange `tail` and then link the previous tail to their node;
 * the consumer (the worker, or a thread that drains the object while it
 * has none: state CRD_DRAINING) pops from `head`.  A producer stopped
 * between its exchange and its link hides the nodes after it until it
 * links (the consumer waits for it: a few instructions, unless it was
 * preempted there).
 *
 * rm_rcu_barrier() uses the object's own marker callback `bar`, embedded
 * here rather than on the waiting thread's stack (a fork() while it waits
 * would leave the child a queue that points into a stack the child hands
 * to its next thread).  The marker is queued at most once at a time:
 * bar_want is the newest barrier that asked for it, bar_queued the one the
 * queued marker serves (0: not queued), bar_done the newest one whose
 * marker has run; a marker that runs while a newer barrier asked queues
 * itself again (behind what that barrier must wait for).  Barriers wait
 * on bar_seq without holding crd_lock, counted in `users` so that
 * rm_rcu_call_data_free() does not free the object under them. */
struct rm_rcu_call_data {
  struct rm_rcu_head *head;  /* consumer only */
  struct rm_rcu_head stub;
  struct rm_rcu_head *batch; /* the consumer's current batch (invariant 4) */
  uint64_t taken;            /* callbacks the consumer has popped */
  uint8_t pad0[RM_CACHE_SECTOR];
  struct rm_rcu_head *tail; /* producers */
  uint64_t queued;           /* callbacks pushed (producers, after the push) */
  uint64_t want;             /* the worker sleeps until queued >= want */
  uint32_t sleeping;         /* futex: 1 while the worker sleeps */
  uint32_t stop;             /* rm_rcu_call_data_free: run what is queued, then exit */
  uint32_t state;            /* CRD_NONE, CRD_STARTING, CRD_RUNNING, CRD_DRAINING */
  uint32_t pause;            /* futex: rm_rcu_call_before_fork, stop between batches */
  uint32_t paused;           /* futex: the worker is stopped between batches */
  unsigned batch_size;
  uint64_t delay_ns;
  pthread_t thread;
  struct rm_rcu_head bar;    /* the barrier marker (see above) */
  uint64_t bar_want, bar_queued, bar_done; /* under crd_lock */
  uint32_t bar_seq;          /* futex: bumped when bar_done, drained or users change */
  uint32_t users;            /* barriers (and before_fork) waiting on it, under crd_lock */
  uint32_t stopping;         /* rm_rcu_call_data_free has begun (crd_lock; read atomically) */
  uint32_t drained;          /* ... and everything queued on it has run (crd_lock) */
  struct rm_rcu_call_data *next; /* all objects, under crd_lock */
  uint32_t flavor;           /* CALL_FLAVOR_TAG of the flavor that made it */
};
/* Is c an object of this flavor?  (The other flavor's objects are EINVAL.) */
#define CALL_MINE(c) ((c)->flavor == CALL_FLAVOR_TAG)
#define CRD_NONE 0u
#define CRD_STARTING 1u
#define CRD_RUNNING 2u
#define CRD_DRAINING 3u /* no worker; a thread runs the queue itself */

/* crd_lock guards the list of objects, the per-CPU array and the barrier
 * fields; it is never held across a grace period or a wait for a worker
 * (a thread inside a read section may need it: rm_rcu_call's per-CPU
 * choice, object creation, fork()). */
static pthread_mutex_t crd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rm_rcu_call_data *crd_all;      /* under crd_lock */
static struct rm_rcu_call_data *crd_default;  /* set once */
static struct rm_rcu_call_data **crd_per_cpu; /* crd_ncpu entries; published under crd_lock */
static int crd_ncpu;
static unsigned dflt_batch = 1;
static uint64_t dflt_delay_ns = 10000000u;
static uint64_t bar_gen;            /* barriers begun, under crd_lock */
static uint32_t fork_paused;        /* rm_rcu_call_before_fork() is in effect */
static uint64_t fork_paused_by;     /* ... called by this thread (rm_thread_identity) */

static void q_push(struct rm_rcu_call_data *c, struct rm_rcu_head *n) {
  rm_atomic_store_relaxed(&n->next, (struct rm_rcu_head *)NULL);
  /* acq_rel exchange: our node's contents (func, and whatever the caller
   * wrote before retiring the object) are released to the worker, which
   * reaches the node through prev->next (release below, acquire there). */
  struct rm_rcu_head *prev = rm_atomic_xchg_acq_rel(&c->tail, n);
  RM_DEBUG_YIELD();
  rm_atomic_store_release(&prev->next, n);
}

#define Q_EMPTY ((struct rm_rcu_head *)NULL)
#define Q_BUSY ((struct rm_rcu_head *)&q_busy_marker)
static const struct rm_rcu_head q_busy_marker;

static struct rm_rcu_head *q_pop(struct rm_rcu_call_data *c) {
  struct rm_rcu_head *h = c->head;
  struct rm_rcu_head *next = rm_atomic_load_acquire(&h->next);
  if (h == &c->stub) {
    if (!next) return rm_atomic_load_acquire(&c->tail) == h ? Q_EMPTY : Q_BUSY;
    c->head = next;
    h = next;
    next = rm_atomic_load_acquire(&h->next);
  }
  if (next) {
    c->head = next;
    return h;
  }
  if (rm_atomic_load_acquire(&c->tail) != h) return Q_BUSY; /* a push is linking */
  q_push(c, &c->stub);
  next = rm_atomic_load_acquire(&h->next);
  if (next) {
    c->head = next;
    return h;
  }
  return Q_BUSY;
}

static void crd_init(struct rm_rcu_call_data *c) {
  memset(c, 0, sizeof *c);
  c->head = &c->stub;
  c->tail = &c->stub;
  c->flavor = CALL_FLAVOR_TAG;
  c->batch_size = rm_atomic_load_relaxed(&dflt_batch);
  c->delay_ns = rm_atomic_load_relaxed(&dflt_delay_ns);
}

static void crd_wake(struct rm_rcu_call_data *c) {
  if (rm_atomic_load_seq_cst(&c->sleeping)) {
    rm_atomic_store_release(&c->sleeping, 0u);
    rm_futex_wake(&c->sleeping, 1, false);
  }
}

/* Wake the threads waiting on c's barrier state (crd_lock held, so that a
 * freer cannot free c before the wake-up is done). */
static void bar_signal(struct rm_rcu_call_data *c) {
  /* Ordering comes from crd_lock (the waiter reads bar_seq under it before
   * it waits, and rereads the barrier fields under it after); the RMW makes
   * the futex word change whatever the waiter's snapshot was. */
  rm_atomic_fetch_add_acq_rel(&c->bar_seq, 1u);
  rm_futex_wake(&c->bar_seq, INT32_MAX, false);
}

/* Pop every callback that is there (waiting out pushes that are linking)
 * onto the end of c->batch; returns how many. */
static uint64_t take_all(struct rm_rcu_call_data *c) {
  struct rm_rcu_head **end = &c->batch;
  while (*end) end = &(*end)->next;
  uint64_t n = 0;
  for (;;) {
    struct rm_rcu_head *h = q_pop(c);
    if (h == Q_EMPTY) break;
    if (h == Q_BUSY) {
      sched_yield(); /* a producer is between its exchange and its link */
      continue;
    }
    h->next = NULL;
    *end = h;
    end = &h->next;
    n++;
  }
  c->taken += n;
  return n;
}

/* A callback returned inside a read section: end the section (the
 * callback's frame is gone, so nothing can still rely on it; left open, it
 * would make every later batch of this thread wait for itself). */
static void callback_left_section(void) {
  static uint32_t said;
  rm_misuse(&said, "a call_rcu callback returned inside a read section (the section is ended "
                   "for it)");
  CALL_END_SECTIONS();
}

/* Wait for one grace period and run the batch, in order.  Callbacks run
 * with the thread marked IN_CALLBACK (rm_rcu_barrier refuses there); they
 * may read, call rm_rcu_call (onto a queue: next batch) and synchronize.
 * Callers are outside any section; if one were not, the grace period would
 * return EDEADLK and the batch stays for later: never run early. */
static int run_batch(struct rm_rcu_call_data *c, bool worker) {
  if (!c->batch) return 0;
  int e = CALL_SYNC_AS("call_rcu batch");
  RM_ASSERT(e == 0, "call_rcu batch run inside a read section");
  if (e) return e;
  STAT_ADD(callback_batches, 1);
  CALL_TLS_T *t = &CALL_TLS;
  if (worker) CALL_WORKER_BUSY();
  t->state |= RM_RCU_IN_CALLBACK;
  uint64_t n = 0;
  while (c->batch) {
    struct rm_rcu_head *h = c->batch;
    c->batch = h->next;
    h->func(h);
    if (RM_UNLIKELY(CALL_IN_SECTION())) callback_left_section();
    n++;
  }
  t->state &= ~RM_RCU_IN_CALLBACK;
  STAT_ADD(callbacks_run, n);
  /* A worker whose callbacks read registered itself: it now idles, so it
   * must not cost grace periods a membarrier. */
  if (worker) CALL_WORKER_IDLE();
  return 0;
}

/* rm_rcu_call_before_fork(): stop between batches until resumed. */
static void worker_pause(struct rm_rcu_call_data *c) {
  /* Release, pairing with rm_rcu_call_before_fork's acquire load: the last
   * batch's work (queue, batch list, callbacks' stores) is done before the
   * fork it lets go on.  Acquire on `pause`, pairing with the release that
   * resumes us: we see what the resumer did before (nothing we rely on
   * today; it costs nothing on x86). */
  rm_atomic_store_release(&c->paused, 1u);
  rm_futex_wake(&c->paused, INT32_MAX, false);
  while (rm_atomic_load_acquire(&c->pause)) rm_futex_wait(&c->pause, 1u, CLOCK_MONOTONIC, NULL, false);
  rm_atomic_store_release(&c->paused, 0u);
}

static void *worker_main(void *arg) {
  struct rm_rcu_call_data *c = (struct rm_rcu_call_data *)arg;
  uint64_t first_ns = 0; /* when the oldest waiting callback was seen */
  run_batch(c, true); /* a batch taken before fork() by the parent's worker */
  for (;;) {
    if (RM_UNLIKELY(rm_atomic_load_acquire(&c->pause))) {
      worker_pause(c);
      continue;
    }
    uint64_t q = rm_atomic_load_seq_cst(&c->queued);
    int64_t pending = (int64_t)(q - c->taken);
    bool stop = rm_atomic_load_acquire(&c->stop) != 0;
    bool flush = rm_atomic_load_acquire(&c->bar_queued) != 0; /* a barrier waits */
    if (pending <= 0 && stop) {
      take_all(c); /* pushes that had not counted themselves yet */
      if (!c->batch) break;
      run_batch(c, true);
      continue;
    }
    uint64_t now = rm_now_ns();
    if (pending > 0 && first_ns == 0) first_ns = now;
    /* The knob may change under us (rm_rcu_call_set_batch, relaxed: any
     * value it held is a valid batch; its crd_wake makes us look again). */
    unsigned batch = rm_atomic_load_relaxed(&c->batch_size);
    uint64_t delay = rm_atomic_load_relaxed(&c->delay_ns);
    bool ready = pending > 0 && (flush || stop || (uint64_t)pending >= batch ||
                                 now - first_ns >= delay);
    if (!ready) {
      /* Sleep until enough callbacks are queued (a producer that brings
       * `queued` to `want` wakes us), or the oldest one's delay is up.
       * Dekker with the producer: we store sleeping = 1 then read
       * `queued`, the marker, `stop` and `pause` (seq_cst); it adds to
       * `queued` (seq_cst) then reads `sleeping` (seq_cst): one of us sees
       * the other.  (A barrier, a free and before_fork store their word,
       * then wake us through crd_wake, which reads `sleeping` seq_cst.) */
      uint64_t want = c->taken + (pending > 0 ? batch : 1u);
      rm_atomic_store_relaxed(&c->want, want);
      rm_atomic_store_seq_cst(&c->sleeping, 1u);
      if (rm_atomic_load_seq_cst(&c->queued) >= want || rm_atomic_load_seq_cst(&c->bar_queued) ||
          rm_atomic_load_seq_cst(&c->stop) || rm_atomic_load_seq_cst(&c->pause)) {
        rm_atomic_store_relaxed(&c->sleeping, 0u);
        continue;
      }
      struct timespec ts, *until = NULL;
      if (pending > 0 && delay < UINT64_MAX - first_ns) { /* saturate: UINT64_MAX never expires */
        uint64_t at = first_ns + delay;
        ts.tv_sec = (time_t)(at / 1000000000u);
        ts.tv_nsec = (long)(at % 1000000000u);
        until = &ts;
      }
      rm_futex_wait(&c->sleeping, 1u, CLOCK_MONOTONIC, until, false);
      rm_atomic_store_relaxed(&c->sleeping, 0u);
      continue;
    }
    take_all(c);
    first_ns = 0;
    run_batch(c, true);
  }
  return NULL;
}

/* Start c's worker if it has none: true when it runs.  False when it
 * cannot be created, or while a thread drains the object itself. */
static bool worker_ensure(struct rm_rcu_call_data *c) {
  uint32_t s = rm_atomic_load_acquire(&c->state);
  if (RM_LIKELY(s == CRD_RUNNING)) return true;
  if (s == CRD_DRAINING) return false;
  if (s == CRD_STARTING) { /* another thread is starting it */
    while ((s = rm_atomic_load_acquire(&c->state)) == CRD_STARTING) sched_yield();
    return s == CRD_RUNNING;
  }
  if (!rm_atomic_cas_acq_rel(&c->state, &s, CRD_STARTING)) return worker_ensure(c);
  /* The worker blocks every signal: they belong to the program's threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int e = pthread_create(&c->thread, NULL, worker_main, c);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  rm_atomic_store_release(&c->state, e == 0 ? CRD_RUNNING : CRD_NONE);
  if (e != 0) {
    static int said;
    if (!rm_atomic_xchg_acq_rel(&said, 1))
      fprintf(stderr, "readmostly: call_rcu: cannot start the worker thread (%s); "
                      "callbacks run synchronously until it can\n", strerror(e));
  }
  return e == 0;
}

/* Run c's queue here, for an object without a worker (none can be started,
 * or it is being freed), outside any section: one grace period, then the
 * callbacks, the barrier marker among them.  False if another thread
 * consumes the queue (a worker, or another drain). */
static bool drain_here(struct rm_rcu_call_data *c) {
  uint32_t s = CRD_NONE;
  if (!rm_atomic_cas_acq_rel(&c->state, &s, CRD_DRAINING)) return false;
  take_all(c);
  run_batch(c, false);
  rm_atomic_store_release(&c->state, CRD_NONE);
  /* Barriers whose marker came after our take_all look again (and drain
   * it themselves). */
  pthread_mutex_lock(&crd_lock);
  bar_signal(c);
  pthread_mutex_unlock(&crd_lock);
  return true;
}

static struct rm_rcu_call_data *crd_new(void) {
  /* aligned_alloc wants a size that is a multiple of the alignment. */
  size_t size = (sizeof(struct rm_rcu_call_data) + RM_CACHE_SECTOR - 1) & ~(size_t)(RM_CACHE_SECTOR - 1);
  struct rm_rcu_call_data *c = (struct rm_rcu_call_data *)aligned_alloc(RM_CACHE_SECTOR, size);
  if (!c) return NULL;
  crd_init(c);
  pthread_mutex_lock(&crd_lock);
  c->next = crd_all;
  crd_all = c;
  pthread_mutex_unlock(&crd_lock);
  return c;
}

static struct rm_rcu_call_data crd_default_obj RM_ALIGNED;
static pthread_once_t crd_once = PTHREAD_ONCE_INIT;
static void crd_default_init(void) {
  CALL_FLAVOR_INIT();
  crd_init(&crd_default_obj);
  pthread_mutex_lock(&crd_lock);
  crd_default_obj.next = crd_all;
  crd_all = &crd_default_obj;
  pthread_mutex_unlock(&crd_lock);
  rm_atomic_store_release(&crd_default, &crd_default_obj);
}

RM_API struct rm_rcu_call_data *RM_CALL(call_data_default)(void) {
  struct rm_rcu_call_data *c = rm_atomic_load_acquire(&crd_default);
  if (RM_LIKELY(c != NULL)) return c;
  pthread_once(&crd_once, crd_default_init);
  return rm_atomic_load_acquire(&crd_default);
}

/* The object of the CPU we run on, or NULL.  The caller keeps it from
 * being freed (a read section, or crd_lock): rm_rcu_call_data_free_per_cpu
 * unpublishes the array under crd_lock, then waits for a grace period. */
static struct rm_rcu_call_data *crd_of_cpu(void) {
  struct rm_rcu_call_data **pc = rm_atomic_load_acquire(&crd_per_cpu);
  if (!pc) return NULL;
  int cpu = sched_getcpu();
  /* Acquire, pairing with rm_rcu_call_data_set_cpu's release store: the
   * object is initialised.  crd_ncpu was written before the array was
   * published (release there, acquire above). */
  return cpu >= 0 && cpu < crd_ncpu ? rm_atomic_load_acquire(&pc[cpu]) : NULL;
}

static struct rm_rcu_call_data *crd_for_caller(void) {
  struct rm_rcu_call_data *c = CALL_TLS.crd;
  if (c) return c;
  c = crd_of_cpu();
  return c ? c : RM_CALL(call_data_default)();
}

static void crd_push(struct rm_rcu_call_data *c, struct rm_rcu_head *head) {
  q_push(c, head);
  /* seq_cst: the Dekker with the sleeping worker (see worker_main). */
  uint64_t n = rm_atomic_fetch_add_seq_cst(&c->queued, (uint64_t)1) + 1;
  if (rm_atomic_load_seq_cst(&c->sleeping) && n >= rm_atomic_load_relaxed(&c->want)) crd_wake(c);
}

/* Push onto c if it has a worker (c is kept alive by the caller). */
static bool push_if_worker(struct rm_rcu_call_data *c, struct rm_rcu_head *head) {
  if (!c || !worker_ensure(c)) return false;
  crd_push(c, head);
  return true;
}

RM_API void RM_CALL(call)(struct rm_rcu_head *head, void (*func)(struct rm_rcu_head *head)) {
  head->func = func;
  CALL_TLS_T *t = &CALL_TLS;
  struct rm_rcu_call_data *c = t->crd;
  if (!c) {
    if (RM_UNLIKELY(rm_atomic_load_acquire(&crd_per_cpu) != NULL)) {
      /* Per-CPU objects: choose and push where
       * rm_rcu_call_data_free_per_cpu() cannot free the object under us.
       * A thread with a record does it inside a read section (an offline
       * one stays offline); one without takes crd_lock rather than
       * registering, which would make it an idle record that costs every
       * later grace period a membarrier. */
      bool done;
      if (CALL_PIN_BEGIN()) {
        done = push_if_worker(crd_of_cpu(), head);
        CALL_PIN_END();
      } else {
        pthread_mutex_lock(&crd_lock);
        done = push_if_worker(crd_of_cpu(), head);
        pthread_mutex_unlock(&crd_lock);
      }
      if (done) return;
    }
    c = RM_CALL(call_data_default)(); /* no per-CPU object, or no worker for it */
  }
  if (RM_LIKELY(push_if_worker(c, head))) return;
  /* No worker.  The callback waits in the queue; outside a section we run
   * the queue now (a grace period, then the callbacks, ours among them);
   * inside one the next rm_rcu_call or rm_rcu_barrier does.  Never
   * dropped. */
  crd_push(c, head);
  if (CALL_IN_SECTION()) return;
  while (!drain_here(c) && !worker_ensure(c)) {
    if (rm_atomic_load_acquire(&c->stopping)) return; /* its free runs the queue */
    sched_yield(); /* another thread drains: ours may have come too late for it */
  }
}

struct defer_node {
  struct rm_rcu_head head;
  void (*func)(void *);
  void *p;
};

static void defer_run(struct rm_rcu_head *h) {
  struct defer_node *n = (struct defer_node *)(void *)((char *)h - offsetof(struct defer_node, head));
  n->func(n->p);
  free(n);
}

RM_API int RM_CALL(defer)(void (*func)(void *p), void *p) {
  RM_ASSERT(!CALL_IN_SECTION(), CALL_PREFIX "defer inside a read section (it may block)");
  struct defer_node *n = (struct defer_node *)malloc(sizeof *n);
  if (!n) {
    /* No node: wait for a grace period here and call func(p) ourselves;
     * inside a section we cannot wait, and never call it early. */
    if (CALL_SYNC_AS(CALL_PREFIX "defer (out of memory)") != 0) return EDEADLK;
    func(p);
    return 0;
  }
  n->func = func;
  n->p = p;
  RM_CALL(call)(&n->head, defer_run);
  return 0;
}

/* ---- rm_rcu_barrier ----------------------------------------------------------- */

/* The marker ran (after a grace period, behind what was queued before it):
 * record which barrier it served, and queue it again if a newer barrier
 * asked for it meanwhile. */
static void bar_run(struct rm_rcu_head *h) {
  struct rm_rcu_call_data *c =
      (struct rm_rcu_call_data *)(void *)((char *)h - offsetof(struct rm_rcu_call_data, bar));
  pthread_mutex_lock(&crd_lock);
  if (c->bar_queued > c->bar_done) rm_atomic_store_relaxed(&c->bar_done, c->bar_queued);
  if (c->bar_want > c->bar_done) {
    rm_atomic_store_relaxed(&c->bar_queued, c->bar_want);
    crd_push(c, &c->bar);
  } else {
    rm_atomic_store_relaxed(&c->bar_queued, (uint64_t)0);
  }
  bar_signal(c);
  pthread_mutex_unlock(&crd_lock);
}

/* Ask for c's marker on behalf of barrier g (crd_lock held). */
static void bar_ask(struct rm_rcu_call_data *c, uint64_t g) {
  c->bar_want = g;
  if (!c->bar_queued) {
    rm_atomic_store_relaxed(&c->bar_queued, g);
    c->bar.func = bar_run;
    crd_push(c, &c->bar);
  }
  crd_wake(c);
}

int RM_CALL(barrier_as)(const char *name) {
  CALL_TLS_T *t = &CALL_TLS;
  if (CALL_IN_SECTION() || (t->state & RM_RCU_IN_CALLBACK) ||
      (rm_atomic_load_acquire(&fork_paused) &&
       rm_atomic_load_relaxed(&fork_paused_by) == (uint64_t)rm_thread_identity())) {
    static uint32_t said_rm, said_other;
    rm_misuse(strcmp(name, CALL_PREFIX "barrier") == 0 ? &said_rm : &said_other,
              "%s inside a read section, a callback, or between " CALL_PREFIX "call_before_fork and "
              "the fork would wait for itself (returned EDEADLK)", name);
    return EDEADLK;
  }
  RM_CALL(call_data_default)();
  /* This thread waits in no section: do not make grace periods wait for it
   * (as in rm_rcu_synchronize). */
  struct rm_fcp_reader *r = CALL_QUIESCE();
  /* Ask every object that has been used for its marker (FIFO: it runs
   * after every callback queued on it before this point), and lift its
   * batching while it is queued. */
  pthread_mutex_lock(&crd_lock);
  uint64_t g = ++bar_gen;
  for (struct rm_rcu_call_data *c = crd_all; c; c = c->next)
    if (!c->stopping && (rm_atomic_load_seq_cst(&c->queued) != 0 ||
                         rm_atomic_load_relaxed(&c->state) != CRD_NONE))
      bar_ask(c, g);
  pthread_mutex_unlock(&crd_lock);
  /* Wait, without crd_lock, for each object whose marker has not served
   * us yet, and for each object being freed until it has run everything
   * it had (its callbacks queued before this barrier among them). */
  for (;;) {
    pthread_mutex_lock(&crd_lock);
    struct rm_rcu_call_data *c = crd_all;
    while (c && !(c->bar_want >= g && c->bar_done < g) && !(c->stopping && !c->drained))
      c = c->next;
    if (!c) {
      pthread_mutex_unlock(&crd_lock);
      break;
    }
    c->users++;
    uint32_t seq = rm_atomic_load_acquire(&c->bar_seq);
    bool stopping = c->stopping != 0;
    pthread_mutex_unlock(&crd_lock);
    /* No worker can run (none can be created): run its queue here. */
    if (stopping || worker_ensure(c) || !drain_here(c))
      rm_futex_wait(&c->bar_seq, seq, CLOCK_MONOTONIC, NULL, false);
    pthread_mutex_lock(&crd_lock);
    c->users--;
    bar_signal(c); /* a free may wait for users to reach 0 */
    pthread_mutex_unlock(&crd_lock);
  }
  CALL_RESUME(r);
  return 0;
}

RM_API int RM_CALL(barrier)(void) { return RM_CALL(barrier_as)(CALL_PREFIX "barrier"); }

/* ---- call_rcu data objects ------------------------------------------------------ */

RM_API int RM_CALL(call_data_create)(struct rm_rcu_call_data **out) {
  if (!out) return EINVAL;
  CALL_FLAVOR_INIT();
  struct rm_rcu_call_data *c = crd_new();
  if (!c) return ENOMEM;
  if (!worker_ensure(c)) {
    RM_CALL(call_data_free)(c);
    return EAGAIN;
  }
  *out = c;
  return 0;
}

RM_API int RM_CALL(call_data_free)(struct rm_rcu_call_data *c) {
  if (!c || c == &crd_default_obj || !CALL_MINE(c)) return EINVAL;
  /* Freeing waits for a grace period (the worker's last batch, or ours):
   * inside a read section, or in a callback of the object's own worker,
   * it would wait for itself. */
  if (CALL_IN_SECTION() ||
      ((CALL_TLS.state & RM_RCU_IN_CALLBACK) &&
       rm_atomic_load_acquire(&c->state) == CRD_RUNNING && pthread_equal(c->thread, pthread_self()))) {
    static uint32_t said;
    rm_misuse(&said, CALL_PREFIX "call_data_free inside a read section or its own callback would "
                     "wait for itself (returned EDEADLK)");
    return EDEADLK;
  }
  pthread_mutex_lock(&crd_lock);
  bool twice = c->stopping != 0;
  rm_atomic_store_release(&c->stopping, 1u); /* barriers from now on wait for `drained` */
  pthread_mutex_unlock(&crd_lock);
  if (twice) return EINVAL; /* another thread frees it */
  /* Run everything queued on it: its worker does, then exits; or we do.
   * Afterwards the state stays CRD_DRAINING: no worker starts again. */
  for (;;) {
    uint32_t s = rm_atomic_load_acquire(&c->state);
    if (s == CRD_RUNNING) {
      rm_atomic_store_seq_cst(&c->stop, 1u);
      rm_atomic_store_release(&c->sleeping, 0u);
      rm_futex_wake(&c->sleeping, 1, false);
      pthread_join(c->thread, NULL);
      rm_atomic_store_release(&c->state, CRD_DRAINING);
      break;
    }
    if (s == CRD_NONE && rm_atomic_cas_acq_rel(&c->state, &s, CRD_DRAINING)) break;
    sched_yield(); /* a worker is starting, or a barrier drains it */
  }
  for (;;) { /* pushes that came after the worker's last look */
    take_all(c);
    if (!c->batch) break;
    run_batch(c, false);
  }
  pthread_mutex_lock(&crd_lock);
  c->drained = 1;
  bar_signal(c);
  while (c->users) { /* barriers still looking at it */
    uint32_t seq = rm_atomic_load_acquire(&c->bar_seq);
    pthread_mutex_unlock(&crd_lock);
    rm_futex_wait(&c->bar_seq, seq, CLOCK_MONOTONIC, NULL, false);
    pthread_mutex_lock(&crd_lock);
  }
  for (struct rm_rcu_call_data **pp = &crd_all; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  pthread_mutex_unlock(&crd_lock);
  free(c);
  return 0;
}

RM_API void RM_CALL(call_data_set_thread)(struct rm_rcu_call_data *c) {
  if (c && !CALL_MINE(c)) {
    static uint32_t said;
    rm_misuse(&said, CALL_PREFIX "call_data_set_thread: the object belongs to the other RCU "
                     "flavor (ignored)");
    return;
  }
  CALL_TLS.crd = c;
}
RM_API struct rm_rcu_call_data *RM_CALL(call_data_thread)(void) { return CALL_TLS.crd; }

static int ncpu_conf(void) {
  long n = sysconf(_SC_NPROCESSORS_CONF);
  return n < 1 ? 1 : n > INT32_MAX ? INT32_MAX : (int)n;
}

/* The per-CPU array, allocated if there is none (crd_lock held). */
static struct rm_rcu_call_data **per_cpu_ensure(void) {
  if (crd_per_cpu) return crd_per_cpu;
  int n = ncpu_conf();
  struct rm_rcu_call_data **pc = (struct rm_rcu_call_data **)calloc((size_t)n, sizeof *pc);
  if (!pc) return NULL;
  crd_ncpu = n;
  rm_atomic_store_release(&crd_per_cpu, pc); /* after crd_ncpu and the zeroes */
  return pc;
}

RM_API int RM_CALL(call_data_create_per_cpu)(void) {
  CALL_FLAVOR_INIT();
  int n = ncpu_conf();
  for (int i = 0; i < n; i++) {
    pthread_mutex_lock(&crd_lock);
    struct rm_rcu_call_data **pc = per_cpu_ensure();
    bool have = pc && i < crd_ncpu && pc[i];
    pthread_mutex_unlock(&crd_lock);
    if (!pc) return ENOMEM;
    if (have) continue; /* CPUs that have one keep it */
    struct rm_rcu_call_data *c = NULL;
    int e = RM_CALL(call_data_create)(&c);
    if (e) return e;
    pthread_mutex_lock(&crd_lock);
    pc = per_cpu_ensure();
    if (pc && i < crd_ncpu && !pc[i]) {
      rm_atomic_store_release(&pc[i], c);
      c = NULL;
    }
    pthread_mutex_unlock(&crd_lock);
    if (c) RM_CALL(call_data_free)(c); /* another thread filled it first */
  }
  return 0;
}

RM_API int RM_CALL(call_data_set_cpu)(int cpu, struct rm_rcu_call_data *c) {
  if (cpu < 0 || cpu >= ncpu_conf() || (c && !CALL_MINE(c))) return EINVAL;
  pthread_mutex_lock(&crd_lock);
  struct rm_rcu_call_data **pc = per_cpu_ensure();
  int e = 0;
  if (!pc) e = ENOMEM;
  else if (c && pc[cpu]) e = EEXIST; /* set it to NULL first, as liburcu asks */
  else rm_atomic_store_release(&pc[cpu], c);
  pthread_mutex_unlock(&crd_lock);
  return e;
}

RM_API int RM_CALL(call_data_free_per_cpu)(void) {
  if (CALL_IN_SECTION()) {
    static uint32_t said;
    rm_misuse(&said, CALL_PREFIX "call_data_free_per_cpu inside a read section would wait for "
                     "itself (returned EDEADLK)");
    return EDEADLK;
  }
  pthread_mutex_lock(&crd_lock);
  struct rm_rcu_call_data **pc = crd_per_cpu;
  int n = crd_ncpu;
  rm_atomic_store_release(&crd_per_cpu, (struct rm_rcu_call_data **)NULL);
  pthread_mutex_unlock(&crd_lock);
  if (!pc) return 0;
  /* rm_rcu_call picks and uses a per-CPU object inside a read section (or
   * under crd_lock): after this grace period nobody holds one of these. */
  (void)CALL_SYNC_AS(CALL_PREFIX "synchronize");
  for (int i = 0; i < n; i++) {
    if (!pc[i]) continue;
    for (int j = i + 1; j < n; j++)
      if (pc[j] == pc[i]) pc[j] = NULL;
    RM_CALL(call_data_free)(pc[i]);
  }
  free(pc);
  return 0;
}

RM_API struct rm_rcu_call_data *RM_CALL(call_data_current)(void) { return crd_for_caller(); }

RM_API pthread_t RM_CALL(call_data_worker)(struct rm_rcu_call_data *c) {
  if (!CALL_MINE(c)) {
    static uint32_t said;
    rm_misuse(&said, CALL_PREFIX "call_data_worker: the object belongs to the other RCU flavor "
                     "(returned 0)");
    return (pthread_t)0;
  }
  worker_ensure(c);
  return c->thread;
}

RM_API struct rm_rcu_call_data *RM_CALL(call_data_cpu)(int cpu) {
  struct rm_rcu_call_data **pc = rm_atomic_load_acquire(&crd_per_cpu);
  return pc && cpu >= 0 && cpu < crd_ncpu ? rm_atomic_load_acquire(&pc[cpu]) : NULL;
}

RM_API int RM_CALL(call_set_batch)(struct rm_rcu_call_data *c, unsigned batch, uint64_t delay_ns) {
  if (batch < 1 || batch > 1000000u || (c && !CALL_MINE(c))) return EINVAL;
  if (!c) {
    rm_atomic_store_relaxed(&dflt_batch, batch);
    rm_atomic_store_relaxed(&dflt_delay_ns, delay_ns);
    RM_CALL(call_data_default)();
    pthread_mutex_lock(&crd_lock);
    for (struct rm_rcu_call_data *x = crd_all; x; x = x->next) {
      rm_atomic_store_relaxed(&x->batch_size, batch);
      rm_atomic_store_relaxed(&x->delay_ns, delay_ns);
      crd_wake(x);
    }
    pthread_mutex_unlock(&crd_lock);
    return 0;
  }
  rm_atomic_store_relaxed(&c->batch_size, batch);
  rm_atomic_store_relaxed(&c->delay_ns, delay_ns);
  crd_wake(c);
  return 0;
}

RM_API void RM_CALL(get_stats)(struct rm_rcu_stats *out) {
  out->grace_periods = rm_atomic_load_relaxed(&stats.grace_periods);
  out->sync_calls = rm_atomic_load_relaxed(&stats.sync_calls);
  out->sync_shared = rm_atomic_load_relaxed(&stats.sync_shared);
  out->callbacks_run = rm_atomic_load_relaxed(&stats.callbacks_run);
  out->callback_batches = rm_atomic_load_relaxed(&stats.callback_batches);
}

/* ---- fork ------------------------------------------------------------------ */

/* liburcu's protocol: rm_rcu_call_before_fork() stops every worker between
 * two batches (none is inside a callback, or between taking a callback off
 * its queue and linking it into its batch, when fork() copies the
 * process); rm_rcu_call_after_fork_parent() / _child() resume them (our own
 * fork handlers do too, so forgetting them costs nothing).  Waits for the
 * workers without crd_lock (a worker may need it to finish its batch),
 * holding each object in `users` meanwhile. */
RM_API void RM_CALL(call_before_fork)(void) {
  if (CALL_IN_SECTION()) {
    /* A worker may be waiting for a grace period that waits for us. */
    static uint32_t said;
    rm_misuse(&said, CALL_PREFIX "call_before_fork inside a read section would wait for itself "
                     "(workers not paused)");
    return;
  }
  pthread_mutex_lock(&crd_lock);
  /* Release: a barrier that sees the flag (acquire) sees who set it. */
  rm_atomic_store_relaxed(&fork_paused_by, (uint64_t)rm_thread_identity());
  rm_atomic_store_release(&fork_paused, 1u);
  for (struct rm_rcu_call_data *c = crd_all; c; c = c->next) {
    rm_atomic_store_seq_cst(&c->pause, 1u);
    crd_wake(c);
  }
  for (;;) {
    struct rm_rcu_call_data *c = crd_all;
    while (c && !(rm_atomic_load_acquire(&c->state) == CRD_RUNNING &&
                  !rm_atomic_load_acquire(&c->paused) && !rm_atomic_load_relaxed(&c->stop)))
      c = c->next;
    if (!c) break;
    c->users++;
    pthread_mutex_unlock(&crd_lock);
    while (!rm_atomic_load_acquire(&c->paused) && rm_atomic_load_acquire(&c->state) == CRD_RUNNING)
      rm_futex_wait(&c->paused, 0u, CLOCK_MONOTONIC, NULL, false);
    pthread_mutex_lock(&crd_lock);
    c->users--;
    bar_signal(c);
  }
  pthread_mutex_unlock(&crd_lock);
}

static void resume_workers(void) {
  rm_atomic_store_release(&fork_paused, 0u);
  for (struct rm_rcu_call_data *c = crd_all; c; c = c->next)
    if (rm_atomic_load_acquire(&c->pause)) {
      rm_atomic_store_release(&c->pause, 0u);
      rm_futex_wake(&c->pause, INT32_MAX, false);
    }
}

RM_API void RM_CALL(call_after_fork_parent)(void) {
  pthread_mutex_lock(&crd_lock);
  resume_workers();
  pthread_mutex_unlock(&crd_lock);
}

RM_API void RM_CALL(call_after_fork_child)(void) {
  pthread_mutex_lock(&crd_lock);
  resume_workers(); /* the child's workers start afresh; nothing waits */
  pthread_mutex_unlock(&crd_lock);
}

/* The list lock is held across fork() so that the child finds the list
 * whole.  The flavor's gp_lock is not: the forking thread may be inside a
 * read section that a grace period in another thread waits for. */
static pthread_mutex_t atfork_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rm_rcu_atfork *atfork_list; /* under atfork_lock */

RM_API void RM_CALL(register_atfork)(struct rm_rcu_atfork *a) {
  CALL_FLAVOR_INIT(); /* our pthread_atfork handlers exist from now on */
  pthread_mutex_lock(&atfork_lock);
  struct rm_rcu_atfork **pp = &atfork_list;
  while (*pp) pp = &(*pp)->rm_next;
  a->rm_next = NULL;
  *pp = a;
  pthread_mutex_unlock(&atfork_lock);
}

RM_API void RM_CALL(unregister_atfork)(struct rm_rcu_atfork *a) {
  pthread_mutex_lock(&atfork_lock);
  for (struct rm_rcu_atfork **pp = &atfork_list; *pp; pp = &(*pp)->rm_next)
    if (*pp == a) {
      *pp = a->rm_next;
      break;
    }
  pthread_mutex_unlock(&atfork_lock);
}

static void call_fork_prepare(void) {
  pthread_mutex_lock(&atfork_lock);
  for (struct rm_rcu_atfork *a = atfork_list; a; a = a->rm_next)
    if (a->before_fork) a->before_fork(a->priv);
  pthread_mutex_lock(&crd_lock);
}

static void call_fork_parent(void) {
  resume_workers();
  pthread_mutex_unlock(&crd_lock);
  for (struct rm_rcu_atfork *a = atfork_list; a; a = a->rm_next)
    if (a->after_fork_parent) a->after_fork_parent(a->priv);
  pthread_mutex_unlock(&atfork_lock);
}

/* Is n in c's queue (from `head`) or its batch?  The child asks about the
 * barrier marker: a worker of the parent may have been running it. */
static bool crd_holds(struct rm_rcu_call_data *c, const struct rm_rcu_head *n) {
  for (const struct rm_rcu_head *h = c->head; h; h = h->next)
    if (h == n) return true;
  for (const struct rm_rcu_head *h = c->batch; h; h = h->next)
    if (h == n) return true;
  return false;
}

/* In the child only the forking thread runs: no worker, no grace period in
 * progress, no barrier waiting, no object being freed, no producer in the
 * middle of a push except a thread that no longer exists.  Workers start
 * again on first use (worker_ensure), with what was queued and the batch a
 * worker had taken but not run.  A callback that a worker was running, or
 * had taken off its queue but not yet linked into its batch, is not in
 * the child, unless rm_rcu_call_before_fork() paused the workers first. */
static void call_fork_child(void) {
  /* crd_lock and atfork_lock are ours (call_fork_prepare took them):
   * unlock them. */
  fork_paused = 0;
  for (struct rm_rcu_call_data *c = crd_all; c; c = c->next) {
    c->state = CRD_NONE;
    c->sleeping = 0;
    c->stop = 0;
    c->pause = 0;
    c->paused = 0;
    c->users = 0;
    c->stopping = 0; /* its freer is gone: the object lives on in the child */
    c->drained = 0;
    c->bar_seq = 0;
    /* A thread that is gone may have exchanged `tail` without linking its
     * node: the nodes from there on cannot be reached.  Cut the queue
     * where its links end (what follows belongs to threads that do not
     * exist here; their parent copies run in the parent). */
    struct rm_rcu_head *h = c->head;
    uint64_t n = 0;
    while (h->next) {
      h = h->next;
      if (h != &c->stub) n++;
    }
    if (h != c->tail) {
      fprintf(stderr, "readmostly: fork: a call_rcu of another thread was in progress; "
                      "the child drops the callbacks queued after it\n");
      c->tail = h;
    }
    c->queued = c->taken + n;
    /* No barrier of the parent waits here.  A marker that is still queued
     * stays (it must not be queued twice) and runs harmlessly. */
    if (c->bar_queued && !crd_holds(c, &c->bar)) c->bar_queued = 0;
    if (c->bar_want > c->bar_done) c->bar_done = c->bar_want;
  }
  pthread_mutex_unlock(&crd_lock);
  for (struct rm_rcu_atfork *a = atfork_list; a; a = a->rm_next)
    if (a->after_fork_child) a->after_fork_child(a->priv);
  pthread_mutex_unlock(&atfork_lock);
}
