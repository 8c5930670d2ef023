/*
 * ib_dev.c - which device, port and GID a context uses, and whether the
 * process may pin the memory it needs.
 *
 * WEFT_IB_HCA is a comma list of NAME or NAME:PORT (exact device names);
 * a leading '^' turns it into an exclusion list.  Every ACTIVE port that
 * passes is a rail (up to WF_IB_RAILS_MAX), as with NCCL_IB_HCA.  Unset,
 * the ACTIVE ports of the devices the topology chose for this rank
 * (nearest its GPU or NUMA node; several when equally near), else the
 * first ACTIVE port of any device.  On Ethernet (RoCE) the GID decides the protocol and
 * the address family, and the wrong one is the most common reason a RoCE
 * job hangs, so without WEFT_IB_GID_INDEX the choice is automatic: a
 * RoCE v2 GID of the bootstrap address's family (IPv4-mapped for IPv4),
 * then any RoCE v2 GID, then RoCE v1.  The GID type comes from sysfs,
 * which every rdma-core version of the last decade populates.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "ib.h"

#define WF_IB_MAX_PORTS 8

void wf_ib_gid_str(const union ibv_gid *gid, char *out, size_t size)
{
    char text[INET6_ADDRSTRLEN] = "?";

    inet_ntop(AF_INET6, gid->raw, text, sizeof(text));
    snprintf(out, size, "%s", text);
}

const char *wf_ib_mtu_str(uint8_t mtu)
{
    switch (mtu) {
    case IBV_MTU_256: return "256";
    case IBV_MTU_512: return "512";
    case IBV_MTU_1024: return "1024";
    case IBV_MTU_2048: return "2048";
    case IBV_MTU_4096: return "4096";
    default: return "?";
    }
}

static bool gid_is_zero(const union ibv_gid *g)
{
    static const uint8_t zero[16];
    return memcmp(g->raw, zero, 16) == 0;
}

static bool gid_is_v4mapped(const union ibv_gid *g)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff,
                                       0xff};
    return memcmp(g->raw, prefix, 12) == 0;
}

static bool gid_is_linklocal(const union ibv_gid *g)
{
    return g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80;
}

/* 2 for RoCE v2, 1 for RoCE v1 / IB, 0 when unknown. */
static int gid_type(const char *dev, int port, int index)
{
    char path[256], text[32] = "";
    FILE *f;

    snprintf(path, sizeof(path),
             "/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%d", dev, port,
             index);
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (!fgets(text, sizeof(text), f))
        text[0] = '\0';
    fclose(f);
    if (strstr(text, "v2"))
        return 2;
    return text[0] ? 1 : 0;
}

/* Does `spec` (WEFT_IB_HCA) admit port `port` of device `name`? */
static bool hca_admits(const char *spec, const char *name, int port)
{
    char buf[256], *save = NULL;
    bool exclude = spec[0] == '^';
    bool listed = false;

    if (!spec[0])
        return true;
    snprintf(buf, sizeof(buf), "%s", spec + (exclude ? 1 : 0));
    for (char *tok = strtok_r(buf, ", ", &save); tok && !listed;
         tok = strtok_r(NULL, ", ", &save)) {
        char *colon = strchr(tok, ':');
        int want_port = 0;
        if (colon) {
            *colon = '\0';
            want_port = atoi(colon + 1);
        }
        listed = strcmp(tok, name) == 0 && (!want_port || want_port == port);
    }
    return exclude ? !listed : listed;
}

static int query_port(const wf_ibv_t *v, struct ibv_context *c, int port,
                      struct ibv_port_attr *pa)
{
    memset(pa, 0, sizeof(*pa));
    return v->query_port(c, (uint8_t)port, pa);
}

static const char *port_state_str(enum ibv_port_state s)
{
    switch (s) {
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    default: return "?";
    }
}

/* Appends "name:port STATE" of every port of `dev` to `list`. */
static void list_ports(const wf_ibv_t *v, struct ibv_context *c,
                       const char *name, char *list, size_t len,
                       bool *any_active)
{
    struct ibv_device_attr da;
    struct ibv_port_attr pa;

    memset(&da, 0, sizeof(da));
    if (v->query_device(c, &da) != 0)
        return;
    for (int p = 1; p <= da.phys_port_cnt && p <= WF_IB_MAX_PORTS; p++) {
        size_t used = strlen(list);
        if (query_port(v, c, p, &pa) != 0)
            continue;
        if (pa.state == IBV_PORT_ACTIVE && any_active)
            *any_active = true;
        snprintf(list + used, len - used, "%s%s:%d %s", used ? ", " : "",
                 name, p, port_state_str(pa.state));
    }
}

bool wf_ib_dev_any_active(const wf_ibv_t *v, char *list, size_t list_len)
{
    int n = 0;
    struct ibv_device **devs = v->get_device_list(&n);
    bool any = false;

    list[0] = '\0';
    for (int i = 0; devs && i < n; i++) {
        struct ibv_context *c = v->open_device(devs[i]);
        if (!c)
            continue;
        list_ports(v, c, v->get_device_name(devs[i]), list, list_len, &any);
        v->close_device(c);
    }
    if (devs)
        v->free_device_list(devs);
    return any;
}

