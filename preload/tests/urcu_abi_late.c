/*
 * urcu_abi_late.c - an object that inlines liburcu's read side, loaded
 * with dlopen() after libreadmostly-urcu.so has served calls: the first
 * registration of a thread after the load must stop the process with one
 * line naming the object (calls already served by FCP-RCU cannot move to
 * liburcu), before that thread reads.  Without the preload the program
 * runs through (liburcu serves everything) and prints "late: ok".
 *
 *   urcu_abi_late path/to/liburcu_abi_plugin.so
 */
#define _GNU_SOURCE
#include <urcu/urcu-memb.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  static int x = 42, *p = &x;
  urcu_memb_register_thread();
  urcu_memb_read_lock();
  urcu_memb_read_unlock();
  urcu_memb_synchronize_rcu();
  urcu_memb_unregister_thread();
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) {
    fprintf(stderr, "late: %s\n", dlerror());
    return 1;
  }
  int (*rd)(int *const *) = (int (*)(int *const *))dlsym(h, "plugin_read");
  if (!rd || rd(&p) != 42) return 1;
  urcu_memb_synchronize_rcu();
  printf("late: ok\n");
  return 0;
}
