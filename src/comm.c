/*
 * comm.c - communicator lifecycle: resolving parameters (API > config
 * string > WEFT_* environment > launcher variables > defaults), opening the
 * store, the transport and the engine, and tearing them down.
 */
#include "comm.h"
#include "node/node_coll.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "rdv/bootstrap.h"
#include "rdv/launch_env.h"
#include "rdv/launch_pmi.h"
#include "route.h"
#include "timeline.h"
#include "transport.h"

/* A number from an API field, with its unit where the knob has one (a
 * duration without a unit is seconds). */
static weft_status_t set_number(wf_config_t *cfg, const char *name,
                                long long v, const char *unit)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%lld%s", v, unit);
    return wf_config_set(cfg, name, buf, WF_SOURCE_API);
}

/* Applies the fields of `p` named in its field_mask. */
static weft_status_t apply_params(wf_config_t *cfg,
                                  const weft_comm_params_t *p)
{
    uint64_t m = p->field_mask;
    if (m & WEFT_COMM_PARAM_RANK)
        WEFT_CHECK(set_number(cfg, "WEFT_RANK", p->rank, ""));
    if (m & WEFT_COMM_PARAM_SIZE)
        WEFT_CHECK(set_number(cfg, "WEFT_WORLD_SIZE", p->size, ""));
    if ((m & WEFT_COMM_PARAM_TIMEOUT) && p->timeout_ms >= 0)
        WEFT_CHECK(set_number(cfg, "WEFT_TIMEOUT", p->timeout_ms, "ms"));
    const struct {
        uint64_t bit;
        const char *value, *name;
    } strs[] = {{WEFT_COMM_PARAM_RENDEZVOUS, p->rendezvous, "WEFT_RENDEZVOUS"},
                {WEFT_COMM_PARAM_JOB_ID, p->job_id, "WEFT_JOB_ID"},
                {WEFT_COMM_PARAM_TOKEN, p->token, "WEFT_TOKEN"}};
    for (size_t i = 0; i < WF_ARRAY_LEN(strs); i++) {
        if (!(m & strs[i].bit))
            continue;
        if (!strs[i].value) {
            WEFT_WARN(INIT, "weft_comm_create: %s field is NULL",
                      strs[i].name + 5);
            return WEFT_ERR_INVALID_ARG;
        }
        WEFT_CHECK(wf_config_set(cfg, strs[i].name, strs[i].value,
                                 WF_SOURCE_API));
    }
    return WEFT_OK;
}

/* Fills rank, size, rendezvous and job id from a launcher when the WEFT_*
 * knobs left them unset; decides whether this rank hosts the server. */
/* Rank, size and rendezvous from the launcher where the WEFT_* settings
 * do not give them.  A launcher that names no rendezvous gets one through
 * its process-management interface, hosted by rank 0 (*pmi_server there);
 * otherwise *serve says whether rank 0 hosts the address it was given. */
