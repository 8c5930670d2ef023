/*
 * store_tcp.c - "HOST:PORT" / "tcp://HOST:PORT": the client of a
 * weft-rendezvous server (rdv_server.c), speaking rdv_proto.h.
 *
 * The protocol has one request in flight per connection and the server
 * parks a GET until its key appears, so a thread blocked in a get would
 * hold the connection for the whole wait.  To let another thread set that
 * very key through the same handle, the handle keeps a small pool of
 * connections: a call takes an idle one (or opens one), uses it alone and
 * puts it back.  The first connection, opened by wf_store_open, keeps the
 * job alive on the server for as long as the handle lives.
 *
 * Every call has a deadline (its wait plus the open timeout), so a hung
 * server costs a timeout, never a hang.  A connection whose reply was not
 * read completely, or that the server announced it closes, is discarded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "common.h"
#include "config.h"
#include "rdv/rdv_proto.h"
#include "rdv/store_impl.h"

#define DEFAULT_IO_MS 30000
#define RETRY_MIN_MS 10
#define RETRY_MAX_MS 500
#define POOL_IDLE_MAX 2
#define WAIT_MS_MAX 0x7fffffff /* what one GET/WAIT may ask the server */

typedef struct tcp_conn {
    struct tcp_conn *next;
    int fd;
    bool broken;     /* the stream is out of step: do not reuse */
    wf_rdv_buf_t out; /* the request */
    uint8_t *in;     /* the reply payload */
    size_t in_cap;
} tcp_conn_t;

typedef struct {
    pthread_mutex_t lock; /* guards idle/nidle */
    tcp_conn_t *idle;
    size_t nidle;
    char addr[300]; /* as given, for messages */
    char host[256];
    int port;
    char job[WF_RDV_JOB_MAX + 1];
    bool has_token;
    uint8_t key[WF_AUTH_KEY_LEN]; /* the job's rendezvous key, from the token */
    int64_t timeout_ms;
    size_t max_frame;
    char local_ip[INET6_ADDRSTRLEN];
    char desc[512];
} tcp_store_t;

/* ---- socket I/O -------------------------------------------------------- */

static weft_status_t io_wait(int fd, short events, uint64_t deadline,
                             char *why, size_t n)
{
    struct pollfd p = {.fd = fd, .events = events};

    for (;;) {
        uint64_t now = wf_time_ms();
        if (now >= deadline) {
            snprintf(why, n, "no reply before the deadline");
            return WEFT_ERR_TIMEOUT;
        }
        int ms = (int)WF_MIN(deadline - now, (uint64_t)1000);
        int rc = poll(&p, 1, ms);
        if (rc > 0)
            return WEFT_OK;
        if (rc < 0 && errno != EINTR) {
            snprintf(why, n, "poll: %s", wf_errno_str(errno));
            return WEFT_ERR_SYSTEM;
        }
    }
}

static weft_status_t io_send(int fd, const uint8_t *p, size_t len,
                             uint64_t deadline, char *why, size_t n)
{
    while (len > 0) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            len -= (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            WEFT_CHECK(io_wait(fd, POLLOUT, deadline, why, n));
        } else if (w < 0 && errno != EINTR) {
            snprintf(why, n, "send: %s", wf_errno_str(errno));
            return WEFT_ERR_REMOTE;
        }
    }
    return WEFT_OK;
}

static weft_status_t io_recv(int fd, uint8_t *p, size_t len,
                             uint64_t deadline, char *why, size_t n)
{
    while (len > 0) {
        ssize_t r = recv(fd, p, len, 0);
        if (r > 0) {
            p += r;
            len -= (size_t)r;
        } else if (r == 0) {
            snprintf(why, n, "the server closed the connection");
            return WEFT_ERR_REMOTE;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            WEFT_CHECK(io_wait(fd, POLLIN, deadline, why, n));
        } else if (errno != EINTR) {
            snprintf(why, n, "recv: %s", wf_errno_str(errno));
            return WEFT_ERR_REMOTE;
        }
    }
    return WEFT_OK;
}

/* Sends c->out and reads one reply into *r (fields point into c->in).
 * The connection counts as broken until the whole reply is in. */
