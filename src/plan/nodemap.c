/*
 * nodemap.c - building the map of ranks to machines (nodemap.h).
 */
#include "plan/nodemap.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"

typedef struct {
    uint64_t key;
    int node; /* -1: empty entry */
} slot_t;

weft_status_t wf_node_map_from_keys(wf_node_map_t *m, int size,
                                    const uint64_t *keys)
{
    /* A hash table from key to machine keeps this linear in the ranks:
     * jobs of tens of thousands of ranks create communicators too. */
    size_t cap = 16;
    while (cap < 2 * (size_t)size)
        cap *= 2;
    slot_t *table = malloc(cap * sizeof(*table));
    int *node_of = malloc((size_t)size * sizeof(int));
    weft_status_t st = WEFT_ERR_NO_MEMORY;
    if (table && node_of) {
        for (size_t i = 0; i < cap; i++)
            table[i].node = -1;
        int nodes = 0;
        for (int r = 0; r < size; r++) {
            size_t i = (size_t)(keys[r] * 0x9e3779b97f4a7c15ull) & (cap - 1);
            while (table[i].node >= 0 && table[i].key != keys[r])
                i = (i + 1) & (cap - 1);
            if (table[i].node < 0)
                table[i] = (slot_t){.key = keys[r], .node = nodes++};
            node_of[r] = table[i].node;
        }
        st = wf_node_map_from_nodes(m, size, node_of);
    }
    free(table);
    free(node_of);
    return st;
}

weft_status_t wf_node_map_from_nodes(wf_node_map_t *m, int size,
                                     const int *node_of)
{
    memset(m, 0, sizeof(*m));
    int nodes = 0;
    for (int r = 0; r < size; r++)
        nodes = WF_MAX(nodes, node_of[r] + 1);
    m->size = size;
    m->nodes = nodes;
    m->node_of = malloc((size_t)size * sizeof(int));
    m->local_of = malloc((size_t)size * sizeof(int));
    m->members = malloc((size_t)size * sizeof(int));
    m->node_start = calloc((size_t)nodes + 1, sizeof(int));
    if (!m->node_of || !m->local_of || !m->members || !m->node_start) {
        wf_node_map_free(m);
        return WEFT_ERR_NO_MEMORY;
    }
    memcpy(m->node_of, node_of, (size_t)size * sizeof(int));
    for (int r = 0; r < size; r++)
        m->node_start[node_of[r] + 1]++;
    for (int n = 0; n < nodes; n++) {
        int here = m->node_start[n + 1];
        m->max_local = WF_MAX(m->max_local, here);
        m->node_start[n + 1] += m->node_start[n];
    }
    m->even = true;
    for (int n = 0; n < nodes; n++)
        m->even &= m->node_start[n + 1] - m->node_start[n] == m->max_local;
    int *fill = calloc((size_t)nodes, sizeof(int));
    if (!fill) {
        wf_node_map_free(m);
        return WEFT_ERR_NO_MEMORY;
    }
    for (int r = 0; r < size; r++) {
        int n = node_of[r];
        m->local_of[r] = fill[n];
        m->members[m->node_start[n] + fill[n]++] = r;
    }
    free(fill);
    return WEFT_OK;
}

void wf_node_map_free(wf_node_map_t *m)
{
    free(m->node_of);
    free(m->local_of);
    free(m->members);
    free(m->node_start);
    memset(m, 0, sizeof(*m));
}
