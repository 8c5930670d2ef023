/*
 * fuzz_rdv_server.c - libFuzzer harness for the rendezvous server's request
 * path: frame payload decoding (rdv_proto.c), authentication (rdv_auth.c)
 * and the job handlers with parking and quotas (rdv_jobs.c).
 *
 * The input is a sequence of records {u8 conn, u8 type, u16 len, len bytes}
 * (little-endian len, cut short at the end of the input) delivered to one
 * of two fake connections of one server, as the event loop would after a
 * frame header passed its checks.  No sockets and no thread: the harness
 * calls wf_rdv_jobs_handle directly and tears everything down after each
 * input, so runs are independent and fast.  A connection closed for a
 * protocol error is replaced by a fresh one, as a reconnecting client.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_quiet.h"
#include "rdv/rdv_server.h"

#define NCONN 2

static wf_rdv_conn_t *conn_new(void)
{
    wf_rdv_conn_t *c = calloc(1, sizeof(*c));
    if (c)
        strcpy(c->peer, "fuzz:1");
    return c;
}

static void conn_drop(struct weft_server *srv, wf_rdv_conn_t *c)
{
    wf_rdv_jobs_detach(srv, c);
    wf_rdv_buf_free(&c->out);
    free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct weft_server srv;
    wf_rdv_conn_t *conns[NCONN];

    weft_set_logger(wf_fuzz_quiet, NULL);
    memset(&srv, 0, sizeof(srv));
    srv.max_frame = WF_RDV_MIN_FRAME;
    srv.max_conns = 16;
    srv.max_jobs = 2;
    srv.max_job_bytes = 4096;
    srv.stall_ms = 1000;
    /* Half the inputs run against a server with its own token. */
    if (size && (data[0] & 0x80))
        strcpy(srv.token, "fuzz-token");
    for (int i = 0; i < NCONN; i++)
        if (!(conns[i] = conn_new()))
            return 0;
    for (size_t pos = size ? 1 : 0; pos + 4 <= size;) {
        int which = data[pos] % NCONN;
        unsigned type = data[pos + 1];
        size_t len = (size_t)data[pos + 2] | (size_t)data[pos + 3] << 8;
        pos += 4;
        if (len > size - pos)
            len = size - pos;
        wf_rdv_conn_t *c = conns[which];
        if (c->park_type == 0 &&
            wf_rdv_jobs_handle(&srv, c, type, data + pos, len) ==
                WF_RDV_CLOSE) {
            conn_drop(&srv, c);
            if (!(conns[which] = conn_new()))
                break;
        }
        c = conns[which];
        if (c)
            c->out.len = 0; /* replies "sent" */
        pos += len;
        /* Parked requests time out now and then, as the sweep would. */
        if (pos % 3 == 0)
            wf_rdv_jobs_expire(&srv, UINT64_MAX);
    }
    for (int i = 0; i < NCONN; i++)
        if (conns[i])
            conn_drop(&srv, conns[i]);
    wf_rdv_jobs_free_all(&srv);
    return 0;
}
