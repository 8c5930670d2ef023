/*
 * rdv_proto.c - encoding and decoding of rendezvous frames (rdv_proto.h).
 *
 * Decoding never trusts a length field: every field is checked against the
 * bytes actually left in the payload, so a garbled frame turns into a
 * "bad" reader and a reason string, never an out-of-bounds read.
 */
#include "rdv/rdv_proto.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "common.h"

const char *wf_rdv_type_name(unsigned type)
{
    switch (type) {
#define WF_RDV_TYPE_CASE_(name, value, text)                                   \
    case value:                                                                \
        return text;
        WF_RDV_TYPE_LIST(WF_RDV_TYPE_CASE_)
#undef WF_RDV_TYPE_CASE_
    default:
        return "unknown";
    }
}

/* ---- header ------------------------------------------------------------ */

void wf_rdv_hdr_decode(const uint8_t *p, wf_rdv_hdr_t *hdr)
{
    uint32_t u32;
    uint16_t u16;

    memcpy(&u32, p, 4);
    hdr->magic = ntohl(u32);
    memcpy(&u16, p + 4, 2);
    hdr->version = ntohs(u16);
    memcpy(&u16, p + 6, 2);
    hdr->type = ntohs(u16);
    memcpy(&u32, p + 8, 4);
    hdr->length = ntohl(u32);
}

bool wf_rdv_hdr_check(const wf_rdv_hdr_t *hdr, size_t max_frame, char *why,
                      size_t why_size)
{
    if (hdr->magic != WF_RDV_MAGIC) {
        snprintf(why, why_size,
                 "bad magic 0x%08" PRIx32 " (not a weft rendezvous client?)",
                 hdr->magic);
        return false;
    }
    if (hdr->version != WF_RDV_VERSION) {
        snprintf(why, why_size,
                 "unsupported protocol version %u (this side speaks %d)",
                 hdr->version, WF_RDV_VERSION);
        return false;
    }
    if ((uint64_t)hdr->length + WF_RDV_HDR_SIZE > max_frame) {
        snprintf(why, why_size,
                 "%s frame of %" PRIu32 " payload bytes exceeds the limit of "
                 "%zu bytes (WEFT_RDV_MAX_FRAME)",
                 wf_rdv_type_name(hdr->type), hdr->length, max_frame);
        return false;
    }
    return true;
}

/* ---- building ---------------------------------------------------------- */

void wf_rdv_buf_init(wf_rdv_buf_t *buf) { memset(buf, 0, sizeof(*buf)); }

void wf_rdv_buf_free(wf_rdv_buf_t *buf)
{
    free(buf->data);
    memset(buf, 0, sizeof(*buf));
}

void wf_rdv_buf_consume(wf_rdv_buf_t *buf, size_t n)
{
    if (n >= buf->len) {
        buf->len = 0;
        return;
    }
    memmove(buf->data, buf->data + n, buf->len - n);
    buf->len -= n;
}

static void buf_append(wf_rdv_buf_t *buf, const void *p, size_t n)
{
    if (buf->failed)
        return;
    if (buf->len + n > buf->cap) {
        size_t cap = buf->cap ? buf->cap : 256;
        while (cap < buf->len + n)
            cap *= 2;
        uint8_t *data = realloc(buf->data, cap);
        if (!data) {
            buf->failed = true;
            return;
        }
        buf->data = data;
        buf->cap = cap;
    }
    if (n)
        memcpy(buf->data + buf->len, p, n);
    buf->len += n;
}

void wf_rdv_frame_begin(wf_rdv_buf_t *buf, wf_rdv_type_t type)
{
    uint8_t hdr[WF_RDV_HDR_SIZE];
    uint32_t magic = htonl(WF_RDV_MAGIC);
    uint16_t version = htons(WF_RDV_VERSION), t = htons((uint16_t)type);

    memcpy(hdr, &magic, 4);
    memcpy(hdr + 4, &version, 2);
    memcpy(hdr + 6, &t, 2);
    memset(hdr + 8, 0, 4); /* patched by wf_rdv_frame_end */
    buf->frame_start = buf->len;
    buf_append(buf, hdr, sizeof(hdr));
}

void wf_rdv_put_u32(wf_rdv_buf_t *buf, uint32_t v)
{
    v = htonl(v);
    buf_append(buf, &v, 4);
}

