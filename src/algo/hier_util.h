/*
 * hier_util.h - the groups the node-aware algorithms (hier_*.c) work in:
 * this rank's machine, one leader per machine, and the ranks that share
 * this rank's position on their machines.
 */
#ifndef WF_ALGO_HIER_UTIL_H
#define WF_ALGO_HIER_UTIL_H

#include <stdbool.h>

#include "algo/embed.h"
#include "plan/nodemap.h"

/* Phases' tag ranges: each embedded call of a plan gets its own. */
#define WF_HIER_TAGS(call) ((uint32_t)(call) * WF_EMBED_TAG_SPAN)

typedef struct {
    const wf_node_map_t *m;
    int node;          /* this rank's machine */
    int local;         /* its place on it */
    const int *mine;   /* the ranks of its machine */
    int nlocal;        /* how many */
    int leader_node;   /* the machine whose leader is the root's (rooted
                        * collectives) or 0 */
    int *leaders;      /* [nodes] each machine's leader: the root on the
                        * root's machine, else its first rank */
    int *cross;        /* [nodes] each machine's rank at this rank's place
                        * (even maps only), else NULL */
} wf_hier_t;

/* Whether the node-aware algorithms apply: ranks on several machines and
 * at least one machine with more than one. */
bool wf_hier_applies(const wf_coll_args_t *a);

/* Fills h for this rank; root: the rooted collective's, or -1.
 * WEFT_ERR_NO_MEMORY; release with wf_hier_free. */
weft_status_t wf_hier_init(wf_hier_t *h, const wf_coll_args_t *a, int root);
void wf_hier_free(wf_hier_t *h);

/* This rank's place in its machine's group, and the position of real rank
 * r in it (-1 if not there). */
int wf_hier_local_index(const wf_hier_t *h, int r);

/* Whether this rank leads its machine. */
static inline bool wf_hier_leads(const wf_hier_t *h, int rank)
{
    return h->leaders[h->node] == rank;
}

#endif /* WF_ALGO_HIER_UTIL_H */
