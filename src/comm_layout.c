/*
 * comm_layout.c - where a rank sits among the machines of its
 * communicator, from the node keys of the rank records (bootstrap.c), and
 * weft_comm_query, which tells it.
 *
 * One pass over the ranks in order: a machine gets the next index when
 * its key is first seen (so machines are numbered by their lowest rank),
 * and a rank's local rank is the count of earlier ranks on its machine.
 * A hash table from key to machine keeps the pass linear in the ranks:
 * jobs of tens of thousands of ranks create communicators too.
 */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "common.h"

typedef struct {
    uint64_t key;
    int node;   /* index of the machine, -1: empty entry */
    int ranks;  /* ranks seen on it so far */
} machine_t;

static machine_t *machine_of(machine_t *table, size_t mask, uint64_t key)
{
    size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull) & mask;
    while (table[i].node >= 0 && table[i].key != key)
        i = (i + 1) & mask;
    return &table[i];
}

weft_status_t wf_comm_layout(wf_comm_impl_t *c, const uint64_t *node_keys)
{
    size_t cap = 16;
    while (cap < 2 * (size_t)c->size)
        cap *= 2;
    machine_t *table = malloc(cap * sizeof(*table));
    /* How many ranks have each local rank, over all machines so far. */
    int *with_local = calloc((size_t)c->size, sizeof(int));
    if (!table || !with_local) {
        free(table);
        free(with_local);
        WEFT_WARN(INIT, "out of memory placing %d ranks on their machines",
                  c->size);
        return WEFT_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < cap; i++)
        table[i].node = -1;
    int nodes = 0, my_local = -1;
    for (int r = 0; r < c->size; r++) {
        machine_t *m = machine_of(table, cap - 1, node_keys[r]);
        if (m->node < 0)
            *m = (machine_t){.key = node_keys[r], .node = nodes++};
        int local = m->ranks++;
        if (r == c->rank) {
            my_local = local;
            c->local_rank = local;
            c->node = m->node;
            c->cross_rank = with_local[local];
        }
        with_local[local]++;
    }
    c->nodes = nodes;
    c->local_size = machine_of(table, cap - 1, node_keys[c->rank])->ranks;
    c->cross_size = with_local[my_local];
    free(table);
    free(with_local);
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
