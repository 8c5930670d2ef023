/*
 * rdv_server.h - internals shared by the rendezvous server's event loop
 * (rdv_server.c: sockets, framing, timers) and its job tables
 * (rdv_jobs.c: HELLO, key/value requests, parked GET/WAIT).
 *
 * Everything here runs on the server thread only; nothing is locked.
 */
#ifndef WF_RDV_SERVER_H
#define WF_RDV_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "config.h"
#include "rdv/rdv_proto.h"
#include "rdv/store_impl.h"
/* How long a connection closed for a protocol error lingers to let its
 * ERROR reply reach the client before the socket is reset. */
#define WF_RDV_LINGER_MS 2000

typedef struct wf_rdv_job wf_rdv_job_t;
typedef struct wf_rdv_conn wf_rdv_conn_t;

typedef enum {
    WF_RDV_CONN_OPEN = 0,
    WF_RDV_CONN_FAILED, /* ERROR reply queued; linger starts after flush */
    WF_RDV_CONN_LINGER, /* error sent, write side shut, draining input */
    WF_RDV_CONN_DEAD    /* closed, freed at the end of the loop iteration */
} wf_rdv_conn_state_t;

struct wf_rdv_conn {
    int fd;
    wf_rdv_conn_state_t state;
    char peer[64]; /* "HOST:PORT" of the client, for messages */
    uint8_t *rbuf; /* received bytes not yet handled */
    size_t rlen, rcap;
    wf_rdv_buf_t out; /* replies not yet written */
    uint32_t events;  /* epoll interest currently registered */
    uint64_t since_ms; /* start of the partial frame / connection / linger */
    wf_rdv_job_t *job; /* NULL until authenticated (WELCOME sent) */

    /* Between HELLO and AUTH (rdv_auth.c). */
    bool challenged;
    char hello_job[WF_RDV_JOB_MAX + 1];
    uint32_t hello_flags;
    uint8_t nonce_c[WF_AUTH_NONCE_LEN], nonce_s[WF_AUTH_NONCE_LEN];

    /* The parked request (GET or WAIT) while park_type != 0. */
    unsigned park_type;
    uint64_t park_deadline; /* wf_time_ms(); 0 = never */
    char **park_keys;
    size_t park_nkeys, park_next; /* keys before park_next exist */
    wf_rdv_conn_t *park_prev, *park_next_conn; /* job's parked list */

    wf_rdv_conn_t *prev, *next; /* server's connection list */
    wf_rdv_conn_t *ready_next;  /* server's ready or dead list */
    bool on_ready;
};

struct wf_rdv_job {
    char id[WF_RDV_JOB_MAX + 1];
    bool keyed; /* clients prove `key`; else the job has no token */
    uint8_t key[WF_AUTH_KEY_LEN];
    size_t nclients;
    wf_kv_t kv;
    wf_rdv_conn_t *parked; /* connections with a parked GET/WAIT */
    wf_rdv_job_t *next;
};

#define WF_RDV_SERVER_MAGIC 0x77667276u

struct weft_server {
    uint32_t magic;
    int epfd, lfd, evfd;
    char address[128];
    size_t max_frame;
    /* Limits (params.def: WEFT_RDV_MAX_CONNS, _MAX_JOBS, _MAX_JOB_BYTES,
     * _STALL_TIMEOUT), read once at start. */
    size_t max_conns, max_jobs, max_job_bytes;
    uint64_t stall_ms;
    uint64_t keepalive_ms; /* WEFT_RDV_KEEPALIVE; 0 = off */
    uint64_t refuse_warned; /* wf_time_ms() of the last "too many" warning */
    /* The server's own token (WEFT_TOKEN/WEFT_TOKEN_FILE at start): every
     * job's key is derived from it and a client must prove it.  Empty: each
     * job's first client registers the job's key. */
    char token[WF_CONFIG_STR_MAX];
    bool thread_started;
    pthread_t thread;