static uint64_t port_speed_mbps(const struct ibv_port_attr *pa)
{
    static const struct { int code; uint64_t mbps; } speeds[] = {
        {1, 2500}, {2, 5000}, {4, 10000}, {8, 10000},
        {16, 14000}, {32, 25000}, {64, 50000}, {128, 100000}};
    int lanes = pa->active_width == 1   ? 1
                : pa->active_width == 2 ? 4
                : pa->active_width == 4 ? 8
                : pa->active_width == 8 ? 12
                                        : 0;

    for (size_t i = 0; i < WF_ARRAY_LEN(speeds); i++)
        if (speeds[i].code == pa->active_speed)
            return speeds[i].mbps * (uint64_t)lanes;
    return 0;
}

/* Automatic GID choice on a RoCE port; -1 when no GID is usable. */
static int auto_gid(const wf_ibv_t *v, struct ibv_context *c, const char *dev,
                    int port, int tbl_len, int family)
{
    int best = -1, best_score = 0;

    for (int i = 0; i < tbl_len; i++) {
        union ibv_gid g;
        int type, score;
        bool mapped;
        if (v->query_gid(c, (uint8_t)port, i, &g) != 0 || gid_is_zero(&g))
            continue;
        type = gid_type(dev, port, i);
        mapped = gid_is_v4mapped(&g);
        /* v2 of the right family > v2 > v1; a global IPv6 GID beats a
         * link-local one. */
        score = type == 2 ? 10 : 1;
        if ((family == 4) == mapped)
            score += 5;
        if (!mapped && !gid_is_linklocal(&g))
            score += 1;
        if (score > best_score) {
            best = i;
            best_score = score;
        }
    }
    return best;
}

static weft_status_t choose_gid(const wf_ibv_t *v, struct ibv_context *c,
                                const struct ibv_port_attr *pa, int gid_index,
                                int family, wf_ib_port_t *out)
{
    if (gid_index >= 0) {
        if (gid_index >= pa->gid_tbl_len ||
            v->query_gid(c, out->port, gid_index, &out->gid) != 0 ||
            gid_is_zero(&out->gid)) {
            WEFT_WARN(NET,
                      "ib: WEFT_IB_GID_INDEX=%d: %s port %d has no GID at "
                      "that index (table of %d entries; leave the variable "
                      "unset for the automatic RoCE v2 choice)",
                      gid_index, out->dev_name, out->port, pa->gid_tbl_len);
            return WEFT_ERR_INVALID_ARG;
        }
        out->gid_index = gid_index;
        return WEFT_OK;
    }
    if (pa->link_layer != IBV_LINK_LAYER_ETHERNET) {
        out->gid_index = -1; /* InfiniBand: LID routing, no GRH */
        return WEFT_OK;
    }
    out->gid_index = auto_gid(v, c, out->dev_name, out->port, pa->gid_tbl_len,
                              family);
    if (out->gid_index < 0) {
        WEFT_WARN(NET,
                  "ib: %s port %d is RoCE but has no usable GID (is an IP "
                  "address configured on its netdev?)",
                  out->dev_name, out->port);
        return WEFT_ERR_TRANSPORT;
    }
    v->query_gid(c, out->port, out->gid_index, &out->gid);
    return WEFT_OK;
}

/* Opens every ACTIVE port that `spec` admits, in device order, until
 * `max` are open: ctx[i] (a device context of its own per port, so each
 * rail has its own protection domain and CQ), out[i]'s name and port,
 * pa[i].  Returns how many. */
static int open_ports(const wf_ibv_t *v, struct ibv_device **devs, int n,
                      const char *spec, int max, struct ibv_context **ctx,
                      wf_ib_port_t *out, struct ibv_port_attr *pa)
{
    int got = 0;

    for (int i = 0; i < n && got < max; i++) {
        const char *name = v->get_device_name(devs[i]);
        struct ibv_context *c = v->open_device(devs[i]);
        struct ibv_device_attr da;
        bool c_used = false;
        if (!c)
            continue;
        memset(&da, 0, sizeof(da));
        if (v->query_device(c, &da) != 0)
            da.phys_port_cnt = 0;
        for (int p = 1; p <= da.phys_port_cnt && p <= WF_IB_MAX_PORTS &&
                        got < max;
             p++) {
            struct ibv_context *pc;
            if (!hca_admits(spec, name, p) ||
                query_port(v, c, p, &pa[got]) != 0 ||
                pa[got].state != IBV_PORT_ACTIVE)
                continue;
            pc = c_used ? v->open_device(devs[i]) : c;
            if (!pc)
                continue;
            c_used = true;
            memset(&out[got], 0, sizeof(out[got]));
            wf_strlcpy(out[got].dev_name, name, sizeof(out[got].dev_name));
            out[got].port = (uint8_t)p;
            ctx[got++] = pc;
        }
        if (!c_used)
            v->close_device(c);
    }
    return got;
}