static weft_status_t roundtrip(tcp_store_t *t, tcp_conn_t *c,
                               uint64_t deadline, wf_rdv_msg_t *r, char *why,
                               size_t n)
{
    uint8_t head[WF_RDV_HDR_SIZE];
    wf_rdv_hdr_t h;

    c->broken = true;
    WEFT_CHECK(io_send(c->fd, c->out.data, c->out.len, deadline, why, n));
    WEFT_CHECK(io_recv(c->fd, head, sizeof(head), deadline, why, n));
    wf_rdv_hdr_decode(head, &h);
    if (!wf_rdv_hdr_check(&h, t->max_frame, why, n))
        return WEFT_ERR_REMOTE;
    if (h.length > c->in_cap) {
        uint8_t *p = realloc(c->in, h.length);
        if (!p) {
            snprintf(why, n, "out of memory for a %u-byte reply", h.length);
            return WEFT_ERR_NO_MEMORY;
        }
        c->in = p;
        c->in_cap = h.length;
    }
    WEFT_CHECK(io_recv(c->fd, c->in, h.length, deadline, why, n));
    if (!wf_rdv_decode(h.type, c->in, h.length, r, why, n))
        return WEFT_ERR_REMOTE;
    c->broken = (r->type == WF_RDV_ERROR &&
                 (r->flags & WF_RDV_ERROR_CLOSING));
    return WEFT_OK;
}

/* ---- connections ------------------------------------------------------- */

static void conn_free(tcp_conn_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    wf_rdv_buf_free(&c->out);
    free(c->in);
    free(c);
}

/* One connect attempt to every address of the host.  WEFT_ERR_AGAIN with
 * the last error in why when none answered. */
static weft_status_t connect_once(tcp_store_t *t, uint64_t deadline, int *fd,
                                  char *why, size_t n)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char port[16];
    int one = 1;

    snprintf(port, sizeof(port), "%d", t->port);
    int rc = getaddrinfo(t->host, port, &hints, &res);
    if (rc != 0) {
        snprintf(why, n, "cannot resolve %s: %s", t->host, gai_strerror(rc));
        return WEFT_ERR_AGAIN;
    }
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int s = socket(ai->ai_family,
                       SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (s < 0) {
            snprintf(why, n, "socket: %s", wf_errno_str(errno));
            continue;
        }
        int err = 0;
        socklen_t len = sizeof(err);
        if (connect(s, ai->ai_addr, ai->ai_addrlen) != 0)
            err = errno;
        if (err == EINPROGRESS) {
            if (io_wait(s, POLLOUT, deadline, why, n) != WEFT_OK)
                err = ETIMEDOUT;
            else if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
                err = errno;
        }
        if (err == 0) {
            setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            freeaddrinfo(res);
            *fd = s;
            return WEFT_OK;
        }
        snprintf(why, n, "connect: %s", wf_errno_str(err));
        close(s);
    }
    freeaddrinfo(res);
    return WEFT_ERR_AGAIN;
}

/* A refusal from the server: logged, final. */
static weft_status_t refused(tcp_store_t *t, const wf_rdv_msg_t *r,
                             const char *step)
{
    char text[WF_RDV_ERRMSG_MAX];

    if (r->type == WF_RDV_ERROR) {
        wf_rdv_printable(r->text, r->text_len, text, sizeof(text));
        WEFT_WARN(RDV, "store %s: the rendezvous server at %s refused job "
                       "%s: %s", t->desc, t->addr, t->job, text);
        return r->code < 0 ? (weft_status_t)r->code : WEFT_ERR_REMOTE;
    }
    WEFT_WARN(RDV, "store %s: the server at %s answered %s with %s (not a "
                   "weft-rendezvous server of this version?)", t->desc,
              t->addr, step, wf_rdv_type_name(r->type));
    return WEFT_ERR_REMOTE;
}

/* AUTH after the server's CHALLENGE: our proof, and the job's key when the
 * server asks a new job to register it. */
static weft_status_t send_auth(tcp_store_t *t, tcp_conn_t *c,
                               const uint8_t *nonce_c, const wf_rdv_msg_t *ch)
{
    uint8_t proof[WF_AUTH_MAC_LEN];
    bool reg = t->has_token && (ch->flags & WF_RDV_CHALLENGE_REGISTER);

    c->out.len = 0;
    wf_rdv_frame_begin(&c->out, WF_RDV_AUTH);
    if (t->has_token) {
        WEFT_CHECK(wf_rdv_proof(t->key, "weft-rdv-client", t->job,
                                strlen(t->job), nonce_c, ch->nonce, proof));
        wf_rdv_put_bytes(&c->out, proof, sizeof(proof));
    } else {
        wf_rdv_put_bytes(&c->out, NULL, 0);
    }
    wf_rdv_put_bytes(&c->out, reg ? t->key : NULL, reg ? WF_AUTH_KEY_LEN : 0);
    if (wf_rdv_frame_end(&c->out) != WEFT_OK) {
        WEFT_WARN(RDV, "store %s: out of memory", t->desc);
        return WEFT_ERR_NO_MEMORY;
    }
    return WEFT_OK;
}