static weft_status_t resolve_launch(wf_config_t *cfg, bool *serve,
                                    weft_server_t *pmi_server)
{
    wf_launch_env_t env;
    bool have = (cfg->rank < 0 || cfg->world_size < 0 || !*cfg->rendezvous) &&
                wf_launch_env_detect(&env);
    if (have) {
        WEFT_INFO(INIT, "launch environment: %s (rank %d of %d)", env.source,
                  env.rank, env.size);
        if (cfg->rank < 0)
            cfg->rank = env.rank;
        if (cfg->world_size < 0)
            cfg->world_size = env.size;
        if (!*cfg->rendezvous)
            wf_strlcpy(cfg->rendezvous, env.rendezvous, WF_CONFIG_STR_MAX);
        if (cfg->source[WF_PARAM_ID_job_id] == WF_SOURCE_DEFAULT &&
            *env.job_id)
            wf_strlcpy(cfg->job_id, env.job_id, WF_CONFIG_STR_MAX);
    }
    if (cfg->rank < 0 || cfg->world_size < 1) {
        WEFT_WARN(INIT, "no rank/world size: set WEFT_RANK and WEFT_WORLD_SIZE "
                  "(or start under weftrun, torchrun, srun or mpirun)");
        return WEFT_ERR_INVALID_ARG;
    }
    if (cfg->rank >= cfg->world_size) {
        WEFT_WARN(INIT, "rank %lld is outside [0, %lld)",
                  (long long)cfg->rank, (long long)cfg->world_size);
        return WEFT_ERR_INVALID_ARG;
    }
    if (!*cfg->rendezvous && have) {
        char why[512];
        weft_status_t st = wf_launch_pmi_rendezvous(cfg, pmi_server, why,
                                                    sizeof(why));
        if (st == WEFT_OK) {
            *serve = false;
            return WEFT_OK;
        }
        WEFT_WARN(INIT, "no rendezvous address from %s: set "
                  "WEFT_RENDEZVOUS=HOST:PORT (a weft-rendezvous server), or "
                  "MASTER_ADDR and MASTER_PORT (rank 0 then hosts it); %s",
                  env.source, why);
        return st == WEFT_ERR_UNSUPPORTED ? WEFT_ERR_INVALID_ARG : st;
    }
    if (!*cfg->rendezvous) {
        WEFT_WARN(INIT, "no rendezvous address: set WEFT_RENDEZVOUS=HOST:PORT "
                  "(a weft-rendezvous server), file:///DIR or mem://NAME, "
                  "or start under weftrun, torchrun, srun or mpirun");
        return WEFT_ERR_INVALID_ARG;
    }
    const char *s = cfg->rendezvous_serve;
    *serve = cfg->rank == 0 &&
             (strcmp(s, "1") == 0 ||
              (strcmp(s, "auto") == 0 && have && env.rank0_serves &&
               strcmp(cfg->rendezvous, env.rendezvous) == 0));
    return WEFT_OK;
}

weft_status_t wf_comm_port_range(const char *text, int *lo, int *hi)
{
    *lo = *hi = 0;
    if (!*text)
        return WEFT_OK;
    if (sscanf(text, "%d-%d", lo, hi) != 2 || *lo < 1 || *hi > 65535 ||
        *lo > *hi) {
        WEFT_WARN(INIT, "WEFT_PORT_RANGE=%s is not LOW-HIGH within 1-65535",
                  text);
        return WEFT_ERR_INVALID_ARG;
    }
    return WEFT_OK;
}

static weft_status_t open_transport(wf_comm_impl_t *c,
                                    const wf_transport_ops_t **ops,
                                    wf_tctx_t **tctx)
{
    wf_tconfig_t tc;
    memset(&tc, 0, sizeof(tc));
    tc.rank = c->rank;
    tc.size = c->size;
    tc.job_key = c->job_key;
    tc.comm_key = c->comm_key;
    memcpy(tc.secret, c->secret, sizeof(tc.secret));
    tc.timeout_ms = c->cfg.timeout_ms;
    wf_strlcpy(tc.ifname, c->cfg.socket_ifname, sizeof(tc.ifname));
    tc.knobs = &c->cfg; /* each transport reads its own */
    tc.topo_numa = -1; /* until wf_comm_topo_steer chooses */
    if (strncmp(c->cfg.rendezvous, "mem://", 6) == 0)
        wf_strlcpy(tc.bind_hint, "127.0.0.1", sizeof(tc.bind_hint));
    else
        wf_store_local_ip(c->store, tc.bind_hint, sizeof(tc.bind_hint));
    WEFT_CHECK(wf_comm_topo_steer(c, &tc));
    WEFT_CHECK(wf_comm_port_range(c->cfg.port_range, &tc.port_min, &tc.port_max));
    WEFT_CHECK(wf_transport_select(c->cfg.transport, ops));
    WEFT_CHECK((*ops)->init(&tc, tctx));
    wf_strlcpy(c->transport_name, (*ops)->name, sizeof(c->transport_name));
    wf_tdev_attr_t attr;
    if (*ops == &wf_route_transport && (*ops)->query(*tctx, &attr) == WEFT_OK)
        wf_strlcpy(c->transport_name, attr.name, sizeof(c->transport_name));
    return WEFT_OK;
}

