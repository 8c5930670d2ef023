/*
 * topo_pin.c - whether and where to pin the progress thread (topo.h).
 * Conservative: a process that a launcher or the user already bound more
 * narrowly than the chosen NUMA node is left as it is.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>

#include "common.h"
#include "log.h"
#include "topo/topo.h"

int wf_topo_pin_cpu(const wf_topo_t *t, const wf_topo_choice_t *c,
                    int local_size, char *why, size_t len)
{
    cpu_set_t mask;
    if (c->core < 0) {
        snprintf(why, len, "no core chosen");
        return -1;
    }
    int cpu = t->cores[c->core].cpu;
    if (sched_getaffinity(0, sizeof(mask), &mask) != 0) {
        snprintf(why, len, "sched_getaffinity: %s", wf_errno_str(errno));
        return -1;
    }
    int in_node = 0;
    for (int i = 0; i < t->ncores; i++)
        in_node += t->cores[i].numa == c->numa || c->numa < 0;
    /* More ranks than cores: every core hosts several ranks' threads,
     * and pinning would stack them and only take the scheduler's freedom
     * to move them. */
    if (local_size > in_node) {
        snprintf(why, len, "%d local ranks share the %d core(s) of NUMA "
                 "node %d: not pinned", local_size, in_node, c->numa);
        return -1;
    }
    int allowed = CPU_COUNT(&mask);
    if (allowed < in_node) {
        snprintf(why, len, "process already bound to %d CPU(s), fewer than "
                 "the %d core(s) of NUMA node %d: left as placed", allowed,
                 in_node, c->numa);
        return -1;
    }
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &mask)) {
        snprintf(why, len, "core %d (cpu %d) is outside the process's "
                 "affinity mask: not pinned", c->core, cpu);
        return -1;
    }
    snprintf(why, len, "progress thread pinned to cpu %d", cpu);
    return cpu;
}

void wf_topo_pin_thread(pthread_t thread, int cpu)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    int err = pthread_setaffinity_np(thread, sizeof(one), &one);
    if (err)
        WEFT_WARN(SCHED, "cannot pin the progress thread to cpu %d: %s",
                  cpu, wf_errno_str(err));
}
