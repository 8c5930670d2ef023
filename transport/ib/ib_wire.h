/*
 * ib_wire.h - the verbs transport's wire formats: fragments, message
 * headers, the rendezvous RTS and FIN, the address blob and the bootstrap
 * INFO (the objects are in ib.h).  Needs no verbs header.
 *
 * Rails: a context may drive several ports (WEFT_IB_HCA=mlx5_0,mlx5_1, or
 * the NICs the topology found equally near), each a rail with its own
 * device context, protection domain and completion queue.  A pair uses
 * min(its two rail counts) rails and at least one QP per rail: QP i runs
 * from local rail i % rails to the peer's rail of the same index, so
 * fragments and rendezvous READs, which already spread over the QPs,
 * spread over the rails.  Memory is registered once per rail; an RTS
 * carries the buffer's rkey of every rail.
 *
 * Data path: every peer pair has WEFT_IB_QPS reliable-connected QPs (1 to
 * WF_IB_QPS_MAX) that share the peer's registered memory: each QP owns
 * its slice of the receive and staging slots and its own credit word.  A
 * message is cut into fragments of at most WF_IB_SLOT_LEN bytes, each one
 * SEND from a staging slot into one of the receiver's pre-posted receive
 * slots of the same QP.  Every fragment starts with a 16-byte fragment
 * header {seq, magic, flags, offset}: the per-peer message number and
 * where its payload goes in the message.  The first fragment of a message
 * always travels on QP 0 and adds the 40-byte message header {magic, tag,
 * sig[0], sig[1], len}; the others go round-robin to whichever QP has a
 * staging slot and a credit.  RC orders only within one QP, so headers
 * reach the receiver in send order (tag matching keeps the TCP
 * transport's FIFO rules), while a later fragment may arrive on another QP
 * before its message's header: the receiver keeps that receive slot (does
 * not re-post it) until the header arrives.  That cannot deadlock: the
 * header was posted on QP 0 before the fragment and QP 0 never holds a
 * slot.  A SEND needs a posted receive at the far end: the sender spends
 * one credit of the QP per fragment, and the receiver returns credits by
 * an RDMA WRITE of the QP's running count of posted receives into a word
 * of the sender's memory (which consumes no receive), so a fast sender
 * never meets an empty receive queue (no RNR retries, no overrun).
 *
 * Large messages (WEFT_IB_ZCOPY_MIN bytes and more) are not copied: the
 * first fragment is an RTS carrying the registered user buffer's address
 * and rkey instead of payload, the receiver pulls the bytes with RDMA
 * READs into the receive buffer (or, unmatched, an unexpected buffer) and
 * answers with a FIN fragment that takes no message number (ib_rndv.c).
 *
 * Bootstrap: the QP number of a pair exists only once both sides created
 * their QP, so it cannot be in the address blob published before connect.
 * Each ib context therefore owns a private TCP transport context (same job
 * and communicator keys, same handshake): the blob carries the TCP address
 * plus this side's LID/GID/MTU, and connect() sends the QP number, PSN and
 * credit word over TCP, then a READY once the QP is ready to receive.  That
 * TCP connection stays open as the liveness channel: a peer that closes its
 * context sends BYE; a peer that dies (kill -9) closes it by kernel, and
 * both fail the pair at once instead of after RC retry timeouts.
 */
#ifndef WF_IB_WIRE_H
#define WF_IB_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* 3: several rails per context (address blob, INFO and RTS carry a
 * rail's worth of addresses and keys each). */
#define WF_IB_VERSION 3u
#define WF_IB_FRAME_MAGIC 0x314d415246424957ull /* "WIBFRAM1" */
#define WF_IB_FRAG_MAGIC 0x4657u                 /* "WF" */
#define WF_IB_FRAG_FIRST 1u /* fragment flag: the message header follows */
/* With FIRST: the message is a rendezvous "ready to send" (RTS): after the
 * message header come the sender's address u64 and its rkey u32 on each
 * of WF_IB_RAILS_MAX rails (0 past the sender's rails), no payload; the
 * receiver pulls the payload with RDMA READ (ib_rndv.c). */
#define WF_IB_FRAG_RNDV 2u
/* Alone: FIN of message `seq` of the other direction, which the receiver
 * has finished reading; takes no message number. */
#define WF_IB_FRAG_FIN 4u
#define WF_IB_RAILS_MAX 4 /* ports one context drives */
#define WF_IB_RTS_LEN (8 + 4 * WF_IB_RAILS_MAX)
/* Every fragment: seq u32, magic u16, flags u16, offset u64. */
#define WF_IB_FRAG_LEN 16
/* The first fragment's message header after it: magic, tag, sig, len. */
#define WF_IB_HDR_LEN 40
/* Upper bound of WEFT_IB_QPS. */
#define WF_IB_QPS_MAX 8
/* The largest fragment: a receive slot. */
#define WF_IB_SLOT_LEN (64 * 1024)

/* Tags on the private bootstrap TCP context. */
#define WF_IB_TAG_INFO 1u
#define WF_IB_TAG_READY 2u
#define WF_IB_TAG_LIVE 3u /* carries BYE; a failure means the peer died */

/* Address blob: version u8, rails u8, per rail {link layer u8, port u8,
 * mtu u8, lid u16, gid[16]}, tcp blob length u8, then the TCP blob. */
#define WF_IB_BLOB_RAIL 21
#define WF_IB_BLOB_LEN(rails) (3 + WF_IB_BLOB_RAIL * (size_t)(rails))
/* Bootstrap INFO: QPs u32, receive slots per QP u32, slot length u32,
 * rails u32, then per QP: qpn u32, psn u32, credit addr u64, and the
 * rkey u32 of the credit word on that QP's rail. */
#define WF_IB_INFO_FIXED 16
#define WF_IB_INFO_QP 20
#define WF_IB_INFO_LEN (WF_IB_INFO_FIXED + WF_IB_QPS_MAX * WF_IB_INFO_QP)

static inline void wf_ib_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void wf_ib_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t wf_ib_get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static inline uint64_t wf_ib_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}


#endif /* WF_IB_WIRE_H */