/* "mlx5_0 port 1 and mlx5_1 port 1". */
static void ports_str(const wf_ib_port_t *out, int n, char *text, size_t len)
{
    text[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t used = strlen(text);
        snprintf(text + used, len - used, "%s%s port %d",
                 i == 0 ? "" : i == n - 1 ? " and " : ", ", out[i].dev_name,
                 out[i].port);
    }
}

/* WEFT_IB_HCA unset: the topology's devices, else one port of any. */
static int open_topo_ports(const wf_ibv_t *v, struct ibv_device **devs,
                           int n, const char *topo_hca, const char *topo_why,
                           int max, struct ibv_context **ctx,
                           wf_ib_port_t *out, struct ibv_port_attr *pa)
{
    char text[256];
    int got = open_ports(v, devs, n, topo_hca, max, ctx, out, pa);

    if (got) {
        ports_str(out, got, text, sizeof(text));
        WEFT_INFO(NET, "ib: %s chosen: %s", text,
                  topo_why[0] ? topo_why : "the topology's choice");
        return got;
    }
    WEFT_INFO(NET, "ib: the topology's device(s) %s: none has an ACTIVE "
              "port; choosing as without a topology", topo_hca);
    return open_ports(v, devs, n, "", 1, ctx, out, pa);
}

/* Link layer, MTU, LID, speed and GID of an opened port. */
static weft_status_t port_fill(const wf_ibv_t *v, struct ibv_context *c,
                               const struct ibv_port_attr *pa, int gid_index,
                               int family, wf_ib_port_t *out)
{
    out->link_layer = pa->link_layer == IBV_LINK_LAYER_ETHERNET
                          ? IBV_LINK_LAYER_ETHERNET
                          : IBV_LINK_LAYER_INFINIBAND;
    out->mtu = (uint8_t)pa->active_mtu;
    out->lid = pa->lid;
    out->speed_mbps = port_speed_mbps(pa);
    return choose_gid(v, c, pa, gid_index, family, out);
}

weft_status_t wf_ib_dev_open(const wf_ibv_t *v, const char *hca,
                             const char *topo_hca, const char *topo_why,
                             int gid_index, int family, int max,
                             struct ibv_context **ctx, wf_ib_port_t *out,
                             int *n_out)
{
    int n = 0, got;
    struct ibv_device **devs = v->get_device_list(&n);
    struct ibv_port_attr pa[WF_IB_RAILS_MAX];
    char list[256];
    weft_status_t st = WEFT_OK;

    *n_out = 0;
    max = WF_MAX(1, WF_MIN(max, WF_IB_RAILS_MAX));
    if (!devs || n == 0) {
        WEFT_WARN(NET, "ib: no RDMA devices found%s%s",
                  devs ? "" : ": ", devs ? "" : wf_errno_str(errno));
        if (devs)
            v->free_device_list(devs);
        return WEFT_ERR_UNSUPPORTED;
    }
    if (!hca[0] && topo_hca && topo_hca[0])
        got = open_topo_ports(v, devs, n, topo_hca, topo_why ? topo_why : "",
                              max, ctx, out, pa);
    else
        got = open_ports(v, devs, n, hca, hca[0] ? max : 1, ctx, out, pa);
    v->free_device_list(devs);
    if (!got) {
        wf_ib_dev_any_active(v, list, sizeof(list));
        if (hca[0])
            WEFT_WARN(NET,
                      "ib: WEFT_IB_HCA=%s matches no ACTIVE port (ports "
                      "here: %s)",
                      hca, list[0] ? list : "none");
        else
            WEFT_WARN(NET, "ib: no ACTIVE port (ports here: %s)",
                      list[0] ? list : "none");
        return hca[0] ? WEFT_ERR_INVALID_ARG : WEFT_ERR_UNSUPPORTED;
    }
    for (int i = 0; i < got && st >= 0; i++)
        st = port_fill(v, ctx[i], &pa[i], gid_index, family, &out[i]);
    if (st < 0) {
        for (int i = 0; i < got; i++)
            v->close_device(ctx[i]);
        return st;
    }
    *n_out = got;
    return WEFT_OK;
}

/* CAP_IPC_LOCK (bit 14) in the effective set lifts RLIMIT_MEMLOCK. */
static bool can_lock_unlimited(void)
{
    char line[256];
    unsigned long long caps = 0;
    FILE *f = fopen("/proc/self/status", "r");

    if (!f)
        return false;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "CapEff: %llx", &caps) == 1)
            break;
    fclose(f);
    return (caps >> 14) & 1;
}

weft_status_t wf_ib_check_memlock(size_t need)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= need || can_lock_unlimited())
        return WEFT_OK;
    WEFT_WARN(NET,
              "ib: the memlock limit (ulimit -l) is %llu KiB but this rank "
              "needs %zu KiB of pinned memory for its peers; raise it (e.g. "
              "`ulimit -l unlimited`, or LimitMEMLOCK=infinity for a "
              "service, or memlock in /etc/security/limits.conf)",
              (unsigned long long)rl.rlim_cur / 1024, need / 1024);
    return WEFT_ERR_SYSTEM;
}