weft_status_t wf_comm_connect(wf_comm_impl_t *c)
{
    const wf_transport_ops_t *ops;
    wf_tctx_t *tctx = NULL;
    uint8_t addr[WF_TADDR_MAX];
    size_t addr_len = sizeof(addr);
    uint8_t *peer_addrs = calloc((size_t)c->size, WF_TADDR_MAX);
    size_t *peer_lens = calloc((size_t)c->size, sizeof(size_t));
    uint64_t *node_keys = calloc((size_t)c->size, sizeof(uint64_t));
    wf_tdev_attr_t attr;
    weft_status_t st = WEFT_ERR_NO_MEMORY;
    if (!peer_addrs || !peer_lens || !node_keys)
        goto out;
    WEFT_CHECK_GOTO(open_transport(c, &ops, &tctx), st, out);
    WEFT_CHECK_GOTO(ops->get_address(tctx, addr, &addr_len), st, out);
    WEFT_CHECK_GOTO(ops->query(tctx, &attr), st, out);
    c->single_copy_min = attr.single_copy_min;
    /* WEFT_NODE_ID groups ranks into machines for the algorithms only:
     * transports and placement keep to the real machine. */
    uint64_t node_key = *c->cfg.node_id
                            ? wf_hash64(c->cfg.node_id, strlen(c->cfg.node_id))
                            : wf_node_key();
    WEFT_CHECK_GOTO(wf_bootstrap_exchange(c->store, c->rank, c->size, addr,
                                          addr_len, node_key,
                                          c->cfg.timeout_ms,
                                          peer_addrs, peer_lens, node_keys),
                    st, out);
    /* Ranks on this machine share its cores (the cost model). */
    WEFT_CHECK_GOTO(wf_comm_layout(c, node_keys), st, out);
    c->host_cores = wf_online_cores();
    wf_engine_params_t ep = {
        .rank = c->rank, .size = c->size, .tops = ops, .tctx = tctx,
        .peer_addrs = peer_addrs, .peer_addr_lens = peer_lens,
        .max_inflight = (int)c->cfg.max_inflight,
        .reg_min = attr.reg_min,
        .timeout_ms = c->cfg.timeout_ms,
        .debug_dump = c->cfg.debug_dump,
        .busy_poll = c->local_size <= c->host_cores,
        .numa = c->staging_numa,
    };
    wf_comm_place(c, &ep.pin, &ep.progress_cpu);
    WEFT_CHECK_GOTO(wf_node_coll_open(c), st, out);
    /* The last use of the store in the creation: the rank that hosts the
     * server waits here for the others, so a rank that is done first (a
     * broadcast's root) cannot stop it under them. */
    WEFT_CHECK_GOTO(wf_bootstrap_ready(c->store, c->rank, c->size,
                                       c->server != NULL, c->cfg.timeout_ms),
                    st, out);
    wf_node_coll_hooks(c->node_coll, &ep);
    WEFT_CHECK_GOTO(wf_engine_create(&ep, &c->engine), st, out);
    wf_node_coll_set_engine(c->node_coll, c->engine);
    tctx = NULL; /* the engine owns it now */
out:
    if (tctx)
        ops->fini(tctx);
    free(peer_addrs);
    free(peer_lens);
    free(node_keys);
    return st;
}

void wf_comm_impl_free(wf_comm_impl_t *c, bool abort)
{
    wf_engine_destroy(c->engine, abort);
    wf_node_coll_close(c->node_coll); /* the engine posted to its board */
    wf_store_close(c->store);
    weft_server_stop(c->server);
    memset(c->secret, 0, sizeof(c->secret));
    wf_memcache_fini(&c->memcache);
    wf_plan_cache_fini(&c->plans);
    wf_node_map_free(&c->nodemap);
    free(c);
    /* What it did is on disk before the process may be killed. */
    wf_timeline_flush();
}

