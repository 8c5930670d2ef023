/*
 * auth.h - the few cryptographic primitives weft uses to prove knowledge of
 * a shared secret: HMAC-SHA256, constant-time comparison, random nonces and
 * key derivation.  All of it is OpenSSL's libcrypto; nothing here is
 * hand-written cryptography, only the framing of what gets MACed.
 *
 * Who uses it: the rendezvous challenge-response (rdv_jobs.c, store_tcp.c),
 * the data-plane handshake (transport/tcp/tcp_conn.c) and the per-job
 * secret of the communicator (comm_secret.c).  docs/design.md describes
 * the trust model.
 */
#ifndef WF_AUTH_H
#define WF_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft.h"

#define WF_AUTH_KEY_LEN 32   /* derived keys and job secrets */
#define WF_AUTH_MAC_LEN 32   /* HMAC-SHA256 output */
#define WF_AUTH_NONCE_LEN 16 /* 128 random bits: never repeats in practice */

/* One piece of the message a MAC covers.  Pieces are concatenated as they
 * are; callers put fixed-size or length-prefixed pieces only, so two
 * different messages never concatenate to the same bytes. */
typedef struct {
    const void *p;
    size_t n;
} wf_auth_part_t;

/* out = HMAC-SHA256(key, parts[0] || ... ).  The whole message is at most
 * WF_AUTH_MSG_MAX bytes (a bug otherwise: returns WEFT_ERR_INTERNAL). */
#define WF_AUTH_MSG_MAX 1024
weft_status_t wf_auth_mac(const void *key, size_t key_len,
                          const wf_auth_part_t *parts, size_t nparts,
                          uint8_t out[WF_AUTH_MAC_LEN]);

/* Compares in time independent of the contents (CRYPTO_memcmp), so a peer
 * cannot learn a MAC byte by byte from response times. */
bool wf_auth_equal(const void *a, const void *b, size_t n);

/* Fills buf with cryptographically strong random bytes (RAND_bytes);
 * WEFT_ERR_SYSTEM, logged, when the generator fails. */
weft_status_t wf_auth_random(void *buf, size_t n);

/* A key for one purpose of one job, derived from the shared token:
 * HMAC-SHA256(token, purpose || 0x00 || job).  Different purposes give
 * unrelated keys, so revealing one (e.g. the rendezvous key registered on
 * a token-less server) reveals neither the token nor the others. */
#define WF_AUTH_PURPOSE_RDV "weft-rdv-key-v2"
#define WF_AUTH_PURPOSE_DATA "weft-data-key-v2"
weft_status_t wf_auth_derive(const char *token, const char *purpose,
                             const char *job, uint8_t out[WF_AUTH_KEY_LEN]);

#endif /* WF_AUTH_H */
