/*
 * rdv_jobs.c - the rendezvous server's jobs: one key space per job id,
 * the request handlers and the parked GET/WAIT requests.
 *
 * A job exists while at least one authenticated connection (rdv_auth.c)
 * belongs to it.  When the last connection of a job goes, the job and its
 * keys go with it, so a long-running server does not accumulate finished
 * jobs.  A job's keys and values are limited to srv->max_job_bytes, so one
 * job cannot take the server's memory from the others.
 *
 * A GET or WAIT whose keys are missing parks the connection: the handler
 * records the keys and the deadline and replies nothing.  Every request that
 * creates a key walks the job's parked list and completes the requests it
 * satisfied; the timer sweep (wf_rdv_jobs_expire) answers the others with
 * TIMEOUT.  Keys are never deleted, so a parked request only needs to
 * remember how many of its keys were already seen (park_next).
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "rdv/rdv_server.h"

/* ---- replies ----------------------------------------------------------- */

/* Checks that a reply was queued.  A failed allocation may leave half a
 * frame: drop it so earlier replies still go out, and have the connection
 * closed (the client would wait for a reply forever otherwise). */
static wf_rdv_verdict_t reply_check(wf_rdv_conn_t *conn, weft_status_t st)
{
    if (st == WEFT_OK)
        return WF_RDV_KEEP;
    conn->out.len = conn->out.frame_start;
    conn->out.failed = false;
    WEFT_WARN(RDV, "rendezvous server: out of memory replying to %s, "
                   "closing the connection", conn->peer);
    return WF_RDV_CLOSE;
}

wf_rdv_verdict_t wf_rdv_reply_end(wf_rdv_conn_t *conn)
{
    return reply_check(conn, wf_rdv_frame_end(&conn->out));
}

#define reply_end wf_rdv_reply_end

static wf_rdv_verdict_t reply_empty(wf_rdv_conn_t *conn, wf_rdv_type_t type)
{
    wf_rdv_frame_begin(&conn->out, type);
    return reply_end(conn);
}

static wf_rdv_verdict_t reply_bytes(wf_rdv_conn_t *conn, wf_rdv_type_t type,
                                    const void *p, size_t n)
{
    wf_rdv_frame_begin(&conn->out, type);
    wf_rdv_put_bytes(&conn->out, p, n);
    return reply_end(conn);
}

/* An ERROR reply for a request that was well formed but cannot be served
 * (e.g. ADD on text); the connection stays usable. */
static wf_rdv_verdict_t reply_error(wf_rdv_conn_t *conn, weft_status_t st,
                                    const char *message)
{
    WEFT_WARN(RDV, "rendezvous server: client %s job %s: %s", conn->peer,
              conn->job ? conn->job->id : "-", message);
    return reply_check(conn, wf_rdv_encode_error(&conn->out, st, 0, message));
}

/* ---- validation -------------------------------------------------------- */

/* Keys and values the client library never sends: a broken or hostile
 * client, so the connection is closed. */
static wf_rdv_verdict_t check_kv(wf_rdv_conn_t *conn, const wf_rdv_msg_t *m)
{
    char shown[64];

    if (m->key_len == 0 || m->key_len > WF_STORE_KEY_MAX ||
        memchr(m->key, '\0', m->key_len)) {
        wf_rdv_printable(m->key, m->key_len, shown, sizeof(shown));
        return wf_rdv_conn_fail(conn, WEFT_ERR_INVALID_ARG,
                                "invalid key '%s' of %zu bytes in %s "
                                "(1 to %d bytes, no NUL)",
                                shown, m->key_len, wf_rdv_type_name(m->type),
                                WF_STORE_KEY_MAX);
    }
    if (m->value_len > WF_STORE_VALUE_MAX)
        return wf_rdv_conn_fail(conn, WEFT_ERR_INVALID_ARG,
                                "value of %zu bytes exceeds %d bytes",
                                m->value_len, WF_STORE_VALUE_MAX);
    return WF_RDV_KEEP;
}

/* A request that would take the job past its byte quota.  Counting the
 * new bytes in full even when they replace a value keeps it simple and
 * errs on the safe side. */
static bool over_quota(const struct weft_server *srv, const wf_rdv_job_t *job,
                       size_t adding)
{
    return job->kv.bytes + adding > srv->max_job_bytes;
}