/* The server's WELCOME proves it knows the job's key too, so a stray or
 * fake server cannot pose as the rendezvous of a job with a token. */
static weft_status_t check_welcome(tcp_store_t *t, const uint8_t *nonce_c,
                                   const uint8_t *nonce_s,
                                   const wf_rdv_msg_t *r)
{
    uint8_t want[WF_AUTH_MAC_LEN];

    if (!t->has_token)
        return WEFT_OK;
    if (r->proof_len == WF_AUTH_MAC_LEN &&
        wf_rdv_proof(t->key, "weft-rdv-server", t->job, strlen(t->job),
                     nonce_c, nonce_s, want) == WEFT_OK &&
        wf_auth_equal(want, r->proof, WF_AUTH_MAC_LEN))
        return WEFT_OK;
    WEFT_WARN(RDV, "store %s: the server at %s could not prove it knows the "
                   "token of job %s: not the rendezvous server of this job",
              t->desc, t->addr, t->job);
    return WEFT_ERR_AUTH;
}

/* HELLO, CHALLENGE, AUTH, WELCOME on a fresh connection (rdv_proto.h).  A
 * refusal (wrong token, bad job id) is final; I/O trouble is
 * WEFT_ERR_AGAIN so the caller retries. */
static weft_status_t conn_hello(tcp_store_t *t, tcp_conn_t *c,
                                uint64_t deadline, char *why, size_t n)
{
    uint8_t nonce_c[WF_AUTH_NONCE_LEN], nonce_s[WF_AUTH_NONCE_LEN];
    wf_rdv_msg_t r;

    WEFT_CHECK(wf_auth_random(nonce_c, sizeof(nonce_c)));
    c->out.len = 0;
    wf_rdv_frame_begin(&c->out, WF_RDV_HELLO);
    wf_rdv_put_str(&c->out, t->job);
    wf_rdv_put_bytes(&c->out, nonce_c, sizeof(nonce_c));
    wf_rdv_put_u32(&c->out, t->has_token ? WF_RDV_HELLO_TOKEN : 0);
    if (wf_rdv_frame_end(&c->out) != WEFT_OK) {
        WEFT_WARN(RDV, "store %s: out of memory", t->desc);
        return WEFT_ERR_NO_MEMORY;
    }
    if (roundtrip(t, c, deadline, &r, why, n) != WEFT_OK)
        return WEFT_ERR_AGAIN;
    if (r.type != WF_RDV_CHALLENGE || r.nonce_len != WF_AUTH_NONCE_LEN)
        return refused(t, &r, "hello");
    memcpy(nonce_s, r.nonce, sizeof(nonce_s));
    WEFT_CHECK(send_auth(t, c, nonce_c, &r));
    if (roundtrip(t, c, deadline, &r, why, n) != WEFT_OK)
        return WEFT_ERR_AGAIN;
    if (r.type != WF_RDV_WELCOME)
        return refused(t, &r, "auth");
    return check_welcome(t, nonce_c, nonce_s, &r);
}

/* Connects and says HELLO, retrying until the open timeout: the server may
 * still be starting (e.g. on rank 0). */
static weft_status_t conn_open(tcp_store_t *t, tcp_conn_t **out)
{
    uint64_t deadline = wf_store_deadline(t->timeout_ms);
    int delay = RETRY_MIN_MS;
    char why[WF_RDV_ERRMSG_MAX] = "no attempt made";
    weft_status_t st;

    do {
        /* Even with no time left, one attempt gets a moment to connect. */
        uint64_t attempt = WF_MAX(deadline, wf_time_ms() + 100);
        tcp_conn_t *c = calloc(1, sizeof(*c));
        if (!c) {
            WEFT_WARN(RDV, "store %s: out of memory", t->desc);
            return WEFT_ERR_NO_MEMORY;
        }
        c->fd = -1;
        st = connect_once(t, attempt, &c->fd, why, sizeof(why));
        if (st == WEFT_OK)
            st = conn_hello(t, c, attempt, why, sizeof(why));
        if (st == WEFT_OK) {
            *out = c;
            return WEFT_OK;
        }
        conn_free(c);
        if (st != WEFT_ERR_AGAIN)
            return st;
    } while (wf_store_backoff(deadline, &delay, RETRY_MAX_MS));
    WEFT_WARN(RDV, "store %s: cannot reach the rendezvous server at %s "
                   "within %lld ms: %s", t->desc, t->addr,
              (long long)WF_MAX(t->timeout_ms, 0), why);
    return WEFT_ERR_TIMEOUT;
}