void wf_rdv_put_i64(wf_rdv_buf_t *buf, int64_t v)
{
    uint64_t u = htobe64((uint64_t)v);
    buf_append(buf, &u, 8);
}

void wf_rdv_put_bytes(wf_rdv_buf_t *buf, const void *p, size_t n)
{
    wf_rdv_put_u32(buf, (uint32_t)n);
    buf_append(buf, p, n);
}

void wf_rdv_put_str(wf_rdv_buf_t *buf, const char *s)
{
    wf_rdv_put_bytes(buf, s, strlen(s));
}

weft_status_t wf_rdv_frame_end(wf_rdv_buf_t *buf)
{
    if (buf->failed)
        return WEFT_ERR_NO_MEMORY;
    uint32_t len = htonl(
        (uint32_t)(buf->len - buf->frame_start - WF_RDV_HDR_SIZE));
    memcpy(buf->data + buf->frame_start + 8, &len, 4);
    return WEFT_OK;
}

weft_status_t wf_rdv_encode_error(wf_rdv_buf_t *buf, weft_status_t status,
                                  uint32_t flags, const char *message)
{
    size_t n = strnlen(message, WF_RDV_ERRMSG_MAX);

    wf_rdv_frame_begin(buf, WF_RDV_ERROR);
    wf_rdv_put_u32(buf, (uint32_t)(int32_t)status);
    wf_rdv_put_u32(buf, flags);
    wf_rdv_put_bytes(buf, message, n);
    return wf_rdv_frame_end(buf);
}

/* ---- reading ----------------------------------------------------------- */

void wf_rdv_reader_init(wf_rdv_reader_t *r, const void *p, size_t n)
{
    r->p = p;
    r->left = n;
    r->bad = false;
}

static const uint8_t *reader_take(wf_rdv_reader_t *r, size_t n)
{
    if (r->bad || r->left < n) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    r->left -= n;
    return p;
}

uint32_t wf_rdv_get_u32(wf_rdv_reader_t *r)
{
    const uint8_t *p = reader_take(r, 4);
    uint32_t v;

    if (!p)
        return 0;
    memcpy(&v, p, 4);
    return ntohl(v);
}

int64_t wf_rdv_get_i64(wf_rdv_reader_t *r)
{
    const uint8_t *p = reader_take(r, 8);
    uint64_t v;

    if (!p)
        return 0;
    memcpy(&v, p, 8);
    return (int64_t)be64toh(v);
}

size_t wf_rdv_get_bytes(wf_rdv_reader_t *r, const uint8_t **p)
{
    uint32_t n = wf_rdv_get_u32(r);
    const uint8_t *data = reader_take(r, n);

    *p = data;
    return data ? n : 0;
}

/* WAIT carries n length-prefixed keys; walk them once so handlers can
 * iterate without checks.  n is bounded by the payload (4 bytes a key). */
static void decode_wait(wf_rdv_reader_t *r, wf_rdv_msg_t *msg)
{
    const uint8_t *key;

    msg->wait_ms = wf_rdv_get_u32(r);
    msg->nkeys = wf_rdv_get_u32(r);
    if (r->bad || msg->nkeys > r->left / 4) {
        r->bad = true;
        return;
    }
    msg->keys = r->p;
    msg->keys_len = r->left;
    for (uint32_t i = 0; i < msg->nkeys && !r->bad; i++)
        wf_rdv_get_bytes(r, &key);
}

