/*
 * launch_env.h - rank, size and rendezvous from the launcher's environment
 * when WEFT_* variables are absent: torchrun, Slurm, Open MPI, PMI.
 */
#ifndef WF_LAUNCH_ENV_H
#define WF_LAUNCH_ENV_H

#include <stdbool.h>

typedef struct wf_launch_env {
    const char *source;   /* "torchrun", "slurm", "openmpi", "pmi" */
    int rank;
    int size;
    int local_rank;       /* -1 when the launcher does not say */
    char rendezvous[256]; /* "" when the launcher gives no address */
    char job_id[128];     /* "" when the launcher gives none */
    bool rank0_serves;    /* rank 0 should host the rendezvous server */
} wf_launch_env_t;

/* Fills `env` from the first launcher whose variables are present; false
 * when none is. */
bool wf_launch_env_detect(wf_launch_env_t *env);

#endif /* WF_LAUNCH_ENV_H */
