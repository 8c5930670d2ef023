/*
 * rdv_auth.c - the server side of the rendezvous challenge-response
 * (rdv_proto.h): HELLO names the job and brings the client's nonce, the
 * server answers CHALLENGE with its own; AUTH proves the job's key, the
 * server answers WELCOME with its proof and the connection joins the job.
 *
 * The job's key K comes from, in order: the server's own token (every job
 * is then keyed, and a client without the token is turned away); the job,
 * when it already exists; the AUTH of the job's first client on a
 * token-less server (registration).  A job created without a token stays
 * without one; a client that brings a token to such a job, or none to a
 * keyed one, is refused rather than silently trusted.
 *
 * Every refusal is an ERROR reply plus a warning naming the client's
 * address, the job and the reason (wf_rdv_conn_fail); jobs that are
 * already running are not affected.
 */
#include <string.h>

#include "common.h"
#include "rdv/rdv_server.h"

#define ROLE_CLIENT "weft-rdv-client"
#define ROLE_SERVER "weft-rdv-server"

wf_rdv_verdict_t wf_rdv_auth_hello(struct weft_server *srv,
                                   wf_rdv_conn_t *conn, const wf_rdv_msg_t *m)
{
    char shown[64];

    if (conn->job || conn->challenged)
        return wf_rdv_conn_fail(conn, WEFT_ERR_INVALID_USAGE,
                                "second hello on one connection");
    wf_rdv_printable(m->job, m->job_len, shown, sizeof(shown));
    if (!wf_rdv_job_id_ok(m->job, m->job_len))
        return wf_rdv_conn_fail(conn, WEFT_ERR_INVALID_ARG,
                                "invalid hello: job id '%s' of %zu bytes "
                                "(1 to %d printable ASCII)",
                                shown, m->job_len, WF_RDV_JOB_MAX);
    if (m->nonce_len != WF_AUTH_NONCE_LEN)
        return wf_rdv_conn_fail(conn, WEFT_ERR_INVALID_ARG,
                                "invalid hello for job %s: nonce of %zu "
                                "bytes (expected %d)",
                                shown, m->nonce_len, WF_AUTH_NONCE_LEN);
    if (wf_auth_random(conn->nonce_s, sizeof(conn->nonce_s)) != WEFT_OK)
        return wf_rdv_conn_fail(conn, WEFT_ERR_SYSTEM,
                                "no random nonce for the challenge");
    memcpy(conn->hello_job, m->job, m->job_len);
    conn->hello_job[m->job_len] = '\0';
    memcpy(conn->nonce_c, m->nonce, WF_AUTH_NONCE_LEN);
    conn->hello_flags = m->flags;
    conn->challenged = true;

    const wf_rdv_job_t *job = wf_rdv_job_find(srv, m->job, m->job_len);
    uint32_t flags = 0;
    if (*srv->token || (job && job->keyed))
        flags |= WF_RDV_CHALLENGE_KEYED;
    else if (!job && (m->flags & WF_RDV_HELLO_TOKEN))
        flags |= WF_RDV_CHALLENGE_REGISTER;
    wf_rdv_frame_begin(&conn->out, WF_RDV_CHALLENGE);
    wf_rdv_put_bytes(&conn->out, conn->nonce_s, sizeof(conn->nonce_s));
    wf_rdv_put_u32(&conn->out, flags);
    return wf_rdv_reply_end(conn);
}

/* The key clients of the job must prove: *key NULL for a job without a
 * token.  False (ERROR queued) when the registration field is malformed. */
static bool job_key(struct weft_server *srv, wf_rdv_conn_t *conn,
                    const wf_rdv_job_t *job, const wf_rdv_msg_t *m,
                    uint8_t buf[WF_AUTH_KEY_LEN], const uint8_t **key)
{
    *key = NULL;
    if (*srv->token) {
        if (wf_auth_derive(srv->token, WF_AUTH_PURPOSE_RDV, conn->hello_job,
                           buf) != WEFT_OK) {
            wf_rdv_conn_fail(conn, WEFT_ERR_INTERNAL, "key derivation failed");
            return false;
        }
        *key = buf;
    } else if (job) {
        *key = job->keyed ? job->key : NULL;
    } else if (m->reg_key_len == WF_AUTH_KEY_LEN) {
        memcpy(buf, m->reg_key, WF_AUTH_KEY_LEN);
        *key = buf;
    } else if (m->reg_key_len != 0) {
        wf_rdv_conn_fail(conn, WEFT_ERR_INVALID_ARG,
                         "auth for job %s: registration key of %zu bytes "
                         "(expected %d)", conn->hello_job, m->reg_key_len,
                         WF_AUTH_KEY_LEN);
        return false;
    }
    return true;
}