WEFT_API weft_status_t weft_comm_create(const weft_comm_params_t *params,
                                        weft_comm_t *comm)
{
    weft_status_t st;
    bool serve = false;
    if (!params || !comm) {
        WEFT_WARN(INIT, "weft_comm_create: %s is NULL",
                  params ? "comm" : "params");
        return WEFT_ERR_INVALID_ARG;
    }
    wf_comm_impl_t *c = calloc(1, sizeof(*c));
    struct weft_comm *shell = malloc(sizeof(*shell));
    if (!c || !shell) {
        free(c);
        free(shell);
        WEFT_WARN(INIT, "out of memory creating a communicator");
        return WEFT_ERR_NO_MEMORY;
    }
    wf_memcache_init(&c->memcache);
    const char *over = params->field_mask & WEFT_COMM_PARAM_CONFIG
                           ? params->config : NULL;
    WEFT_CHECK_GOTO(wf_config_load(&c->cfg, over), st, err);
    WEFT_CHECK_GOTO(apply_params(&c->cfg, params), st, err);
    wf_plan_cache_init(&c->plans, (int)c->cfg.plan_cache);
    if (c->cfg.source[WF_PARAM_ID_log] == WF_SOURCE_OVERRIDE ||
        c->cfg.source[WF_PARAM_ID_log_subsys] == WF_SOURCE_OVERRIDE)
        wf_log_reconfigure(c->cfg.log, c->cfg.log_subsys);
    WEFT_CHECK_GOTO(resolve_launch(&c->cfg, &serve, &c->server), st, err);
    c->rank = (int)c->cfg.rank;
    c->size = (int)c->cfg.world_size;
    wf_log_set_rank(c->rank);
    WEFT_CHECK_GOTO(wf_timeline_comm_created(c->cfg.timeline, c->rank), st,
                    err);
    /* The job key only tells jobs apart in handshake messages; it is no
     * secret and nothing about the token goes into it (a hash of the token
     * on the wire would let an eavesdropper guess the token offline). */
    c->job_key = wf_hash64(c->cfg.job_id, strlen(c->cfg.job_id));
    c->comm_key = wf_hash64("world", 5) ^ c->job_key;
    if (serve)
        WEFT_CHECK_GOTO(wf_rdv_server_start(c->cfg.rendezvous, c->cfg.token,
                                            &c->server), st, err);
    WEFT_CHECK_GOTO(wf_store_open(c->cfg.rendezvous, c->cfg.job_id,
                                  c->cfg.token, c->cfg.timeout_ms, &c->store),
                    st, err);
    WEFT_CHECK_GOTO(wf_bootstrap_secret(c->store, c->cfg.job_id, c->cfg.token,
                                        c->secret), st, err);
    /* Nothing needs the token any more: the snapshot keeps "(set)" only. */
    if (*c->cfg.token)
        wf_strlcpy(c->cfg.token, "(set)", sizeof(c->cfg.token));
    WEFT_CHECK_GOTO(wf_comm_connect(c), st, err);
    WEFT_INFO(INIT, "rank %d of %d joined job %s via %s, transport %s, "
              "local rank %d of %d on host %s, node %d of %d",
              c->rank, c->size, c->cfg.job_id, c->cfg.rendezvous,
              c->transport_name, c->local_rank, c->local_size, wf_hostname(),
              c->node, c->nodes);
    *comm = wf_comm_wrap(shell, c);
    return WEFT_OK;
err:
    wf_comm_impl_free(c, true);
    free(shell);
    return st;
}

weft_comm_t wf_comm_wrap(struct weft_comm *shell, wf_comm_impl_t *impl)
{
    shell->magic = WF_COMM_MAGIC;
    shell->impl = impl;
    shell->next_dead = NULL;
    return shell;
}

WEFT_API weft_status_t weft_comm_init(weft_comm_t *comm)
{
    weft_comm_params_t p = {.field_mask = 0};
    return weft_comm_create(&p, comm);
}

/* Guards every shell's magic and impl pointer and every impl's refs and
 * released flags.  Destroyed shells stay allocated (see comm.h) and
 * listed, so they are reachable rather than leaked. */
static pthread_mutex_t shell_lock = PTHREAD_MUTEX_INITIALIZER;
static struct weft_comm *dead_shells;

