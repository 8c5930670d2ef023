/*
 * config.c - the knob table of params.def turned into a parser, a dump and
 * docs/env.md.  This file (with launch_env.c for launcher variables) is the
 * only place the environment is read.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common.h"

extern char **environ;

typedef enum { WF_PT_INT, WF_PT_SIZE, WF_PT_DURATION, WF_PT_BOOL, WF_PT_STRING } wf_ptype_t;

typedef struct {
    const char *env;
    wf_ptype_t type;
    const char *def;
    const char *doc;
    size_t offset;
} wf_param_desc_t;

static const wf_param_desc_t params[WF_PARAM_COUNT] = {
#define WF_PARAM(field, envname, ptype, defval, docstr)                        \
    [WF_PARAM_ID_##field] = {envname, WF_PT_##ptype, defval, docstr,           \
                             offsetof(wf_config_t, field)},
#include "params.def"
#undef WF_PARAM
};

static const char *const source_names[] = {"default", "env", "config", "api"};

/* Secrets are never printed: logs and config dumps end up in bug reports. */
static bool is_secret(const wf_param_desc_t *p)
{
    return strcmp(p->env, "WEFT_TOKEN") == 0;
}

static const char *shown_value(const wf_param_desc_t *p, const char *value)
{
    return is_secret(p) && *value ? "(set)" : value;
}

const char *wf_env_get(const char *name) { return getenv(name); }

bool wf_env_int(const char *name, int *out)
{
    const char *v = wf_env_get(name);
    char *end;
    if (!v || !*v)
        return false;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > 1 << 30)
        return false;
    *out = (int)x;
    return true;
}

bool wf_parse_size(const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || text[0] == '-')
        return false;
    uint64_t mult = 1;
    switch (*end) {
    case 'k': case 'K': mult = 1ull << 10; end++; break;
    case 'm': case 'M': mult = 1ull << 20; end++; break;
    case 'g': case 'G': mult = 1ull << 30; end++; break;
    default: break;
    }
    if (*end == 'b' || *end == 'B' || (*end == 'i' && end[1] == 'B'))
        end += *end == 'i' ? 2 : 1;
    if (*end || (mult > 1 && v > UINT64_MAX / mult))
        return false;
    *out = v * mult;
    return true;
}

bool wf_parse_duration_ms(const char *text, int64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || v < 0)
        return false;
    double ms;
    /* A bare number is seconds, as in torch's timeouts, Horovod's
     * *_SECONDS variables and timeout(1) (docs/env.md). */
    if (strcmp(end, "ms") == 0)
        ms = v;
    else if (!*end || strcmp(end, "s") == 0)
        ms = v * 1000.0;
    else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
        ms = v * 60000.0;
    else
        return false;
    /* Written so NaN fails too ("nan" parses as a double; converting it to
     * an integer is undefined behaviour, found by fuzz/fuzz_config.c). */
    if (!(ms >= 0 && ms <= (double)INT64_MAX / 2))
        return false;
    *out = (int64_t)ms;
    return true;
}

bool wf_parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = {"1", "y", "yes", "true", "on"};
    static const char *const no[] = {"0", "n", "no", "false", "off"};
    for (size_t i = 0; i < WF_ARRAY_LEN(yes); i++) {
        if (strcasecmp(text, yes[i]) == 0)
            return *out = true, true;
        if (strcasecmp(text, no[i]) == 0)
            return *out = false, true;
    }
    return false;
}

static bool parse_into(wf_config_t *cfg, const wf_param_desc_t *p,
                       const char *value)
{
    void *field = (char *)cfg + p->offset;
    char *end;
    switch (p->type) {
    case WF_PT_INT: {
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (errno || end == value || *end)
            return false;
        *(int64_t *)field = v;
        return true;
    }
    case WF_PT_SIZE:
        return wf_parse_size(value, (uint64_t *)field);
    case WF_PT_DURATION:
        return wf_parse_duration_ms(value, (int64_t *)field);
    case WF_PT_BOOL:
        return wf_parse_bool(value, (bool *)field);
    case WF_PT_STRING:
        return wf_strlcpy((char *)field, value, WF_CONFIG_STR_MAX);
    }
    return false;
}

