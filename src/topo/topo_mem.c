/*
 * topo_mem.c - staging memory on the NUMA node the topology chose
 * (topo.h).  Every block is an anonymous mapping of its own, bound by the
 * backend (topo_membind_hwloc.c, or topo_none.c which cannot) before
 * anything touches it, so its pages are placed on the node when they are
 * first faulted in, whichever thread does it (the caller that drives a
 * request, not only the pinned progress thread).  A block that cannot be
 * bound is the same mapping unbound, so freeing never depends on how the
 * placement went.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"
#include "log.h"
#include "topo/topo.h"

static void *map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Binding that fails is a missed optimisation, not an error: said once
 * at info, later at debug, never per buffer at warn. */
static void say_unbound(int numa_os, const char *why)
{
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        WEFT_INFO(INIT, "staging memory not bound to NUMA node %d: %s; "
                  "using unbound memory (said once)", numa_os, why);
    else
        WEFT_DEBUG(INIT, "staging memory not bound to NUMA node %d: %s",
                   numa_os, why);
}

void *wf_topo_mem_alloc(size_t len, int numa_os)
{
    if (len == 0)
        return NULL;
    void *p = map(len);
    if (p && numa_os >= 0) {
        char why[160];
        if (!wf_topo_mem_bind(p, len, numa_os, why, sizeof(why)))
            say_unbound(numa_os, why);
    }
    return p;
}

void wf_topo_mem_free(void *p, size_t len)
{
    if (p)
        munmap(p, len);
}

bool wf_topo_mem_bindable(int numa_os, char *why, size_t len)
{
    if (numa_os < 0) {
        snprintf(why, len, "no NUMA node chosen");
        return false;
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *p = map(page);
    if (!p) {
        snprintf(why, len, "mmap of one page: %s", wf_errno_str(errno));
        return false;
    }
    bool ok = wf_topo_mem_bind(p, page, numa_os, why, len);
    munmap(p, page);
    return ok;
}