static wf_rdv_verdict_t reply_quota(const struct weft_server *srv,
                                    wf_rdv_conn_t *conn)
{
    char msg[160];

    snprintf(msg, sizeof(msg),
             "job stores %zu bytes of keys and values; the limit is %zu "
             "(WEFT_RDV_MAX_JOB_BYTES)",
             conn->job->kv.bytes, srv->max_job_bytes);
    return reply_error(conn, WEFT_ERR_NO_MEMORY, msg);
}

/* ---- jobs -------------------------------------------------------------- */

wf_rdv_job_t *wf_rdv_job_find(struct weft_server *srv, const void *id,
                              size_t n)
{
    for (wf_rdv_job_t *j = srv->jobs; j; j = j->next)
        if (strlen(j->id) == n && memcmp(j->id, id, n) == 0)
            return j;
    return NULL;
}

wf_rdv_job_t *wf_rdv_job_create(struct weft_server *srv, const char *id,
                                const uint8_t *key, const char *peer)
{
    wf_rdv_job_t *job = calloc(1, sizeof(*job));

    if (!job)
        return NULL;
    wf_strlcpy(job->id, id, sizeof(job->id));
    job->keyed = key != NULL;
    if (key)
        memcpy(job->key, key, WF_AUTH_KEY_LEN);
    wf_kv_init(&job->kv);
    job->next = srv->jobs;
    srv->jobs = job;
    srv->njobs++;
    WEFT_INFO(RDV, "rendezvous server: event=job_start job=%s peer=%s "
                   "auth=%s jobs=%zu", job->id, peer,
              key ? "token" : "none", srv->njobs);
    return job;
}

static void job_drop(struct weft_server *srv, wf_rdv_job_t *job,
                     const char *reason)
{
    for (wf_rdv_job_t **pp = &srv->jobs; *pp; pp = &(*pp)->next) {
        if (*pp == job) {
            *pp = job->next;
            break;
        }
    }
    srv->njobs--;
    WEFT_INFO(RDV, "rendezvous server: event=job_end job=%s keys=%zu "
                   "reason=%s jobs=%zu", job->id, job->kv.count, reason,
              srv->njobs);
    wf_kv_free(&job->kv);
    memset(job->key, 0, sizeof(job->key));
    free(job);
}

/* ---- parking ----------------------------------------------------------- */

static void park_free_keys(wf_rdv_conn_t *conn)
{
    for (size_t i = 0; i < conn->park_nkeys; i++)
        free(conn->park_keys[i]);
    free(conn->park_keys);
    conn->park_keys = NULL;
    conn->park_nkeys = conn->park_next = 0;
}

static void unpark(wf_rdv_conn_t *conn)
{
    wf_rdv_job_t *job = conn->job;

    if (!conn->park_type)
        return;
    if (conn->park_prev)
        conn->park_prev->park_next_conn = conn->park_next_conn;
    else
        job->parked = conn->park_next_conn;
    if (conn->park_next_conn)
        conn->park_next_conn->park_prev = conn->park_prev;
    conn->park_prev = conn->park_next_conn = NULL;
    conn->park_type = 0;
    park_free_keys(conn);
}

/* Advances past the keys that exist now; true when all of them do. */
static bool park_satisfied(wf_rdv_conn_t *conn)
{
    const wf_kv_t *kv = &conn->job->kv;

    while (conn->park_next < conn->park_nkeys) {
        const char *k = conn->park_keys[conn->park_next];
        if (!wf_kv_find(kv, k, strlen(k)))
            return false;
        conn->park_next++;
    }
    return true;
}

/* Parks the connection on keys [0, n) of `keys` (length-prefixed wire
 * keys of a WAIT, or the one key of a GET). */
static wf_rdv_verdict_t park(struct weft_server *srv, wf_rdv_conn_t *conn,
                             const wf_rdv_msg_t *m, size_t n)
{
    wf_rdv_reader_t r;
    const uint8_t *k;

    conn->park_keys = calloc(n, sizeof(char *));
    if (!conn->park_keys)
        return reply_error(conn, WEFT_ERR_NO_MEMORY, "out of memory parking");
    wf_rdv_reader_init(&r, m->keys, m->keys_len);
    for (size_t i = 0; i < n; i++) {
        size_t len = m->key_len;
        k = m->key;
        if (m->type == WF_RDV_WAIT)
            len = wf_rdv_get_bytes(&r, &k);
        conn->park_keys[i] = strndup((const char *)k, len);
        conn->park_nkeys = i + 1;
        if (!conn->park_keys[i]) {
            park_free_keys(conn);
            return reply_error(conn, WEFT_ERR_NO_MEMORY,
                               "out of memory parking");
        }
    }
    conn->park_type = m->type;
    conn->park_deadline = wf_time_ms() + m->wait_ms;
    conn->park_next_conn = conn->job->parked;
    if (conn->job->parked)
        conn->job->parked->park_prev = conn;
    conn->job->parked = conn;
    if (srv->next_sweep == 0 || conn->park_deadline < srv->next_sweep)
        srv->next_sweep = conn->park_deadline;
    /* Skip the keys that already exist: key_created only compares the
     * first missing one. */
    park_satisfied(conn);
    return WF_RDV_KEEP;
}

