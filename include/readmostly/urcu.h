/*
 * readmostly/urcu.h - liburcu's default-flavor names on FCP-RCU, without
 * the compat directory on the include path.
 *
 * SYNOPSIS
 *   #include <readmostly/urcu.h>
 *   rcu_register_thread();                       // optional
 *   rcu_read_lock(); p = rcu_dereference(gp); ... rcu_read_unlock();
 *   old = rcu_xchg_pointer(&gp, n); synchronize_rcu(); free(old);
 *   call_rcu(&old->rcu_head, free_cb);  rcu_barrier();
 *   cc ... -lreadmostly
 *
 * DESCRIPTION
 *   The same as <urcu.h> from readmostly's liburcu compat directory
 *   (readmostly/urcu-compat/, which `pkg-config --cflags readmostly-urcu`
 *   puts on the include path): URCU_API_MAP, then liburcu 0.13's memb
 *   flavor, every urcu_memb_* name and the flavor-less names mapped to
 *   them.  A program written for liburcu builds unchanged with the compat
 *   directory instead; this header is for code that names readmostly
 *   explicitly.  When liburcu-dev's headers are installed it includes
 *   liburcu's urcu/compiler.h, arch.h, system.h and uatomic.h, as
 *   liburcu's <urcu.h> does, so liburcu's data structure headers
 *   (urcu/rculist.h, urcu/rculfhash.h, ...) work after it.  Include it
 *   before them.
 *
 *   Every name, what it does here and every difference from liburcu:
 *   docs/rcu-urcu.md.
 */
#ifndef READMOSTLY_URCU_H
#define READMOSTLY_URCU_H
#ifndef URCU_API_MAP
#define URCU_API_MAP
#endif
#include "urcu-compat/urcu/urcu-memb.h"
#endif /* READMOSTLY_URCU_H */
