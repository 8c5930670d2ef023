/*
 * pmi.c - picking and opening the launcher's interface (pmi.h).
 */
#include "rdv/pmi.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

/* In order: a process started with PMIx also has no PMI_FD, and Slurm's
 * PMI-2 is told from hydra's PMI-1 by Slurm's own variables. */
static const wf_pmi_ops_t *const interfaces[] = {
    &wf_pmi_pmix, &wf_pmi_pmi2, &wf_pmi_wire};

static pthread_mutex_t pmi_lock = PTHREAD_MUTEX_INITIALIZER;
static wf_pmi_t opened;
static pid_t opened_by; /* a forked child must not finalize its parent's */
static bool tried;
static weft_status_t open_status;
static char open_why[512];

weft_status_t wf_pmi_get(const wf_pmi_t **pmi, char *why, size_t why_len)
{
    pthread_mutex_lock(&pmi_lock);
    if (!tried) {
        tried = true;
        open_status = WEFT_ERR_UNSUPPORTED;
        snprintf(open_why, sizeof(open_why), "no process-management "
                 "interface in the environment (none of PMIX_NAMESPACE, "
                 "PMI_FD)");
        for (size_t i = 0; i < WF_ARRAY_LEN(interfaces); i++) {
            const wf_pmi_ops_t *ops = interfaces[i];
            if (!ops->present())
                continue;
            open_status = ops->init(&opened.rank, &opened.size, opened.job,
                                    sizeof(opened.job), open_why,
                                    sizeof(open_why));
            if (open_status == WEFT_OK) {
                opened.ops = ops;
                opened_by = getpid();
                WEFT_INFO(RDV, "process-management interface: %s (rank %d "
                          "of %d, job %s)", ops->name, opened.rank,
                          opened.size, opened.job);
            }
            break;
        }
    }
    weft_status_t st = open_status;
    if (st == WEFT_OK)
        *pmi = &opened;
    else
        wf_strlcpy(why, open_why, why_len);
    pthread_mutex_unlock(&pmi_lock);
    return st;
}

/* At exit (or when libweft is unloaded). */
__attribute__((destructor)) static void pmi_close(void)
{
    pthread_mutex_lock(&pmi_lock);
    if (opened.ops && opened_by == getpid())
        opened.ops->fini();
    opened.ops = NULL;
    pthread_mutex_unlock(&pmi_lock);
}

weft_status_t wf_pmi_bcast(const wf_pmi_t *pmi, const char *key,
                           const char *value, char *out, size_t len)
{
    weft_status_t st = WEFT_OK;
    /* One exchange at a time: PMI-1's replies come on one connection. */
    pthread_mutex_lock(&pmi_lock);
    if (pmi->rank == 0)
        st = pmi->ops->put(key, value);
    /* Rank 0 fences even when its put failed: the others then find no
     * value and fail at once, instead of waiting in the fence. */
    weft_status_t fenced = pmi->ops->fence();
    if (st == WEFT_OK)
        st = fenced;
    if (st == WEFT_OK) {
        if (pmi->rank == 0)
            wf_strlcpy(out, value, len);
        else
            st = pmi->ops->get0(key, out, len);
    }
    pthread_mutex_unlock(&pmi_lock);
    return st;
}
