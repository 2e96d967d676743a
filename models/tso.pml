/*
 * tso.pml - the memory model every protocol model includes: x86-TSO with
 * an explicit store buffer per thread, and membarrier().
 *
 * Before including this file a model defines NPROC (threads, at most 4) and
 * NVAR (shared words).  Words hold a byte; addresses are 0..NVAR-1.
 *
 *  - ST(t,a,v): thread t's store goes to the tail of its own FIFO buffer
 *    (SBSZ entries; a store into a full buffer waits for a drain, which
 *    only removes behaviours a longer buffer would add: see docs/models.md).
 *  - SEEN(t,a): what a load of a by thread t returns: the newest entry for
 *    a in t's own buffer, else memory (store forwarding).  LD(t,a,r)
 *    assigns it; a guard on SEEN() is a load that waits for a value.
 *  - Drain(t) (one process per thread, started by RUN_DRAINERS) moves the
 *    head of t's buffer to memory at any moment: buffers drain
 *    nondeterministically and in order.
 *  - FENCE(t): mfence, waits until t's buffer is empty.
 *  - RMW: a locked instruction drains the buffer first, then reads and
 *    writes memory in one step (CAS, XADD, XCHG below).
 *  - MEMBARRIER(t): membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) as the
 *    kernel guarantees it: the caller is fenced on entry, and for every
 *    thread of the process there is a moment between the call and its
 *    return at which that thread has executed a full barrier (an IPI on a
 *    running CPU, or the context switch of one that is not running), i.e.
 *    its buffer is empty at that moment.  The moments come in any order.
 *    MEMBARRIER_MAYFAIL(t,ok) may also fail (ok = 0) without any barrier,
 *    which stands for EPERM from a seccomp filter installed later.
 */
#ifndef SBSZ
#define SBSZ 2
#endif

byte mem[NVAR];
byte sba[NPROC * SBSZ]; /* buffered addresses, oldest first */
byte sbv[NPROC * SBSZ]; /* buffered values */
byte sbn[NPROC];        /* entries in each buffer */

#if SBSZ == 2
#define SEEN(t, a) \
  ((sbn[t] >= 2 && sba[(t) * 2 + 1] == (a)) -> sbv[(t) * 2 + 1] : \
   ((sbn[t] >= 1 && sba[(t) * 2] == (a)) -> sbv[(t) * 2] : mem[a]))
#elif SBSZ == 1
#define SEEN(t, a) ((sbn[t] >= 1 && sba[t] == (a)) -> sbv[t] : mem[a])
#else
#error "SBSZ must be 1 or 2"
#endif

#define LD(t, a, r) r = SEEN(t, a)

inline ST(st_t, st_a, st_v) {
  atomic {
    sbn[st_t] < SBSZ ->
    sba[(st_t) * SBSZ + sbn[st_t]] = st_a;
    sbv[(st_t) * SBSZ + sbn[st_t]] = st_v;
    sbn[st_t]++
  }
}

#define FENCE(t) (sbn[t] == 0)

/* r = old value; mem[a] = v if it held e.  Drains first. */
inline CAS(c_t, c_a, c_e, c_v, c_r) {
  atomic { sbn[c_t] == 0 -> c_r = mem[c_a]; if :: c_r == (c_e) -> mem[c_a] = c_v :: else fi }
}
inline XADD(x_t, x_a, x_d, x_r) { atomic { sbn[x_t] == 0 -> x_r = mem[x_a]; mem[x_a] = x_r + (x_d) } }
inline XCHG(x_t, x_a, x_v, x_r) { atomic { sbn[x_t] == 0 -> x_r = mem[x_a]; mem[x_a] = x_v } }
inline OR(o_t, o_a, o_m) { atomic { sbn[o_t] == 0 -> mem[o_a] = mem[o_a] | (o_m) } }

/* Move the oldest entry of t's buffer to memory. */
byte _k;
inline DRAIN1(d_t) {
  d_step {
    sbn[d_t] > 0 ->
    mem[sba[(d_t) * SBSZ]] = sbv[(d_t) * SBSZ];
    _k = 0;
    do
    :: _k + 1 < sbn[d_t] ->
       sba[(d_t) * SBSZ + _k] = sba[(d_t) * SBSZ + _k + 1];
       sbv[(d_t) * SBSZ + _k] = sbv[(d_t) * SBSZ + _k + 1];
       _k++
    :: else -> break
    od;
    sbn[d_t]--;
    sba[(d_t) * SBSZ + sbn[d_t]] = 0;
    sbv[(d_t) * SBSZ + sbn[d_t]] = 0;
    _k = 0
  }
}

proctype Drain(byte t) {
end:
  do
  :: DRAIN1(t)
  od
}

inline RUN_DRAINERS() {
  _k = 0;
  do
  :: _k < NPROC -> run Drain(_k); _k++
  :: else -> _k = 0; break
  od
}

/* One barrier moment per thread, in any order (mb is a local byte of the
 * caller, a bit per thread). */
#define MB_ALL ((1 << NPROC) - 1)
#ifndef LIVE
inline MEMBARRIER(m_t, mb) {
  sbn[m_t] == 0;
  mb = 0;
  do
  :: (mb & 1) == 0 && sbn[0] == 0 -> mb = mb | 1
  :: NPROC > 1 && (mb & 2) == 0 && sbn[1] == 0 -> mb = mb | 2
  :: NPROC > 2 && (mb & 4) == 0 && sbn[2] == 0 -> mb = mb | 4
  :: NPROC > 3 && (mb & 8) == 0 && sbn[3] == 0 -> mb = mb | 8
  :: mb == MB_ALL -> break
  od;
  mb = 0
}
#else
/* The same for liveness checks: the barrier moment of thread i drains its
 * buffer (the IPI's smp_mb waits for it), so a thread that keeps storing
 * cannot hold the call up; the moments that waiting for an empty buffer
 * finds are the same (consecutive drains, then the moment). */
inline MB_DRAIN(b_t) {
  do
  :: sbn[b_t] > 0 -> DRAIN1(b_t)
  :: else -> break
  od
}
inline MEMBARRIER(m_t, mb) {
  sbn[m_t] == 0;
  mb = 0;
  do
  :: (mb & 1) == 0 -> atomic { MB_DRAIN(0); mb = mb | 1 }
  :: NPROC > 1 && (mb & 2) == 0 -> atomic { MB_DRAIN(1); mb = mb | 2 }
  :: NPROC > 2 && (mb & 4) == 0 -> atomic { MB_DRAIN(2); mb = mb | 4 }
  :: NPROC > 3 && (mb & 8) == 0 -> atomic { MB_DRAIN(3); mb = mb | 8 }
  :: mb == MB_ALL -> break
  od;
  mb = 0
}
#endif