    wf_rdv_conn_t *conns;
    size_t nconns;
    wf_rdv_job_t *jobs;
    size_t njobs;
    wf_rdv_conn_t *ready; /* woken connections with buffered frames */
    wf_rdv_conn_t *dead;  /* closed connections to free */
    uint64_t next_sweep;  /* wf_time_ms() of the next timer sweep */
    uint64_t accept_resume; /* accept paused (EMFILE) until then; 0 = not */
};

/* What a request handler asks the event loop to do with the connection. */
typedef enum {
    WF_RDV_KEEP = 0, /* reply queued (or parked); go on */
    WF_RDV_CLOSE     /* protocol error: ERROR queued and logged; close */
} wf_rdv_verdict_t;

/* ---- rdv_auth.c --------------------------------------------------------- */

/* HELLO: checks the job id and nonce, answers CHALLENGE. */
wf_rdv_verdict_t wf_rdv_auth_hello(struct weft_server *srv,
                                   wf_rdv_conn_t *conn, const wf_rdv_msg_t *m);
/* AUTH: checks the proof, joins (or creates) the job, answers WELCOME. */
wf_rdv_verdict_t wf_rdv_auth_auth(struct weft_server *srv,
                                  wf_rdv_conn_t *conn, const wf_rdv_msg_t *m);

/* ---- rdv_jobs.c --------------------------------------------------------- */

wf_rdv_job_t *wf_rdv_job_find(struct weft_server *srv, const void *id,
                              size_t n);
/* Creates a job; key is NULL for a job without a token.  NULL when out of
 * memory. */
wf_rdv_job_t *wf_rdv_job_create(struct weft_server *srv, const char *id,
                                const uint8_t *key, const char *peer);
/* Ends the frame being built in conn->out and checks it was queued (out of
 * memory: drops it and asks for the connection to be closed). */
wf_rdv_verdict_t wf_rdv_reply_end(wf_rdv_conn_t *conn);

/* Handles one complete, header-checked frame of the connection. */
wf_rdv_verdict_t wf_rdv_jobs_handle(struct weft_server *srv,
                                    wf_rdv_conn_t *conn, unsigned type,
                                    const uint8_t *payload, size_t len);
/* Unparks the connection and leaves its job (dropping the job with its
 * last client).  Called once when the connection closes. */
void wf_rdv_jobs_detach(struct weft_server *srv, wf_rdv_conn_t *conn);
/* Replies TIMEOUT to parked requests whose deadline passed; returns the
 * earliest remaining deadline (0 when none). */
uint64_t wf_rdv_jobs_expire(struct weft_server *srv, uint64_t now);
/* Frees every job (server shutdown, after all connections are gone). */
void wf_rdv_jobs_free_all(struct weft_server *srv);

/* ---- rdv_server.c -------------------------------------------------------- */

struct sockaddr;
/* "1.2.3.4:5" or "[::1]:5"; a wildcard address becomes `wildcard` when it
 * is not NULL, so the printed address is one a client can use. */
void wf_rdv_format_addr(const struct sockaddr *sa, const char *wildcard,
                        char *buf, size_t size);
/* The server thread: runs the loop until the eventfd is written. */
void *wf_rdv_server_main(void *srv);
/* Closes every connection and frees every job (after the thread ended). */
void wf_rdv_server_teardown(struct weft_server *srv);


/* Queues an ERROR reply and logs the protocol error naming the client;
 * returns WF_RDV_CLOSE for the handler to pass on. */
wf_rdv_verdict_t wf_rdv_conn_fail(wf_rdv_conn_t *conn, weft_status_t status,
                                  const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Marks a connection that was parked and now has a reply queued: the loop
 * flushes it and handles frames it buffered meanwhile. */
void wf_rdv_conn_wake(struct weft_server *srv, wf_rdv_conn_t *conn);

#endif /* WF_RDV_SERVER_H */
