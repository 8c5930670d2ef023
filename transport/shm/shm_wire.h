/*
 * shm_wire.h - what two processes of the shared-memory transport share:
 * the segment of a pair (its two rings of slots) and the handshake
 * packets on the Unix socket that sets the pair up (docs/transports.md,
 * "Shared memory").
 *
 * The segment: one memfd per pair, made by the dialer (the lower rank)
 * and passed to the acceptor over the socket once both have proved the
 * job secret, so no name ever exists in /dev/shm and no other process
 * can open it.  It holds two rings, ring 0 dialer -> acceptor and ring 1
 * back.  Each ring is WEFT_SHM_SLOTS slots of WF_SHM_SLOT_BYTES: a
 * cache line of header, then payload.  One producer, one consumer, no
 * locks:
 *   - the producer fills slot (pos % slots) and then stores seq = pos + 1
 *     (release); the consumer reads seq (acquire), takes the slot, and
 *     publishes how many it took in `tail` (release), which tells the
 *     producer the slots before it are free again;
 *   - seq grows by one lap each time round, so a stale slot never looks
 *     fresh.
 * Waking: a consumer about to sleep sets rx_sleeping and looks at its
 * rings once more; a producer that publishes and then sees the flag
 * takes it (exchange) and writes the consumer's eventfd.  tx_waiting is
 * the same for a producer waiting for free slots.
 */
#ifndef WF_SHM_WIRE_H
#define WF_SHM_WIRE_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#define WF_SHM_SEG_MAGIC 0x77656674736d6731ull /* "weftsmg1" */
#define WF_SHM_VERSION 1u
#define WF_SHM_LINE 64
#define WF_SHM_SLOT_BYTES 4096u
#define WF_SHM_SLOT_PAYLOAD (WF_SHM_SLOT_BYTES - WF_SHM_LINE)

/* What a slot carries. */
enum wf_shm_kind {
    WF_SHM_EAGER = 1, /* a whole message: total == len */
    WF_SHM_FIRST,     /* the first piece of a message of `total` bytes */
    WF_SHM_MORE,      /* the next piece of the message being received */
    WF_SHM_RTS,       /* a message to read from the sender's memory (cma) */
    WF_SHM_FIN,       /* the receiver read RTS `id`; err: 0 or its errno */
};

typedef struct wf_shm_slot {
    _Atomic uint64_t seq; /* pos + 1 once the slot is published */
    uint32_t kind;        /* enum wf_shm_kind */
    uint32_t len;         /* payload bytes in this slot; FIN: errno */
    uint64_t tag;
    uint64_t sig[2];
    uint64_t total; /* message length (EAGER, FIRST, RTS) */
    uint64_t addr;  /* RTS: the sender's buffer */
    uint64_t id;    /* RTS, FIN: the sender's number for the message */
    /* payload follows, at WF_SHM_LINE */
} wf_shm_slot_t;

_Static_assert(sizeof(wf_shm_slot_t) == WF_SHM_LINE,
               "a slot header is one cache line");

/* The shared state of one ring, each word on a line of its own so the
 * producer's and the consumer's writes never share one. */
typedef struct wf_shm_ring_ctl {
    alignas(WF_SHM_LINE) _Atomic uint64_t tail; /* consumer: slots taken */
    alignas(WF_SHM_LINE) _Atomic uint32_t rx_sleeping;
    alignas(WF_SHM_LINE) _Atomic uint32_t tx_waiting;
} wf_shm_ring_ctl_t;

/* The segment's first page; the rings follow it. */
typedef struct wf_shm_seg_hdr {
    uint64_t magic;
    uint32_t version;
    uint32_t slots; /* per ring, a power of two */
    uint32_t slot_bytes;
    uint32_t pad;
    wf_shm_ring_ctl_t ctl[2];
} wf_shm_seg_hdr_t;

#define WF_SHM_HDR_BYTES 4096u

static inline size_t wf_shm_seg_bytes(uint32_t slots)
{
    return WF_SHM_HDR_BYTES + 2 * (size_t)slots * WF_SHM_SLOT_BYTES;
}

/* ---- the address blob and the handshake -------------------------------- */

#define WF_SHM_ADDR_MAGIC 0x77656674736d6161ull /* "weftsmaa" */
#define WF_SHM_SOCK_NAME 40

/* What get_address publishes. */
typedef struct wf_shm_addr {
    uint64_t magic;
    uint64_t node;     /* wf_shared_memory_key(): who can reach the socket */
    uint32_t pid;
    uint32_t pad;
    char sock[WF_SHM_SOCK_NAME]; /* abstract socket name, NUL-terminated */
} wf_shm_addr_t;

/* The abstract Unix socket address of `name` (sun_path[0] is NUL and the
 * name follows, no terminator); returns its length for bind/connect. */
static inline socklen_t wf_shm_sockaddr(const char *name,
                                        struct sockaddr_un *sa)
{
    size_t n = strnlen(name, WF_SHM_SOCK_NAME - 1);

    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path + 1, name, n);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

#define WF_SHM_NONCE_LEN 16
#define WF_SHM_MAC_LEN 32

enum wf_shm_pkt_type {
    WF_SHM_HELLO = 1, /* dialer -> acceptor */
    WF_SHM_CHALL,     /* acceptor -> dialer: its proof, or a refusal */
    WF_SHM_PROOF,     /* dialer -> acceptor, with the memfd and its eventfd */
    WF_SHM_READY,     /* acceptor -> dialer, with its eventfd, or a refusal */
};

/* Why an acceptor refused a dialer (sent in CHALL or READY). */
enum wf_shm_verdict {
    WF_SHM_OK = 0,
    WF_SHM_REJ_VERSION,
    WF_SHM_REJ_JOB_KEY,
    WF_SHM_REJ_COMM_KEY,
    WF_SHM_REJ_RANKS,
    WF_SHM_REJ_DUPLICATE,
    WF_SHM_REJ_AUTH,
    WF_SHM_REJ_SEGMENT,
    WF_SHM_REJ_COUNT
};

/* One packet of the handshake, always this size (SOCK_SEQPACKET keeps
 * packets whole). */
typedef struct wf_shm_pkt {
    uint32_t type;    /* enum wf_shm_pkt_type */
    uint32_t version; /* WF_SHM_VERSION */
    uint32_t verdict; /* enum wf_shm_verdict (CHALL, READY) */
    uint32_t reads;   /* the sender can read the receiver's memory (cma) */
    uint64_t job_key, comm_key;
    int32_t src, dst; /* ranks: the dialer, the acceptor */
    uint32_t pid;
    uint32_t slots; /* PROOF: the segment's ring size */
    uint64_t cookie_addr, cookie; /* where and what a cma probe reads */
    uint8_t nonce[WF_SHM_NONCE_LEN];
    uint8_t mac[WF_SHM_MAC_LEN];
} wf_shm_pkt_t;

#endif /* WF_SHM_WIRE_H */
