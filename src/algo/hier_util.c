/*
 * hier_util.c - groups of the node-aware algorithms (hier_util.h).
 */
#include "algo/hier_util.h"

#include <stdlib.h>

bool wf_hier_applies(const wf_coll_args_t *a)
{
    return a->nodes && a->nodes->size == a->size && a->nodes->nodes > 1 &&
           a->nodes->max_local > 1;
}

weft_status_t wf_hier_init(wf_hier_t *h, const wf_coll_args_t *a, int root)
{
    const wf_node_map_t *m = a->nodes;
    h->m = m;
    h->node = m->node_of[a->rank];
    h->local = m->local_of[a->rank];
    h->mine = wf_node_ranks(m, h->node, &h->nlocal);
    h->leader_node = root >= 0 ? m->node_of[root] : 0;
    h->leaders = malloc((size_t)m->nodes * sizeof(int));
    h->cross = NULL;
    if (!h->leaders)
        return WEFT_ERR_NO_MEMORY;
    for (int n = 0; n < m->nodes; n++) {
        int count;
        const int *ranks = wf_node_ranks(m, n, &count);
        h->leaders[n] = root >= 0 && n == h->leader_node ? root : ranks[0];
    }
    if (m->even) {
        h->cross = malloc((size_t)m->nodes * sizeof(int));
        if (!h->cross) {
            wf_hier_free(h);
            return WEFT_ERR_NO_MEMORY;
        }
        for (int n = 0; n < m->nodes; n++) {
            int count;
            h->cross[n] = wf_node_ranks(m, n, &count)[h->local];
        }
    }
    return WEFT_OK;
}

void wf_hier_free(wf_hier_t *h)
{
    free(h->leaders);
    free(h->cross);
    h->leaders = h->cross = NULL;
}

int wf_hier_local_index(const wf_hier_t *h, int r)
{
    for (int i = 0; i < h->nlocal; i++)
        if (h->mine[i] == r)
            return i;
    return -1;
}
