/*
 * test_server.c - the rendezvous server under bad and odd clients, the
 * public weft_server_* API and the weft-rendezvous binary.
 *
 * Bad input goes over raw sockets (frames built with rdv_proto.h or by
 * hand).  After each, the server must have answered ERROR or closed, must
 * have logged a warning naming the client, and a well-behaved client of
 * another job, connected before, must still be served.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth.h"
#include "common.h"
#include "rdv/rdv_proto.h"
#include "rdv/store.h"
#include "test.h"

/* ---- captured log lines ------------------------------------------------ */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[16384];

static void capture(void *ctx, weft_log_level_t level, const char *subsys,
                    const char *line)
{
    (void)ctx;
    (void)level;
    (void)subsys;
    pthread_mutex_lock(&log_lock);
    size_t n = strlen(log_text);
    snprintf(log_text + n, sizeof(log_text) - n, "%s\n", line);
    pthread_mutex_unlock(&log_lock);
    fprintf(stderr, "%s\n", line);
}

/* True when one captured line contains both a and b (b may be NULL). */
static bool log_has(const char *a, const char *b)
{
    bool found = false;

    pthread_mutex_lock(&log_lock);
    for (const char *line = log_text; *line && !found;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        char buf[2048];
        snprintf(buf, sizeof(buf), "%.*s", (int)n, line);
        found = strstr(buf, a) && (!b || strstr(buf, b));
        line += n + (end != NULL);
    }
    pthread_mutex_unlock(&log_lock);
    return found;
}

/* Waits up to 3 s for a log line containing a (and b, when not NULL). */
static void expect_log(const char *a, const char *b)
{
    for (int i = 0; i < 300; i++) {
        if (log_has(a, b))
            return;
        usleep(10000);
    }
    wf_test_fail(__FILE__, __LINE__, "no log line with '%s' and '%s' in:\n%s",
                 a, b ? b : "", log_text);
}

static void log_reset(void)
{
    pthread_mutex_lock(&log_lock);
    log_text[0] = '\0';
    pthread_mutex_unlock(&log_lock);
}

/* ---- raw client -------------------------------------------------------- */

