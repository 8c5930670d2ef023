/*
 * launch_env.c - reading launcher variables.  Besides config.c this is the
 * only file that reads the environment, and only variables that belong to
 * other tools (torchrun, Slurm, Open MPI, PMI).
 *
 * torchrun: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT.
 *   torchrun's own agent store already listens on MASTER_PORT, so weft's
 *   rendezvous is MASTER_ADDR:(MASTER_PORT+1), hosted by rank 0.
 * Slurm: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_JOB_ID,
 *   SLURM_STEP_ID; the address comes from WEFT_RENDEZVOUS or MASTER_*.
 * Open MPI: OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK.
 * PMI (MPICH/hydra): PMI_RANK, PMI_SIZE.
 */
#include "rdv/launch_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "config.h"

static void master_address(wf_launch_env_t *env)
{
    const char *addr = wf_env_get("MASTER_ADDR");
    int port;
    if (!addr || !*addr || !wf_env_int("MASTER_PORT", &port) || port >= 65535)
        return;
    bool v6 = strchr(addr, ':') != NULL;
    snprintf(env->rendezvous, sizeof(env->rendezvous), "%s%s%s:%d",
             v6 ? "[" : "", addr, v6 ? "]" : "", port + 1);
    env->rank0_serves = true;
}

static bool detect_torchrun(wf_launch_env_t *env)
{
    if (!wf_env_int("RANK", &env->rank) || !wf_env_int("WORLD_SIZE", &env->size))
        return false;
    env->source = "torchrun";
    wf_env_int("LOCAL_RANK", &env->local_rank);
    master_address(env);
    const char *run = wf_env_get("TORCHELASTIC_RUN_ID");
    if (run && *run)
        snprintf(env->job_id, sizeof(env->job_id), "torchrun-%s", run);
    return true;
}

static bool detect_slurm(wf_launch_env_t *env)
{
    if (!wf_env_int("SLURM_PROCID", &env->rank) ||
        !wf_env_int("SLURM_NTASKS", &env->size))
        return false;
    env->source = "slurm";
    wf_env_int("SLURM_LOCALID", &env->local_rank);
    master_address(env);
    const char *job = wf_env_get("SLURM_JOB_ID");
    const char *step = wf_env_get("SLURM_STEP_ID");
    if (job && *job)
        snprintf(env->job_id, sizeof(env->job_id), "slurm-%s.%s", job,
                 step && *step ? step : "0");
    return true;
}

static bool detect_ompi(wf_launch_env_t *env)
{
    if (!wf_env_int("OMPI_COMM_WORLD_RANK", &env->rank) ||
        !wf_env_int("OMPI_COMM_WORLD_SIZE", &env->size))
        return false;
    env->source = "openmpi";
    wf_env_int("OMPI_COMM_WORLD_LOCAL_RANK", &env->local_rank);
    master_address(env);
    return true;
}

static bool detect_pmi(wf_launch_env_t *env)
{
    if (!wf_env_int("PMI_RANK", &env->rank) || !wf_env_int("PMI_SIZE", &env->size))
        return false;
    env->source = "pmi";
    master_address(env);
    return true;
}

bool wf_launch_env_detect(wf_launch_env_t *env)
{
    memset(env, 0, sizeof(*env));
    env->local_rank = -1;
    return detect_torchrun(env) || detect_slurm(env) || detect_ompi(env) ||
           detect_pmi(env);
}
