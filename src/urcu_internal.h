/*
 * urcu_internal.h - what urcu.c shares with urcu_qsbr.c (internal: not
 * installed): liburcu's rculfhash fork hooks (struct urcu_atfork, which has
 * no link field) wrapped in a node of the library's own, registered with
 * the flavor's rm_*_register_atfork.
 */
#ifndef READMOSTLY_URCU_INTERNAL_H
#define READMOSTLY_URCU_INTERNAL_H
#include <readmostly/rcu.h>
struct urcu_atfork;
void rm_urcu_atfork_add(struct urcu_atfork *u, void (*reg)(struct rm_rcu_atfork *a),
                        void (*unreg)(struct rm_rcu_atfork *a));
void rm_urcu_atfork_remove(struct urcu_atfork *u);
#endif
