/*
 * topo_test.h - shared by the topology tests.
 */
#ifndef WF_TOPO_TEST_H
#define WF_TOPO_TEST_H

#include "topo/topo.h"

/* Loads test/topo/NAME; skips the test in an HWLOC=0 build, fails it when
 * the file does not load (test_topo.c). */
wf_topo_t *wf_test_topo_load(const char *name);

/* The kernel's policy (MPOL_*) for the page at p; *only_node is the one
 * node in its mask, -1 for none, -2 for several (test_topo_mem.c). */
int wf_test_mempolicy(void *p, int *only_node);
/* Whether p's page is bound to `node` the way wf_topo_mem_alloc binds. */
bool wf_test_mem_on_node(void *p, int node);
/* Skips the test, with the reason, where nothing can be bound: an HWLOC=0
 * build, no NUMA node 0, or a kernel that refuses mbind (asked directly,
 * not through weft). */
void wf_test_need_binding(void);

#endif /* WF_TOPO_TEST_H */
