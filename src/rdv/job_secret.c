/*
 * job_secret.c - the job's data-plane secret (bootstrap.h), which every
 * transport handshake proves (e.g. transport/tcp/tcp_conn.c), so a stray
 * or hostile connection cannot inject data into a collective.
 *
 * With a token the secret is derived from it for purpose
 * WF_AUTH_PURPOSE_DATA: ranks agree without any exchange and nothing about
 * it crosses the network.  Without a token the first rank to get here
 * creates 32 random bytes under SECRET_KEY with set-once semantics and
 * every rank uses what the store holds; the store is the trust anchor
 * then (see docs/design.md).
 */
#include <string.h>

#include "auth.h"
#include "common.h"
#include "rdv/bootstrap.h"

/* Outside the "rank/" and communicator-prefixed name spaces. */
#define SECRET_KEY "weft/job-secret"

weft_status_t wf_bootstrap_secret(wf_store_t *store, const char *job_id,
                                  const char *token,
                                  uint8_t secret[WF_AUTH_KEY_LEN])
{
    uint8_t mine[WF_AUTH_KEY_LEN], theirs[WF_AUTH_KEY_LEN + 1];
    size_t len = 0;
    bool created = false;

    if (token && *token)
        return wf_auth_derive(token, WF_AUTH_PURPOSE_DATA, job_id, secret);
    WEFT_CHECK(wf_auth_random(mine, sizeof(mine)));
    weft_status_t st = wf_store_set_once(store, SECRET_KEY, mine,
                                         sizeof(mine), &created, theirs,
                                         sizeof(theirs), &len);
    if (st == WEFT_OK && created) {
        memcpy(secret, mine, sizeof(mine));
    } else if (st == WEFT_OK && len == WF_AUTH_KEY_LEN) {
        memcpy(secret, theirs, WF_AUTH_KEY_LEN);
    } else if (st == WEFT_OK) {
        WEFT_WARN(INIT, "store %s: the job secret under '%s' has %zu bytes, "
                        "not %d: another program wrote that key",
                  wf_store_describe(store), SECRET_KEY, len, WF_AUTH_KEY_LEN);
        st = WEFT_ERR_REMOTE;
    }
    memset(mine, 0, sizeof(mine));
    memset(theirs, 0, sizeof(theirs));
    return st;
}
