/*
 * topo_membind_hwloc.c - binds staging memory to a NUMA node with hwloc
 * (wf_topo_mem_bind, topo.h).  Built when hwloc.h exists.
 *
 * Binding needs hwloc's view of *this* host, apart from the model the
 * placement was chosen on (which may come from an XML file, and is plain
 * data without hwloc's handle): one small topology per process, NUMA
 * nodes and cores only (no I/O, no caches: a few milliseconds to load),
 * loaded on first use and kept until the process exits, as comm_topo.c
 * keeps its model.  hwloc's binding calls only read it, so threads share
 * it without a lock.
 */
#include <errno.h>
#include <hwloc.h>
#include <pthread.h>
#include <stdio.h>

#include "common.h"
#include "topo/topo.h"

/* HWLOC_MEMBIND_BIND without HWLOC_MEMBIND_STRICT: Linux gets a preferred
 * node (MPOL_PREFERRED_MANY; MPOL_PREFERRED with kernels before 5.15 or
 * older hwloc), so a node that is full spills over to the others.
 * STRICT would give MPOL_BIND, which on a full node turns a page fault
 * into the OOM killer: placement is an optimisation and must never cost
 * the job. */
#define WF_MEMBIND_FLAGS HWLOC_MEMBIND_BYNODESET

static pthread_once_t here_once = PTHREAD_ONCE_INIT;
static hwloc_topology_t here;   /* NULL when binding is impossible */
static char here_why[160];      /* then: why */

static void here_load(void)
{
    hwloc_topology_t t;
    if (hwloc_topology_init(&t) != 0) {
        snprintf(here_why, sizeof(here_why), "hwloc_topology_init: %s",
                 wf_errno_str(errno));
        return;
    }
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_cache_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_icache_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
    /* As in topo_hwloc.c: x86 CPUID adds nothing binding needs. */
    hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
                                  "x86");
    const struct hwloc_topology_support *s;
    if (hwloc_topology_load(t) != 0)
        snprintf(here_why, sizeof(here_why), "hwloc_topology_load: %s",
                 wf_errno_str(errno));
    /* HWLOC_XMLFILE (or a synthetic topology) makes hwloc describe some
     * other node: its NUMA numbers mean nothing to this kernel. */
    else if (!hwloc_topology_is_thissystem(t))
        snprintf(here_why, sizeof(here_why), "hwloc reads a topology file "
                 "(HWLOC_XMLFILE), not this host");
    else if (!(s = hwloc_topology_get_support(t))->membind->set_area_membind ||
             !s->membind->bind_membind)
        snprintf(here_why, sizeof(here_why), "hwloc cannot bind memory "
                 "on this system");
    else {
        here = t;
        return;
    }
    hwloc_topology_destroy(t);
}

bool wf_topo_mem_bind(void *p, size_t len, int numa_os, char *why,
                      size_t why_len)
{
    pthread_once(&here_once, here_load);
    if (!here) {
        snprintf(why, why_len, "%s", here_why);
        return false;
    }
    if (numa_os < 0 || !hwloc_get_numanode_obj_by_os_index(
                           here, (unsigned)numa_os)) {
        snprintf(why, why_len, "this host has no NUMA node %d", numa_os);
        return false;
    }
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set || hwloc_bitmap_only(set, (unsigned)numa_os) != 0) {
        hwloc_bitmap_free(set);
        snprintf(why, why_len, "out of memory");
        return false;
    }
    int rc = hwloc_set_area_membind(here, p, len, set, HWLOC_MEMBIND_BIND,
                                    WF_MEMBIND_FLAGS);
    int err = errno;
    hwloc_bitmap_free(set);
    if (rc != 0) {
        /* EPERM: a container whose seccomp profile forbids mbind. */
        snprintf(why, why_len, "hwloc_set_area_membind: %s",
                 wf_errno_str(err));
        return false;
    }
    return true;
}
