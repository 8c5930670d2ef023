/*
 * registry.c - the compiled-in transports: lookup by name and the choice
 * behind WEFT_TRANSPORT.
 *
 * The list is explicit (transport_list.h) rather than built by constructors,
 * so the set of transports is visible in one place and static linking can
 * never drop one silently.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common.h"
#include "route.h"
#include "transport.h"
#include "transport_list.h"

typedef struct wf_transport_entry {
    const wf_transport_ops_t *ops;
    bool (*probe)(char *why, size_t why_len); /* NULL: always usable */
} wf_transport_entry_t;

#define WF_TRANSPORT_ENTRY_(name, ops, probe) {&(ops), (probe)},
static const wf_transport_entry_t wf_transports[] = {
    WF_TRANSPORT_LIST(WF_TRANSPORT_ENTRY_)};
#undef WF_TRANSPORT_ENTRY_

/* "tcp,ib,...": built by the preprocessor, skipping the leading comma. */
#define WF_TRANSPORT_NAME_(name, ops, probe) "," #name
static const char wf_transport_name_list[] =
    WF_TRANSPORT_LIST(WF_TRANSPORT_NAME_);
#undef WF_TRANSPORT_NAME_

const char *wf_transport_names(void)
{
    return wf_transport_name_list + 1;
}

static const wf_transport_entry_t *entry_find(const char *name)
{
    for (size_t i = 0; i < WF_ARRAY_LEN(wf_transports); i++) {
        if (strcasecmp(wf_transports[i].ops->name, name) == 0)
            return &wf_transports[i];
    }
    return NULL;
}

static bool entry_usable(const wf_transport_entry_t *e, char *why,
                         size_t why_len)
{
    why[0] = '\0';
    return !e->probe || e->probe(why, why_len);
}

const wf_transport_ops_t *wf_transport_find(const char *name)
{
    const wf_transport_entry_t *e = name ? entry_find(name) : NULL;

    return e ? e->ops : NULL;
}

/* Adds e to the members unless it cannot run here (then says why, at
 * info level for auto's passing over a faster one). */
static void member_add(const wf_transport_entry_t *e, bool quiet,
                       const wf_transport_ops_t **ops, int *n)
{
    char why[256];

    for (int i = 0; i < *n; i++)
        if (ops[i] == e->ops)
            return; /* named twice */
    if (!entry_usable(e, why, sizeof(why))) {
        if (quiet)
            WEFT_INFO(NET, "transport %s unavailable (%s); trying the next",
                      e->ops->name, why);
        else
            WEFT_WARN(NET,
                      "transport '%s' is compiled in but cannot run on "
                      "this host: %s",
                      e->ops->name, why);
        return;
    }
    if (*n < WF_ROUTE_MAX)
        ops[(*n)++] = e->ops;
}

weft_status_t wf_transport_members(const char *name,
                                   const wf_transport_ops_t **ops, int *n)
{
    *n = 0;
    if (!name || !name[0] || strcasecmp(name, "auto") == 0) {
        for (size_t i = 0; i < WF_ARRAY_LEN(wf_transports); i++)
            member_add(&wf_transports[i], true, ops, n);
        if (!*n) {
            WEFT_WARN(NET, "no usable transport on this host (compiled in: %s)",
                      wf_transport_names());
            return WEFT_ERR_UNSUPPORTED;
        }
        return WEFT_OK;
    }
    char list[256];
    char *save = NULL;
    snprintf(list, sizeof(list), "%s", name);
    for (char *t = strtok_r(list, ", ", &save); t;
         t = strtok_r(NULL, ", ", &save)) {
        const wf_transport_entry_t *e = entry_find(t);
        if (!e) {
            WEFT_WARN(NET, "unknown transport '%s' (available: %s, auto, or "
                      "an ordered list such as shm,tcp)", t,
                      wf_transport_names());
            return WEFT_ERR_INVALID_ARG;
        }
        member_add(e, false, ops, n);
    }
    if (!*n) {
        WEFT_WARN(NET, "none of the transports '%s' can run on this host",
                  name);
        return WEFT_ERR_UNSUPPORTED;
    }
    return WEFT_OK;
}

weft_status_t wf_transport_select(const char *name,
                                  const wf_transport_ops_t **ops)
{
    const wf_transport_ops_t *members[WF_ROUTE_MAX];
    int n = 0;

    if (!ops)
        return WEFT_ERR_INVALID_ARG;
    WEFT_CHECK(wf_transport_members(name, members, &n));
    /* One transport needs no route: the engine calls it directly. */
    *ops = n == 1 ? members[0] : &wf_route_transport;
    return WEFT_OK;
}

void wf_transport_gpudirect(char *out, size_t len)
{
#ifdef WF_TRANSPORT_GDR_DESCRIBE_
    WF_TRANSPORT_GDR_DESCRIBE_(out, len);
#else
    snprintf(out, len, "none: weft was built without the verbs transport");
#endif
}
