/*
 * topo_choose.c - per local rank: GPU, NIC(s), NUMA node and progress
 * core (see topo.h).  Pure functions of the model.
 *
 * GPU: the (local rank mod GPUs)-th GPU.  NICs: every NIC at the smallest
 * PCI distance from that GPU, else from the rank's NUMA node (ties are
 * kept: they are what striping spreads over).  NUMA node: the GPU's, else
 * the nearest NIC's, else ranks spread over the nodes in blocks.  Core:
 * the i-th core of that node, i counting the lower local ranks that chose
 * the same node, so ranks sharing a node get different cores.
 */
#include <stdio.h>
#include <string.h>

#include "topo/topo.h"

int wf_topo_path_distance(const wf_topo_path_t *a, const wf_topo_path_t *b)
{
    int common = 0;
    while (common < a->len && common < b->len &&
           a->id[common] == b->id[common])
        common++;
    return (a->len - common) + (b->len - common);
}

int wf_topo_count(const wf_topo_t *t, wf_topo_kind_t kind)
{
    int n = 0;
    for (int i = 0; i < t->ndevs; i++)
        n += t->devs[i].kind == kind;
    return n;
}

static int nth_dev(const wf_topo_t *t, wf_topo_kind_t kind, int n)
{
    for (int i = 0; i < t->ndevs; i++)
        if (t->devs[i].kind == kind && n-- == 0)
            return i;
    return -1;
}

/* All NICs at the smallest distance from `from`; returns that distance
 * (-1 when there is no NIC). */
static int nearest_nics(const wf_topo_t *t, const wf_topo_path_t *from,
                        wf_topo_choice_t *c)
{
    int best = -1;
    c->nnics = 0;
    for (int i = 0; i < t->ndevs; i++) {
        if (t->devs[i].kind != WF_TOPO_NIC)
            continue;
        int d = wf_topo_path_distance(from, &t->devs[i].path);
        if (best < 0 || d < best) {
            best = d;
            c->nnics = 0;
        }
        if (d == best && c->nnics < WF_TOPO_NICS_MAX)
            c->nics[c->nnics++] = i;
    }
    return best;
}

/* The NUMA node a rank without a GPU starts from: block spread. */
static int spread_numa(const wf_topo_t *t, int lr, int lsize)
{
    if (t->nnuma < 1)
        return -1;
    return lsize > 0 ? (int)((long)lr * t->nnuma / lsize) % t->nnuma : 0;
}

/* GPU, NICs and NUMA node (no core) of local rank `lr`. */
static void choose_place(const wf_topo_t *t, int lr, int lsize,
                         wf_topo_choice_t *c)
{
    int ngpus = wf_topo_count(t, WF_TOPO_GPU);
    c->gpu = ngpus > 0 ? nth_dev(t, WF_TOPO_GPU, lr % ngpus) : -1;
    c->numa = -1;
    c->nnics = 0;
    c->nic_distance = -1;
    if (c->gpu >= 0) {
        const wf_topo_dev_t *g = &t->devs[c->gpu];
        c->nic_distance = nearest_nics(t, &g->path, c);
        c->numa = g->numa;
        if (c->numa < 0 && c->nnics > 0)
            c->numa = t->devs[c->nics[0]].numa;
    } else {
        c->numa = spread_numa(t, lr, lsize);
        if (c->numa >= 0)
            c->nic_distance = nearest_nics(t, &t->numa[c->numa].path, c);
        else if (t->ndevs > 0)
            c->nic_distance = nearest_nics(t, &t->devs[0].path, c);
    }
    if (c->numa < 0)
        c->numa = spread_numa(t, lr, lsize);
}

/* Why this NUMA node: the GPU's, the NIC's, or the block spread. */
static const char *numa_reason(const wf_topo_t *t, const wf_topo_choice_t *c)
{
    if (c->gpu < 0)
        return "local ranks spread over the nodes";
    if (t->devs[c->gpu].numa == c->numa)
        return "the GPU's";
    if (c->nnics > 0 && t->devs[c->nics[0]].numa == c->numa)
        return "the NIC's (the GPU has none)";
    return "local ranks spread over the nodes";
}

static void say_why(const wf_topo_t *t, wf_topo_choice_t *c, int before)
{
    char nics[160] = "no NIC on the PCI tree";
    bool far = c->gpu >= 0 && c->nnics > 0 && t->devs[c->gpu].numa >= 0 &&
               t->devs[c->nics[0]].numa >= 0 &&
               t->devs[c->nics[0]].numa != t->devs[c->gpu].numa;
    if (c->nnics > 0)
        snprintf(nics, sizeof(nics), "%d NIC(s) at the smallest PCI "
                 "distance (%d hops) from %s%s", c->nnics, c->nic_distance,
                 c->gpu >= 0 ? "its GPU" : "its NUMA node",
                 far ? " (none near it: crosses NUMA nodes)" : "");
    snprintf(c->why, sizeof(c->why), "%s; NUMA node %d: %s; core %d: "
             "%d lower local rank(s) on that node", nics, c->numa,
             numa_reason(t, c), c->core, before);
}

void wf_topo_choose(const wf_topo_t *t, int lr, int lsize,
                    wf_topo_choice_t *out)
{
    wf_topo_choice_t c;
    memset(&c, 0, sizeof(c));
    choose_place(t, lr, lsize, &c);
    /* Spread the ranks that share this NUMA node over its cores. */
    int before = 0;
    for (int j = 0; j < lr; j++) {
        wf_topo_choice_t o;
        choose_place(t, j, lsize, &o);
        before += o.numa == c.numa;
    }
    int in_node = 0;
    c.core = -1;
    for (int i = 0; i < t->ncores; i++)
        if (c.numa < 0 || t->cores[i].numa == c.numa)
            in_node++;
    for (int i = 0, k = 0; in_node > 0 && i < t->ncores; i++)
        if ((c.numa < 0 || t->cores[i].numa == c.numa) &&
            k++ == before % in_node)
            c.core = i;
    say_why(t, &c, before);
    *out = c;
}

void wf_topo_nic_names(const wf_topo_t *t, const wf_topo_choice_t *c,
                       bool verbs, char *out, size_t len)
{
    size_t n = 0;
    *out = '\0';
    for (int k = 0; k < c->nnics && n + 1 < len; k++) {
        const wf_topo_dev_t *d = &t->devs[c->nics[k]];
        const char *name = verbs ? d->verbs : d->netdev;
        if (*name)
            n += (size_t)snprintf(out + n, len - n, "%s%s", n ? "," : "",
                                  name);
    }
}
