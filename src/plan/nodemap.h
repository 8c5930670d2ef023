/*
 * nodemap.h - which ranks share a machine, for the node-aware algorithms
 * (src/algo/hier_*.c).  Machines are numbered by their lowest rank, and
 * the ranks of a machine keep their order (comm_layout.c builds it from
 * the bootstrap's node keys, the simulator and the tests from a count of
 * ranks per machine).
 */
#ifndef WF_PLAN_NODEMAP_H
#define WF_PLAN_NODEMAP_H

#include <stdbool.h>

#include "weft.h"

typedef struct wf_node_map {
    int size;         /* ranks */
    int nodes;        /* machines */
    int *node_of;     /* [size] each rank's machine */
    int *local_of;    /* [size] each rank's index on its machine */
    int *members;     /* [size] the ranks, grouped by machine, in order */
    int *node_start;  /* [nodes + 1] where each machine's ranks start in
                       * members */
    int max_local;    /* most ranks on one machine */
    bool even;        /* every machine has max_local ranks */
} wf_node_map_t;

/* From each rank's machine key (equal keys: one machine). */
weft_status_t wf_node_map_from_keys(wf_node_map_t *m, int size,
                                    const uint64_t *keys);

/* From the machine index of every rank (node_of[r] in 0..nodes-1, each
 * used): the simulator's and the tests' layouts. */
weft_status_t wf_node_map_from_nodes(wf_node_map_t *m, int size,
                                     const int *node_of);

void wf_node_map_free(wf_node_map_t *m);

/* Ranks on machine n, and their count. */
static inline const int *wf_node_ranks(const wf_node_map_t *m, int n,
                                       int *count)
{
    *count = m->node_start[n + 1] - m->node_start[n];
    return m->members + m->node_start[n];
}

#endif /* WF_PLAN_NODEMAP_H */