static int raw_connect(const char *addr)
{
    char host[64];
    int port;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    struct timeval tv = {.tv_sec = 5};

    ASSERT_TRUE(wf_parse_hostport(addr, host, sizeof(host), &port));
    sa.sin_port = htons((uint16_t)port);
    ASSERT_EQ(inet_pton(AF_INET, host, &sa.sin_addr), 1);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

static void raw_send(int fd, const void *p, size_t n)
{
    ASSERT_EQ(send(fd, p, n, MSG_NOSIGNAL), (long long)n);
}

static void raw_send_buf(int fd, wf_rdv_buf_t *b)
{
    raw_send(fd, b->data, b->len);
    wf_rdv_buf_free(b);
}

/* Reads one frame: 1 with the header and payload, 0 on EOF or reset. */
static int raw_read(int fd, wf_rdv_hdr_t *h, uint8_t *payload, size_t cap)
{
    uint8_t head[WF_RDV_HDR_SIZE];
    size_t got = 0;

    while (got < sizeof(head)) {
        ssize_t r = recv(fd, head + got, sizeof(head) - got, 0);
        if (r == 0 || (r < 0 && errno == ECONNRESET))
            return 0;
        ASSERT_TRUE(r > 0); /* a timeout fails here: the server stalled */
        got += (size_t)r;
    }
    wf_rdv_hdr_decode(head, h);
    ASSERT_EQ(h->magic, WF_RDV_MAGIC);
    ASSERT_TRUE(h->length <= cap);
    for (got = 0; got < h->length;) {
        ssize_t r = recv(fd, payload + got, h->length - got, 0);
        ASSERT_TRUE(r > 0);
        got += (size_t)r;
    }
    return 1;
}

/* The client side of HELLO/CHALLENGE/AUTH (rdv_proto.h) on a raw socket:
 * returns the type of the server's answer to AUTH (WELCOME, or ERROR when
 * refused), or the answer to HELLO when that is not a CHALLENGE. */
static unsigned raw_auth(int fd, const char *job, const char *token)
{
    static const uint8_t nonce_c[WF_AUTH_NONCE_LEN] = "raw client nonce";
    uint8_t key[WF_AUTH_KEY_LEN], proof[WF_AUTH_MAC_LEN], p[512];
    bool has = token && *token;
    wf_rdv_buf_t b;
    wf_rdv_hdr_t h;
    wf_rdv_msg_t m;
    char why[128];

    wf_rdv_buf_init(&b);
    wf_rdv_frame_begin(&b, WF_RDV_HELLO);
    wf_rdv_put_str(&b, job);
    wf_rdv_put_bytes(&b, nonce_c, sizeof(nonce_c));
    wf_rdv_put_u32(&b, has ? WF_RDV_HELLO_TOKEN : 0);
    ASSERT_OK(wf_rdv_frame_end(&b));
    raw_send_buf(fd, &b);
    ASSERT_EQ(raw_read(fd, &h, p, sizeof(p)), 1);
    if (h.type != WF_RDV_CHALLENGE)
        return h.type;
    ASSERT_TRUE(wf_rdv_decode(h.type, p, h.length, &m, why, sizeof(why)));
    ASSERT_EQ(m.nonce_len, WF_AUTH_NONCE_LEN);
    wf_rdv_frame_begin(&b, WF_RDV_AUTH);
    if (has) {
        ASSERT_OK(wf_auth_derive(token, WF_AUTH_PURPOSE_RDV, job, key));
        ASSERT_OK(wf_rdv_proof(key, "weft-rdv-client", job, strlen(job),
                               nonce_c, m.nonce, proof));
        wf_rdv_put_bytes(&b, proof, sizeof(proof));
    } else {
        wf_rdv_put_bytes(&b, NULL, 0);
    }
    bool reg = has && (m.flags & WF_RDV_CHALLENGE_REGISTER);
    wf_rdv_put_bytes(&b, reg ? key : NULL, reg ? sizeof(key) : 0);
    ASSERT_OK(wf_rdv_frame_end(&b));
    raw_send_buf(fd, &b);
    ASSERT_EQ(raw_read(fd, &h, p, sizeof(p)), 1);
    return h.type;
}

static void raw_hello(int fd, const char *job, const char *token)
{
    ASSERT_EQ(raw_auth(fd, job, token), WF_RDV_WELCOME);
}

/* The server answers ERROR (with a message) and closes, or just closes. */
static void expect_error_or_close(int fd, weft_status_t *code)
{
    wf_rdv_hdr_t h;
    wf_rdv_msg_t m;
    uint8_t p[1024];
    char why[128];

    *code = WEFT_OK;
    if (raw_read(fd, &h, p, sizeof(p)) == 1) {
        ASSERT_EQ(h.type, WF_RDV_ERROR);
        ASSERT_TRUE(wf_rdv_decode(h.type, p, h.length, &m, why, sizeof(why)));
        ASSERT_TRUE(m.code < 0 && m.text_len > 0);
        ASSERT_TRUE(m.flags & WF_RDV_ERROR_CLOSING);
        *code = (weft_status_t)m.code;
        ASSERT_EQ(raw_read(fd, &h, p, sizeof(p)), 0);
    }
    close(fd);
}

/* A well-behaved client still gets prompt answers. */
static void expect_served(wf_store_t *good, const char *key)
{
    char buf[16];
    size_t len = 0;

    uint64_t t0 = wf_time_ms();
    ASSERT_OK(wf_store_set(good, key, "ok", 2));
    ASSERT_OK(wf_store_get(good, key, buf, sizeof(buf), &len, 1000));
    ASSERT_EQ(len, 2);
    ASSERT_TRUE(wf_time_ms() - t0 < 1000);
}

static void header(uint8_t *p, uint32_t magic, uint16_t version,
                   uint16_t type, uint32_t len)
{
    magic = htonl(magic);
    version = htons(version);
    type = htons(type);
    len = htonl(len);
    memcpy(p, &magic, 4);
    memcpy(p + 4, &version, 2);
    memcpy(p + 6, &type, 2);
    memcpy(p + 8, &len, 4);
}

typedef enum {
    BAD_GARBAGE,
    BAD_MAGIC,
    BAD_VERSION,
    BAD_OVERSIZED,
    BAD_GARBLED,
    BAD_BEFORE_HELLO,
    BAD_UNKNOWN_TYPE,
    BAD_REPLY_TYPE,
    BAD_TRUNCATED,
    BAD_AUTH_FIRST,
    BAD_NONCE,
    BAD_BIG_PREAUTH,
} bad_t;

/* Sends one kind of bad input; returns the log text the server must warn
 * with. */
static const char *send_bad(int fd, bad_t kind)
{
    uint8_t f[64];
    static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";

    switch (kind) {
    case BAD_GARBAGE:
        raw_send(fd, http, sizeof(http) - 1);
        return "bad magic";
    case BAD_MAGIC:
        header(f, 0xdeadbeef, WF_RDV_VERSION, WF_RDV_SET, 0);
        raw_send(fd, f, WF_RDV_HDR_SIZE);
        return "bad magic 0xdeadbeef";
    case BAD_VERSION:
        header(f, WF_RDV_MAGIC, 99, WF_RDV_HELLO, 0);
        raw_send(fd, f, WF_RDV_HDR_SIZE);
        return "version 99";
    case BAD_OVERSIZED:
        header(f, WF_RDV_MAGIC, WF_RDV_VERSION, WF_RDV_SET, 0xfffffff0u);
        raw_send(fd, f, WF_RDV_HDR_SIZE);
        return "exceeds the limit";
    case BAD_GARBLED: /* HELLO whose job length runs past the payload */
        header(f, WF_RDV_MAGIC, WF_RDV_VERSION, WF_RDV_HELLO, 8);
        memcpy(f + 12, "\0\0\x03\xe8" "abcd", 8);
        raw_send(fd, f, WF_RDV_HDR_SIZE + 8);
        return "garbled hello";
    case BAD_BEFORE_HELLO:
        header(f, WF_RDV_MAGIC, WF_RDV_VERSION, WF_RDV_ADD, 13);
        memcpy(f + 12, "\0\0\0\x01k\0\0\0\0\0\0\0\x01", 13);
        raw_send(fd, f, WF_RDV_HDR_SIZE + 13);
        return "add before hello";
    case BAD_UNKNOWN_TYPE:
        raw_hello(fd, "bad-job", "");
        header(f, WF_RDV_MAGIC, WF_RDV_VERSION, 0x77, 0);
        raw_send(fd, f, WF_RDV_HDR_SIZE);
        return "unknown message type 0x0077";
    case BAD_REPLY_TYPE:
        raw_hello(fd, "bad-job", "");
        header(f, WF_RDV_MAGIC, WF_RDV_VERSION, WF_RDV_OK, 0);
        raw_send(fd, f, WF_RDV_HDR_SIZE);
        return "is a reply";
    case BAD_TRUNCATED: /* half a header, then the client goes away */
        header(f, WF_RDV_MAGIC, WF_RDV_VERSION, WF_RDV_HELLO, 20);
        raw_send(fd, f, 7);
        usleep(50000);
        shutdown(fd, SHUT_WR);
        return "in the middle of a frame";
    case BAD_AUTH_FIRST: /* AUTH with a proof but no HELLO before it */
        header(f, WF_RDV_MAGIC, WF_RDV_VERSION, WF_RDV_AUTH, 8);
        memset(f + 12, 0, 8);
        raw_send(fd, f, WF_RDV_HDR_SIZE + 8);
        return "auth before hello";
    case BAD_NONCE: /* HELLO with a 3-byte nonce */
        header(f, WF_RDV_MAGIC, WF_RDV_VERSION, WF_RDV_HELLO, 19);
        memcpy(f + 12, "\0\0\0\x04" "jobx" "\0\0\0\x03" "abc" "\0\0\0\0", 19);
        raw_send(fd, f, WF_RDV_HDR_SIZE + 19);
        return "nonce of 3 bytes";
    case BAD_BIG_PREAUTH: /* a 64 KiB HELLO announced, nothing sent */
        header(f, WF_RDV_MAGIC, WF_RDV_VERSION, WF_RDV_HELLO, 65536);
        raw_send(fd, f, WF_RDV_HDR_SIZE);
        return "before authentication";
    }
    return "";
}

static void run_bad(bad_t kind)
{
    weft_server_t srv;
    wf_store_t *good;
    weft_status_t code;

    weft_set_logger(capture, NULL);
    ASSERT_OK(weft_server_start("127.0.0.1:0", &srv));
    const char *addr = weft_server_address(srv);
    ASSERT_OK(wf_store_open(addr, "good-job", NULL, 2000, &good));
    expect_served(good, "before");
    for (int round = 0; round < 2; round++) {
        log_reset();
        int fd = raw_connect(addr);
        const char *warning = send_bad(fd, kind);
        expect_error_or_close(fd, &code);
        if (kind != BAD_TRUNCATED) /* an ERROR reply came before the close */
            ASSERT_TRUE(code < 0);
        expect_log(warning, "127.0.0.1:"); /* names the client */
        expect_served(good, round ? "after2" : "after1");
    }
    wf_store_close(good);
    ASSERT_OK(weft_server_stop(srv));
    weft_set_logger(NULL, NULL);
}

WF_TEST(rdv_server_garbage, 20) { run_bad(BAD_GARBAGE); }
WF_TEST(rdv_server_bad_magic, 20) { run_bad(BAD_MAGIC); }
WF_TEST(rdv_server_bad_version, 20) { run_bad(BAD_VERSION); }
WF_TEST(rdv_server_oversized, 20) { run_bad(BAD_OVERSIZED); }
WF_TEST(rdv_server_garbled, 20) { run_bad(BAD_GARBLED); }
WF_TEST(rdv_server_before_hello, 20) { run_bad(BAD_BEFORE_HELLO); }
WF_TEST(rdv_server_unknown_type, 20) { run_bad(BAD_UNKNOWN_TYPE); }
WF_TEST(rdv_server_reply_as_request, 20) { run_bad(BAD_REPLY_TYPE); }
WF_TEST(rdv_server_truncated, 20) { run_bad(BAD_TRUNCATED); }
WF_TEST(rdv_server_auth_first, 20) { run_bad(BAD_AUTH_FIRST); }
WF_TEST(rdv_server_bad_nonce, 20) { run_bad(BAD_NONCE); }
/* A stranger cannot make the server reserve a large frame buffer. */
WF_TEST(rdv_server_big_frame_before_auth, 20) { run_bad(BAD_BIG_PREAUTH); }

/* A client stalled in the middle of a frame, or parked and gone, blocks
 * nobody. */
WF_TEST(rdv_server_stalled_client, 20)
{
    weft_server_t srv;
    wf_store_t *good;
    uint8_t f[WF_RDV_HDR_SIZE];
    wf_rdv_buf_t b;

    ASSERT_OK(weft_server_start("127.0.0.1:0", &srv));
    const char *addr = weft_server_address(srv);
    ASSERT_OK(wf_store_open(addr, "good-job", NULL, 2000, &good));
    int stalled = raw_connect(addr);
    raw_hello(stalled, "slow-job", "");
    header(f, WF_RDV_MAGIC, WF_RDV_VERSION, WF_RDV_SET, 1000);
    raw_send(stalled, f, sizeof(f)); /* promises 1000 bytes, sends none */
    int silent = raw_connect(addr);  /* never says hello */
    int parked = raw_connect(addr);
    raw_hello(parked, "good-job", "");
    wf_rdv_buf_init(&b);
    wf_rdv_frame_begin(&b, WF_RDV_GET);
    wf_rdv_put_str(&b, "never");
    wf_rdv_put_u32(&b, 60000);
    ASSERT_OK(wf_rdv_frame_end(&b));
    raw_send_buf(parked, &b);
    usleep(50000);
    close(parked); /* gone while parked */
    expect_served(good, "k1");
    ASSERT_OK(wf_store_set(good, "never", "now", 3)); /* no stale waiter */
    expect_served(good, "k2");
    close(stalled);
    close(silent);
    wf_store_close(good);
    ASSERT_OK(weft_server_stop(srv));
}

/* Several requests in one write are answered in order. */
WF_TEST(rdv_server_pipelined, 10)
{
    weft_server_t srv;
    wf_rdv_buf_t b;
    wf_rdv_hdr_t h;
    uint8_t p[64];

    ASSERT_OK(weft_server_start("127.0.0.1:0", &srv));
    int fd = raw_connect(weft_server_address(srv));
    raw_hello(fd, "pipe", "");
    wf_rdv_buf_init(&b);
    wf_rdv_frame_begin(&b, WF_RDV_GET); /* parks until the SET after it */
    wf_rdv_put_str(&b, "k");
    wf_rdv_put_u32(&b, 300);
    wf_rdv_frame_end(&b);
    wf_rdv_frame_begin(&b, WF_RDV_SET);
    wf_rdv_put_str(&b, "k");
    wf_rdv_put_str(&b, "v");
    wf_rdv_frame_end(&b);
    wf_rdv_frame_begin(&b, WF_RDV_ADD);
    wf_rdv_put_str(&b, "n");
    wf_rdv_put_i64(&b, 41);
    ASSERT_OK(wf_rdv_frame_end(&b));
    raw_send_buf(fd, &b);
    /* The GET times out: the SET behind it waits its turn. */
    ASSERT_EQ(raw_read(fd, &h, p, sizeof(p)), 1);
    ASSERT_EQ(h.type, WF_RDV_TIMEOUT);
    ASSERT_EQ(raw_read(fd, &h, p, sizeof(p)), 1);
    ASSERT_EQ(h.type, WF_RDV_OK);
    ASSERT_EQ(raw_read(fd, &h, p, sizeof(p)), 1);
    ASSERT_EQ(h.type, WF_RDV_INT);
    close(fd);
    ASSERT_OK(weft_server_stop(srv));
}

/* On a token-less server a job's first client registers the job's key;
 * later clients must prove the same token, and the token never appears
 * on the wire. */
WF_TEST(rdv_server_token_mismatch, 10)
{
    weft_server_t srv;
    weft_status_t code;

    weft_set_logger(capture, NULL);
    ASSERT_OK(weft_server_start("127.0.0.1:0", &srv));
    int first = raw_connect(weft_server_address(srv));
    raw_hello(first, "secret-job", "s3cret");
    int second = raw_connect(weft_server_address(srv));
    log_reset();
    ASSERT_EQ(raw_auth(second, "secret-job", "guess"), WF_RDV_ERROR);
    expect_log("wrong token for job secret-job", "127.0.0.1:");
    close(second);
    int none = raw_connect(weft_server_address(srv));
    ASSERT_EQ(raw_auth(none, "secret-job", ""), WF_RDV_ERROR);
    expect_log("requires a token", "127.0.0.1:");
    close(none);
    int third = raw_connect(weft_server_address(srv));
    raw_hello(third, "secret-job", "s3cret");
    close(third);
    /* A job started without a token refuses a client that has one. */
    int open_job = raw_connect(weft_server_address(srv));
    raw_hello(open_job, "open-job", "");
    int late = raw_connect(weft_server_address(srv));
    ASSERT_EQ(raw_auth(late, "open-job", "s3cret"), WF_RDV_ERROR);
    expect_log("started without a token", "127.0.0.1:");
    close(late);
    close(open_job);
    close(first);
    (void)code;
    ASSERT_OK(weft_server_stop(srv));
    weft_set_logger(NULL, NULL);
}

/* Many ranks parked on one key all wake when it is set. */
static const char *g_addr;

static void *parked_get(void *arg)
{
    wf_store_t *s;
    char buf[8];
    size_t len;

    (void)arg;
    ASSERT_OK(wf_store_open(g_addr, "crowd", NULL, 5000, &s));
    ASSERT_OK(wf_store_get(s, "go", buf, sizeof(buf), &len, 10000));
    ASSERT_EQ(len, 2);
    wf_store_close(s);
    return NULL;
}

WF_TEST(rdv_server_many_waiters, 30)
{
    weft_server_t srv;
    wf_store_t *s;
    pthread_t th[32];
    int64_t v;

    ASSERT_OK(weft_server_start("127.0.0.1:0", &srv));
    g_addr = weft_server_address(srv);
    ASSERT_OK(wf_store_open(g_addr, "crowd", NULL, 5000, &s));
    for (int i = 0; i < 32; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, parked_get, NULL), 0);
    usleep(200000);
    ASSERT_OK(wf_store_set(s, "go", "go", 2));
    for (int i = 0; i < 32; i++)
        pthread_join(th[i], NULL);
    ASSERT_OK(wf_store_add(s, "n", 1, &v));
    wf_store_close(s);
    ASSERT_OK(weft_server_stop(srv));
}