/* Completes a parked request whose keys all exist. */
static wf_rdv_verdict_t park_complete(wf_rdv_conn_t *conn)
{
    if (conn->park_type == WF_RDV_GET) {
        const char *k = conn->park_keys[0];
        const wf_kv_entry_t *e = wf_kv_find(&conn->job->kv, k, strlen(k));
        unpark(conn);
        return reply_bytes(conn, WF_RDV_VALUE, e->value, e->value_len);
    }
    unpark(conn);
    return reply_empty(conn, WF_RDV_OK);
}

/* A key was created in `job`: complete the parked requests it unblocks. */
static void key_created(struct weft_server *srv, wf_rdv_job_t *job,
                        const char *key)
{
    wf_rdv_conn_t *c = job->parked, *next;

    for (; c; c = next) {
        next = c->park_next_conn;
        if (strcmp(c->park_keys[c->park_next], key) != 0 ||
            !park_satisfied(c))
            continue;
        if (park_complete(c) == WF_RDV_CLOSE)
            c->state = WF_RDV_CONN_FAILED; /* reply_check logged it */
        wf_rdv_conn_wake(srv, c);
    }
}

uint64_t wf_rdv_jobs_expire(struct weft_server *srv, uint64_t now)
{
    uint64_t earliest = 0;

    for (wf_rdv_job_t *job = srv->jobs; job; job = job->next) {
        wf_rdv_conn_t *c = job->parked, *next;
        for (; c; c = next) {
            next = c->park_next_conn;
            if (now < c->park_deadline) {
                if (!earliest || c->park_deadline < earliest)
                    earliest = c->park_deadline;
                continue;
            }
            char *k = c->park_keys[c->park_next];
            c->park_keys[c->park_next] = NULL; /* keep it past unpark */
            unpark(c);
            if (reply_bytes(c, WF_RDV_TIMEOUT, k, strlen(k)) == WF_RDV_CLOSE)
                c->state = WF_RDV_CONN_FAILED; /* reply_check logged it */
            free(k);
            wf_rdv_conn_wake(srv, c);
        }
    }
    return earliest;
}

/* ---- requests ---------------------------------------------------------- */

static wf_rdv_verdict_t handle_set(struct weft_server *srv,
                                   wf_rdv_conn_t *conn, const wf_rdv_msg_t *m)
{
    wf_rdv_job_t *job = conn->job;
    wf_kv_entry_t *e = wf_kv_find(&job->kv, m->key, m->key_len);
    bool created = false;

    if (e && m->type == WF_RDV_SET_ONCE)
        return reply_bytes(conn, WF_RDV_EXISTS, e->value, e->value_len);
    if (over_quota(srv, job, m->key_len + m->value_len))
        return reply_quota(srv, conn);
    if (wf_kv_put(&job->kv, m->key, m->key_len, m->value, m->value_len,
                  &created) != WEFT_OK)
        return reply_error(conn, WEFT_ERR_NO_MEMORY,
                           "out of memory storing a key");
    wf_rdv_verdict_t v = reply_empty(
        conn, m->type == WF_RDV_SET_ONCE ? WF_RDV_CREATED : WF_RDV_OK);
    if (created)
        key_created(srv, job, wf_kv_find(&job->kv, m->key, m->key_len)->key);
    return v;
}

static wf_rdv_verdict_t handle_get(struct weft_server *srv,
                                   wf_rdv_conn_t *conn, const wf_rdv_msg_t *m)
{
    const wf_kv_entry_t *e = wf_kv_find(&conn->job->kv, m->key, m->key_len);

    if (e)
        return reply_bytes(conn, WF_RDV_VALUE, e->value, e->value_len);
    if (m->wait_ms == 0)
        return reply_bytes(conn, WF_RDV_TIMEOUT, m->key, m->key_len);
    return park(srv, conn, m, 1);
}

