/*
 * topo_test.h - shared by the topology tests.
 */
#ifndef WF_TOPO_TEST_H
#define WF_TOPO_TEST_H

#include "topo/topo.h"

/* Loads test/topo/NAME; skips the test in an HWLOC=0 build, fails it when
 * the file does not load (test_topo.c). */
wf_topo_t *wf_test_topo_load(const char *name);

#endif /* WF_TOPO_TEST_H */