/* A job's keys go with its last client. */
WF_TEST(rdv_server_job_dropped, 10)
{
    weft_server_t srv;
    wf_store_t *s;
    char buf[8];
    size_t len;

    ASSERT_OK(weft_server_start("127.0.0.1:0", &srv));
    ASSERT_OK(wf_store_open(weft_server_address(srv), "j", NULL, 2000, &s));
    ASSERT_OK(wf_store_set(s, "k", "v", 1));
    wf_store_close(s);
    /* The server sees the close asynchronously: a client that comes back
     * before it did joins the job that still holds "k".  Closing that
     * client ends the job again, so asking again converges; a server
     * that kept the keys fails after 5 s. */
    weft_status_t st = WEFT_OK;
    for (int i = 0; i < 250 && st != WEFT_ERR_TIMEOUT; i++) {
        usleep(20000);
        ASSERT_OK(wf_store_open(weft_server_address(srv), "j", NULL, 2000,
                                &s));
        st = wf_store_get(s, "k", buf, sizeof(buf), &len, 0);
        wf_store_close(s);
    }
    ASSERT_STATUS(st, WEFT_ERR_TIMEOUT);
    ASSERT_OK(weft_server_stop(srv));
}

WF_TEST(rdv_server_unreachable, 10)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof(sa);
    char addr[64];
    wf_store_t *s = NULL;

    /* A port that was free a moment ago: nothing listens there. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sa.sin_port));
    weft_set_logger(capture, NULL);
    uint64_t t0 = wf_time_ms();
    ASSERT_STATUS(wf_store_open(addr, "j", NULL, 1500, &s), WEFT_ERR_TIMEOUT);
    uint64_t took = wf_time_ms() - t0;
    ASSERT_TRUE(took >= 1400 && took < 3000);
    ASSERT_TRUE(s == NULL);
    expect_log(addr, "Connection refused");
    weft_set_logger(NULL, NULL);
}

WF_TEST(rdv_server_api_args, 10)
{
    weft_server_t srv = NULL;

    ASSERT_STATUS(weft_server_start("no-port", &srv), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_server_start("127.0.0.1:99999", &srv),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_server_start(NULL, &srv), WEFT_ERR_INVALID_ARG);
    ASSERT_STATUS(weft_server_start("127.0.0.1:0", NULL),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_TRUE(srv == NULL);
    ASSERT_OK(weft_server_stop(NULL));
    ASSERT_TRUE(weft_server_address(NULL) == NULL);
    /* A taken port fails with a system error, not a crash. */
    ASSERT_OK(weft_server_start("127.0.0.1:0", &srv));
    weft_server_t again = NULL;
    ASSERT_STATUS(weft_server_start(weft_server_address(srv), &again),
                  WEFT_ERR_SYSTEM);
    ASSERT_OK(weft_server_stop(srv));
}