static wf_rdv_verdict_t handle_wait(struct weft_server *srv,
                                    wf_rdv_conn_t *conn, const wf_rdv_msg_t *m)
{
    wf_rdv_reader_t r;
    wf_rdv_msg_t km = *m;
    const uint8_t *first_missing = NULL;
    size_t missing_len = 0;

    wf_rdv_reader_init(&r, m->keys, m->keys_len);
    for (uint32_t i = 0; i < m->nkeys; i++) {
        km.key_len = wf_rdv_get_bytes(&r, &km.key);
        if (check_kv(conn, &km) == WF_RDV_CLOSE)
            return WF_RDV_CLOSE;
        if (!first_missing && !wf_kv_find(&conn->job->kv, km.key, km.key_len)) {
            first_missing = km.key;
            missing_len = km.key_len;
        }
    }
    if (!first_missing)
        return reply_empty(conn, WF_RDV_OK);
    if (m->wait_ms == 0)
        return reply_bytes(conn, WF_RDV_TIMEOUT, first_missing, missing_len);
    return park(srv, conn, m, m->nkeys);
}

static wf_rdv_verdict_t handle_add(struct weft_server *srv,
                                   wf_rdv_conn_t *conn, const wf_rdv_msg_t *m)
{
    wf_rdv_job_t *job = conn->job;
    bool created = false;
    int64_t result;
    char shown[64];

    if (over_quota(srv, job, m->key_len + 24))
        return reply_quota(srv, conn);
    weft_status_t st = wf_kv_add(&job->kv, m->key, m->key_len, m->num,
                                 &result, &created);
    if (st == WEFT_ERR_NO_MEMORY)
        return reply_error(conn, st, "out of memory storing a key");
    if (st != WEFT_OK) {
        char msg[160];
        wf_rdv_printable(m->key, m->key_len, shown, sizeof(shown));
        snprintf(msg, sizeof(msg),
                 "add on key '%s': value is not an integer or the sum "
                 "overflows", shown);
        return reply_error(conn, st, msg);
    }
    wf_rdv_frame_begin(&conn->out, WF_RDV_INT);
    wf_rdv_put_i64(&conn->out, result);
    wf_rdv_verdict_t v = reply_end(conn);
    if (created)
        key_created(srv, job, wf_kv_find(&job->kv, m->key, m->key_len)->key);
    return v;
}

wf_rdv_verdict_t wf_rdv_jobs_handle(struct weft_server *srv,
                                    wf_rdv_conn_t *conn, unsigned type,
                                    const uint8_t *payload, size_t len)
{
    wf_rdv_msg_t m;
    char why[160];

    if (!wf_rdv_decode(type, payload, len, &m, why, sizeof(why)))
        return wf_rdv_conn_fail(conn, WEFT_ERR_INVALID_ARG, "%s", why);
    if (type >= 0x80)
        return wf_rdv_conn_fail(conn, WEFT_ERR_INVALID_USAGE,
                                "%s is a reply, not a request",
                                wf_rdv_type_name(type));
    if (type == WF_RDV_HELLO)
        return wf_rdv_auth_hello(srv, conn, &m);
    if (type == WF_RDV_AUTH)
        return wf_rdv_auth_auth(srv, conn, &m);
    if (!conn->job)
        return wf_rdv_conn_fail(conn, WEFT_ERR_INVALID_USAGE,
                                "%s before hello and auth (a connection "
                                "must authenticate for its job first)",
                                wf_rdv_type_name(type));
    if (type != WF_RDV_WAIT && check_kv(conn, &m) == WF_RDV_CLOSE)
        return WF_RDV_CLOSE;
    switch (type) {
    case WF_RDV_SET:
    case WF_RDV_SET_ONCE:
        return handle_set(srv, conn, &m);
    case WF_RDV_GET:
        return handle_get(srv, conn, &m);
    case WF_RDV_WAIT:
        return handle_wait(srv, conn, &m);
    default:
        return handle_add(srv, conn, &m);
    }
}

void wf_rdv_jobs_detach(struct weft_server *srv, wf_rdv_conn_t *conn)
{
    wf_rdv_job_t *job = conn->job;

    if (!job)
        return;
    unpark(conn);
    conn->job = NULL;
    if (--job->nclients == 0)
        job_drop(srv, job, "last_client_left");
}

void wf_rdv_jobs_free_all(struct weft_server *srv)
{
    while (srv->jobs)
        job_drop(srv, srv->jobs, "server_stopped");
}