static weft_status_t conn_acquire(tcp_store_t *t, tcp_conn_t **out)
{
    tcp_conn_t *c;

    pthread_mutex_lock(&t->lock);
    c = t->idle;
    if (c) {
        t->idle = c->next;
        t->nidle--;
    }
    pthread_mutex_unlock(&t->lock);
    if (!c)
        WEFT_CHECK(conn_open(t, &c));
    c->out.len = 0;
    *out = c;
    return WEFT_OK;
}

static void conn_release(tcp_store_t *t, tcp_conn_t *c)
{
    if (!c->broken) {
        pthread_mutex_lock(&t->lock);
        if (t->nidle < POOL_IDLE_MAX) {
            c->next = t->idle;
            t->idle = c;
            t->nidle++;
            c = NULL;
        }
        pthread_mutex_unlock(&t->lock);
    }
    if (c)
        conn_free(c);
}

/* ---- calls ------------------------------------------------------------- */

/* Finishes the request in c->out, runs it and checks the reply is not an
 * ERROR.  Errors are logged here, naming the operation and key. */
static weft_status_t call(tcp_store_t *t, tcp_conn_t *c, const char *op,
                          const char *key, uint32_t wait_ms, wf_rdv_msg_t *r)
{
    char why[WF_RDV_ERRMSG_MAX];
    uint64_t io_ms = t->timeout_ms > 0 ? (uint64_t)t->timeout_ms
                                       : DEFAULT_IO_MS;

    if (wf_rdv_frame_end(&c->out) != WEFT_OK) {
        WEFT_WARN(RDV, "store %s: out of memory", t->desc);
        return WEFT_ERR_NO_MEMORY;
    }
    weft_status_t st = roundtrip(t, c, wf_time_ms() + io_ms + wait_ms, r, why,
                                 sizeof(why));
    if (st != WEFT_OK) {
        WEFT_WARN(RDV, "store %s: %s of key '%s' failed: %s", t->desc, op,
                  key, why);
        return st;
    }
    if (r->type != WF_RDV_ERROR)
        return WEFT_OK;
    wf_rdv_printable(r->text, r->text_len, why, sizeof(why));
    WEFT_WARN(RDV, "store %s: the server refused %s of key '%s': %s",
              t->desc, op, key, why);
    return r->code < 0 ? (weft_status_t)r->code : WEFT_ERR_REMOTE;
}

static weft_status_t unexpected(tcp_store_t *t, tcp_conn_t *c,
                                const char *op, const char *key,
                                const wf_rdv_msg_t *r)
{
    WEFT_WARN(RDV, "store %s: unexpected %s reply to %s of key '%s'",
              t->desc, wf_rdv_type_name(r->type), op, key);
    c->broken = true;
    return WEFT_ERR_REMOTE;
}

static uint32_t wait_ms_of(int64_t timeout_ms)
{
    return (uint32_t)WF_MIN(WF_MAX(timeout_ms, 0), (int64_t)WAIT_MS_MAX);
}

static weft_status_t tcp_set(void *impl, const char *key, const void *value,
                             size_t len)
{
    tcp_store_t *t = impl;
    tcp_conn_t *c;
    wf_rdv_msg_t r;

    WEFT_CHECK(conn_acquire(t, &c));
    wf_rdv_frame_begin(&c->out, WF_RDV_SET);
    wf_rdv_put_str(&c->out, key);
    wf_rdv_put_bytes(&c->out, value, len);
    weft_status_t st = call(t, c, "set", key, 0, &r);
    if (st == WEFT_OK && r.type != WF_RDV_OK)
        st = unexpected(t, c, "set", key, &r);
    conn_release(t, c);
    return st;
}

