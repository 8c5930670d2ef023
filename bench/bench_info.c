/*
 * bench_info.c - what ran where, for reports: the host name of every rank
 * (gathered to rank 0 with send/recv, so it needs nothing beyond the
 * point-to-point API) and the WEFT_* knobs whose value is not the default,
 * read back from weft_config_dump.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define HOST_LEN 64

/* Rank 0 collects HOST_LEN bytes of host name from every rank. */
static int gather_hosts(const bench_ctx_t *c, bench_info_t *info)
{
    char name[HOST_LEN] = {0};
    weft_status_t st = WEFT_OK;
    if (gethostname(name, sizeof(name) - 1) != 0)
        strcpy(name, "unknown");
    if (c->rank != 0) {
        st = weft_send(name, HOST_LEN, WEFT_UINT8, 0, c->comm);
        goto out;
    }
    info->hosts = calloc((size_t)c->size + 1, sizeof(char *));
    for (int r = 0; info->hosts && r < c->size && st == WEFT_OK; r++) {
        info->hosts[r] = calloc(1, HOST_LEN);
        if (!info->hosts[r])
            return -1;
        if (r == 0)
            memcpy(info->hosts[0], name, HOST_LEN);
        else
            st = weft_recv(info->hosts[r], HOST_LEN, WEFT_UINT8, r, c->comm);
        info->hosts[r][HOST_LEN - 1] = '\0';
    }
    if (!info->hosts)
        return -1;
out:
    if (st != WEFT_OK)
        fprintf(stderr, "weft-bench: rank %d: gathering host names failed: "
                "%s\n", c->rank, weft_strerror(st));
    return st == WEFT_OK ? 0 : -1;
}

/* "a,b" from the per-rank names, each distinct name once, in rank order. */
static char *distinct_hosts(char **hosts, int n)
{
    size_t len = 1;
    for (int r = 0; r < n; r++)
        len += strlen(hosts[r]) + 1;
    char *list = calloc(1, len);
    for (int r = 0; list && r < n; r++) {
        bool seen = false;
        for (int q = 0; q < r && !seen; q++)
            seen = strcmp(hosts[q], hosts[r]) == 0;
        if (seen)
            continue;
        if (*list)
            strcat(list, ",");
        strcat(list, hosts[r]);
    }
    return list;
}

/* One line of weft_config_dump: "NAME = VALUE (SOURCE)  # doc".  The
 * source is the last parenthesis before "  # " (a value may hold its own
 * parentheses).  Returns false for lines of another shape. */
static bool parse_knob(char *line, char **name, char **value, char **source)
{
    char *eq = strstr(line, " = "), *doc = strstr(line, ")  # ");
    if (!eq || !doc || doc < eq)
        return false;
    *doc = '\0';
    char *open = strrchr(eq, '(');
    if (!open)
        return false;
    *source = open + 1;
    char *end = open;
    while (end > eq + 3 && end[-1] == ' ')
        end--;
    *end = '\0';
    *eq = '\0';
    for (char *p = eq; p > line && p[-1] == ' '; p--)
        p[-1] = '\0';
    *name = line;
    *value = eq + 3;
    return true;
}

/* Appends one string to a growing array of n strings. */
static char **push(char **list, int n, const char *s)
{
    list = realloc(list, (size_t)(n + 1) * sizeof(char *));
    if (list)
        list[n] = strdup(s);
    return list;
}

static void add_knob(bench_info_t *info, const char *name, const char *value,
                     const char *source)
{
    int n = info->nknobs;
    info->knob_names = push(info->knob_names, n, name);
    info->knob_values = push(info->knob_values, n, value);
    info->knob_sources = push(info->knob_sources, n, source);
    if (info->knob_names && info->knob_values && info->knob_sources)
        info->nknobs = n + 1;
}

/* A knob the command line set (-a, -t): the communicator's config string
 * carries it above the environment, so the report shows it, not the
 * environment's value. */
static void set_knob(bench_info_t *info, const char *name, const char *value,
                     const char *source)
{
    for (int i = 0; i < info->nknobs; i++) {
        if (strcmp(info->knob_names[i], name) != 0)
            continue;
        free(info->knob_values[i]);
        free(info->knob_sources[i]);
        info->knob_values[i] = strdup(value);
        info->knob_sources[i] = strdup(source);
        return;
    }
    add_knob(info, name, value, source);
}

/* Knobs not at their default.  WEFT_RANK differs on every rank, so rank
 * 0's says nothing about the run; WEFT_TOKEN is a secret and is shown as
 * "(set)" only. */
static int read_knobs(bench_info_t *info)
{
    char *text = NULL, *save = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return -1;
    weft_status_t st = weft_config_dump(f);
    fclose(f);
    for (char *line = strtok_r(text, "\n", &save); st == WEFT_OK && line;
         line = strtok_r(NULL, "\n", &save)) {
        char *name, *value, *source;
        if (!parse_knob(line, &name, &value, &source) ||
            strcmp(source, "default") == 0 || strcmp(name, "WEFT_RANK") == 0)
            continue;
        add_knob(info, name, strcmp(name, "WEFT_TOKEN") ? value : "(set)",
                 source);
    }
    free(text);
    return st == WEFT_OK ? 0 : -1;
}

int bench_info_gather(const bench_ctx_t *c, bench_info_t *info)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(info->date, sizeof(info->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (gather_hosts(c, info) != 0)
        return -1;
    if (c->rank != 0)
        return 0;
    info->host_list = distinct_hosts(info->hosts, c->size);
    if (!info->host_list || read_knobs(info) != 0) {
        fprintf(stderr, "weft-bench: reading the configuration failed\n");
        return -1;
    }
    if (c->o->algo_given)
        set_knob(info, "WEFT_ALGO", c->o->algo, "-a");
    if (c->o->transport_given)
        set_knob(info, "WEFT_TRANSPORT", c->o->transport, "-t");
    return 0;
}

void bench_info_free(bench_info_t *info)
{
    for (int i = 0; i < info->nknobs; i++) {
        free(info->knob_names[i]);
        free(info->knob_values[i]);
        free(info->knob_sources[i]);
    }
    free(info->knob_names);
    free(info->knob_values);
    free(info->knob_sources);
    for (int r = 0; info->hosts && info->hosts[r]; r++)
        free(info->hosts[r]);
    free(info->hosts);
    free(info->host_list);
    *info = (bench_info_t){0};
}
