/*
 * tcp_wire.h - the TCP transport's wire formats: frames, the handshake,
 * the address blob, and their encoders (tcp_hs.c, tcp_init.c).  What the
 * fuzzers and the wire tests include; the transport's objects are in
 * tcp.h.
 *
 * Wire formats are little-endian byte arrays encoded field by field, so the
 * layout does not depend on struct padding or host byte order.
 */
#ifndef WF_TCP_WIRE_H
#define WF_TCP_WIRE_H

#include <endian.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "common.h"
#include "transport.h"

/* Version 2: the handshake proves the job secret (version 1 did not).
 * Version 3: several streams per peer (the hello's flags name the stream),
 * striped frames, and an address blob with one address per interface.
 * Version 4: single-copy messages between ranks on one machine: memory
 * offers in the handshake, RTS and FIN frames (tcp_cma.c). */
#define WF_TCP_VERSION 4u
#define WF_TCP_HELLO_MAGIC 0x324f4c4c45485457ull /* "WTHELLO2" */
#define WF_TCP_CHALL_MAGIC 0x324c4c4148435457ull /* "WTCHALL2" */
#define WF_TCP_PROOF_MAGIC 0x32464f4f52505457ull /* "WTPROOF2" */
#define WF_TCP_REPLY_MAGIC 0x32594c5045525457ull /* "WTREPLY2" */
/* A frame: a header {magic, tag, sig[0], sig[1], len}, then `len`
 * payload bytes.  Every message header travels on stream 0. */
#define WF_TCP_FRAME_MAGIC 0x314d415246545700ull /* "\0WTFRAM1" */
/* Header of a striped message (stream 0 only, no payload follows): the
 * same fields as a frame; the payload comes as pieces. */
#define WF_TCP_STRIPE_MAGIC 0x31505254535457ull /* "WTSTRP1\0" */
/* One piece of a striped message, on any stream: magic u64, seq u64 (the
 * striped message's number between this pair of ranks, in post order),
 * offset u64, len u64, 0 u64; `len` payload bytes follow. */
#define WF_TCP_PIECE_MAGIC 0x31434549505457ull /* "WTPIEC1\0" */
/* Single copy on one machine (tcp_cma.c), stream 0 only, 40-byte headers:
 * RTS {tag, sig[0], sig[1], message length} and a 16-byte trailer
 * {buffer address, sequence number}, FIN {sequence number, errno, 0, 0}. */
#define WF_TCP_CMA_RTS_MAGIC 0x315354525f4d43ull  /* "CM_RTS1\0" */
#define WF_TCP_CMA_FIN_MAGIC 0x314e49465f4d43ull  /* "CM_FIN1\0" */
#define WF_TCP_CMA_TRAILER 16
/* frame header: magic u64, tag u64, sig[0] u64, sig[1] u64, len u64 */
#define WF_TCP_HDR_LEN 40

/*
 * The handshake, dialer D (lower rank) to acceptor A:
 *   D->A hello:     magic u64, version u32, flags u32 (bits 0-7: stream
 *                   index, 8-15: streams per peer - 1), job_key u64,
 *                   comm_key u64, src_rank u32, dst_rank u32, nonce_d[16],
 *                   offer_d[32]
 *   A->D challenge: magic u64, version u32, verdict u32, nonce_a[16],
 *                   mac_a[32] = HMAC(secret, "weft-tcp-acceptor" || hello
 *                   || nonce_a), offer_a[32]
 *   D->A proof:     magic u64, mac_d[32] = HMAC(secret, "weft-tcp-dialer"
 *                   || hello || nonce_a), reads u64
 *   A->D reply:     magic u64, version u32, verdict u32, reads u64
 * An offer (stream 0 only, zero elsewhere or when off) lets the other side
 * read this process's memory: pid u64, cookie address u64, cookie value
 * u64, node key u64; `reads` is 1 when the sender of the proof or reply
 * read the other side's cookie, so the other side may send it RTS frames
 * (tcp_cma.c).  The offers and `reads` are outside the MACs: a forged one
 * can only make a side read into its own receive buffers what the
 * unauthenticated data stream could carry anyway (design.md).
 * Each side proves the job secret bound to this connection's ranks,
 * communicator and fresh nonces, so a recorded handshake cannot be
 * replayed and the secret never travels.  A challenge with a verdict other
 * than WF_TCP_ACCEPT carries zero nonce and MAC and ends the connection.
 */
#define WF_TCP_NONCE_LEN 16
#define WF_TCP_MAC_LEN 32
#define WF_TCP_OFFER_LEN 32
#define WF_TCP_HELLO_LEN (40 + WF_TCP_NONCE_LEN + WF_TCP_OFFER_LEN)
#define WF_TCP_CHALL_LEN (16 + WF_TCP_NONCE_LEN + WF_TCP_MAC_LEN + \
                          WF_TCP_OFFER_LEN)
#define WF_TCP_PROOF_LEN (16 + WF_TCP_MAC_LEN)
#define WF_TCP_REPLY_LEN 24

/* Handshake verdicts; the reasons travel in the challenge or reply so the
 * dialer can say why it was turned away. */
