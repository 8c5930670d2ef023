/*
 * config.h - the immutable configuration snapshot.
 *
 * Precedence: API parameters > per-communicator overrides (the `config`
 * string) > environment > default.  wf_config_load resolves all of it once;
 * modules read the snapshot and never the environment.
 */
#ifndef WF_CONFIG_H
#define WF_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "weft.h"

#define WF_CONFIG_STR_MAX 256

typedef int64_t wf_ctype_INT;
typedef uint64_t wf_ctype_SIZE;
typedef int64_t wf_ctype_DURATION;
typedef bool wf_ctype_BOOL;
typedef char wf_ctype_STRING[WF_CONFIG_STR_MAX];

typedef enum {
#define WF_PARAM(field, env, type, def, doc) WF_PARAM_ID_##field,
#include "params.def"
#undef WF_PARAM
    WF_PARAM_COUNT
} wf_param_id_t;

typedef enum {
    WF_SOURCE_DEFAULT = 0,
    WF_SOURCE_ENV,
    WF_SOURCE_OVERRIDE, /* the communicator's `config` string */
    WF_SOURCE_API       /* a weft_comm_params_t field */
} wf_config_source_t;

typedef struct wf_config {
#define WF_PARAM(field, env, type, def, doc) wf_ctype_##type field;
#include "params.def"
#undef WF_PARAM
    uint8_t source[WF_PARAM_COUNT];
} wf_config_t;

/* Fills `cfg` from defaults, then the environment, then `overrides`
 * ("NAME=VALUE,NAME=VALUE", may be NULL).  Warns once per process about
 * unknown WEFT_* variables with a did-you-mean suggestion.  A malformed value
 * fails with WEFT_ERR_INVALID_ARG naming the variable. */
weft_status_t wf_config_load(wf_config_t *cfg, const char *overrides);

/* Sets one knob by its environment name from text; used for overrides and
 * API fields.  Fails on unknown names or malformed values. */
weft_status_t wf_config_set(wf_config_t *cfg, const char *name,
                            const char *value, wf_config_source_t source);

/* When WEFT_TOKEN is unset and WEFT_TOKEN_FILE names a file, sets the
 * token from the file's first line (config_token.c).  A missing, empty or
 * oversized file fails with WEFT_ERR_INVALID_ARG naming it; a file that
 * others may read gets a warning.  wf_config_load calls it last. */
weft_status_t wf_config_read_token_file(wf_config_t *cfg);

/* Prints every knob: name, value, source, description.  The token is shown
 * as "(set)". */
void wf_config_print(FILE *out, const wf_config_t *cfg);

/* Prints docs/env.md (markdown table) from params.def. */
void wf_config_print_markdown(FILE *out);

/* Parsers shared with tools: sizes ("64k"), durations ("5s"), booleans. */
bool wf_parse_size(const char *text, uint64_t *out);
bool wf_parse_duration_ms(const char *text, int64_t *out);
bool wf_parse_bool(const char *text, bool *out);

/* Reads an environment variable; the one getenv wrapper of the library
 * (also used by launch_env.c for launcher variables). */
const char *wf_env_get(const char *name);
/* A launcher's variable that must be a count (0 to 2^30): false when it
 * is absent, empty or anything else. */
bool wf_env_int(const char *name, int *out);

#endif /* WF_CONFIG_H */
