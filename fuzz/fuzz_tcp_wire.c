/*
 * fuzz_tcp_wire.c - libFuzzer harness for the TCP transport's wire parsers:
 * the acceptor's handshake (hello and proof, tcp_accept.c) and, after a
 * genuine handshake, the data frame reader (headers, lengths, unexpected
 * messages, truncation; tcp_xfer.c).
 *
 * Input byte 0 picks the mode: even = the rest goes raw to the acceptor
 * (what a port scanner or a forged handshake sends); odd = the harness
 * first completes a valid handshake as rank 0 with the job secret, posts
 * two receives on rank 1, then sends the rest as the data stream.  Each
 * input gets a fresh context on loopback, so runs are independent.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_quiet.h"
#include "tcp/tcp_wire.h"

static const uint8_t secret[32] = "fuzz data-plane secret 32 bytes";

static void spin(wf_tctx_t *ctx, int rounds)
{
    for (int i = 0; i < rounds; i++)
        wf_tcp_transport.progress(ctx);
}

static int dial(wf_tctx_t *ctx)
{
    wf_tdev_attr_t attr;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

    if (wf_tcp_transport.query(ctx, &attr) != WEFT_OK)
        return -1;
    a.sin_port = htons((uint16_t)atoi(strrchr(attr.address, ':') + 1));
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads exactly n bytes while the context progresses; false on failure. */
static bool read_n(wf_tctx_t *ctx, int fd, uint8_t *buf, size_t n)
{
    size_t got = 0;

    for (int i = 0; i < 2000 && got < n; i++) {
        spin(ctx, 1);
        ssize_t r = recv(fd, buf + got, n - got, MSG_DONTWAIT);
        if (r > 0)
            got += (size_t)r;
        else if (r == 0)
            return false;
    }
    return got == n;
}

/* The dialer's side of a valid handshake as rank 0 towards rank 1. */
static bool handshake(wf_tctx_t *ctx, int fd, const wf_tconfig_t *cfg)
{
    static const uint8_t nonce[WF_TCP_NONCE_LEN] = "fuzz dial nonce";
    uint8_t h[WF_TCP_HELLO_LEN], c[WF_TCP_CHALL_LEN], mac[WF_TCP_MAC_LEN];
    uint8_t proof[WF_TCP_PROOF_LEN], reply[WF_TCP_REPLY_LEN];

    wf_tcp_hello_encode(h, cfg->job_key, cfg->comm_key, 0, 1, nonce);
    if (send(fd, h, sizeof(h), MSG_NOSIGNAL) != (ssize_t)sizeof(h) ||
        !read_n(ctx, fd, c, sizeof(c)) ||
        wf_tcp_hs_mac(secret, WF_TCP_ROLE_DIALER, h, c + 16, mac) != WEFT_OK)
        return false;
    wf_tcp_proof_encode(proof, mac, false);
    return send(fd, proof, sizeof(proof), MSG_NOSIGNAL) ==
               (ssize_t)sizeof(proof) &&
           read_n(ctx, fd, reply, sizeof(reply)) &&
           wf_tcp_get32(reply + 12) == WF_TCP_ACCEPT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wf_tconfig_t cfg;
    wf_tctx_t *ctx = NULL;
    wf_treq_t *r1 = NULL, *r2 = NULL;
    static char buf1[64], buf2[4096];
    uint8_t addr[WF_TADDR_MAX];
    size_t alen = sizeof(addr);

    if (size < 1)
        return 0;
    weft_set_logger(wf_fuzz_quiet, NULL);
    memset(&cfg, 0, sizeof(cfg));
    cfg.rank = 1;
    cfg.size = 3;
    cfg.job_key = 0x6a6f62;
    cfg.comm_key = 0x636f6d6d;
    memcpy(cfg.secret, secret, sizeof(secret));
    strcpy(cfg.ifname, "lo");
    cfg.timeout_ms = 2000;
    cfg.topo_numa = -1;
    if (wf_tcp_transport.init(&cfg, &ctx) != WEFT_OK)
        return 0;
    int fd = dial(ctx);
    if (fd < 0)
        goto out;
    if (data[0] & 1) {
        wf_tcp_transport.get_address(ctx, addr, &alen);
        /* Rank 1 waits for rank 0; the address is only used to name it. */
        wf_tcp_transport.connect(ctx, 0, addr, alen);
        if (!handshake(ctx, fd, &cfg))
            goto out_fd;
        wf_tcp_transport.irecv(ctx, 0, 1, buf1, sizeof(buf1), NULL, &r1);
        wf_tcp_transport.irecv(ctx, 0, 2, buf2, sizeof(buf2), NULL, &r2);
    }
    /* Small writes, so a frame crosses several reads. */
    for (size_t pos = 1; pos < size;) {
        size_t n = size - pos < 97 ? size - pos : 97;
        if (send(fd, data + pos, n, MSG_NOSIGNAL) < 0)
            break;
        pos += n;
        spin(ctx, 2);
    }
    spin(ctx, 4);
out_fd:
    close(fd);
    spin(ctx, 2);
    if (r1)
        wf_tcp_transport.test(ctx, r1, NULL);
    if (r2)
        wf_tcp_transport.test(ctx, r2, NULL);
out:
    wf_tcp_transport.fini(ctx);
    return 0;
}