weft_status_t wf_comm_get(weft_comm_t comm, const char *caller,
                          wf_comm_impl_t **impl)
{
    if (!comm) {
        WEFT_WARN(COLL, "%s: communicator is NULL", caller);
        return WEFT_ERR_INVALID_ARG;
    }
    pthread_mutex_lock(&shell_lock);
    uint32_t magic = comm->magic;
    wf_comm_impl_t *c = magic == WF_COMM_MAGIC ? comm->impl : NULL;
    if (c)
        c->refs++;
    pthread_mutex_unlock(&shell_lock);
    if (magic == WF_COMM_DEAD) {
        WEFT_WARN(COLL, "%s: communicator %p was destroyed", caller,
                  (void *)comm);
        return WEFT_ERR_INVALID_USAGE;
    }
    if (!c) {
        WEFT_WARN(COLL, "%s: %p is not a weft communicator", caller,
                  (void *)comm);
        return WEFT_ERR_INVALID_ARG;
    }
    wf_log_set_rank(c->rank);
    *impl = c;
    return WEFT_OK;
}

void wf_comm_ref(wf_comm_impl_t *c)
{
    pthread_mutex_lock(&shell_lock);
    c->refs++;
    pthread_mutex_unlock(&shell_lock);
}

void wf_comm_put(wf_comm_impl_t *c)
{
    pthread_mutex_lock(&shell_lock);
    bool last = --c->refs == 0 && c->released;
    pthread_mutex_unlock(&shell_lock);
    if (last)
        wf_comm_impl_free(c, c->release_abort);
}

static weft_status_t comm_release(weft_comm_t comm, bool abort)
{
    wf_comm_impl_t *c;
    if (!comm)
        return WEFT_OK;
    WEFT_CHECK(wf_comm_get(comm, abort ? "weft_comm_abort"
                                       : "weft_comm_destroy", &c));
    pthread_mutex_lock(&shell_lock);
    bool first = comm->magic == WF_COMM_MAGIC;
    if (first) {
        comm->magic = WF_COMM_DEAD;
        comm->impl = NULL;
        comm->next_dead = dead_shells;
        dead_shells = comm;
        c->released = true;
        c->release_abort = abort;
    }
    pthread_mutex_unlock(&shell_lock);
    /* A call still inside the library on another thread holds a
     * reference and frees the communicator when it returns; an abort
     * makes what it waits for, and what it is about to start, fail now. */
    if (first && abort && c->engine)
        wf_engine_fail(c->engine, WEFT_ERR_ABORTED, "communicator aborted");
    wf_comm_put(c);
    if (!first) {
        WEFT_WARN(COLL, "%s: communicator %p was destroyed",
                  abort ? "weft_comm_abort" : "weft_comm_destroy",
                  (void *)comm);
        return WEFT_ERR_INVALID_USAGE;
    }
    return WEFT_OK;
}

WEFT_API weft_status_t weft_comm_destroy(weft_comm_t comm)
{
    return comm_release(comm, false);
}

WEFT_API weft_status_t weft_comm_abort(weft_comm_t comm)
{
    return comm_release(comm, true);
}

WEFT_API weft_status_t weft_comm_rank(weft_comm_t comm, int *rank)
{
    wf_comm_impl_t *c;
    WEFT_CHECK(wf_comm_get(comm, "weft_comm_rank", &c));
    if (rank)
        *rank = c->rank;
    wf_comm_put(c);
    return rank ? WEFT_OK : WEFT_ERR_INVALID_ARG;
}

WEFT_API weft_status_t weft_comm_size(weft_comm_t comm, int *size)
{
    wf_comm_impl_t *c;
    WEFT_CHECK(wf_comm_get(comm, "weft_comm_size", &c));
    if (size)
        *size = c->size;
    wf_comm_put(c);
    return size ? WEFT_OK : WEFT_ERR_INVALID_ARG;
}

WEFT_API weft_status_t weft_comm_get_error(weft_comm_t comm,
                                           const char **message)
{
    wf_comm_impl_t *c;
    WEFT_CHECK(wf_comm_get(comm, "weft_comm_get_error", &c));
    weft_status_t st = message ? wf_engine_error(c->engine, message)
                               : WEFT_ERR_INVALID_ARG;
    wf_comm_put(c);
    return st;
}
