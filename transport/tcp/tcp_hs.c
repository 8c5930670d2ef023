/*
 * tcp_hs.c - the handshake's messages (tcp.h): encoding, the MACs both ends
 * prove the job secret with, and the verdict texts.  The state machines
 * that send and check them are in tcp_conn.c (dialer) and tcp_accept.c
 * (acceptor).
 */
#include <string.h>

#include "auth.h"
#include "tcp.h"

static const char *const verdict_text[WF_TCP_REJ_COUNT] = {
    [WF_TCP_ACCEPT] = "accepted",
    [WF_TCP_REJ_VERSION] = "protocol version mismatch",
    [WF_TCP_REJ_JOB_KEY] = "job key mismatch (a different job id)",
    [WF_TCP_REJ_COMM_KEY] = "communicator key mismatch",
    [WF_TCP_REJ_DST_RANK] = "addressed to another rank",
    [WF_TCP_REJ_SRC_RANK] = "source rank out of range or not lower",
    [WF_TCP_REJ_DUPLICATE] = "that rank is already connected or failed",
    /* (parenthesised: one string split over two lines, not two entries) */
    [WF_TCP_REJ_AUTH] = ("authentication failed: the proof of the job "
                         "secret does not match (a different WEFT_TOKEN?)"),
    [WF_TCP_REJ_BUSY] = "too many connections in their handshake",
    [WF_TCP_REJ_STREAMS] = ("stream count mismatch (WEFT_TCP_STREAMS "
                            "differs between the ranks)"),
};

const char *wf_tcp_verdict_str(uint32_t v)
{
    return v < WF_TCP_REJ_COUNT ? verdict_text[v] : "unknown reason";
}

void wf_tcp_hello_encode(uint8_t out[WF_TCP_HELLO_LEN], uint64_t job_key,
                         uint64_t comm_key, int src_rank, int dst_rank,
                         const uint8_t nonce[WF_TCP_NONCE_LEN])
{
    wf_tcp_hello_encode_stream(out, job_key, comm_key, src_rank, dst_rank, 0,
                               1, nonce, NULL);
}

void wf_tcp_hello_encode_stream(uint8_t out[WF_TCP_HELLO_LEN],
                                uint64_t job_key, uint64_t comm_key,
                                int src_rank, int dst_rank, int idx,
                                int nstreams,
                                const uint8_t nonce[WF_TCP_NONCE_LEN],
                                const uint8_t *offer)
{
    /* Flags: stream index, and streams - 1 so that 0 is "stream 0 of 1". */
    uint32_t flags = (uint32_t)(idx & 0xff) |
                     ((uint32_t)((nstreams - 1) & 0xff) << 8);

    wf_tcp_put64(out, WF_TCP_HELLO_MAGIC);
    wf_tcp_put32(out + 8, WF_TCP_VERSION);
    wf_tcp_put32(out + 12, flags);
    wf_tcp_put64(out + 16, job_key);
    wf_tcp_put64(out + 24, comm_key);
    wf_tcp_put32(out + 32, (uint32_t)src_rank);
    wf_tcp_put32(out + 36, (uint32_t)dst_rank);
    memcpy(out + 40, nonce, WF_TCP_NONCE_LEN);
    if (offer)
        memcpy(out + 40 + WF_TCP_NONCE_LEN, offer, WF_TCP_OFFER_LEN);
    else
        memset(out + 40 + WF_TCP_NONCE_LEN, 0, WF_TCP_OFFER_LEN);
}

weft_status_t wf_tcp_hs_mac(const uint8_t secret[32], const char *role,
                            const uint8_t hello[WF_TCP_HELLO_LEN],
                            const uint8_t nonce_a[WF_TCP_NONCE_LEN],
                            uint8_t mac[WF_TCP_MAC_LEN])
{
    /* The hello carries ranks, keys and the dialer's nonce; the role string
     * with its terminator keeps the two directions' MACs apart. */
    wf_auth_part_t parts[] = {{role, strlen(role) + 1},
                              {hello, WF_TCP_HELLO_LEN},
                              {nonce_a, WF_TCP_NONCE_LEN}};
    return wf_auth_mac(secret, WF_AUTH_KEY_LEN, parts, WF_ARRAY_LEN(parts),
                       mac);
}

void wf_tcp_chall_encode(uint8_t out[WF_TCP_CHALL_LEN], uint32_t verdict,
                         const uint8_t *nonce, const uint8_t *mac,
                         const uint8_t *offer)
{
    memset(out, 0, WF_TCP_CHALL_LEN);
    wf_tcp_put64(out, WF_TCP_CHALL_MAGIC);
    wf_tcp_put32(out + 8, WF_TCP_VERSION);
    wf_tcp_put32(out + 12, verdict);
    if (nonce)
        memcpy(out + 16, nonce, WF_TCP_NONCE_LEN);
    if (mac)
        memcpy(out + 16 + WF_TCP_NONCE_LEN, mac, WF_TCP_MAC_LEN);
    if (offer)
        memcpy(out + 16 + WF_TCP_NONCE_LEN + WF_TCP_MAC_LEN, offer,
               WF_TCP_OFFER_LEN);
}

void wf_tcp_proof_encode(uint8_t out[WF_TCP_PROOF_LEN],
                         const uint8_t mac[WF_TCP_MAC_LEN], bool reads)
{
    wf_tcp_put64(out, WF_TCP_PROOF_MAGIC);
    memcpy(out + 8, mac, WF_TCP_MAC_LEN);
    wf_tcp_put64(out + 8 + WF_TCP_MAC_LEN, reads ? 1 : 0);
}

void wf_tcp_reply_encode(uint8_t out[WF_TCP_REPLY_LEN], uint32_t verdict,
                         bool reads)
{
    wf_tcp_put64(out, WF_TCP_REPLY_MAGIC);
    wf_tcp_put32(out + 8, WF_TCP_VERSION);
    wf_tcp_put32(out + 12, verdict);
    wf_tcp_put64(out + 16, reads ? 1 : 0);
}
