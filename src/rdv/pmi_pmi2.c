/*
 * pmi_pmi2.c - Slurm's PMI-2 (srun --mpi=pmi2), pmi.h.
 *
 * Compiled against Slurm's <slurm/pmi2.h> (libpmi2-0-dev) for the
 * prototypes; Slurm's libpmi2.so.0 is loaded at run time.  Told from
 * hydra's PMI-1, which also sets PMI_FD, by Slurm's own variables.
 */
#include "rdv/pmi.h"

#include <stdio.h>
#include <string.h>

#include "common.h"
#include "config.h"

static int present(void)
{
    const char *fd = wf_env_get("PMI_FD");
    const char *step = wf_env_get("SLURM_STEP_ID");
    return fd && *fd && step && *step;
}

#ifdef WF_HAVE_PMI2
#include <dlfcn.h>
#include <slurm/pmi2.h>

#define WF_PMI2_LIB "libpmi2.so.0"

static struct {
    int (*init)(int *, int *, int *, int *);
    int (*job_getid)(char *, int);
    int (*put)(const char *, const char *);
    int (*fence)(void);
    int (*get)(const char *, int, const char *, char *, int, int *);
    int (*finalize)(void);
} p2;

static char job_id[256];

static bool sym(void *lib, const char *name, void *slot, char *why,
                size_t len)
{
    void *f = dlsym(lib, name);
    if (!f) {
        snprintf(why, len, "PMI-2: %s has no symbol %s", WF_PMI2_LIB, name);
        return false;
    }
    memcpy(slot, &f, sizeof(f)); /* POSIX: function <-> object pointers */
    return true;
}

static weft_status_t init(int *rank, int *size, char *job, size_t job_len,
                          char *why, size_t why_len)
{
    void *lib = dlopen(WF_PMI2_LIB, RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        const char *err = dlerror();
        snprintf(why, why_len, "PMI-2: the process was started by srun "
                 "--mpi=pmi2 (PMI_FD is set) but %s cannot be loaded "
                 "(install libpmi2-0): %s", WF_PMI2_LIB,
                 err ? err : "unknown error");
        return WEFT_ERR_UNSUPPORTED;
    }
    if (!sym(lib, "PMI2_Init", &p2.init, why, why_len) ||
        !sym(lib, "PMI2_Job_GetId", &p2.job_getid, why, why_len) ||
        !sym(lib, "PMI2_KVS_Put", &p2.put, why, why_len) ||
        !sym(lib, "PMI2_KVS_Fence", &p2.fence, why, why_len) ||
        !sym(lib, "PMI2_KVS_Get", &p2.get, why, why_len) ||
        !sym(lib, "PMI2_Finalize", &p2.finalize, why, why_len))
        return WEFT_ERR_UNSUPPORTED;
    int spawned = 0, appnum = 0;
    int rc = p2.init(&spawned, size, rank, &appnum);
    if (rc != PMI2_SUCCESS) {
        snprintf(why, why_len, "PMI-2: PMI2_Init failed (error %d)", rc);
        return WEFT_ERR_SYSTEM;
    }
    rc = p2.job_getid(job_id, (int)sizeof(job_id));
    if (rc != PMI2_SUCCESS) {
        snprintf(why, why_len, "PMI-2: PMI2_Job_GetId failed (error %d)",
                 rc);
        return WEFT_ERR_SYSTEM;
    }
    wf_strlcpy(job, job_id, job_len);
    return WEFT_OK;
}

static weft_status_t failed(const char *what, int rc)
{
    WEFT_WARN(RDV, "PMI-2: %s failed (error %d)", what, rc);
    return WEFT_ERR_SYSTEM;
}

static weft_status_t put(const char *key, const char *value)
{
    int rc = p2.put(key, value);
    return rc == PMI2_SUCCESS ? WEFT_OK : failed("PMI2_KVS_Put", rc);
}

static weft_status_t fence(void)
{
    int rc = p2.fence();
    return rc == PMI2_SUCCESS ? WEFT_OK : failed("PMI2_KVS_Fence", rc);
}

static weft_status_t get0(const char *key, char *value, size_t len)
{
    int got = 0;
    int rc = p2.get(job_id, 0, key, value, (int)len, &got);
    return rc == PMI2_SUCCESS ? WEFT_OK : failed("PMI2_KVS_Get", rc);
}

static void fini(void) { p2.finalize(); }

const wf_pmi_ops_t wf_pmi_pmi2 = {
    .name = "PMI-2", .present = present, .init = init, .put = put,
    .fence = fence, .get0 = get0, .fini = fini};

#else /* !WF_HAVE_PMI2 */

static weft_status_t init(int *rank, int *size, char *job, size_t job_len,
                          char *why, size_t why_len)
{
    (void)rank, (void)size, (void)job, (void)job_len;
    snprintf(why, why_len, "PMI-2: the process was started by srun "
             "--mpi=pmi2 (PMI_FD is set) but this libweft was built without "
             "<slurm/pmi2.h> (libpmi2-0-dev)");
    return WEFT_ERR_UNSUPPORTED;
}

/* init says why; nothing else is reached (pmi.c opens none). */
const wf_pmi_ops_t wf_pmi_pmi2 = {
    .name = "PMI-2", .present = present, .init = init};

#endif /* WF_HAVE_PMI2 */
