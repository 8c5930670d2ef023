/*
 * rdv_proto.h - the rendezvous wire protocol, shared by the server
 * (rdv_server.c, rdv_jobs.c) and the tcp store client (store_tcp.c).
 *
 * Every frame is a 12-byte header followed by `length` payload bytes.  All
 * integers are in network byte order (big-endian):
 *
 *   offset 0  u32 magic    WF_RDV_MAGIC ("WFRV")
 *   offset 4  u16 version  WF_RDV_VERSION
 *   offset 6  u16 type     one of wf_rdv_type_t
 *   offset 8  u32 length   payload bytes, at most max_frame - 12
 *
 * Payload fields are u32, i32, i64 or "bytes" (a u32 length then that many
 * bytes, no terminator).  A connection carries one request at a time: the
 * client waits for the reply before sending the next request.
 * docs/rendezvous.md describes every message and the server's behaviour.
 */
#ifndef WF_RDV_PROTO_H
#define WF_RDV_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"

#define WF_RDV_MAGIC 0x57465256u /* "WFRV" */
/* Version 2: challenge-response authentication; version 1 sent the token
 * in the HELLO and is refused with a message naming both versions. */
#define WF_RDV_VERSION 2
#define WF_RDV_HDR_SIZE 12

/* Job ids on the wire; longer ones are refused. */
#define WF_RDV_JOB_MAX 256
/* Longest message text in an ERROR reply. */
#define WF_RDV_ERRMSG_MAX 512

/* A frame must at least hold the largest SET (key + value + lengths), so a
 * smaller WEFT_RDV_MAX_FRAME is raised to this. */
#define WF_RDV_MIN_FRAME (WF_RDV_HDR_SIZE + 64 + 256 + 64 * 1024)

/*
 * Message types.  Requests are < 0x80, replies >= 0x80.
 *
 *   HELLO     bytes job, bytes nonce, u32 flags     -> CHALLENGE | ERROR
 *   AUTH      bytes proof, bytes key                -> WELCOME | ERROR
 *   SET       bytes key, bytes value                -> OK
 *   SET_ONCE  bytes key, bytes value                -> CREATED | EXISTS
 *   GET       bytes key, u32 wait_ms                -> VALUE | TIMEOUT
 *   WAIT      u32 wait_ms, u32 n, n x bytes key     -> OK | TIMEOUT
 *   ADD       bytes key, i64 delta                  -> INT
 *
 *   OK        (empty)
 *   VALUE     bytes value
 *   CREATED   (empty)
 *   EXISTS    bytes existing value
 *   INT       i64 new value
 *   TIMEOUT   bytes key that is still missing
 *   ERROR     i32 weft_status_t, u32 flags, bytes message
 *   CHALLENGE bytes nonce, u32 flags
 *   WELCOME   bytes proof
 *
 * Authentication (docs/rendezvous.md): the client sends a fresh nonce Nc in
 * HELLO, the server answers with its own Ns.  With K the job's rendezvous
 * key (auth.h: derived from the token for purpose WF_AUTH_PURPOSE_RDV),
 * AUTH carries HMAC(K, "weft-rdv-client" || len job || job || Nc || Ns) and
 * WELCOME the same with "weft-rdv-server", so each side proves K to the
 * other without sending it.  Without a token both proofs are empty.  AUTH's
 * key field is empty unless CHALLENGE asked to register: a server that has
 * no token of its own learns a job's K from the job's first client (K, not
 * the token: the token never travels).  No other request is served before
 * WELCOME.
 *
 * ERROR flags: WF_RDV_ERROR_CLOSING says the server closes the connection
 * after this reply (protocol errors); without it the connection stays
 * usable (e.g. ADD on a value that is not an integer).
 */
#define WF_RDV_ERROR_CLOSING 1u
/* HELLO flags: the client has a token (will send a proof). */
#define WF_RDV_HELLO_TOKEN 1u
/* CHALLENGE flags: the server knows the job's key and checks the proof
 * (KEYED), or the job is new to a token-less server and the client with a
 * token must send K in AUTH (REGISTER). */
#define WF_RDV_CHALLENGE_KEYED 1u
#define WF_RDV_CHALLENGE_REGISTER 2u
#define WF_RDV_TYPE_LIST(X)                                                    \
    X(HELLO, 0x01, "hello")                                                    \
    X(SET, 0x02, "set")                                                        \
    X(SET_ONCE, 0x03, "set_once")                                              \
    X(GET, 0x04, "get")                                                        \
    X(WAIT, 0x05, "wait")                                                      \
    X(ADD, 0x06, "add")                                                        \
    X(AUTH, 0x07, "auth")                                                      \
    X(OK, 0x81, "ok")                                                          \
    X(VALUE, 0x82, "value")                                                    \
    X(CREATED, 0x83, "created")                                                \
    X(EXISTS, 0x84, "exists")                                                  \
    X(INT, 0x85, "int")                                                        \
    X(TIMEOUT, 0x86, "timeout")                                                \
    X(ERROR, 0x87, "error")                                                    \
    X(CHALLENGE, 0x88, "challenge")                                            \
    X(WELCOME, 0x89, "welcome")

typedef enum {
#define WF_RDV_TYPE_ENUM_(name, value, text) WF_RDV_##name = value,
    WF_RDV_TYPE_LIST(WF_RDV_TYPE_ENUM_)
#undef WF_RDV_TYPE_ENUM_
} wf_rdv_type_t;