static weft_status_t tcp_set_once(void *impl, const char *key,
                                  const void *value, size_t len,
                                  bool *created, void *existing, size_t cap,
                                  size_t *existing_len)
{
    tcp_store_t *t = impl;
    tcp_conn_t *c;
    wf_rdv_msg_t r;

    WEFT_CHECK(conn_acquire(t, &c));
    wf_rdv_frame_begin(&c->out, WF_RDV_SET_ONCE);
    wf_rdv_put_str(&c->out, key);
    wf_rdv_put_bytes(&c->out, value, len);
    weft_status_t st = call(t, c, "set_once", key, 0, &r);
    if (st == WEFT_OK && r.type == WF_RDV_CREATED) {
        *created = true;
    } else if (st == WEFT_OK && r.type == WF_RDV_EXISTS) {
        st = wf_store_copy_value(t->desc, key, r.value, r.value_len,
                                 existing, cap, existing_len);
        if (st == WEFT_OK)
            *created = false;
    } else if (st == WEFT_OK) {
        st = unexpected(t, c, "set_once", key, &r);
    }
    conn_release(t, c);
    return st;
}

static weft_status_t tcp_get(void *impl, const char *key, void *value,
                             size_t cap, size_t *len, int64_t timeout_ms)
{
    tcp_store_t *t = impl;
    uint32_t wait_ms = wait_ms_of(timeout_ms);
    tcp_conn_t *c;
    wf_rdv_msg_t r;

    WEFT_CHECK(conn_acquire(t, &c));
    wf_rdv_frame_begin(&c->out, WF_RDV_GET);
    wf_rdv_put_str(&c->out, key);
    wf_rdv_put_u32(&c->out, wait_ms);
    weft_status_t st = call(t, c, "get", key, wait_ms, &r);
    if (st == WEFT_OK && r.type == WF_RDV_VALUE)
        st = wf_store_copy_value(t->desc, key, r.value, r.value_len, value,
                                 cap, len);
    else if (st == WEFT_OK && r.type == WF_RDV_TIMEOUT)
        st = wf_store_timeout(t->desc, key, timeout_ms);
    else if (st == WEFT_OK)
        st = unexpected(t, c, "get", key, &r);
    conn_release(t, c);
    return st;
}

/* How many keys from keys[0] fit in one WAIT frame (at least one). */
static size_t wait_batch(const tcp_store_t *t, const char *const *keys,
                         size_t nkeys)
{
    size_t size = WF_RDV_HDR_SIZE + 8, i;

    for (i = 0; i < nkeys; i++) {
        size += 4 + strlen(keys[i]);
        if (size > t->max_frame && i > 0)
            break;
    }
    return i;
}

/* One WAIT for a batch of keys; *missing gets the key still missing when
 * the server answers TIMEOUT. */
static weft_status_t wait_once(tcp_store_t *t, const char *const *keys,
                               size_t n, uint32_t wait_ms, char *missing)
{
    tcp_conn_t *c;
    wf_rdv_msg_t r;

    WEFT_CHECK(conn_acquire(t, &c));
    wf_rdv_frame_begin(&c->out, WF_RDV_WAIT);
    wf_rdv_put_u32(&c->out, wait_ms);
    wf_rdv_put_u32(&c->out, (uint32_t)n);
    for (size_t i = 0; i < n; i++)
        wf_rdv_put_str(&c->out, keys[i]);
    weft_status_t st = call(t, c, "wait", keys[0], wait_ms, &r);
    if (st == WEFT_OK && r.type == WF_RDV_TIMEOUT) {
        wf_rdv_printable(r.key, WF_MIN(r.key_len, (size_t)WF_STORE_KEY_MAX),
                         missing, WF_STORE_KEY_MAX + 1);
        st = WEFT_ERR_TIMEOUT;
    } else if (st == WEFT_OK && r.type != WF_RDV_OK) {
        st = unexpected(t, c, "wait", keys[0], &r);
    }
    conn_release(t, c);
    return st;
}

static weft_status_t tcp_wait(void *impl, const char *const *keys,
                              size_t nkeys, int64_t timeout_ms)
{
    tcp_store_t *t = impl;
    uint64_t deadline = wf_store_deadline(timeout_ms);
    char missing[WF_STORE_KEY_MAX + 1];

    /* Keys never vanish, so batches may be waited for one after another
     * within the one deadline. */
    for (size_t i = 0; i < nkeys;) {
        size_t n = wait_batch(t, keys + i, nkeys - i);
        uint64_t now = wf_time_ms();
        uint32_t wait_ms = wait_ms_of(
            deadline > now ? (int64_t)(deadline - now) : 0);
        weft_status_t st = wait_once(t, keys + i, n, wait_ms, missing);
        if (st == WEFT_ERR_TIMEOUT)
            return wf_store_timeout(t->desc, missing, timeout_ms);
        WEFT_CHECK(st);
        i += n;
    }
    return WEFT_OK;
}

