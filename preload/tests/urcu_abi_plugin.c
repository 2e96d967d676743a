/*
 * urcu_abi_plugin.c - a shared object built with _LGPL_SOURCE: its read
 * side is liburcu's inline code (it references urcu_memb_reader and
 * urcu_memb_gp).  urcu_abi_late.c dlopen()s it after the program has used
 * libreadmostly-urcu.so.
 */
#define _LGPL_SOURCE
#include <urcu/urcu-memb.h>

int plugin_read(int *const *pp);
int plugin_read(int *const *pp) {
  urcu_memb_register_thread();
  urcu_memb_read_lock();
  int v = **pp;
  urcu_memb_read_unlock();
  urcu_memb_unregister_thread();
  return v;
}
