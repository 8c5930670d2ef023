/*
 * hostlist.c - parsing and placing weftrun's hosts (hostlist.h).
 */
#include "hostlist.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* localhost, a loopback address or this machine's own name (short or
 * full): no ssh needed. */
static bool is_this_machine(const char *name)
{
    char self[256];
    if (strcmp(name, "localhost") == 0 || strncmp(name, "127.", 4) == 0 ||
        strcmp(name, "::1") == 0)
        return true;
    if (gethostname(self, sizeof(self)) != 0)
        return false;
    self[sizeof(self) - 1] = '\0';
    size_t short_len = strcspn(self, ".");
    return strcmp(name, self) == 0 ||
           (strlen(name) == short_len && strncmp(name, self, short_len) == 0);
}

static bool add(wr_hosts_t *h, const char *name, size_t name_len, int slots,
                char *err, size_t len)
{
    if (name_len == 0 || name_len >= sizeof(h->hosts[0].name)) {
        snprintf(err, len, "host name '%.*s' is empty or too long",
                 (int)name_len, name);
        return false;
    }
    if (slots < 1 || slots > 4096) {
        snprintf(err, len, "host %.*s: %d slots is not in 1..4096",
                 (int)name_len, name, slots);
        return false;
    }
    wr_host_t *grown = realloc(h->hosts, (size_t)(h->n + 1) * sizeof(*grown));
    if (!grown) {
        snprintf(err, len, "out of memory");
        return false;
    }
    h->hosts = grown;
    wr_host_t *e = &h->hosts[h->n++];
    memset(e, 0, sizeof(*e));
    memcpy(e->name, name, name_len);
    e->slots = slots;
    e->local = is_this_machine(e->name);
    return true;
}

/* "N" as a slot count, or -1. */
static int parse_slots(const char *s, size_t n)
{
    if (n == 0 || n > 5)
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* One entry "host" or "host:N" (an IPv6 address in brackets keeps its
 * colons: "[fe80::1]:2"). */
static bool add_entry(wr_hosts_t *h, const char *s, size_t n, char *err,
                      size_t len)
{
    const char *colon = NULL;
    if (n && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close) {
            snprintf(err, len, "'%.*s': no closing ']'", (int)n, s);
            return false;
        }
        if ((size_t)(close + 1 - s) < n && close[1] == ':')
            colon = close + 1;
        else if ((size_t)(close + 1 - s) != n) {
            snprintf(err, len, "'%.*s': expected [address]:slots", (int)n, s);
            return false;
        }
        if (!colon)
            return add(h, s + 1, (size_t)(close - s - 1), 1, err, len);
        int slots = parse_slots(colon + 1, n - (size_t)(colon + 1 - s));
        if (slots < 0) {
            snprintf(err, len, "'%.*s': the slots after ':' are not a number",
                     (int)n, s);
            return false;
        }
        return add(h, s + 1, (size_t)(close - s - 1), slots, err, len);
    }
    colon = memchr(s, ':', n);
    if (!colon)
        return add(h, s, n, 1, err, len);
    int slots = parse_slots(colon + 1, n - (size_t)(colon + 1 - s));
    if (slots < 0) {
        snprintf(err, len, "'%.*s': the slots after ':' are not a number",
                 (int)n, s);
        return false;
    }
    return add(h, s, (size_t)(colon - s), slots, err, len);
}

bool hosts_parse_list(wr_hosts_t *h, const char *spec, char *err, size_t len)
{
    const char *p = spec;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (n && !add_entry(h, p, n, err, len))
            return false;
        p += n;
        if (*p == ',')
            p++;
    }
    if (h->n == 0) {
        snprintf(err, len, "-H '%s' names no host", spec);
        return false;
    }
    return true;
}

bool hosts_parse_file(wr_hosts_t *h, const char *path, char *err, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, len, "--hostfile %s: %s", path, strerror(errno));
        return false;
    }
    char line[1024];
    int lineno = 0, before = h->n;
    bool ok = true;
    while (ok && fgets(line, sizeof(line), f)) {
        lineno++;
        line[strcspn(line, "#\r\n")] = '\0';
        char *save = NULL, *word = strtok_r(line, " \t", &save);
        if (!word)
            continue;
        char msg[256];
        ok = add_entry(h, word, strlen(word), msg, sizeof(msg));
        for (char *kv; ok && (kv = strtok_r(NULL, " \t", &save));) {
            if (strncmp(kv, "slots=", 6) != 0)
                continue; /* max_slots= and others: not ours */
            int slots = parse_slots(kv + 6, strlen(kv + 6));
            if (slots < 1) {
                snprintf(msg, sizeof(msg), "'%s' is not a slot count", kv);
                ok = false;
            } else {
                h->hosts[h->n - 1].slots = slots;
            }
        }
        if (!ok)
            snprintf(err, len, "--hostfile %s, line %d: %s", path, lineno,
                     msg);
    }
    fclose(f);
    if (ok && h->n == before) {
        snprintf(err, len, "--hostfile %s names no host", path);
        ok = false;
    }
    return ok;
}

bool hosts_place(wr_hosts_t *h, int *nranks, char *err, size_t len)
{
    int slots = 0;
    for (int i = 0; i < h->n; i++)
        slots += h->hosts[i].slots;
    int want = *nranks > 0 ? *nranks : slots;
    if (want > slots) {
        snprintf(err, len, "%d ranks but the hosts have %d slots (add "
                 "slots with -H host:N or \"host slots=N\")", want, slots);
        return false;
    }
    int next = 0;
    for (int i = 0; i < h->n; i++) {
        wr_host_t *e = &h->hosts[i];
        e->first = next;
        e->count = want - next < e->slots ? want - next : e->slots;
        next += e->count;
    }
    *nranks = want;
    return true;
}

bool hosts_any_remote(const wr_hosts_t *h)
{
    for (int i = 0; i < h->n; i++)
        if (h->hosts[i].count > 0 && !h->hosts[i].local)
            return true;
    return false;
}

void hosts_free(wr_hosts_t *h)
{
    free(h->hosts);
    h->hosts = NULL;
    h->n = 0;
}
