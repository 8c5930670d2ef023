/*
 * fuzz_config.c - libFuzzer harness for the configuration parsers: the
 * per-communicator override string ("NAME=VALUE,NAME=VALUE", src/config.c)
 * and the WEFT_* value parsers (sizes, durations, booleans, host:port).
 *
 * The input is split at its first NUL: before it the override string,
 * after it one value for every value parser.  Both are made NUL-terminated
 * copies, as the library only ever sees C strings.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_quiet.h"
#include "common.h"
#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t n1 = nul ? (size_t)(nul - data) : size;
    size_t n2 = nul ? size - n1 - 1 : 0;
    char *over = malloc(n1 + 1), *value = malloc(n2 + 1);
    wf_config_t cfg;
    uint64_t sz;
    int64_t ms;
    bool b;
    char host[256];
    int port;

    weft_set_logger(wf_fuzz_quiet, NULL);
    if (!over || !value)
        goto out;
    memcpy(over, data, n1);
    over[n1] = '\0';
    memcpy(value, data + n1 + (nul != NULL), n2);
    value[n2] = '\0';
    wf_config_load(&cfg, over);
    wf_parse_size(value, &sz);
    wf_parse_duration_ms(value, &ms);
    wf_parse_bool(value, &b);
    wf_parse_hostport(value, host, sizeof(host), &port);
out:
    free(over);
    free(value);
    return 0;
}
