/*
 * <urcu/call-rcu.h> (readmostly's liburcu compat directory) - the types and
 * constants of liburcu 0.13's call_rcu: struct rcu_head, struct
 * call_rcu_data, URCU_CALL_RCU_*.
 *
 * SYNOPSIS
 *   #include <urcu.h>          // or any flavor header: they include this one
 *   struct foo { ...; struct rcu_head rcu_head; };
 *   call_rcu(&f->rcu_head, free_foo);      // urcu_memb_call_rcu, ...
 *
 * DESCRIPTION
 *   struct rcu_head is readmostly's struct rm_rcu_head and struct
 *   call_rcu_data is struct rm_rcu_call_data: the tags are macros, so a
 *   member named rcu_head is renamed with them, consistently in every file
 *   that includes this header (include it, or a flavor header, before
 *   liburcu's urcu/rculfqueue.h).  struct rcu_head has liburcu's size and
 *   its func member; every flavor's call_rcu functions (urcu_<flavor>_*)
 *   are declared by the flavor headers.  The flags URCU_CALL_RCU_RT and
 *   others are accepted by create_call_rcu_data and ignored (our workers
 *   sleep on a futex and are never pinned).
 */
#ifndef _URCU_CALL_RCU_H
#define _URCU_CALL_RCU_H

#include <readmostly/rcu.h>

#include <pthread.h>
#include <stdlib.h>

#if !defined(READMOSTLY_URCU_NO_LIBURCU) && defined(__has_include)
#if __has_include(<urcu/wfcqueue.h>)
#include <urcu/wfcqueue.h> /* as liburcu's call-rcu.h */
#endif
#endif

#define rcu_head rm_rcu_head
#define call_rcu_data rm_rcu_call_data

#define URCU_CALL_RCU_RT (1U << 0)
#define URCU_CALL_RCU_RUNNING (1U << 1)
#define URCU_CALL_RCU_STOP (1U << 2)
#define URCU_CALL_RCU_STOPPED (1U << 3)
#define URCU_CALL_RCU_PAUSE (1U << 4)
#define URCU_CALL_RCU_PAUSED (1U << 5)

#endif /* _URCU_CALL_RCU_H */