WF_TEST(rdv_server_ipv6, 10)
{
    weft_server_t srv;
    wf_store_t *s;

    if (weft_server_start("[::1]:0", &srv) != WEFT_OK)
        WF_SKIP("no IPv6 loopback on this machine");
    const char *addr = weft_server_address(srv);
    ASSERT_TRUE(strncmp(addr, "[::1]:", 6) == 0);
    ASSERT_OK(wf_store_open(addr, "v6", NULL, 2000, &s));
    expect_served(s, "k");
    char ip[64];
    ASSERT_TRUE(wf_store_local_ip(s, ip, sizeof(ip)));
    ASSERT_TRUE(strcmp(ip, "::1") == 0);
    wf_store_close(s);
    ASSERT_OK(weft_server_stop(srv));
}

/* The real binary, as launchers start it. */
WF_TEST(rdv_server_binary, 30)
{
    char addr[128], uri[160], ip[64];
    wf_store_t *s;
    int64_t v;

    int pid = wf_test_start_rendezvous(addr, sizeof(addr));
    ASSERT_TRUE(pid > 0);
    snprintf(uri, sizeof(uri), "tcp://%s", addr);
    ASSERT_OK(wf_store_open(uri, "bin-job", NULL, 5000, &s));
    expect_served(s, "k");
    ASSERT_OK(wf_store_add(s, "n", 3, &v));
    ASSERT_EQ(v, 3);
    ASSERT_TRUE(wf_store_local_ip(s, ip, sizeof(ip)));
    ASSERT_TRUE(strcmp(ip, "127.0.0.1") == 0);
    wf_store_close(s);
    wf_test_stop_process(pid);
}

WF_TEST(rdv_tool_args, 20)
{
    char cmd[512];
    const char *tool = wf_test_tool("weft-rendezvous");

    snprintf(cmd, sizeof(cmd), "%s --help >/dev/null", tool);
    ASSERT_EQ(WEXITSTATUS(system(cmd)), 0);
    snprintf(cmd, sizeof(cmd), "%s --bogus 2>/dev/null", tool);
    ASSERT_EQ(WEXITSTATUS(system(cmd)), 2);
    snprintf(cmd, sizeof(cmd), "%s 2>/dev/null", tool);
    ASSERT_EQ(WEXITSTATUS(system(cmd)), 2);
    snprintf(cmd, sizeof(cmd), "%s --listen nonsense 2>/dev/null", tool);
    ASSERT_EQ(WEXITSTATUS(system(cmd)), 2);
}
