/*
 * tcp_addr.c - which local addresses a TCP context listens on and dials
 * from, in order: WEFT_SOCKET_IFNAME (cfg.ifname); the NICs the topology
 * chose for this rank (cfg.topo_ifname); the bind hint (the local IP that
 * reached the rendezvous server); the first up interface; loopback.
 * docs/transports.md ("Interface and address") has the rules.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "tcp.h"

bool wf_tcp_parse_ip(const char *text, struct sockaddr_storage *ss,
                     socklen_t *len)
{
    struct sockaddr_in *in = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

    memset(ss, 0, sizeof(*ss));
    if (inet_pton(AF_INET, text, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        *len = sizeof(*in);
        return true;
    }
    if (inet_pton(AF_INET6, text, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        *len = sizeof(*in6);
        return true;
    }
    return false;
}

/* Link-local IPv6 addresses need a scope id that means nothing on the
 * remote host, so they are never published. */
static bool usable_addr(const struct sockaddr *sa)
{
    if (!sa)
        return false;
    if (sa->sa_family == AF_INET)
        return true;
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        return !IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr);
    }
    return false;
}

static void take_addr(const struct ifaddrs *ifa, struct sockaddr_storage *ss,
                      socklen_t *len, char *ifname, size_t ifname_size)
{
    size_t n = ifa->ifa_addr->sa_family == AF_INET
                   ? sizeof(struct sockaddr_in)
                   : sizeof(struct sockaddr_in6);
    memset(ss, 0, sizeof(*ss));
    memcpy(ss, ifa->ifa_addr, n);
    *len = (socklen_t)n;
    wf_strlcpy(ifname, ifa->ifa_name, ifname_size);
}

static bool up_not_loopback(const struct ifaddrs *ifa)
{
    return (ifa->ifa_flags & IFF_UP) && !(ifa->ifa_flags & IFF_LOOPBACK);
}

/* Finds an address of interface `name` (IPv4 preferred; with need_up only
 * when it is up and not loopback), or with name NULL of the first up,
 * non-loopback interface. */
static bool find_if_addr(const struct ifaddrs *list, const char *name,
                         bool need_up, struct sockaddr_storage *ss,
                         socklen_t *len, char *ifname, size_t ifname_size)
{
    const struct ifaddrs *v6 = NULL;

    for (const struct ifaddrs *ifa = list; ifa; ifa = ifa->ifa_next) {
        if (!usable_addr(ifa->ifa_addr))
            continue;
        if (name && strcmp(ifa->ifa_name, name) != 0)
            continue;
        if ((!name || need_up) && !up_not_loopback(ifa))
            continue;
        if (ifa->ifa_addr->sa_family == AF_INET) {
            take_addr(ifa, ss, len, ifname, ifname_size);
            return true;
        }
        if (!v6)
            v6 = ifa;
    }
    if (!v6)
        return false;
    take_addr(v6, ss, len, ifname, ifname_size);
    return true;
}

/* The interface that owns `ss`; empty when none does. */
static void name_of_addr(const struct ifaddrs *list,
                         const struct sockaddr_storage *ss, char *ifname,
                         size_t size)
{
    for (const struct ifaddrs *ifa = list; ifa; ifa = ifa->ifa_next) {
        const struct sockaddr *sa = ifa->ifa_addr;
        if (!sa || sa->sa_family != ss->ss_family)
            continue;
        bool same =
            sa->sa_family == AF_INET
                ? !memcmp(&((const struct sockaddr_in *)sa)->sin_addr,
                          &((const struct sockaddr_in *)ss)->sin_addr, 4)
                : !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr,
                          &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
        if (same) {
            wf_strlcpy(ifname, ifa->ifa_name, size);
            return;
        }
    }
}

int wf_tcp_addrs_from_list(const struct ifaddrs *list, const char *spec,
                           const char *what, struct sockaddr_storage *ss,
                           socklen_t *len, char *first, size_t first_size)
{
    char buf[256], name[64];
    char *save = NULL;
    int n = 0;

    wf_strlcpy(buf, spec, sizeof(buf));
    for (char *tok = strtok_r(buf, ", ", &save); tok;
         tok = strtok_r(NULL, ", ", &save)) {
        bool ok;
        name[0] = '\0';
        if (n == WF_TCP_IF_MAX) {
            if (what)
                WEFT_WARN(NET, "tcp: %s: using the first %d entries, "
                          "ignoring '%s' and later", what, WF_TCP_IF_MAX,
                          tok);
            break;
        }
        /* Literal addresses only in the user's list: the topology names
         * NICs, and those must be up to be worth a listener. */
        ok = what && wf_tcp_parse_ip(tok, &ss[n], &len[n]);
        if (ok)
            name_of_addr(list, &ss[n], name, sizeof(name));
        else
            ok = find_if_addr(list, tok, !what, &ss[n], &len[n], name,
                              sizeof(name));
        if (!ok)
            continue;
        if (n > 0 && ss[n].ss_family != ss[0].ss_family) {
            if (what)
                WEFT_WARN(NET, "tcp: %s: skipping '%s': not the address "
                          "family of the first entry", what, tok);
            continue;
        }
        if (n == 0)
            wf_strlcpy(first, name, first_size);
        n++;
    }
    return n;
}

