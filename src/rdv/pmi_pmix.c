/*
 * pmi_pmix.c - PMIx (Open MPI's mpirun, srun --mpi=pmix), pmi.h.
 *
 * Compiled against <pmix.h> (libpmix-dev) for its types; libpmix.so.2 is
 * loaded at run time, so libweft runs where PMIx is not installed and
 * says so only when a process was started with it.
 */
#include "rdv/pmi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "config.h"

static int present(void)
{
    const char *ns = wf_env_get("PMIX_NAMESPACE");
    return ns && *ns;
}

#ifdef WF_HAVE_PMIX
#include <dlfcn.h>
#include <pmix.h>

#define WF_PMIX_LIB "libpmix.so.2"

static struct {
    pmix_status_t (*init)(pmix_proc_t *, pmix_info_t *, size_t);
    pmix_status_t (*put)(pmix_scope_t, const char *, pmix_value_t *);
    pmix_status_t (*commit)(void);
    pmix_status_t (*finalize)(const pmix_info_t *, size_t);
    pmix_status_t (*fence)(const pmix_proc_t *, size_t, const pmix_info_t *,
                           size_t);
    pmix_status_t (*get)(const pmix_proc_t *, const char *,
                         const pmix_info_t *, size_t, pmix_value_t **);
    void (*value_destruct)(pmix_value_t *);
    pmix_status_t (*info_load)(pmix_info_t *, const char *, const void *,
                               pmix_data_type_t);
    const char *(*error_string)(pmix_status_t);
} px;

static pmix_proc_t me;

static bool sym(void *lib, const char *name, void *slot, char *why,
                size_t len)
{
    void *f = dlsym(lib, name);
    if (!f) {
        snprintf(why, len, "PMIx: %s has no symbol %s", WF_PMIX_LIB, name);
        return false;
    }
    memcpy(slot, &f, sizeof(f)); /* POSIX: function <-> object pointers */
    return true;
}

static bool load(char *why, size_t len)
{
    void *lib = dlopen(WF_PMIX_LIB, RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        const char *err = dlerror();
        snprintf(why, len, "PMIx: the process was started with PMIx "
                 "(PMIX_NAMESPACE is set) but %s cannot be loaded (install "
                 "libpmix2): %s", WF_PMIX_LIB, err ? err : "unknown error");
        return false;
    }
    return sym(lib, "PMIx_Init", &px.init, why, len) &&
           sym(lib, "PMIx_Put", &px.put, why, len) &&
           sym(lib, "PMIx_Commit", &px.commit, why, len) &&
           sym(lib, "PMIx_Finalize", &px.finalize, why, len) &&
           sym(lib, "PMIx_Fence", &px.fence, why, len) &&
           sym(lib, "PMIx_Get", &px.get, why, len) &&
           sym(lib, "PMIx_Value_destruct", &px.value_destruct, why, len) &&
           sym(lib, "PMIx_Info_load", &px.info_load, why, len) &&
           sym(lib, "PMIx_Error_string", &px.error_string, why, len);
}

static weft_status_t failed(const char *what, pmix_status_t rc)
{
    WEFT_WARN(RDV, "PMIx: %s failed: %s", what, px.error_string(rc));
    return WEFT_ERR_SYSTEM;
}

static weft_status_t init(int *rank, int *size, char *job, size_t job_len,
                          char *why, size_t why_len)
{
    if (!load(why, why_len))
        return WEFT_ERR_UNSUPPORTED;
    pmix_status_t rc = px.init(&me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        snprintf(why, why_len, "PMIx: PMIx_Init failed: %s",
                 px.error_string(rc));
        return WEFT_ERR_SYSTEM;
    }
    pmix_proc_t job_proc = me;
    job_proc.rank = PMIX_RANK_WILDCARD;
    pmix_value_t *v = NULL;
    rc = px.get(&job_proc, PMIX_JOB_SIZE, NULL, 0, &v);
    if (rc != PMIX_SUCCESS || !v || v->type != PMIX_UINT32) {
        snprintf(why, why_len, "PMIx: the job's size (%s): %s", PMIX_JOB_SIZE,
                 rc != PMIX_SUCCESS ? px.error_string(rc) : "not a uint32");
        return WEFT_ERR_SYSTEM;
    }
    *size = (int)v->data.uint32;
    px.value_destruct(v);
    free(v);
    *rank = (int)me.rank;
    snprintf(job, job_len, "%s", me.nspace);
    return WEFT_OK;
}

static weft_status_t put(const char *key, const char *value)
{
    pmix_value_t v = {.type = PMIX_STRING};
    v.data.string = (char *)value;
    pmix_status_t rc = px.put(PMIX_GLOBAL, key, &v);
    if (rc != PMIX_SUCCESS)
        return failed("PMIx_Put", rc);
    rc = px.commit();
    return rc == PMIX_SUCCESS ? WEFT_OK : failed("PMIx_Commit", rc);
}

static weft_status_t fence(void)
{
    pmix_proc_t all = me;
    all.rank = PMIX_RANK_WILDCARD;
    pmix_info_t info;
    bool collect = true;
    memset(&info, 0, sizeof(info));
    px.info_load(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    pmix_status_t rc = px.fence(&all, 1, &info, 1);
    return rc == PMIX_SUCCESS ? WEFT_OK : failed("PMIx_Fence", rc);
}

static weft_status_t get0(const char *key, char *value, size_t len)
{
    pmix_proc_t rank0 = me;
    rank0.rank = 0;
    pmix_value_t *v = NULL;
    pmix_status_t rc = px.get(&rank0, key, NULL, 0, &v);
    if (rc != PMIX_SUCCESS)
        return failed("PMIx_Get", rc);
    weft_status_t st = WEFT_OK;
    if (v->type == PMIX_STRING && v->data.string)
        wf_strlcpy(value, v->data.string, len);
    else
        st = failed("PMIx_Get (not a string)", PMIX_ERR_TYPE_MISMATCH);
    px.value_destruct(v);
    free(v);
    return st;
}

static void fini(void) { px.finalize(NULL, 0); }

const wf_pmi_ops_t wf_pmi_pmix = {
    .name = "PMIx", .present = present, .init = init, .put = put,
    .fence = fence, .get0 = get0, .fini = fini};

#else /* !WF_HAVE_PMIX */

static weft_status_t init(int *rank, int *size, char *job, size_t job_len,
                          char *why, size_t why_len)
{
    (void)rank, (void)size, (void)job, (void)job_len;
    snprintf(why, why_len, "PMIx: the process was started with PMIx "
             "(PMIX_NAMESPACE is set) but this libweft was built without "
             "<pmix.h> (libpmix-dev)");
    return WEFT_ERR_UNSUPPORTED;
}

/* init says why; nothing else is reached (pmi.c opens none). */
const wf_pmi_ops_t wf_pmi_pmix = {
    .name = "PMIx", .present = present, .init = init};

#endif /* WF_HAVE_PMIX */
