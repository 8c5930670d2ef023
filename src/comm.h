/*
 * comm.h - the communicator object.
 *
 * The public handle is a small shell {magic, impl}.  Destroying a
 * communicator frees the implementation and marks the shell dead but keeps
 * the shell (a few bytes), so later calls with the stale handle get a clear
 * WEFT_ERR_INVALID_USAGE instead of touching freed memory.
 */
#ifndef WF_COMM_H
#define WF_COMM_H

#include <stdint.h>

#include "config.h"
#include "dev/devbuf.h"
#include "rdv/store.h"
#include "sched/engine.h"
#include "algo/plan_cache.h"
#include "plan/nodemap.h"
#include "weft.h"

#define WF_COMM_MAGIC 0x7766636du /* "wfcm" */
#define WF_COMM_DEAD 0x64656164u  /* "dead" */

typedef struct wf_comm_impl {
    int rank;
    int size;
    wf_config_t cfg;
    uint64_t job_key;
    uint64_t comm_key;
    uint8_t secret[32]; /* the job's data-plane secret (wf_bootstrap_secret) */
    wf_store_t *store;
    weft_server_t server; /* when this rank hosts the rendezvous */
    wf_engine_t *engine;
    struct wf_node_coll *node_coll; /* the shared segment of small collectives
                                * (src/node/), or NULL */
    char transport_name[16];
    int local_rank;  /* among the ranks on this machine (same node key) */
    int local_size;  /* ranks on this machine */
    int node, nodes; /* this machine's index (by lowest rank), machines */
    int cross_rank, cross_size; /* among the ranks of this local rank */
    wf_node_map_t nodemap;      /* every rank's machine (comm_layout.c) */
    int host_cores;  /* CPUs this process may use */
    size_t single_copy_min; /* the transport's single copy on one machine
                             * from this size, 0: none (the cost model) */
    int staging_numa; /* OS index of the NUMA node staging memory is bound
                       * to, -1: unbound (wf_comm_topo_steer) */
    char staging_why[192]; /* where it is, or why unbound, for the
                            * placement line (wf_comm_place) */
    uint64_t split_seq;  /* weft_comm_split calls so far */
    uint64_t shrink_seq; /* weft_comm_shrink calls so far */
    bool diag_done;      /* hang diagnosis published (diag.c), atomic */
    bool failure_posted; /* failure posted to the store (stall.c), atomic */
    bool stall_busy;     /* a stall check is running (stall.c), atomic */
    wf_memcache_t memcache; /* buffer memory types (devbuf.c) */
    wf_plan_cache_t plans;  /* built plans by call signature; set up once
                             * the configuration is read */
    /* Calls inside the library that use this implementation (wf_comm_get
     * to wf_comm_put), and whether destroy/abort has released the handle:
     * the last of the two frees it.  Guarded by comm.c's shell lock. */
    int refs;
    bool released;
    bool release_abort;
} wf_comm_impl_t;

struct weft_comm {
    uint32_t magic;
    wf_comm_impl_t *impl;
    struct weft_comm *next_dead; /* the list of destroyed shells */
};

/* Opens the transport, exchanges rank records through c->store, starts
 * the engine.  c->rank, size, cfg, job_key, comm_key, secret and store are
 * set. */
weft_status_t wf_comm_connect(wf_comm_impl_t *c);

/* Validates a handle (logs and fails for NULL, foreign or destroyed ones)
 * and takes a reference on it for the duration of a call;
 * every successful wf_comm_get is paired with wf_comm_put.  A destroy or
 * abort from another thread in between frees the implementation only at
 * the last put (an abort fails its operations at once). */
weft_status_t wf_comm_get(weft_comm_t comm, const char *caller,
                          wf_comm_impl_t **impl);
void wf_comm_put(wf_comm_impl_t *impl);
/* One more reference on an implementation the caller holds one on (for
 * work that outlives the call: stall.c's workers); paired with a put. */
void wf_comm_ref(wf_comm_impl_t *impl);

/* Creates a communicator of `size` ranks, this one being `rank`, that
 * inherits p's settings and secret, with its own namespace ("c<key>/")
 * in p's store, its own transport endpoint and engine (split, shrink). */
weft_status_t wf_comm_child(wf_comm_impl_t *p, uint64_t comm_key, int rank,
                            int size, weft_comm_t *out);

/* Releases an implementation (engine, store handle, hosted server). */
void wf_comm_impl_free(wf_comm_impl_t *c, bool abort);

/* Fills c's local rank and size, node and node count, cross rank and
 * size from every rank's node key (comm_layout.c). */
weft_status_t wf_comm_layout(wf_comm_impl_t *c, const uint64_t *node_keys);

/* Parses WEFT_PORT_RANGE ("LOW-HIGH"; empty: 0-0, any port). */
weft_status_t wf_comm_port_range(const char *text, int *lo, int *hi);

/* The topology's choice for this rank, logged at info; `pin` and `cpu`
 * say where to pin the progress thread (comm_topo.c). */
void wf_comm_place(wf_comm_impl_t *c, bool *pin, int *cpu);

struct wf_tconfig;
/* Before the transport opens: when the user named no interface or HCA,
 * the topology's NICs for this rank go into tc->topo_ifname, topo_hca and
 * topo_why; the NUMA node for staging memory, when it can be bound there,
 * into tc->topo_numa and c->staging_numa (comm_topo.c).  Takes one store
 * round (the local rank). */
weft_status_t wf_comm_topo_steer(wf_comm_impl_t *c, struct wf_tconfig *tc);

/* Makes `shell` the live handle of `impl`. */
weft_comm_t wf_comm_wrap(struct weft_comm *shell, wf_comm_impl_t *impl);

#endif /* WF_COMM_H */