/* "set", "error", ... or "unknown". */
const char *wf_rdv_type_name(unsigned type);

/* ---- frame header ------------------------------------------------------ */

typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t length;
} wf_rdv_hdr_t;

void wf_rdv_hdr_decode(const uint8_t *p, wf_rdv_hdr_t *hdr);

/* Checks magic, version and length against max_frame.  On failure returns
 * false and writes a lowercase reason ("bad magic 0x...") into why. */
bool wf_rdv_hdr_check(const wf_rdv_hdr_t *hdr, size_t max_frame, char *why,
                      size_t why_size);

/* ---- building frames --------------------------------------------------- */

/* A growable byte buffer frames are appended to.  Allocation failures set
 * `failed` and make later appends no-ops, so a sequence of puts needs one
 * check at the end. */
typedef struct {
    uint8_t *data;
    size_t len;
    size_t cap;
    size_t frame_start; /* offset of the frame being built */
    bool failed;
} wf_rdv_buf_t;

void wf_rdv_buf_init(wf_rdv_buf_t *buf);
void wf_rdv_buf_free(wf_rdv_buf_t *buf);
/* Drops the first n bytes (sent ones). */
void wf_rdv_buf_consume(wf_rdv_buf_t *buf, size_t n);

void wf_rdv_frame_begin(wf_rdv_buf_t *buf, wf_rdv_type_t type);
void wf_rdv_put_u32(wf_rdv_buf_t *buf, uint32_t v);
void wf_rdv_put_i64(wf_rdv_buf_t *buf, int64_t v);
void wf_rdv_put_bytes(wf_rdv_buf_t *buf, const void *p, size_t n);
void wf_rdv_put_str(wf_rdv_buf_t *buf, const char *s);
/* Patches the length field; WEFT_ERR_NO_MEMORY when an append failed. */
weft_status_t wf_rdv_frame_end(wf_rdv_buf_t *buf);

/* Whole messages in one call (begin, fields, end). */
weft_status_t wf_rdv_encode_error(wf_rdv_buf_t *buf, weft_status_t status,
                                  uint32_t flags, const char *message);

/* ---- reading payloads -------------------------------------------------- */

/* A cursor over a received payload.  A read past the end sets `bad`; the
 * decoders below fail when it is set or bytes are left over. */
typedef struct {
    const uint8_t *p;
    size_t left;
    bool bad;
} wf_rdv_reader_t;

void wf_rdv_reader_init(wf_rdv_reader_t *r, const void *p, size_t n);
uint32_t wf_rdv_get_u32(wf_rdv_reader_t *r);
int64_t wf_rdv_get_i64(wf_rdv_reader_t *r);
/* Points *p at the field's bytes inside the payload (no copy). */
size_t wf_rdv_get_bytes(wf_rdv_reader_t *r, const uint8_t **p);

/*
 * A decoded message of any type; which fields are meaningful depends on the
 * type (see the table above).  Byte fields point into the payload.  For
 * WAIT, `keys` points at the first of `nkeys` length-prefixed keys, already
 * checked to be consistent; iterate them with wf_rdv_get_bytes.
 */
typedef struct {
    unsigned type;
    const uint8_t *key, *value, *job, *text, *keys;
    size_t key_len, value_len, job_len, text_len, keys_len;
    const uint8_t *nonce, *proof, *reg_key; /* HELLO/CHALLENGE, AUTH/WELCOME */
    size_t nonce_len, proof_len, reg_key_len;
    uint32_t wait_ms;
    uint32_t nkeys;
    int64_t num;    /* ADD delta, INT result */
    int32_t code;   /* ERROR status */
    uint32_t flags; /* ERROR, HELLO and CHALLENGE flags */
} wf_rdv_msg_t;

/* Decodes a payload of the given type.  Returns false with a reason in why
 * when the lengths are inconsistent or the type is unknown. */
bool wf_rdv_decode(unsigned type, const void *payload, size_t len,
                   wf_rdv_msg_t *msg, char *why, size_t why_size);

/* ---- counters ---------------------------------------------------------- */

/* ADD keeps its counter as decimal text, so GET on the key reads it.
 * Parses such a value (missing = 0 is the caller's business); false when it
 * is not a decimal int64. */
bool wf_rdv_counter_parse(const void *value, size_t len, int64_t *out);
/* Formats v into buf (at least 24 bytes); returns the length. */
size_t wf_rdv_counter_format(int64_t v, char *buf);
/* Overflow-checked old + delta; false on overflow. */
bool wf_rdv_counter_add(int64_t old, int64_t delta, int64_t *out);

/* Job ids are 1 to WF_RDV_JOB_MAX bytes of printable ASCII: they appear in
 * every log line about the job and name the file store's directory. */
bool wf_rdv_job_id_ok(const void *id, size_t n);

/* The proof of HMAC(K, role || u32 job_len || job || Nc || Ns) for role
 * "weft-rdv-client" or "weft-rdv-server"; nonces are WF_AUTH_NONCE_LEN. */
weft_status_t wf_rdv_proof(const uint8_t *key, const char *role,
                           const void *job, size_t job_len,
                           const uint8_t *nonce_c, const uint8_t *nonce_s,
                           uint8_t *out);

/* Copies a wire string into a terminated buffer, replacing bytes that are
 * not printable ASCII with '?', for log messages. */
void wf_rdv_printable(const void *p, size_t n, char *out, size_t out_size);

#endif /* WF_RDV_PROTO_H */
