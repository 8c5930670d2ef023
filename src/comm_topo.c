/*
 * comm_topo.c - where a communicator's rank runs: the topology's choice
 * for its local rank (src/topo/), logged at info; the core its progress
 * thread is pinned to; the NICs handed to the transport before it opens;
 * the NUMA node its staging memory is bound to.  Never fails for want of
 * a topology: without one the rank simply runs without affinity, with
 * unbound staging memory, and the transport chooses as before.
 */
#include <pthread.h>
#include <string.h>

#include "comm.h"
#include "common.h"
#include "log.h"
#include "rdv/bootstrap.h"
#include "topo/topo.h"
#include "transport.h"

/* One topology per process and file: loading this host's costs tens of
 * milliseconds, and every communicator (splits too) asks. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static wf_topo_t *cached;
static char cached_file[WF_CONFIG_STR_MAX];
static bool cache_failed;

static const wf_topo_t *topo_get(const char *file)
{
    pthread_mutex_lock(&cache_lock);
    if ((cached || cache_failed) && strcmp(cached_file, file)) {
        wf_topo_free(cached);
        cached = NULL;
        cache_failed = false;
    }
    if (!cached && !cache_failed) {
        wf_strlcpy(cached_file, file, sizeof(cached_file));
        cache_failed = wf_topo_load(file, &cached) != WEFT_OK;
    }
    const wf_topo_t *t = cached;
    pthread_mutex_unlock(&cache_lock);
    return t; /* kept until the process exits, or the file changes */
}

static void nic_names(const wf_topo_t *t, const wf_topo_choice_t *ch,
                      char *out, size_t len)
{
    *out = '\0';
    for (int k = 0; k < ch->nnics; k++) {
        const wf_topo_dev_t *d = &t->devs[ch->nics[k]];
        size_t n = strlen(out);
        snprintf(out + n, len - n, "%s%s%s%s", k ? "," : "", d->netdev,
                 *d->netdev && *d->verbs ? "/" : "", d->verbs);
    }
    if (!*out)
        wf_strlcpy(out, "none", len);
}

void wf_comm_place(wf_comm_impl_t *c, bool *pin, int *cpu)
{
    *pin = false;
    *cpu = -1;
    const wf_topo_t *t = topo_get(c->cfg.topo_file);
    if (!t)
        return;
    wf_topo_choice_t ch;
    wf_topo_choose(t, c->local_rank, c->local_size, &ch);
    char nics[160], pin_why[160] = "WEFT_PIN_THREADS=0: not pinned";
    nic_names(t, &ch, nics, sizeof(nics));
    if (c->cfg.pin_threads) {
        *cpu = wf_topo_pin_cpu(t, &ch, c->local_size, pin_why,
                               sizeof(pin_why));
        *pin = *cpu >= 0;
    }
    WEFT_INFO(INIT, "local rank %d of %d: GPU %s, NIC(s) %s, NUMA node %d, "
              "core %d; %s; %s; %s", c->local_rank, c->local_size,
              ch.gpu >= 0 ? t->devs[ch.gpu].busid : "none", nics, ch.numa,
              ch.core, ch.why, pin_why, c->staging_why);
}

/* Whether some NIC of the topology has a name the transport could take
 * in place of the user's (netdev for TCP, verbs for ib). */
static bool can_steer(const wf_topo_t *t, const wf_tconfig_t *tc,
                      const char *ib_hca)
{
    for (int i = 0; t && i < t->ndevs; i++) {
        const wf_topo_dev_t *d = &t->devs[i];
        if (d->kind == WF_TOPO_NIC && ((!*tc->ifname && *d->netdev) ||
                                       (!*ib_hca && *d->verbs)))
            return true;
    }
    return false;
}

/* Where this rank's staging memory goes (tc->topo_numa for the
 * transport, c->staging_numa for the engine's scratch): the chosen NUMA
 * node when the model is this host's and the kernel lets weft bind there
 * (tried on one page).  A model read from a file names another machine's
 * nodes: unbound.  c->staging_why says which, for the placement line. */
static void choose_staging(wf_comm_impl_t *c, const wf_topo_t *t,
                           const wf_topo_choice_t *ch, wf_tconfig_t *tc)
{
    char why[160];
    int os = ch->numa >= 0 ? t->numa[ch->numa].os_index : -1;
    if (!t->thissystem)
        snprintf(why, sizeof(why), "the topology of %.120s is not this host",
                 t->source);
    else if (wf_topo_mem_bindable(os, why, sizeof(why)))
        c->staging_numa = os;
    if (c->staging_numa < 0)
        snprintf(c->staging_why, sizeof(c->staging_why),
                 "staging memory not bound: %s", why);
    else if (os == ch->numa)
        snprintf(c->staging_why, sizeof(c->staging_why),
                 "staging memory bound to NUMA node %d", ch->numa);
    else
        snprintf(c->staging_why, sizeof(c->staging_why),
                 "staging memory bound to NUMA node %d (os %d)", ch->numa,
                 os);
    tc->topo_numa = c->staging_numa;
}

weft_status_t wf_comm_topo_steer(wf_comm_impl_t *c, wf_tconfig_t *tc)
{
    const wf_topo_t *t = topo_get(c->cfg.topo_file);
    int lr = 0, ls = 1;
    bool want = can_steer(t, tc, c->cfg.ib_hca);
    c->staging_numa = tc->topo_numa = -1;
    wf_strlcpy(c->staging_why, "staging memory not bound: no topology",
               sizeof(c->staging_why));
    /* Every rank publishes its node key (a rank that reads waits for all
     * of them); only a rank with NICs to choose from, or NUMA nodes to
     * bind its staging memory to, reads: the extra store round is paid
     * only where the choice can steer something.  On one NUMA node the
     * staging node is that one whatever the local rank. */
    bool numa = t && t->thissystem && t->nnuma > 1;
    WEFT_CHECK(wf_bootstrap_node_rank(c->store, c->rank, c->size,
                                      want || numa, c->cfg.timeout_ms, &lr,
                                      &ls));
    if (!t)
        return WEFT_OK;
    wf_topo_choice_t ch;
    wf_topo_choose(t, lr, ls, &ch);
    choose_staging(c, t, &ch, tc);
    if (!want)
        return WEFT_OK;
    if (!*tc->ifname)
        wf_topo_nic_names(t, &ch, false, tc->topo_ifname,
                          sizeof(tc->topo_ifname));
    if (!*c->cfg.ib_hca)
        wf_topo_nic_names(t, &ch, true, tc->topo_hca, sizeof(tc->topo_hca));
    if (ch.gpu >= 0)
        snprintf(tc->topo_why, sizeof(tc->topo_why), "nearest NIC(s) to "
                 "GPU %s (%d PCI hops; local rank %d of %d)",
                 t->devs[ch.gpu].busid, ch.nic_distance, lr, ls);
    else
        snprintf(tc->topo_why, sizeof(tc->topo_why), "nearest NIC(s) to "
                 "NUMA node %d (%d PCI hops; local rank %d of %d)", ch.numa,
                 ch.nic_distance, lr, ls);
    return WEFT_OK;
}
