/*
 * topo_none.c - the topology of an HWLOC=0 build (or one where hwloc.h
 * was missing): nothing is known, every rank runs without affinity.
 * Building without hwloc is a choice, so it is said once at info; only
 * a topology file that was asked for and cannot be read gets a warning.
 * Staging memory is never bound (wf_topo_mem_bind).
 */
#include <stdio.h>

#include "log.h"
#include "topo/topo.h"

const char *wf_topo_backend(void)
{
    return "none (built without hwloc)";
}

weft_status_t wf_topo_load(const char *xml_file, wf_topo_t **out)
{
    static int said;
    (void)out;
    if (xml_file && *xml_file)
        WEFT_WARN_ONCE(INIT, "topology of %s: weft was built without hwloc "
                       "(HWLOC=0); running without affinity", xml_file);
    else if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        WEFT_INFO(INIT, "topology: weft was built without hwloc (HWLOC=0); "
                  "running without affinity");
    return WEFT_ERR_UNSUPPORTED;
}

void wf_topo_free(wf_topo_t *t)
{
    (void)t;
}

/* No hwloc, no binding: staging memory stays where first touch puts it
 * (topo_mem.c keeps the block and says so once). */
bool wf_topo_mem_bind(void *p, size_t len, int numa_os, char *why,
                      size_t why_len)
{
    (void)p;
    (void)len;
    (void)numa_os;
    snprintf(why, why_len, "weft was built without hwloc (HWLOC=0)");
    return false;
}
