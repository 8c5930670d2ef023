/*
 * bench_algos.c - `--algos A,B,...`: several algorithms of one collective
 * measured in one job, their calls interleaved.
 *
 * Runs of one algorithm launched one after another see different
 * machines: process placement, other load and the VM's speed change
 * between launches, by up to several times on a shared host
 * (bench/results/2026-11-27-sweeps-in-one-job.md).  Here every algorithm gets its own communicator
 * (WEFT_ALGO set for it alone), all in the same processes, and the timed
 * loop calls them in turn (bench_run.c), so whatever slows the machine
 * slows all of them alike and their ratios hold.
 *
 * Each communicator joins its own rendezvous job, named after the
 * world's: rank 0 picks a stem and broadcasts it, and algorithm k joins
 * "STEM-k".  The world communicator stays for the barriers and the
 * reduction of the results.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define STEM_LEN 64

bool bench_algos_parse(const char *list, bench_opts_t *o)
{
    char *save = NULL;
    int n = 0, len = snprintf(o->algos_buf, sizeof(o->algos_buf), "%s",
                              list);
    if (len < 0 || (size_t)len >= sizeof(o->algos_buf))
        return false;
    for (char *t = strtok_r(o->algos_buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        if (n == BENCH_MAX_ALGOS || strchr(t, ':') || strchr(t, '='))
            return false;
        for (int k = 0; k < n; k++)
            if (strcmp(o->algo_names[k], t) == 0)
                return false;
        o->algo_names[n++] = t;
    }
    o->nalgos = n >= 2 ? n : 0; /* one algorithm is -a's job */
    return n >= 2;
}

/* The stem of the algorithms' job ids, the same on every rank. */
static weft_status_t job_stem(const bench_ctx_t *c, char *stem)
{
    memset(stem, 0, STEM_LEN);
    if (c->rank == 0) {
        const char *job = getenv("WEFT_JOB_ID");
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(stem, STEM_LEN, "%.24s-algos-%ld-%ld",
                 job && *job ? job : "weft-bench", (long)getpid(),
                 (long)(ts.tv_nsec / 1000));
    }
    return weft_broadcast(stem, stem, STEM_LEN, WEFT_UINT8, 0, c->comm);
}

weft_status_t bench_algos_open(const bench_ctx_t *world, bench_algos_t *a)
{
    const bench_opts_t *o = world->o;
    char stem[STEM_LEN];
    *a = (bench_algos_t){0};
    weft_status_t st = job_stem(world, stem);
    for (int k = 0; st == WEFT_OK && k < o->nalgos; k++) {
        const char *name = o->algo_names[k];
        char config[512], job[STEM_LEN + 16];
        a->opts[k] = *o;
        a->opts[k].algo = name;
        a->opts[k].algo_given = true;
        bench_comm_config(&a->opts[k], config, sizeof(config));
        snprintf(job, sizeof(job), "%s-%d", stem, k);
        weft_comm_params_t p = {
            .field_mask = WEFT_COMM_PARAM_CONFIG | WEFT_COMM_PARAM_JOB_ID,
            .config = config, .job_id = job};
        a->ctx[k] = *world;
        a->ctx[k].o = &a->opts[k];
        st = weft_comm_create(&p, &a->ctx[k].comm);
        if (st == WEFT_OK)
            a->n = k + 1;
        else if (world->rank == 0)
            fprintf(stderr, "weft-bench: the communicator for algorithm %s "
                    "failed: %s (see the log lines above)\n", name,
                    weft_strerror(st));
    }
    return st;
}

weft_status_t bench_algos_close(bench_algos_t *a)
{
    weft_status_t first = WEFT_OK;
    for (int k = 0; k < a->n; k++) {
        weft_status_t st = weft_comm_destroy(a->ctx[k].comm);
        first = first == WEFT_OK ? st : first;
    }
    a->n = 0;
    return first;
}