/* "eth0 10.0.0.1, eth1 10.0.1.1" for the log. */
static void describe_locals(const wf_tctx_t *ctx, const struct ifaddrs *list,
                            char *out, size_t size)
{
    *out = '\0';
    for (int i = 0; i < ctx->nlocal; i++) {
        char name[64] = "?", where[80];
        size_t n = strlen(out);
        name_of_addr(list, &ctx->local[i], name, sizeof(name));
        wf_tcp_format_addr((const struct sockaddr *)&ctx->local[i], where,
                           sizeof(where));
        *strrchr(where, ':') = '\0'; /* no port yet */
        snprintf(out + n, size - n, "%s%s %s", i ? ", " : "", name, where);
    }
}

static bool same_ip(const struct sockaddr_storage *a,
                    const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return false;
    if (a->ss_family == AF_INET)
        return !memcmp(&((const struct sockaddr_in *)a)->sin_addr,
                       &((const struct sockaddr_in *)b)->sin_addr, 4);
    return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                   &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

/* The topology's choice is a guess from the PCI tree; the bind hint is
 * known to route to the rendezvous server, so it is kept as the fallback
 * (a listener of its own unless a chosen NIC has that address). */
static void keep_fallback(wf_tctx_t *ctx)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (!ctx->cfg.bind_hint[0] ||
        !wf_tcp_parse_ip(ctx->cfg.bind_hint, &ss, &len) ||
        ss.ss_family != ctx->local[0].ss_family)
        return;
    for (int i = 0; i < ctx->nlocal; i++)
        if (same_ip(&ss, &ctx->local[i])) {
            ctx->fallback = i;
            return;
        }
    ctx->fallback = ctx->nlocal;
    ctx->local[ctx->nlocal] = ss;
    ctx->local_len[ctx->nlocal] = len;
}

/* The topology's NICs that are up with an address; false (and the
 * reason at info) when none is. */
static bool topo_addrs(wf_tctx_t *ctx, const struct ifaddrs *list)
{
    const wf_tconfig_t *cfg = &ctx->cfg;
    char desc[300], fb[80] = "none (no bind hint of that family)";
    int n = wf_tcp_addrs_from_list(list, cfg->topo_ifname, NULL, ctx->local,
                                   ctx->local_len, ctx->ifname,
                                   sizeof(ctx->ifname));
    if (n == 0) {
        WEFT_INFO(NET, "tcp: the topology's NIC(s) %s: none is up with a "
                  "usable address; choosing as without a topology",
                  cfg->topo_ifname);
        return false;
    }
    ctx->nlocal = n;
    keep_fallback(ctx);
    describe_locals(ctx, list, desc, sizeof(desc));
    if (ctx->fallback >= 0) {
        wf_tcp_format_addr((struct sockaddr *)&ctx->local[ctx->fallback], fb,
                           sizeof(fb));
        *strrchr(fb, ':') = '\0';
    }
    WEFT_INFO(NET, "tcp: rank %d: %s chosen: %s; fallback %s (reached the "
              "rendezvous server)", cfg->rank, desc,
              cfg->topo_why[0] ? cfg->topo_why : "the topology's choice", fb);
    return true;
}

weft_status_t wf_tcp_choose_addr(wf_tctx_t *ctx)
{
    const wf_tconfig_t *cfg = &ctx->cfg;
    struct ifaddrs *list = NULL;
    weft_status_t st = WEFT_OK;

    if (getifaddrs(&list) != 0) {
        WEFT_WARN(NET, "tcp: getifaddrs failed: %s", wf_errno_str(errno));
        return WEFT_ERR_SYSTEM;
    }
    ctx->nlocal = 1;
    if (cfg->ifname[0]) {
        ctx->nlocal = wf_tcp_addrs_from_list(list, cfg->ifname,
                                             "WEFT_SOCKET_IFNAME", ctx->local,
                                             ctx->local_len, ctx->ifname,
                                             sizeof(ctx->ifname));
        if (ctx->nlocal == 0) {
            WEFT_WARN(NET,
                      "tcp: WEFT_SOCKET_IFNAME=%s: no interface or address "
                      "in the list has a usable address",
                      cfg->ifname);
            st = WEFT_ERR_INVALID_ARG;
        }
        goto out;
    }
    if (cfg->topo_ifname[0] && topo_addrs(ctx, list))
        goto out;
    if (cfg->bind_hint[0]) {
        if (wf_tcp_parse_ip(cfg->bind_hint, &ctx->local[0],
                            &ctx->local_len[0])) {
            name_of_addr(list, &ctx->local[0], ctx->ifname,
                         sizeof(ctx->ifname));
            goto out;
        }
        WEFT_WARN(NET, "tcp: ignoring bind hint '%s': not an IP address",
                  cfg->bind_hint);
    }
    if (find_if_addr(list, NULL, false, &ctx->local[0], &ctx->local_len[0],
                     ctx->ifname, sizeof(ctx->ifname)))
        goto out;
    wf_tcp_parse_ip("127.0.0.1", &ctx->local[0], &ctx->local_len[0]);
    name_of_addr(list, &ctx->local[0], ctx->ifname, sizeof(ctx->ifname));
out:
    ctx->nlisten = ctx->nlocal + (ctx->fallback == ctx->nlocal);
    for (int i = 0; i < ctx->nlisten; i++)
        name_of_addr(list, &ctx->local[i], ctx->local_name[i],
                     sizeof(ctx->local_name[i]));
    freeifaddrs(list);
    return st;
}
