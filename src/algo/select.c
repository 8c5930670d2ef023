/*
 * select.c - choosing an algorithm: the WEFT_ALGO override, else the
 * lowest estimated cost among those that support the call.
 */
#include <stdio.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/cost.h"
#include "common.h"
#include "reduce/reduce.h"

static const wf_algo_t *const registry[] = {
#define WF_ALGO_DECLARE(sym) &wf_algo_##sym,
#include "algo/algo_list.h"
#undef WF_ALGO_DECLARE
};

void wf_algo_segment(size_t count, int parts, int i, size_t *start,
                     size_t *len)
{
    size_t base = count / (size_t)parts, extra = count % (size_t)parts;
    size_t ui = (size_t)i;
    *start = ui * base + (ui < extra ? ui : extra);
    *len = base + (ui < extra ? 1 : 0);
}

/* Whether `coll` (or any collective, for WF_COLL_MAX) has `name`. */
static bool exists(wf_coll_t coll, const char *name)
{
    for (size_t i = 0; i < WF_ARRAY_LEN(registry); i++)
        if ((coll == WF_COLL_MAX || registry[i]->coll == coll) &&
            strcmp(registry[i]->name, name) == 0)
            return true;
    return false;
}

/* The override for this collective in `spec`, copied into name.  *explicit
 * tells whether it was named for this collective ("coll:name") rather than
 * globally.  False when nothing applies (or it says auto). */
static bool override_for(const char *spec, wf_coll_t coll, char *name,
                         size_t len, bool *explicit_)
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
        } else if (strcmp(tok, "auto") != 0 && !exists(coll, tok)) {
            if (!exists(WF_COLL_MAX, tok))
                WEFT_WARN_ONCE(COLL, "WEFT_ALGO names %s, which no "
                               "collective has; using the cost model", tok);
            continue; /* a global name this collective does not have */
        }
        wf_strlcpy(name, tok, len); /* a later entry wins */
        *explicit_ = colon != NULL;
        found = true;
    }
    return found && strcmp(name, "auto") != 0;
}

/* The constants behind an estimate: those of wf_cost_model for an
 * algorithm that describes its terms, else the network's (wf_cost). */
static const char *constants_name(const wf_algo_t *algo,
                                  const wf_coll_args_t *args)
{
    if (algo->node_aware)
        return "one-host inside machines and network across";
    return algo->cost_terms ? wf_cost_model(args).name
                            : wf_cost_network_model(args).name;
}

/* Across machines, the best of the other kind (node-aware or flat) than
 * the pick, for the log line: why it won. */
static void other_kind(const wf_coll_args_t *args, const wf_algo_t *pick,
                       char *out, size_t len)
{
    const wf_algo_t *best = NULL;
    double best_cost = 0;
    out[0] = '\0';
    if (!args->nodes)
        return;
    for (size_t i = 0; i < WF_ARRAY_LEN(registry); i++) {
        const wf_algo_t *a = registry[i];
        if (a->coll != args->coll || a->node_aware == pick->node_aware ||
            !a->supports(args))
            continue;
        double c = a->cost(args);
        if (!best || c < best_cost)
            best = a, best_cost = c;
    }
    if (best)
        snprintf(out, len, "; the best %s one, %s, %.1f us",
                 best->node_aware ? "node-aware" : "flat", best->name,
                 best_cost);
}

/* Logs the choice at info level the first time per collective, size class
 * (power of two of the bytes), algorithm and source (WEFT_ALGO or the cost
 * model).  Keyed by all four, communicators of one process that choose
 * differently (weft-bench --algos) log once each instead of in turns. */
static void log_choice(const wf_coll_args_t *args, const wf_algo_t *algo,
                       double cost, bool forced)
{
    static uint64_t logged[2][WF_COLL_MAX][65];
    uint64_t bytes = (uint64_t)args->count * args->elem_size;
    int bucket = bytes ? 64 - __builtin_clzll(bytes) : 0;
    uint64_t bit = algo->id < 64 ? 1ull << algo->id : 0; /* 0: every time */
    if (bit && (__atomic_fetch_or(&logged[forced][args->coll][bucket], bit,
                                  __ATOMIC_RELAXED) & bit))
        return;
    char why[160];
    other_kind(args, algo, why, sizeof(why));
    WEFT_INFO(COLL, "%s of %llu bytes (%s) on %d ranks: algorithm %s (%s, "
              "%s constants, estimate %.1f us%s)", wf_coll_name(args->coll),
              (unsigned long long)bytes, wf_dtype_name(args->dtype),
              args->size, algo->name, forced ? "WEFT_ALGO" : "cost model",
              constants_name(algo, args), cost, why);
}

const wf_algo_t *wf_algo_cheapest(const wf_coll_args_t *args, double *cost)
{
    const wf_algo_t *best = NULL;
    double best_cost = 0;
    for (size_t i = 0; i < WF_ARRAY_LEN(registry); i++) {
        const wf_algo_t *a = registry[i];
        if (a->coll != args->coll || !a->supports(args))
            continue;
        double c = a->cost(args);
        if (!best || c < best_cost)
            best = a, best_cost = c;
    }
    if (cost)
        *cost = best_cost;
    return best;
}

weft_status_t wf_algo_select(const wf_coll_args_t *args, const char *spec,
                             const wf_algo_t **algo)
{
    char want[64];
    bool explicit_ = false;
    const wf_algo_t *best = NULL;
    double best_cost = 0;
    bool forced = override_for(spec, args->coll, want, sizeof(want),
                               &explicit_);
    for (size_t i = 0; i < WF_ARRAY_LEN(registry); i++) {
        const wf_algo_t *a = registry[i];
        if (a->coll != args->coll || (forced && strcmp(a->name, want) != 0))
            continue;
        if (!a->supports(args)) {
            if (forced && explicit_) {
                WEFT_WARN(COLL, "algorithm %s is unsupported for this %s "
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
    if (!best && forced && !explicit_) /* global name not applicable here */
        return wf_algo_select(args, "auto", algo);
    if (!best) {
        WEFT_WARN(COLL, "%s: algorithm %s is unsupported (available: %s)",
                  wf_coll_name(args->coll), forced ? want : "(any)",
                  wf_algo_names(args->coll));
        return WEFT_ERR_UNSUPPORTED;
    }
    log_choice(args, best, best_cost, forced);
    *algo = best;
    return WEFT_OK;
}

weft_status_t wf_algo_build_status(const wf_algo_t *algo,
                                   const wf_coll_args_t *args, bool failed)
{
    if (!failed)
        return WEFT_OK;
    WEFT_WARN(COLL, "out of memory building the %s %s plan for %zu "
              "elements on %d ranks", algo->name, wf_coll_name(algo->coll),
              args->count, args->size);
    return WEFT_ERR_NO_MEMORY;
}

const char *wf_algo_names(wf_coll_t coll)
{
    static __thread char buf[256];
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < WF_ARRAY_LEN(registry) && o < sizeof(buf); i++)
        if (registry[i]->coll == coll)
            o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s",
                                  o ? " " : "", registry[i]->name);
    return buf;
}

const wf_algo_t *const *wf_algo_registry(size_t *count)
{
    *count = WF_ARRAY_LEN(registry);
    return registry;
}
