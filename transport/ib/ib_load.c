/*
 * ib_load.c - libibverbs is loaded with dlopen at run time, so one
 * libweft.so runs on hosts without rdma-core; the verbs transport then
 * reports itself unavailable with the reason and "auto" picks TCP.
 *
 * The table holds only exported functions.  The fast-path verbs
 * (ibv_post_send, ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq) are
 * static inline in <infiniband/verbs.h> and jump through the provider's
 * ops in struct ibv_context, so they need no symbol at all.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ib.h"

/* The SONAME; the unversioned libibverbs.so exists only with the -dev
 * package. */
#define WF_IBV_LIB "libibverbs.so.1"

static wf_ibv_t wf_ibv_table;
static const wf_ibv_t *wf_ibv_loaded;
static char wf_ibv_why[256];
static pthread_once_t wf_ibv_once = PTHREAD_ONCE_INIT;

static bool sym(void *lib, const char *name, void *slot)
{
    void *f = dlsym(lib, name);

    if (!f) {
        snprintf(wf_ibv_why, sizeof(wf_ibv_why), "%s has no symbol %s",
                 WF_IBV_LIB, name);
        return false;
    }
    /* POSIX guarantees object and function pointers convert both ways. */
    memcpy(slot, &f, sizeof(f));
    return true;
}

static void load_once(void)
{
    wf_ibv_t *t = &wf_ibv_table;
    void *lib = dlopen(WF_IBV_LIB, RTLD_NOW | RTLD_LOCAL);

    if (!lib) {
        const char *err = dlerror();
        snprintf(wf_ibv_why, sizeof(wf_ibv_why),
                 "cannot load %s (install rdma-core / libibverbs1): %s",
                 WF_IBV_LIB, err ? err : "unknown error");
        return;
    }
    if (!sym(lib, "ibv_get_device_list", &t->get_device_list) ||
        !sym(lib, "ibv_free_device_list", &t->free_device_list) ||
        !sym(lib, "ibv_get_device_name", &t->get_device_name) ||
        !sym(lib, "ibv_open_device", &t->open_device) ||
        !sym(lib, "ibv_close_device", &t->close_device) ||
        !sym(lib, "ibv_query_device", &t->query_device) ||
        !sym(lib, "ibv_query_port", &t->query_port) ||
        !sym(lib, "ibv_query_gid", &t->query_gid) ||
        !sym(lib, "ibv_alloc_pd", &t->alloc_pd) ||
        !sym(lib, "ibv_dealloc_pd", &t->dealloc_pd) ||
        !sym(lib, "ibv_reg_mr", &t->reg_mr) ||
        !sym(lib, "ibv_dereg_mr", &t->dereg_mr) ||
        !sym(lib, "ibv_create_comp_channel", &t->create_comp_channel) ||
        !sym(lib, "ibv_destroy_comp_channel", &t->destroy_comp_channel) ||
        !sym(lib, "ibv_create_cq", &t->create_cq) ||
        !sym(lib, "ibv_destroy_cq", &t->destroy_cq) ||
        !sym(lib, "ibv_get_cq_event", &t->get_cq_event) ||
        !sym(lib, "ibv_ack_cq_events", &t->ack_cq_events) ||
        !sym(lib, "ibv_create_qp", &t->create_qp) ||
        !sym(lib, "ibv_modify_qp", &t->modify_qp) ||
        !sym(lib, "ibv_destroy_qp", &t->destroy_qp) ||
        !sym(lib, "ibv_wc_status_str", &t->wc_status_str)) {
        dlclose(lib);
        return;
    }
    /* Optional: rdma-core before v34 has no dma-buf registration, and
     * device memory then falls back to peer memory (ib_gdr.c). */
    {
        void *f = dlsym(lib, "ibv_reg_dmabuf_mr");
        memcpy(&t->reg_dmabuf_mr, &f, sizeof(f));
    }
    /* The library stays loaded for the life of the process: providers
     * keep state in it, and contexts may outlive any one caller. */
    wf_ibv_loaded = t;
}

const wf_ibv_t *wf_ibv_load(const char **why)
{
    pthread_once(&wf_ibv_once, load_once);
    if (!wf_ibv_loaded && why)
        *why = wf_ibv_why;
    return wf_ibv_loaded;
}

bool wf_ib_probe(char *why, size_t why_len)
{
    const char *reason = NULL;
    const wf_ibv_t *v = wf_ibv_load(&reason);
    char list[256];

    if (!v) {
        snprintf(why, why_len, "%s", reason);
        return false;
    }
    if (!wf_ib_dev_any_active(v, list, sizeof(list))) {
        snprintf(why, why_len, "no RDMA device with an ACTIVE port (%s)",
                 list[0] ? list : "no devices");
        return false;
    }
    return true;
}
