/*
 * comm_layout.c - where a rank sits among the machines of its
 * communicator, from the node keys of the rank records (bootstrap.c), and
 * weft_comm_query, which tells it.
 *
 * Machines are numbered by their lowest rank, and a rank's local rank is
 * the count of earlier ranks on its machine (plan/nodemap.c keeps the
 * whole map, for the node-aware algorithms).
 */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "common.h"

weft_status_t wf_comm_layout(wf_comm_impl_t *c, const uint64_t *node_keys)
{
    weft_status_t st = wf_node_map_from_keys(&c->nodemap, c->size,
                                             node_keys);
    if (st != WEFT_OK) {
        WEFT_WARN(INIT, "out of memory placing %d ranks on their machines",
                  c->size);
        return st;
    }
    const wf_node_map_t *m = &c->nodemap;
    c->node = m->node_of[c->rank];
    c->nodes = m->nodes;
    c->local_rank = m->local_of[c->rank];
    wf_node_ranks(m, c->node, &c->local_size);
    /* Horovod's cross rank and size: among the ranks with this local rank,
     * in rank order. */
    c->cross_rank = c->cross_size = 0;
    for (int r = 0; r < c->size; r++)
        if (m->local_of[r] == c->local_rank) {
            c->cross_rank += r < c->rank;
            c->cross_size++;
        }
    return WEFT_OK;
}

WEFT_API weft_status_t weft_comm_query(weft_comm_t comm,
                                       weft_comm_attr_t attr, int *value)
{
    wf_comm_impl_t *c;
    WEFT_CHECK(wf_comm_get(comm, "weft_comm_query", &c));
    weft_status_t st = WEFT_OK;
    int v = 0;
    switch (attr) {
    case WEFT_COMM_LOCAL_RANK: v = c->local_rank; break;
    case WEFT_COMM_LOCAL_SIZE: v = c->local_size; break;
    case WEFT_COMM_NODE: v = c->node; break;
    case WEFT_COMM_NODES: v = c->nodes; break;
    case WEFT_COMM_CROSS_RANK: v = c->cross_rank; break;
    case WEFT_COMM_CROSS_SIZE: v = c->cross_size; break;
    default:
        WEFT_WARN(COLL, "weft_comm_query: unknown attribute %d (%d to %d "
                  "are defined)", (int)attr, WEFT_COMM_LOCAL_RANK,
                  WEFT_COMM_CROSS_SIZE);
        st = WEFT_ERR_INVALID_ARG;
    }
    if (st == WEFT_OK && !value) {
        WEFT_WARN(COLL, "weft_comm_query: value is NULL");
        st = WEFT_ERR_INVALID_ARG;
    }
    if (st == WEFT_OK)
        *value = v;
    wf_comm_put(c);
    return st;
}
