/*
 * topo_none.c - the topology of an HWLOC=0 build (or one where hwloc.h
 * was missing): nothing is known, every rank runs without affinity.
 */
#include "log.h"
#include "topo/topo.h"

const char *wf_topo_backend(void)
{
    return "none (built without hwloc)";
}

weft_status_t wf_topo_load(const char *xml_file, wf_topo_t **out)
{
    (void)out;
    WEFT_WARN_ONCE(INIT, "topology%s%s: weft was built without hwloc "
                   "(HWLOC=0); running without affinity",
                   xml_file && *xml_file ? " of " : "",
                   xml_file ? xml_file : "");
    return WEFT_ERR_UNSUPPORTED;
}

void wf_topo_free(wf_topo_t *t)
{
    (void)t;
}
