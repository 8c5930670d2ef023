/*
 * pmi.h - the process-management interface of the launcher that started
 * this process, used for one thing: handing rank 0's rendezvous record to
 * every rank when the launcher names no address (launch_pmi.c), as UCC
 * and OpenSHMEM bootstrap.
 *
 *   PMIx   PMIX_NAMESPACE set: Open MPI's mpirun, srun --mpi=pmix;
 *          libpmix.so.2, loaded at run time (pmi_pmix.c)
 *   PMI-2  PMI_FD set under Slurm: srun --mpi=pmi2; Slurm's libpmi2.so.0,
 *          loaded at run time (pmi_pmi2.c)
 *   PMI-1  PMI_FD set otherwise: MPICH's mpiexec.hydra, whose client
 *          library lives inside libmpich; its line protocol on that fd
 *          (pmi_wire.c)
 *
 * Each interface is opened at most once per process and stays open until
 * the process exits: PMI-1 and PMI-2 allow one initialisation per process.
 */
#ifndef WF_PMI_H
#define WF_PMI_H

#include <stddef.h>

#include "weft.h"

/* Longest value exchanged (PMI-1's servers promise at least this much). */
#define WF_PMI_VALUE_MAX 256

typedef struct wf_pmi_ops {
    const char *name; /* "PMIx", "PMI-2", "PMI-1" */
    /* Whether this process was started with this interface (its
     * environment variables); no library is loaded yet. */
    int (*present)(void);
    /* Connects; fills rank, size and the job's name.  why: the reason on
     * failure. */
    weft_status_t (*init)(int *rank, int *size, char *job, size_t job_len,
                          char *why, size_t why_len);
    /* Publishes key=value for every rank of the job. */
    weft_status_t (*put)(const char *key, const char *value);
    /* Every rank has published (a barrier that makes the puts visible). */
    weft_status_t (*fence)(void);
    /* Rank 0's value of key. */
    weft_status_t (*get0)(const char *key, char *value, size_t len);
    /* Says goodbye: launchers count a process that initialised and exits
     * without it as failed (mpirun) or lose its output (hydra). */
    void (*fini)(void);
} wf_pmi_ops_t;

extern const wf_pmi_ops_t wf_pmi_pmix, wf_pmi_pmi2, wf_pmi_wire;

typedef struct {
    const wf_pmi_ops_t *ops;
    int rank, size;
    char job[256];
} wf_pmi_t;

/* The interface this process was started with, opened (once per process;
 * later calls return the same).  WEFT_ERR_UNSUPPORTED when there is none,
 * with what was looked for in `why`; another status when one is there but
 * fails (why names the interface and the cause). */
weft_status_t wf_pmi_get(const wf_pmi_t **pmi, char *why, size_t why_len);

/* Rank 0's value reaches every rank: rank 0 publishes `value` under key,
 * all fence, the others read it into out.  Collective over the job;
 * callers use a fresh key each time (the interfaces keep every value). */
weft_status_t wf_pmi_bcast(const wf_pmi_t *pmi, const char *key,
                           const char *value, char *out, size_t len);

/* The value of `key` in a PMI-1 reply line "cmd=x a=1 b=2", copied into
 * out; NULL when the line has none (pmi_wire.c, its unit test). */
const char *wf_pmi_wire_field(const char *reply, const char *key, char *out,
                              size_t len);

#endif /* WF_PMI_H */
