/*
 * rdv_check.c - weft_server_check: is a rendezvous server up and serving?
 * The probe behind `weft-rendezvous --check HOST:PORT` (a Kubernetes
 * liveness or readiness probe, a systemd ExecStartPost, a job script
 * waiting for its server).
 *
 * A port that accepts connections proves little (a wedged event loop
 * still completes the TCP handshake), so the probe does what a rank does,
 * on a job of its own: connects, authenticates (with WEFT_TOKEN or
 * WEFT_TOKEN_FILE when the server requires a token), sets a key and reads
 * it back.  Closing the connection ends the probe's job on the server.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "config.h"
#include "rdv/store.h"

/* The probe's job id: its own, so it never touches a real job's keys. */
static void probe_job(char *job, size_t size, uint64_t nonce)
{
    snprintf(job, size, "weft-check-%d-%llx", (int)getpid(),
             (unsigned long long)(nonce & 0xffffffu));
}

static weft_status_t probe(wf_store_t *s, const char *address,
                           uint64_t nonce, int64_t timeout_ms)
{
    char want[32], got[32];
    size_t len = 0;

    snprintf(want, sizeof(want), "%llx", (unsigned long long)nonce);
    WEFT_CHECK(wf_store_set(s, "probe", want, strlen(want)));
    WEFT_CHECK(wf_store_get(s, "probe", got, sizeof(got) - 1, &len,
                            timeout_ms));
    got[len] = '\0';
    if (strcmp(got, want) != 0) {
        WEFT_WARN(RDV, "weft_server_check: %s answered '%s' for the key the "
                       "probe set to '%s'", address, got, want);
        return WEFT_ERR_REMOTE;
    }
    return WEFT_OK;
}

WEFT_API weft_status_t weft_server_check(const char *address,
                                         int64_t timeout_ms)
{
    char host[256], job[64];
    int port = -1;
    wf_config_t cfg;
    wf_store_t *s = NULL;

    if (!address || strstr(address, "://") ||
        !wf_parse_hostport(address, host, sizeof(host), &port) || port <= 0 ||
        port > 65535) {
        WEFT_WARN(RDV, "weft_server_check: invalid server address '%s' "
                       "(expected HOST:PORT or [IPV6]:PORT)",
                  address ? address : "(null)");
        return WEFT_ERR_INVALID_ARG;
    }
    WEFT_CHECK(wf_config_load(&cfg, NULL));
    uint64_t nonce = wf_time_ms() ^ ((uint64_t)getpid() << 32);
    probe_job(job, sizeof(job), nonce);
    weft_status_t st = wf_store_open(address, job, cfg.token,
                                     WF_MAX(timeout_ms, (int64_t)1), &s);
    memset(cfg.token, 0, sizeof(cfg.token));
    if (st == WEFT_OK)
        st = probe(s, address, nonce, WF_MAX(timeout_ms, (int64_t)1));
    wf_store_close(s);
    return st;
}
