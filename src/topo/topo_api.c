/*
 * topo_api.c - weft_topology_print (weft-info --topology): the topology
 * of WEFT_TOPO_FILE or this host, and each local rank's choice.
 */
#include "common.h"
#include "config.h"
#include "log.h"
#include "topo/topo.h"

WEFT_API weft_status_t weft_topology_print(FILE *out, int local_ranks,
                                           int json)
{
    wf_config_t cfg;
    wf_topo_t *t = NULL;
    if (!out || local_ranks < 1) {
        WEFT_WARN(TOOL, "weft_topology_print: %s",
                  out ? "local_ranks must be at least 1" : "out is NULL");
        return WEFT_ERR_INVALID_ARG;
    }
    WEFT_CHECK(wf_config_load(&cfg, NULL));
    weft_status_t st = wf_topo_load(cfg.topo_file, &t);
    if (st != WEFT_OK) {
        /* The load warned with the cause where there was one. */
        if (json)
            fprintf(out, "[]\n");
        else
            fprintf(out, "no topology (backend: %s): ranks run without "
                    "affinity\n", wf_topo_backend());
        return st;
    }
    wf_topo_print(out, t, local_ranks, json != 0);
    wf_topo_free(t);
    return WEFT_OK;
}
