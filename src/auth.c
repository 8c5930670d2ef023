/*
 * auth.c - HMAC-SHA256, constant-time compare and random bytes from
 * OpenSSL's libcrypto (auth.h).  The one-shot HMAC() is used on a
 * concatenated buffer: it exists unchanged in OpenSSL 1.1 and 3.x, where
 * the streaming HMAC_CTX calls are deprecated.
 */
#include "auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <string.h>

#include "common.h"

weft_status_t wf_auth_mac(const void *key, size_t key_len,
                          const wf_auth_part_t *parts, size_t nparts,
                          uint8_t out[WF_AUTH_MAC_LEN])
{
    uint8_t msg[WF_AUTH_MSG_MAX];
    size_t len = 0;
    unsigned out_len = 0;

    for (size_t i = 0; i < nparts; i++) {
        if (parts[i].n > sizeof(msg) - len) {
            WEFT_ERROR(INIT, "auth: message of more than %zu bytes to MAC",
                       sizeof(msg));
            return WEFT_ERR_INTERNAL;
        }
        if (parts[i].n)
            memcpy(msg + len, parts[i].p, parts[i].n);
        len += parts[i].n;
    }
    /* An empty key is valid HMAC, but OpenSSL wants a non-NULL pointer. */
    static const uint8_t no_key[1];
    if (!HMAC(EVP_sha256(), key_len ? key : no_key, (int)key_len, msg, len,
              out, &out_len) ||
        out_len != WF_AUTH_MAC_LEN) {
        WEFT_ERROR(INIT, "auth: HMAC-SHA256 failed in libcrypto");
        OPENSSL_cleanse(msg, sizeof(msg));
        return WEFT_ERR_INTERNAL;
    }
    OPENSSL_cleanse(msg, len);
    return WEFT_OK;
}

bool wf_auth_equal(const void *a, const void *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}

weft_status_t wf_auth_random(void *buf, size_t n)
{
    if (RAND_bytes(buf, (int)n) != 1) {
        WEFT_ERROR(INIT, "auth: the random generator of libcrypto failed");
        return WEFT_ERR_SYSTEM;
    }
    return WEFT_OK;
}

weft_status_t wf_auth_derive(const char *token, const char *purpose,
                             const char *job, uint8_t out[WF_AUTH_KEY_LEN])
{
    static const uint8_t zero = 0;
    wf_auth_part_t parts[] = {{purpose, strlen(purpose)},
                              {&zero, 1},
                              {job, strlen(job)}};

    return wf_auth_mac(token, strlen(token), parts, WF_ARRAY_LEN(parts), out);
}
