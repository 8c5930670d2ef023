/*
 * select.c - choosing an algorithm: the WEFT_ALGO override, else the
 * lowest estimated cost among those that support the call.
 */
#include <string.h>

#include "algo/algo.h"
#include "common.h"

static const wf_algo_t *const registry[] = {
#define WF_ALGO_DECLARE(sym) &wf_algo_##sym,
#include "algo/algo_list.h"
#undef WF_ALGO_DECLARE
};

const char *wf_coll_name(wf_coll_t coll)
{
    switch (coll) {
    case WF_COLL_ALLREDUCE: return "allreduce";
    case WF_COLL_SEND: return "send";
    case WF_COLL_RECV: return "recv";
    default: return "?";
    }
}

void wf_algo_segment(size_t count, int parts, int i, size_t *start,
                     size_t *len)
{
    size_t base = count / (size_t)parts, extra = count % (size_t)parts;
    size_t ui = (size_t)i;
    *start = ui * base + (ui < extra ? ui : extra);
    *len = base + (ui < extra ? 1 : 0);
}

/* The override for this collective in `spec`, copied into name; false when
 * the spec does not mention it (or says auto). */
static bool override_for(const char *spec, wf_coll_t coll, char *name,
                         size_t len)
{
    char buf[256];
    bool found = false;
    if (!spec || !*spec)
        return false;
    wf_strlcpy(buf, spec, sizeof(buf));
    for (char *save, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (colon) {
            *colon = '\0';
            if (strcmp(tok, wf_coll_name(coll)) != 0)
                continue;
            tok = colon + 1;
        }
        wf_strlcpy(name, tok, len); /* a later entry wins */
        found = true;
    }
    return found && strcmp(name, "auto") != 0;
}

weft_status_t wf_algo_select(const wf_coll_args_t *args, const char *spec,
                             const wf_algo_t **algo)
{
    char want[64];
    const wf_algo_t *best = NULL;
    double best_cost = 0;
    bool forced = args->coll == WF_COLL_ALLREDUCE &&
                  override_for(spec, args->coll, want, sizeof(want));
    for (size_t i = 0; i < WF_ARRAY_LEN(registry); i++) {
        const wf_algo_t *a = registry[i];
        if (a->coll != args->coll)
            continue;
        if (forced && strcmp(a->name, want) != 0)
            continue;
        if (!a->supports(args)) {
            if (forced) {
                WEFT_WARN(COLL, "algorithm %s does not support this %s "
                          "(count %zu, %d ranks)", want,
                          wf_coll_name(args->coll), args->count, args->size);
                return WEFT_ERR_UNSUPPORTED;
            }
            continue;
        }
        double c = a->cost(args);
        if (!best || c < best_cost)
            best = a, best_cost = c;
    }
    if (!best) {
        WEFT_WARN(COLL, "%s: no algorithm %s%s", wf_coll_name(args->coll),
                  forced ? "named " : "applies", forced ? want : "");
        return WEFT_ERR_UNSUPPORTED;
    }
    WEFT_DEBUG(COLL, "%s count %zu: algorithm %s (estimate %.1f us)",
               wf_coll_name(args->coll), args->count, best->name, best_cost);
    *algo = best;
    return WEFT_OK;
}
