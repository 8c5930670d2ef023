/*
 * comm_worker.c - store work of a communicator on a short-lived thread
 * (comm_worker.h): the stall checks and failure posts (stall.c) and the
 * hang diagnosis (diag.c).
 */
#include <pthread.h>
#include <stdlib.h>

#include "comm_worker.h"
#include "common.h"

typedef struct {
    wf_comm_impl_t *c;
    void (*fn)(wf_comm_impl_t *, void *);
    void *arg;
} job_t;

static void *run(void *p)
{
    job_t *j = p;
    j->fn(j->c, j->arg);
    wf_comm_put(j->c);
    free(j);
    return NULL;
}

bool wf_comm_worker(wf_comm_impl_t *c, void (*fn)(wf_comm_impl_t *, void *),
                    void *arg, int64_t wait_ms)
{
    job_t *j = malloc(sizeof(*j));
    if (!j)
        return false;
    *j = (job_t){c, fn, arg};
    wf_comm_ref(c);
    pthread_t t;
    if (pthread_create(&t, NULL, run, j) != 0) {
        wf_comm_put(c);
        free(j);
        return false;
    }
    if (wait_ms > 0) {
        struct timespec until = wf_realtime_after_ms(wait_ms);
        if (pthread_timedjoin_np(t, NULL, &until) == 0)
            return true;
    }
    pthread_detach(t);
    return true;
}
