/*
 * topo_report.c - weft-info --topology: what weft sees on this node and
 * what each local rank would use, as a readable tree or as JSON (an array
 * with one object per local rank).
 */
#include <stdio.h>

#include "topo/topo.h"

static void print_dev(FILE *out, const wf_topo_dev_t *d, const char *indent)
{
    fprintf(out, "%s%s %s", indent, d->kind == WF_TOPO_GPU ? "GPU" : "NIC",
            d->busid);
    if (*d->netdev)
        fprintf(out, " netdev %s", d->netdev);
    if (*d->verbs)
        fprintf(out, " %s %s", d->kind == WF_TOPO_GPU ? "as" : "verbs",
                d->verbs);
    fputc('\n', out);
}

static void print_tree(FILE *out, const wf_topo_t *t)
{
    fprintf(out, "topology of %s (%s): %d package(s), %d NUMA node(s), "
            "%d core(s), %d NIC(s), %d GPU(s)\n", t->source,
            wf_topo_backend(), t->npackages, t->nnuma, t->ncores,
            wf_topo_count(t, WF_TOPO_NIC), wf_topo_count(t, WF_TOPO_GPU));
    for (int n = 0; n < t->nnuma; n++) {
        fprintf(out, "  NUMA node %d (os %d, package %d): cpus", n,
                t->numa[n].os_index, t->numa[n].package);
        for (int i = 0; i < t->ncores; i++)
            if (t->cores[i].numa == n)
                fprintf(out, " %d", t->cores[i].cpu);
        fputc('\n', out);
        for (int i = 0; i < t->ndevs; i++)
            if (t->devs[i].numa == n)
                print_dev(out, &t->devs[i], "    ");
    }
    for (int i = 0; i < t->ndevs; i++)
        if (t->devs[i].numa < 0) {
            fprintf(out, "  no NUMA locality:\n");
            for (int j = i; j < t->ndevs; j++)
                if (t->devs[j].numa < 0)
                    print_dev(out, &t->devs[j], "    ");
            break;
        }
}

static const char *nic_name(const wf_topo_dev_t *d)
{
    return *d->verbs ? d->verbs : *d->netdev ? d->netdev : d->busid;
}

static void print_choice_text(FILE *out, const wf_topo_t *t, int lr,
                              const wf_topo_choice_t *c)
{
    fprintf(out, "local rank %d: GPU %s, NIC(s)", lr,
            c->gpu >= 0 ? t->devs[c->gpu].busid : "none");
    for (int k = 0; k < c->nnics; k++)
        fprintf(out, "%s%s", k ? "," : " ", nic_name(&t->devs[c->nics[k]]));
    if (c->nnics == 0)
        fprintf(out, " none");
    fprintf(out, ", NUMA node %d, core %d (cpu %d)\n    why: %s\n", c->numa,
            c->core, c->core >= 0 ? t->cores[c->core].cpu : -1, c->why);
}

/* JSON strings here are device names and bus ids: no quotes or
 * backslashes can occur, but escape them anyway rather than trust it. */
static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, out);
    }
    fputc('"', out);
}

static void print_choice_json(FILE *out, const wf_topo_t *t, int lr,
                              const wf_topo_choice_t *c)
{
    fprintf(out, "  {\"local_rank\": %d, \"gpu\": ", lr);
    if (c->gpu >= 0)
        json_str(out, t->devs[c->gpu].busid);
    else
        fprintf(out, "null");
    fprintf(out, ", \"nics\": [");
    for (int k = 0; k < c->nnics; k++) {
        const wf_topo_dev_t *d = &t->devs[c->nics[k]];
        fprintf(out, "%s{\"busid\": ", k ? ", " : "");
        json_str(out, d->busid);
        fprintf(out, ", \"netdev\": ");
        json_str(out, d->netdev);
        fprintf(out, ", \"verbs\": ");
        json_str(out, d->verbs);
        fprintf(out, "}");
    }
    fprintf(out, "], \"nic_distance\": %d, \"numa\": %d, \"core\": %d, "
            "\"cpu\": %d, \"why\": ", c->nic_distance, c->numa, c->core,
            c->core >= 0 ? t->cores[c->core].cpu : -1);
    json_str(out, c->why);
    fprintf(out, "}");
}

void wf_topo_print(FILE *out, const wf_topo_t *t, int lsize, bool json)
{
    if (!json)
        print_tree(out, t);
    fprintf(out, json ? "[\n" : "what %d local rank(s) would use:\n", lsize);
    for (int lr = 0; lr < lsize; lr++) {
        wf_topo_choice_t c;
        wf_topo_choose(t, lr, lsize, &c);
        if (json) {
            print_choice_json(out, t, lr, &c);
            fprintf(out, lr + 1 < lsize ? ",\n" : "\n");
        } else {
            print_choice_text(out, t, lr, &c);
        }
    }
    if (json)
        fprintf(out, "]\n");
}