/* What each type accepts, for the message that refuses a value. */
static const char *const value_forms[] = {
    [WF_PT_INT] = "an integer",
    [WF_PT_SIZE] = "a size in bytes, suffixes k, m or g",
    [WF_PT_DURATION] = ("a duration with unit ms, s or m; a number "
                        "without a unit is seconds"),
    [WF_PT_BOOL] = "1/0, yes/no, true/false or on/off",
    [WF_PT_STRING] = "a string of at most 255 bytes"};

static const wf_param_desc_t *find_param(const char *name)
{
    for (int i = 0; i < WF_PARAM_COUNT; i++)
        if (strcmp(params[i].env, name) == 0)
            return &params[i];
    return NULL;
}

static const char *closest_param(const char *name)
{
    const char *best = NULL;
    int best_d = INT_MAX;
    for (int i = 0; i < WF_PARAM_COUNT; i++) {
        int d = wf_edit_distance(name, params[i].env);
        if (d < best_d)
            best_d = d, best = params[i].env;
    }
    return best_d <= 3 ? best : NULL;
}

weft_status_t wf_config_set(wf_config_t *cfg, const char *name,
                            const char *value, wf_config_source_t source)
{
    const wf_param_desc_t *p = find_param(name);
    if (!p) {
        const char *hint = closest_param(name);
        WEFT_WARN(ENV, "unknown setting %s%s%s%s", name,
                  hint ? " (did you mean " : "", hint ? hint : "",
                  hint ? "?)" : "");
        return WEFT_ERR_INVALID_ARG;
    }
    if (!parse_into(cfg, p, value)) {
        WEFT_WARN(ENV, "%s=%s is not a valid value (%s)", name,
                  shown_value(p, value), value_forms[p->type]);
        return WEFT_ERR_INVALID_ARG;
    }
    cfg->source[p - params] = (uint8_t)source;
    /* Environment values are reported once per process (env_report). */
    if (source == WF_SOURCE_OVERRIDE || source == WF_SOURCE_API)
        WEFT_INFO(ENV, "%s set by %s to %s", name, source_names[source],
                  shown_value(p, value));
    return WEFT_OK;
}

/* Once per process: the knobs the environment sets, and unknown WEFT_*
 * variables, which are typos more often than not. */
static void env_report(void)
{
    for (int i = 0; i < WF_PARAM_COUNT; i++) {
        const char *v = wf_env_get(params[i].env);
        if (v)
            WEFT_INFO(ENV, "%s set by env to %s", params[i].env,
                      shown_value(&params[i], v));
    }
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "WEFT_", 5) != 0)
            continue;
        char name[128];
        size_t len = strcspn(*e, "=");
        if (len >= sizeof(name))
            continue;
        memcpy(name, *e, len);
        name[len] = '\0';
        if (find_param(name))
            continue;
        const char *hint = closest_param(name);
        WEFT_WARN(ENV, "unknown environment variable %s%s%s%s", name,
                  hint ? " (did you mean " : "", hint ? hint : "",
                  hint ? "?)" : "");
    }
}

/* "NAME=VALUE,NAME=VALUE".  A comma-separated piece without '=' continues
 * the previous value, so list values such as
 * "WEFT_ALGO=allreduce:rhd,broadcast:tree" work. */
static weft_status_t apply_overrides(wf_config_t *cfg, const char *overrides)
{
    char buf[1024], value[1024] = "", name[128] = "";
    if (!wf_strlcpy(buf, overrides, sizeof(buf))) {
        WEFT_WARN(ENV, "config override string longer than %zu bytes",
                  sizeof(buf) - 1);
        return WEFT_ERR_INVALID_ARG;
    }
    for (char *save, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq && !*name) {
            WEFT_WARN(ENV, "config override \"%s\" is not NAME=VALUE", tok);
            return WEFT_ERR_INVALID_ARG;
        }
        if (!eq) { /* continues the previous value */
            size_t used = strlen(value);
            snprintf(value + used, sizeof(value) - used, ",%s", tok);
            continue;
        }
        if (*name)
            WEFT_CHECK(wf_config_set(cfg, name, value, WF_SOURCE_OVERRIDE));
        *eq = '\0';
        wf_strlcpy(name, tok, sizeof(name));
        wf_strlcpy(value, eq + 1, sizeof(value));
    }
    if (*name)
        WEFT_CHECK(wf_config_set(cfg, name, value, WF_SOURCE_OVERRIDE));
    return WEFT_OK;
}

