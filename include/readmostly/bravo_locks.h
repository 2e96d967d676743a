/*
 * readmostly/bravo_locks.h - BRAVO over each of the bundled locks.
 *
 * SYNOPSIS
 *   #include <readmostly/bravo_locks.h>
 *
 * DESCRIPTION
 *   Stamps out, with RM_BRAVO_DEFINE from readmostly/bravo.h:
 *
 *   type                 underlying lock          initializer
 *   -------------------  -----------------------  ----------------------------
 *   rm_bravo_ba_t        rm_ba_t (BA, PF-Q)       RM_BRAVO_BA_INITIALIZER
 *   rm_bravo_pft_t       rm_pft_t (PF-T)          RM_BRAVO_PFT_INITIALIZER
 *   rm_bravo_pthread_t   rm_pthread_t (glibc)     RM_BRAVO_PTHREAD_INITIALIZER
 *   rm_bravo_futexrw_t   rm_futexrw_t             RM_BRAVO_FUTEXRW_INITIALIZER
 *                                                 (writer preference) and
 *                                                 RM_BRAVO_FUTEXRW_READER_PREF_INITIALIZER
 *   rm_bravo2d_ba_t      rm_ba_t, BRAVO-2D        RM_BRAVO2D_BA_INITIALIZER
 *   rm_bravo2d_pthread_t rm_pthread_t, BRAVO-2D   RM_BRAVO2D_PTHREAD_INITIALIZER
 *   rm_bravo2d_futexrw_t rm_futexrw_t, BRAVO-2D   RM_BRAVO2D_FUTEXRW_INITIALIZER
 *                                                 and _READER_PREF_INITIALIZER
 *   rm_bravo_ba_private_t  rm_ba_t, private 4096-slot table (benchmarks only)
 *   rm_bravo_pft_private_t rm_pft_t, private 4096-slot table (benchmarks only)
 *
 *   Each has _init, _destroy, _read_lock(l, &tok), _read_trylock(l, &tok),
 *   _read_unlock(l, tok), _write_lock, _write_trylock, _write_unlock; the
 *   pthread and futexrw ones also _read_timedlock(l, &tok, clk, abstime) and
 *   _write_timedlock(l, clk, abstime).  See readmostly/bravo.h, and
 *   readmostly/bravo2d.h for the rm_bravo2d_ ones.
 */
#ifndef READMOSTLY_BRAVO_LOCKS_H
#define READMOSTLY_BRAVO_LOCKS_H

#include <readmostly/ba.h>
#include <readmostly/bravo.h>
#include <readmostly/bravo2d.h>
#include <readmostly/futexrw.h>
#include <readmostly/pft.h>
#include <readmostly/pthread_rw.h>

#ifdef __cplusplus
extern "C" {
#endif

RM_BRAVO_DEFINE(rm_bravo_ba, rm_ba_t, rm_ba)
RM_BRAVO_DEFINE(rm_bravo_pft, rm_pft_t, rm_pft)
RM_BRAVO_DEFINE_TIMED(rm_bravo_pthread, rm_pthread_t, rm_pthread)
RM_BRAVO_DEFINE_TIMED(rm_bravo_futexrw, rm_futexrw_t, rm_futexrw)
RM_BRAVO2D_DEFINE(rm_bravo2d_ba, rm_ba_t, rm_ba)
RM_BRAVO2D_DEFINE_TIMED(rm_bravo2d_pthread, rm_pthread_t, rm_pthread)
RM_BRAVO2D_DEFINE_TIMED(rm_bravo2d_futexrw, rm_futexrw_t, rm_futexrw)
RM_BRAVO_DEFINE_PRIVATE(rm_bravo_ba_private, rm_ba_t, rm_ba, 4096)
RM_BRAVO_DEFINE_PRIVATE(rm_bravo_pft_private, rm_pft_t, rm_pft, 4096)

#define RM_BRAVO_BA_INITIALIZER {RM_BRAVO_BIAS_INITIALIZER, RM_BA_INITIALIZER}
#define RM_BRAVO_PFT_INITIALIZER {RM_BRAVO_BIAS_INITIALIZER, RM_PFT_INITIALIZER}
#define RM_BRAVO_PTHREAD_INITIALIZER {RM_BRAVO_BIAS_INITIALIZER, RM_PTHREAD_INITIALIZER}
#define RM_BRAVO_FUTEXRW_INITIALIZER {RM_BRAVO_BIAS_INITIALIZER, RM_FUTEXRW_INITIALIZER}
#define RM_BRAVO_FUTEXRW_READER_PREF_INITIALIZER \
  {RM_BRAVO_BIAS_INITIALIZER, RM_FUTEXRW_READER_PREF_INITIALIZER}
#define RM_BRAVO2D_BA_INITIALIZER {RM_BRAVO_BIAS_INITIALIZER, RM_BA_INITIALIZER}
#define RM_BRAVO2D_PTHREAD_INITIALIZER {RM_BRAVO_BIAS_INITIALIZER, RM_PTHREAD_INITIALIZER}
#define RM_BRAVO2D_FUTEXRW_INITIALIZER {RM_BRAVO_BIAS_INITIALIZER, RM_FUTEXRW_INITIALIZER}
#define RM_BRAVO2D_FUTEXRW_READER_PREF_INITIALIZER \
  {RM_BRAVO_BIAS_INITIALIZER, RM_FUTEXRW_READER_PREF_INITIALIZER}

/* BRAVO over the futex lock fits in glibc's 56-byte pthread_rwlock_t, which
 * the preload library reuses in place. */
RM_STATIC_ASSERT(sizeof(rm_bravo_futexrw_t) <= 56, "BRAVO-futexrw must fit in 56 bytes");
/* BRAVO's 16 bytes plus BA fit in one 64-byte line. */
RM_STATIC_ASSERT(sizeof(rm_bravo_ba_t) <= 64, "BRAVO-BA must fit in 64 bytes");

#ifdef __cplusplus
}
#endif
#endif