static void decode_fields(wf_rdv_reader_t *r, wf_rdv_msg_t *msg)
{
    switch (msg->type) {
    case WF_RDV_HELLO:
        msg->job_len = wf_rdv_get_bytes(r, &msg->job);
        msg->nonce_len = wf_rdv_get_bytes(r, &msg->nonce);
        msg->flags = wf_rdv_get_u32(r);
        break;
    case WF_RDV_AUTH:
        msg->proof_len = wf_rdv_get_bytes(r, &msg->proof);
        msg->reg_key_len = wf_rdv_get_bytes(r, &msg->reg_key);
        break;
    case WF_RDV_CHALLENGE:
        msg->nonce_len = wf_rdv_get_bytes(r, &msg->nonce);
        msg->flags = wf_rdv_get_u32(r);
        break;
    case WF_RDV_WELCOME:
        msg->proof_len = wf_rdv_get_bytes(r, &msg->proof);
        break;
    case WF_RDV_SET:
    case WF_RDV_SET_ONCE:
        msg->key_len = wf_rdv_get_bytes(r, &msg->key);
        msg->value_len = wf_rdv_get_bytes(r, &msg->value);
        break;
    case WF_RDV_GET:
        msg->key_len = wf_rdv_get_bytes(r, &msg->key);
        msg->wait_ms = wf_rdv_get_u32(r);
        break;
    case WF_RDV_WAIT:
        decode_wait(r, msg);
        break;
    case WF_RDV_ADD:
        msg->key_len = wf_rdv_get_bytes(r, &msg->key);
        msg->num = wf_rdv_get_i64(r);
        break;
    case WF_RDV_VALUE:
    case WF_RDV_EXISTS:
        msg->value_len = wf_rdv_get_bytes(r, &msg->value);
        break;
    case WF_RDV_INT:
        msg->num = wf_rdv_get_i64(r);
        break;
    case WF_RDV_TIMEOUT:
        msg->key_len = wf_rdv_get_bytes(r, &msg->key);
        break;
    case WF_RDV_ERROR:
        msg->code = (int32_t)wf_rdv_get_u32(r);
        msg->flags = wf_rdv_get_u32(r);
        msg->text_len = wf_rdv_get_bytes(r, &msg->text);
        break;
    default: /* OK, CREATED: empty */
        break;
    }
}

bool wf_rdv_decode(unsigned type, const void *payload, size_t len,
                   wf_rdv_msg_t *msg, char *why, size_t why_size)
{
    wf_rdv_reader_t r;

    memset(msg, 0, sizeof(*msg));
    msg->type = type;
    if (!strcmp(wf_rdv_type_name(type), "unknown")) {
        snprintf(why, why_size, "unknown message type 0x%04x", type);
        return false;
    }
    wf_rdv_reader_init(&r, payload, len);
    decode_fields(&r, msg);
    if (r.bad || r.left != 0) {
        snprintf(why, why_size,
                 "garbled %s payload: field lengths do not add up to %zu "
                 "bytes",
                 wf_rdv_type_name(type), len);
        return false;
    }
    return true;
}

/* ---- counters ---------------------------------------------------------- */

bool wf_rdv_counter_parse(const void *value, size_t len, int64_t *out)
{
    char text[32];
    char *end;

    if (len == 0 || len >= sizeof(text))
        return false;
    memcpy(text, value, len);
    text[len] = '\0';
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || *end != '\0' || end == text)
        return false;
    *out = (int64_t)v;
    return true;
}

size_t wf_rdv_counter_format(int64_t v, char *buf)
{
    return (size_t)snprintf(buf, 24, "%" PRId64, v);
}

bool wf_rdv_counter_add(int64_t old, int64_t delta, int64_t *out)
{
    return !__builtin_add_overflow(old, delta, out);
}

bool wf_rdv_job_id_ok(const void *id, size_t n)
{
    const uint8_t *p = id;

    for (size_t i = 0; i < n; i++)
        if (p[i] < 0x20 || p[i] > 0x7e)
            return false;
    return n > 0 && n <= WF_RDV_JOB_MAX;
}

weft_status_t wf_rdv_proof(const uint8_t *key, const char *role,
                           const void *job, size_t job_len,
                           const uint8_t *nonce_c, const uint8_t *nonce_s,
                           uint8_t *out)
{
    uint8_t len_be[4];
    uint32_t n = htonl((uint32_t)job_len);

    /* The job's length keeps "ab"+"c" apart from "a"+"bc"; the nonces and
     * the role are fixed-size or distinct. */
    memcpy(len_be, &n, 4);
    wf_auth_part_t parts[] = {{role, strlen(role) + 1},
                              {len_be, 4},
                              {job, job_len},
                              {nonce_c, WF_AUTH_NONCE_LEN},
                              {nonce_s, WF_AUTH_NONCE_LEN}};
    return wf_auth_mac(key, WF_AUTH_KEY_LEN, parts, WF_ARRAY_LEN(parts), out);
}

void wf_rdv_printable(const void *p, size_t n, char *out, size_t out_size)
{
    const uint8_t *s = p;
    size_t i;

    if (out_size == 0)
        return;
    for (i = 0; i < n && i + 1 < out_size; i++)
        out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? (char)s[i] : '?';
    out[i] = '\0';
}