weft_status_t wf_config_load(wf_config_t *cfg, const char *overrides)
{
    static pthread_once_t warn_once = PTHREAD_ONCE_INIT;
    memset(cfg, 0, sizeof(*cfg));
    for (int i = 0; i < WF_PARAM_COUNT; i++) {
        if (!parse_into(cfg, &params[i], params[i].def)) {
            WEFT_ERROR(ENV, "bad default for %s", params[i].env);
            return WEFT_ERR_INTERNAL;
        }
    }
    for (int i = 0; i < WF_PARAM_COUNT; i++) {
        const char *v = wf_env_get(params[i].env);
        if (v)
            WEFT_CHECK(wf_config_set(cfg, params[i].env, v, WF_SOURCE_ENV));
    }
    pthread_once(&warn_once, env_report);
    if (overrides && *overrides)
        WEFT_CHECK(apply_overrides(cfg, overrides));
    return wf_config_read_token_file(cfg);
}

static void format_value(const wf_config_t *cfg, const wf_param_desc_t *p,
                         char *out, size_t len)
{
    const void *field = (const char *)cfg + p->offset;
    switch (p->type) {
    case WF_PT_INT:
        snprintf(out, len, "%" PRId64, *(const int64_t *)field);
        break;
    case WF_PT_SIZE:
        snprintf(out, len, "%" PRIu64, *(const uint64_t *)field);
        break;
    case WF_PT_DURATION:
        snprintf(out, len, "%" PRId64 "ms", *(const int64_t *)field);
        break;
    case WF_PT_BOOL:
        snprintf(out, len, "%s", *(const bool *)field ? "1" : "0");
        break;
    case WF_PT_STRING:
        snprintf(out, len, "%s", (const char *)field);
        break;
    }
}

void wf_config_print(FILE *out, const wf_config_t *cfg)
{
    for (int i = 0; i < WF_PARAM_COUNT; i++) {
        char value[WF_CONFIG_STR_MAX + 32];
        format_value(cfg, &params[i], value, sizeof(value));
        fprintf(out, "%-22s = %-16s (%s)  # %s\n", params[i].env,
                *value ? shown_value(&params[i], value) : "\"\"",
                source_names[cfg->source[i]],
                params[i].doc);
    }
}

void wf_config_print_markdown(FILE *out)
{
    static const char *const type_names[] = {"integer", "size", "duration",
                                             "boolean", "string"};
    fprintf(out, "# Environment variables\n\n"
                 "Generated from `src/params.def` by "
                 "`build/bin/weft-info --env-markdown` (`make docs`); "
                 "`make check` fails when this file is stale.\n\n"
                 "Sizes take k/m/g suffixes; durations ms, s or m, and a "
                 "number without a unit is seconds. Precedence: "
                 "weft_comm_params_t fields, then the `config` override "
                 "string, then the environment, then the default.\n\n"
                 "| variable | type | default | meaning |\n"
                 "|---|---|---|---|\n");
    for (int i = 0; i < WF_PARAM_COUNT; i++)
        fprintf(out, "| `%s` | %s | `%s` | %s |\n", params[i].env,
                type_names[params[i].type],
                *params[i].def ? params[i].def : "\"\"", params[i].doc);
}

WEFT_API weft_status_t weft_config_dump(FILE *out)
{
    wf_config_t cfg;
    if (!out)
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(wf_config_load(&cfg, NULL));
    wf_config_print(out, &cfg);
    return WEFT_OK;
}

WEFT_API weft_status_t weft_config_dump_markdown(FILE *out)
{
    if (!out)
        return WEFT_ERR_INVALID_ARG;
    wf_config_print_markdown(out);
    return WEFT_OK;
}