typedef enum {
    WF_TCP_ACCEPT = 0,
    WF_TCP_REJ_VERSION = 1,
    WF_TCP_REJ_JOB_KEY = 2,
    WF_TCP_REJ_COMM_KEY = 3,
    WF_TCP_REJ_DST_RANK = 4,
    WF_TCP_REJ_SRC_RANK = 5,
    WF_TCP_REJ_DUPLICATE = 6,
    WF_TCP_REJ_AUTH = 7,
    WF_TCP_REJ_BUSY = 8,
    WF_TCP_REJ_STREAMS = 9,
    WF_TCP_REJ_COUNT
} wf_tcp_verdict_t;

/* Address blob: version u8, count u8, 0 u16, then `count` entries of
 * family u8 (4 or 6), flags u8, port u16 (big endian), 16 bytes of IP
 * (IPv4 in the first 4): one per local interface, in WEFT_SOCKET_IFNAME
 * (or topology) order, then, when the interfaces came from the topology,
 * one more flagged WF_TCP_ADDR_FALLBACK: the address that reached the
 * rendezvous server, which streams fall back to when a topology address
 * does not connect (tcp_conn.c). */
#define WF_TCP_ADDR_HDR 4
#define WF_TCP_ADDR_ENTRY 20
#define WF_TCP_ADDR_FALLBACK 1u
/* Interfaces (listening addresses) per context, besides the fallback;
 * streams per peer. */
#define WF_TCP_IF_MAX 4
#define WF_TCP_STREAMS_MAX 16
#define WF_TCP_ADDR_LEN(n) ((size_t)(WF_TCP_ADDR_HDR + WF_TCP_ADDR_ENTRY * (n)))

/* Header words are little-endian on the wire.  One load or store each
 * (a byte loop here was 600 of an 8-byte allreduce's 7,200 instructions:
 * the compiler did not merge it). */
static inline void wf_tcp_put32(uint8_t *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, sizeof(v));
}

static inline void wf_tcp_put64(uint8_t *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, sizeof(v));
}

static inline uint32_t wf_tcp_get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return le32toh(v);
}

static inline uint64_t wf_tcp_get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return le64toh(v);
}

/* ---- tcp_hs.c: the handshake's messages -------------------------------- */

/* Encodes a hello without an offer; shared with the tests. */
void wf_tcp_hello_encode(uint8_t out[WF_TCP_HELLO_LEN], uint64_t job_key,
                         uint64_t comm_key, int src_rank, int dst_rank,
                         const uint8_t nonce[WF_TCP_NONCE_LEN]);
/* The hello of stream `idx` of `nstreams` (the above is stream 0 of 1),
 * with a memory offer (NULL: none). */
void wf_tcp_hello_encode_stream(uint8_t out[WF_TCP_HELLO_LEN],
                                uint64_t job_key, uint64_t comm_key,
                                int src_rank, int dst_rank, int idx,
                                int nstreams,
                                const uint8_t nonce[WF_TCP_NONCE_LEN],
                                const uint8_t *offer);
/* mac = HMAC(secret, role || hello || nonce_a), role WF_TCP_ROLE_*. */
#define WF_TCP_ROLE_ACCEPTOR "weft-tcp-acceptor"
#define WF_TCP_ROLE_DIALER "weft-tcp-dialer"
weft_status_t wf_tcp_hs_mac(const uint8_t secret[32], const char *role,
                            const uint8_t hello[WF_TCP_HELLO_LEN],
                            const uint8_t nonce_a[WF_TCP_NONCE_LEN],
                            uint8_t mac[WF_TCP_MAC_LEN]);
/* A challenge (nonce, mac and offer NULL for a rejection; offer NULL for
 * none), a proof, a reply; `reads`: this side can read the other's
 * memory. */
void wf_tcp_chall_encode(uint8_t out[WF_TCP_CHALL_LEN], uint32_t verdict,
                         const uint8_t *nonce, const uint8_t *mac,
                         const uint8_t *offer);
void wf_tcp_proof_encode(uint8_t out[WF_TCP_PROOF_LEN],
                         const uint8_t mac[WF_TCP_MAC_LEN], bool reads);
void wf_tcp_reply_encode(uint8_t out[WF_TCP_REPLY_LEN], uint32_t verdict,
                         bool reads);
/* "job key mismatch (...)" etc. */
const char *wf_tcp_verdict_str(uint32_t verdict);

/* ---- tcp_init.c: the address blob -------------------------------------- */

/* Decodes an address blob into at most WF_TCP_IF_MAX addresses (*count)
 * and, with *fallback set, the fallback address after them (arrays of
 * WF_TCP_IF_MAX + 1); false when malformed. */
bool wf_tcp_blob_decode(const void *blob, size_t len,
                        struct sockaddr_storage *ss, socklen_t *ss_len,
                        int *count, bool *fallback);
/* Formats an address as "1.2.3.4:5" or "[::1]:5". */
void wf_tcp_format_addr(const struct sockaddr *sa, char *out, size_t size);

#endif /* WF_TCP_WIRE_H */