static weft_status_t tcp_add(void *impl, const char *key, int64_t delta,
                             int64_t *result)
{
    tcp_store_t *t = impl;
    tcp_conn_t *c;
    wf_rdv_msg_t r;

    WEFT_CHECK(conn_acquire(t, &c));
    wf_rdv_frame_begin(&c->out, WF_RDV_ADD);
    wf_rdv_put_str(&c->out, key);
    wf_rdv_put_i64(&c->out, delta);
    weft_status_t st = call(t, c, "add", key, 0, &r);
    if (st == WEFT_OK && r.type == WF_RDV_INT)
        *result = r.num;
    else if (st == WEFT_OK)
        st = unexpected(t, c, "add", key, &r);
    conn_release(t, c);
    return st;
}

/* ---- open / close ------------------------------------------------------ */

static bool tcp_local_ip(void *impl, char *ip, size_t len)
{
    tcp_store_t *t = impl;

    if (!t->local_ip[0])
        return false;
    return wf_strlcpy(ip, t->local_ip, len);
}

static void tcp_close(void *impl)
{
    tcp_store_t *t = impl;

    while (t->idle) {
        tcp_conn_t *c = t->idle;
        t->idle = c->next;
        conn_free(c);
    }
    pthread_mutex_destroy(&t->lock);
    memset(t->key, 0, sizeof(t->key));
    free(t);
}

/* Remembers the address this host reaches the server from. */
static void note_local_ip(tcp_store_t *t, int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return;
    if (ss.ss_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr,
                  t->local_ip, sizeof(t->local_ip));
    else if (ss.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr,
                  t->local_ip, sizeof(t->local_ip));
}

static weft_status_t tcp_configure(tcp_store_t *t, const char *rest,
                                   const char *job_id, const char *token,
                                   int64_t timeout_ms)
{
    wf_config_t cfg;

    if (!wf_parse_hostport(rest, t->host, sizeof(t->host), &t->port) ||
        t->port <= 0 || t->port > 65535) {
        WEFT_WARN(RDV, "store %s: invalid server address '%s' (expected "
                       "HOST:PORT, tcp://HOST:PORT or [IPV6]:PORT)",
                  t->desc, rest);
        return WEFT_ERR_INVALID_ARG;
    }
    WEFT_CHECK(wf_config_load(&cfg, NULL));
    wf_strlcpy(t->addr, rest, sizeof(t->addr));
    wf_strlcpy(t->job, job_id, sizeof(t->job));
    t->has_token = token && *token;
    if (t->has_token)
        WEFT_CHECK(wf_auth_derive(token, WF_AUTH_PURPOSE_RDV, t->job, t->key));
    t->max_frame = (size_t)WF_MAX(cfg.rdv_max_frame,
                                  (uint64_t)WF_RDV_MIN_FRAME);
    t->timeout_ms = timeout_ms;
    return WEFT_OK;
}

weft_status_t wf_store_tcp_open(const char *rest, const char *job_id,
                                const char *token, int64_t timeout_ms, const char *desc,
                                void **impl)
{
    tcp_conn_t *c;
    weft_status_t st;

    tcp_store_t *t = calloc(1, sizeof(*t));
    if (!t) {
        WEFT_WARN(RDV, "store %s: out of memory", desc);
        return WEFT_ERR_NO_MEMORY;
    }
    pthread_mutex_init(&t->lock, NULL);
    wf_strlcpy(t->desc, desc, sizeof(t->desc));
    WEFT_CHECK_GOTO(tcp_configure(t, rest, job_id, token, timeout_ms), st, err);
    WEFT_CHECK_GOTO(conn_open(t, &c), st, err);
    note_local_ip(t, c->fd);
    conn_release(t, c);
    *impl = t;
    return WEFT_OK;
err:
    tcp_close(t);
    return st;
}

const wf_store_ops_t wf_store_tcp_ops = {
    .scheme = "tcp",
    .set = tcp_set,
    .set_once = tcp_set_once,
    .get = tcp_get,
    .wait = tcp_wait,
    .add = tcp_add,
    .local_ip = tcp_local_ip,
    .close = tcp_close,
};
