/*
 * launch_pmi.c - a rendezvous for a job whose launcher names no address
 * (mpirun, mpiexec.hydra, srun without WEFT_RENDEZVOUS or MASTER_ADDR):
 * rank 0 starts a rendezvous server on this host's address, and its record
 * (address, job id, token) reaches every rank through the launcher's
 * process-management interface (pmi.h).  The token is fresh unless the
 * user gave one, so the server admits only this job's ranks; the
 * interfaces show their values only to the job's own processes.
 */
#include "rdv/launch_pmi.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "common.h"
#include "rdv/bootstrap.h"
#include "rdv/pmi.h"

/* An address of interface `name` (or any up, non-loopback one when name is
 * empty), IPv4 first; false when there is none. */
static bool interface_address(const char *name, char *out, size_t len)
{
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0)
        return false;
    bool found = false;
    for (int family = AF_INET; !found; family = AF_INET6) {
        for (struct ifaddrs *i = list; i && !found; i = i->ifa_next) {
            if (!i->ifa_addr || i->ifa_addr->sa_family != family ||
                !(i->ifa_flags & IFF_UP))
                continue;
            if (*name ? strcmp(i->ifa_name, name) != 0
                      : (i->ifa_flags & IFF_LOOPBACK) != 0)
                continue;
            const void *a =
                family == AF_INET
                    ? (const void *)&((struct sockaddr_in *)(void *)
                                          i->ifa_addr)->sin_addr
                    : (const void *)&((struct sockaddr_in6 *)(void *)
                                          i->ifa_addr)->sin6_addr;
            if (family == AF_INET6 &&
                IN6_IS_ADDR_LINKLOCAL((const struct in6_addr *)a))
                continue;
            char ip[INET6_ADDRSTRLEN];
            if (!inet_ntop(family, a, ip, sizeof(ip)))
                continue;
            snprintf(out, len, family == AF_INET6 ? "[%s]" : "%s", ip);
            found = true;
        }
        if (family == AF_INET6)
            break;
    }
    freeifaddrs(list);
    return found;
}

/* Where the other ranks reach rank 0's server: the first interface of
 * WEFT_SOCKET_IFNAME (the data network the user chose), else an up
 * non-loopback interface, else loopback (a job on one machine). */
static void server_host(const wf_config_t *cfg, char *out, size_t len)
{
    char first[64];
    wf_strlcpy(first, cfg->socket_ifname, sizeof(first));
    first[strcspn(first, ", ")] = '\0';
    if (*first && strchr(first, '.')) { /* a literal IPv4 address */
        wf_strlcpy(out, first, len);
        return;
    }
    if ((*first && interface_address(first, out, len)) ||
        interface_address("", out, len))
        return;
    wf_strlcpy(out, "127.0.0.1", len);
}

static void hex(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

/* Rank 0's side: the server and its record "address|job|token". */
static weft_status_t serve(wf_config_t *cfg, const wf_pmi_t *pmi, int n,
                           weft_server_t *server, char *record, size_t len)
{
    char host[128], listen[160], token[WF_CONFIG_STR_MAX], job[320];
    server_host(cfg, host, sizeof(host));
    snprintf(listen, sizeof(listen), "%s:0", host);
    if (*cfg->token) {
        wf_strlcpy(token, cfg->token, sizeof(token));
    } else {
        uint8_t raw[16];
        WEFT_CHECK(wf_auth_random(raw, sizeof(raw)));
        hex(raw, sizeof(raw), token);
    }
    if (cfg->source[WF_PARAM_ID_job_id] != WF_SOURCE_DEFAULT)
        wf_strlcpy(job, cfg->job_id, sizeof(job));
    else
        snprintf(job, sizeof(job), "%s-%s-%d", pmi->ops->name, pmi->job, n);
    /* The record travels in one PMI-1 word: no spaces, no '|' inside. */
    for (char *c = job; *c; c++)
        if (*c == ' ' || *c == '|' || *c == '=')
            *c = '_';
    if (strchr(token, ' ') || strchr(token, '|')) {
        WEFT_WARN(RDV, "WEFT_TOKEN contains a space or '|', which the "
                  "launcher's interface cannot carry; set WEFT_RENDEZVOUS "
                  "and the token on every rank instead");
        return WEFT_ERR_INVALID_ARG;
    }
    WEFT_CHECK(wf_rdv_server_start(listen, token, server));
    int w = snprintf(record, len, "%s|%s|%s", weft_server_address(*server),
                     job, token);
    if (w < 0 || (size_t)w >= len) {
        weft_server_stop(*server);
        *server = NULL;
        WEFT_WARN(RDV, "the rendezvous record for the launcher is longer "
                  "than %zu bytes", len);
        return WEFT_ERR_INVALID_ARG;
    }
    return WEFT_OK;
}

weft_status_t wf_launch_pmi_rendezvous(wf_config_t *cfg,
                                       weft_server_t *server, char *why,
                                       size_t why_len)
{
    static int exchanges; /* every rank creates its communicators in turn */
    const wf_pmi_t *pmi = NULL;
    *server = NULL;
    weft_status_t st = wf_pmi_get(&pmi, why, why_len);
    if (st != WEFT_OK)
        return st;
    if (pmi->rank != cfg->rank || pmi->size != cfg->world_size) {
        snprintf(why, why_len, "%s says rank %d of %d, but this rank was "
                 "given rank %lld of %lld", pmi->ops->name, pmi->rank,
                 pmi->size, (long long)cfg->rank,
                 (long long)cfg->world_size);
        return WEFT_ERR_INVALID_ARG;
    }
    int n = __atomic_fetch_add(&exchanges, 1, __ATOMIC_RELAXED);
    char key[64], record[WF_PMI_VALUE_MAX] = "";
    snprintf(key, sizeof(key), "weft-rdv-%d", n);
    if (pmi->rank == 0)
        st = serve(cfg, pmi, n, server, record, sizeof(record));
    /* Rank 0 takes part in the exchange even when its server failed, with
     * an empty record, so the others fail at once instead of waiting. */
    weft_status_t ex = wf_pmi_bcast(pmi, key, *record ? record : "-", record,
                                    sizeof(record));
    if (st == WEFT_OK)
        st = ex;
    char *job = strchr(record, '|');
    char *token = job ? strchr(job + 1, '|') : NULL;
    if (st != WEFT_OK || !token) {
        snprintf(why, why_len, "%s: rank 0's rendezvous record did not "
                 "arrive (%s)", pmi->ops->name,
                 st != WEFT_OK ? weft_strerror(st)
                               : "rank 0 could not start its server");
        if (*server)
            weft_server_stop(*server);
        *server = NULL;
        return st != WEFT_OK ? st : WEFT_ERR_REMOTE;
    }
    *job++ = '\0';
    *token++ = '\0';
    wf_strlcpy(cfg->rendezvous, record, WF_CONFIG_STR_MAX);
    if (cfg->source[WF_PARAM_ID_job_id] == WF_SOURCE_DEFAULT)
        wf_strlcpy(cfg->job_id, job, WF_CONFIG_STR_MAX);
    wf_strlcpy(cfg->token, token, WF_CONFIG_STR_MAX);
    WEFT_INFO(INIT, "rendezvous through %s: %s (job %s, hosted by rank 0)",
              pmi->ops->name, cfg->rendezvous, cfg->job_id);
    return WEFT_OK;
}