/* Checks the client's proof against key; queues the refusal when it
 * fails. */
static bool proof_ok(wf_rdv_conn_t *conn, const uint8_t *key,
                     const wf_rdv_msg_t *m)
{
    bool has_token = conn->hello_flags & WF_RDV_HELLO_TOKEN;
    uint8_t want[WF_AUTH_MAC_LEN];

    if (key && !has_token) {
        wf_rdv_conn_fail(conn, WEFT_ERR_AUTH,
                         "unauthenticated client for job %s: the job "
                         "requires a token (WEFT_TOKEN or WEFT_TOKEN_FILE) "
                         "and the client has none", conn->hello_job);
        return false;
    }
    if (!key && has_token) {
        wf_rdv_conn_fail(conn, WEFT_ERR_AUTH,
                         "job %s was started without a token but this "
                         "client has one (set the same WEFT_TOKEN on every "
                         "rank)", conn->hello_job);
        return false;
    }
    if (!key)
        return true;
    if (m->proof_len != WF_AUTH_MAC_LEN ||
        wf_rdv_proof(key, ROLE_CLIENT, conn->hello_job,
                     strlen(conn->hello_job), conn->nonce_c, conn->nonce_s,
                     want) != WEFT_OK ||
        !wf_auth_equal(want, m->proof, WF_AUTH_MAC_LEN)) {
        wf_rdv_conn_fail(conn, WEFT_ERR_AUTH,
                         "wrong token for job %s: the client's proof does "
                         "not match (check WEFT_TOKEN / WEFT_TOKEN_FILE)",
                         conn->hello_job);
        return false;
    }
    return true;
}

wf_rdv_verdict_t wf_rdv_auth_auth(struct weft_server *srv,
                                  wf_rdv_conn_t *conn, const wf_rdv_msg_t *m)
{
    uint8_t buf[WF_AUTH_KEY_LEN], proof[WF_AUTH_MAC_LEN];
    const uint8_t *key;

    if (!conn->challenged || conn->job)
        return wf_rdv_conn_fail(conn, WEFT_ERR_INVALID_USAGE,
                                conn->job ? "second auth on one connection"
                                          : "auth before hello");
    wf_rdv_job_t *job = wf_rdv_job_find(srv, conn->hello_job,
                                        strlen(conn->hello_job));
    if (!job_key(srv, conn, job, m, buf, &key) || !proof_ok(conn, key, m))
        return WF_RDV_CLOSE;
    if (!job && srv->njobs >= srv->max_jobs)
        return wf_rdv_conn_fail(conn, WEFT_ERR_NO_MEMORY,
                                "cannot create job %s: the server holds "
                                "%zu jobs, its limit (WEFT_RDV_MAX_JOBS)",
                                conn->hello_job, srv->njobs);
    if (!job && !(job = wf_rdv_job_create(srv, conn->hello_job, key,
                                          conn->peer)))
        return wf_rdv_conn_fail(conn, WEFT_ERR_NO_MEMORY,
                                "out of memory creating job %s",
                                conn->hello_job);
    job->nclients++;
    conn->job = job;
    conn->challenged = false;
    WEFT_DEBUG(RDV, "rendezvous server: %s joined job %s (%zu clients, %s)",
               conn->peer, job->id, job->nclients,
               key ? "authenticated" : "no token");
    wf_rdv_frame_begin(&conn->out, WF_RDV_WELCOME);
    if (key && wf_rdv_proof(key, ROLE_SERVER, job->id, strlen(job->id),
                            conn->nonce_c, conn->nonce_s, proof) == WEFT_OK)
        wf_rdv_put_bytes(&conn->out, proof, sizeof(proof));
    else
        wf_rdv_put_bytes(&conn->out, NULL, 0);
    memset(buf, 0, sizeof(buf));
    return wf_rdv_reply_end(conn);
}
