/*
 * doctor.c - weft_doctor (weft-info --doctor): a pre-flight check of this
 * host, one line per check, "OK", "WARN" or "FAIL" first, then the reason.
 * It reads the configuration like a rank would, so WEFT_SOCKET_IFNAME,
 * WEFT_PORT_RANGE and WEFT_RENDEZVOUS are checked as they will be used.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm.h"
#include "common.h"
#include "cma.h"
#include "config.h"
#include "route.h"
#include "transport.h"
#include "weft_cuda.h"

typedef struct { FILE *out; int fails; } doc_t;

static void verdict(doc_t *d, const char *v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void verdict(doc_t *d, const char *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(d->out, "%-4s  ", v);
    vfprintf(d->out, fmt, ap);
    fputc('\n', d->out);
    va_end(ap);
    d->fails += v[0] == 'F';
}

/* Which transport each kind of peer gets (WEFT_TRANSPORT, route.c), and
 * whether the ranks of this machine can copy once between each other. */
static void check_transports(doc_t *d, const wf_config_t *cfg)
{
    const wf_transport_ops_t *ops[WF_ROUTE_MAX];
    char list[128] = "";
    int n = 0, at = 0;

    if (wf_transport_members(cfg->transport, ops, &n) != WEFT_OK) {
        verdict(d, "FAIL", "transports: WEFT_TRANSPORT=%s: none usable here "
                "(compiled in: %s)", cfg->transport, wf_transport_names());
        return;
    }
    for (int i = 0; i < n; i++)
        at += snprintf(list + at, sizeof(list) - (size_t)at, "%s%s",
                       i ? ", then " : "", ops[i]->name);
    if (n == 1)
        verdict(d, "OK", "transports: WEFT_TRANSPORT=%s: every peer by %s",
                cfg->transport, list);
    else
        verdict(d, "OK", "transports: WEFT_TRANSPORT=%s: each peer by the "
                "first that reaches it of %s (shm: ranks of this machine and "
                "network namespace; the info log names each pair's)",
                cfg->transport, list);
    if (ops[0] != &wf_shm_transport)
        return;
    char scope[8];
    wf_cma_yama_scope(scope, sizeof(scope));
    if (scope[0] >= '2')
        verdict(d, "WARN", "shm single copy: Yama ptrace_scope %c forbids "
                "ranks to read each other's memory; large messages go "
                "through the rings, copied twice", scope[0]);
    else
        verdict(d, "OK", "shm single copy: allowed by Yama (%s); messages "
                "of WEFT_SHM_CMA_MIN bytes or more are read once",
                scope[0] ? "ptrace_scope 0 or 1" : "no Yama");
}

/* Interfaces that are up, with their addresses; the ones named by
 * WEFT_SOCKET_IFNAME must be among them. */
static void check_interfaces(doc_t *d, const wf_config_t *cfg)
{
    struct ifaddrs *ifs;
    if (getifaddrs(&ifs) != 0) {
        verdict(d, "FAIL", "interfaces: getifaddrs: %s", wf_errno_str(errno));
        return;
    }
    int up = 0;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
                             i->ifa_addr->sa_family != AF_INET6))
            continue;
        char a[INET6_ADDRSTRLEN] = "?";
        const void *p = i->ifa_addr->sa_family == AF_INET
            ? (const void *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
            : (const void *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
        inet_ntop(i->ifa_addr->sa_family, p, a, sizeof(a));
        bool is_up = i->ifa_flags & IFF_UP, lo = i->ifa_flags & IFF_LOOPBACK;
        up += is_up && !lo;
        verdict(d, is_up ? "OK" : "WARN", "interface %s %s: %s%s", i->ifa_name,
                a, is_up ? "up" : "down",
                lo ? " (loopback: this host only)" : "");
    }
    /* The tcp transport takes the first entry that has an address. */
    char names[WF_CONFIG_STR_MAX];
    int usable = 0, listed = 0;
    wf_strlcpy(names, cfg->socket_ifname, sizeof(names));
    for (char *save, *n = strtok_r(names, ", ", &save); n;
         n = strtok_r(NULL, ", ", &save), listed++) {
        bool found = false;
        for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next)
            found = !strcmp(i->ifa_name, n) && (i->ifa_flags & IFF_UP);
        struct in6_addr ip;
        found = found || inet_pton(AF_INET, n, &ip) == 1 ||
                inet_pton(AF_INET6, n, &ip) == 1;
        usable += found;
        verdict(d, found ? "OK" : "WARN", "WEFT_SOCKET_IFNAME: %s %s", n,
                found ? "is up" : "is no interface that is up (skipped)");
    }
    if (listed && !usable)
        verdict(d, "FAIL", "WEFT_SOCKET_IFNAME=%s: no entry is usable; the "
                "tcp transport cannot start", cfg->socket_ifname);
    if (!up && !*cfg->socket_ifname)
        verdict(d, "WARN", "interfaces: only loopback is up: ranks on other "
                "hosts cannot reach this one");
    freeifaddrs(ifs);
}

/* Whether the rendezvous answers a TCP connect within two seconds. */
static void check_rendezvous(doc_t *d, const char *rdv)
{
    char host[256];
    int port;
    if (!*rdv || strstr(rdv, "://") || !wf_parse_hostport(rdv, host,
                                                           sizeof(host), &port)) {
        verdict(d, "OK", "rendezvous: %s", *rdv ? "not a HOST:PORT; not "
                "checked" : "WEFT_RENDEZVOUS unset; not checked");
        return;
    }
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc) {
        verdict(d, "FAIL", "rendezvous %s: cannot resolve: %s", rdv,
                gai_strerror(rc));
        return;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int err = fd < 0 ? errno : 0;
    if (!err && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        err = errno;
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        socklen_t len = sizeof(err);
        if (err == EINPROGRESS)
            err = poll(&pf, 1, 2000) == 1 &&
                  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0
                      ? err : ETIMEDOUT;
    }
    if (fd >= 0)
        close(fd);
    freeaddrinfo(ai);
    verdict(d, err ? "FAIL" : "OK", "rendezvous %s: %s", rdv,
            err ? wf_errno_str(err) : "reachable");
}

/* How many ports of WEFT_PORT_RANGE this host can bind now. */
static void check_ports(doc_t *d, const wf_config_t *cfg)
{
    int lo, hi, free_ports = 0, tried = 0;
    if (wf_comm_port_range(cfg->port_range, &lo, &hi) != WEFT_OK) {
        verdict(d, "FAIL", "WEFT_PORT_RANGE=%s: not LOW-HIGH within 1-65535",
                cfg->port_range);
        return;
    }
    if (lo == 0) {
        verdict(d, "OK", "ports: WEFT_PORT_RANGE unset; listeners take any "
                "free port");
        return;
    }
    for (int p = lo; p <= hi; p++, tried++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)p)};
        free_ports += fd >= 0 &&
                      bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
        if (fd >= 0)
            close(fd);
    }
    verdict(d, free_ports == 0 ? "FAIL" : free_ports < tried ? "WARN" : "OK",
            "ports %d-%d: %d of %d can be bound", lo, hi, free_ports, tried);
}

/* Verbs registers every buffer it sends from: the locked-memory limit
 * must hold them (a few hundred MiB for large collectives). */
static void check_memlock(doc_t *d, bool verbs)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) {
        verdict(d, "WARN", "memlock: getrlimit: %s", wf_errno_str(errno));
        return;
    }
    if (rl.rlim_cur == RLIM_INFINITY) {
        verdict(d, "OK", "memlock: unlimited");
        return;
    }
    bool low = rl.rlim_cur < (512u << 20);
    verdict(d, low && verbs ? "WARN" : "OK", "memlock: %llu KiB%s",
            (unsigned long long)rl.rlim_cur >> 10,
            !low ? "" : verbs ? ": verbs buffer registration may fail; raise "
                                "it (ulimit -l unlimited)"
                              : " (low, but no verbs device needs it)");
}

static bool read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    bool ok = f && fgets(buf, (int)len, f);
    if (f)
        fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

/* Verbs devices as the kernel lists them (/sys/class/infiniband): each
 * port's state and its GID 0.  Returns how many devices there are. */
static int check_verbs(doc_t *d)
{
    const char *root = "/sys/class/infiniband";
    DIR *dir = opendir(root);
    int ndev = 0;
    if (!dir) {
        verdict(d, "OK", "verbs: no RDMA devices (%s absent); the tcp "
                "transport will be used", root);
        return 0;
    }
    for (struct dirent *e; (e = readdir(dir));) {
        if (e->d_name[0] == '.')
            continue;
        ndev++;
        for (int port = 1; port <= 4; port++) {
            char path[512], state[64], gid[64] = "none";
            snprintf(path, sizeof(path), "%s/%s/ports/%d/state", root,
                     e->d_name, port);
            if (!read_line(path, state, sizeof(state)))
                break;
            snprintf(path, sizeof(path), "%s/%s/ports/%d/gids/0", root,
                     e->d_name, port);
            read_line(path, gid, sizeof(gid));
            bool active = strstr(state, "ACTIVE") != NULL;
            bool zero = !strcmp(gid, "0000:0000:0000:0000:0000:0000:0000:0000");
            verdict(d, active && !zero ? "OK" : "WARN", "verbs %s port %d: "
                    "%s, GID[0] %s%s", e->d_name, port, state, gid,
                    zero ? " (no GID: RoCE needs an IP on the netdev)" : "");
        }
    }
    closedir(dir);
    if (!ndev)
        verdict(d, "OK", "verbs: no RDMA devices; the tcp transport will be "
                "used");
    return ndev;
}

/* The device layer (libweft_cuda.so), a GPU behind it, and GPUDirect
 * RDMA (nvidia-peermem, or the older nv_peer_mem). */
static void check_cuda(doc_t *d, int nverbs)
{
    char why[256] = "";
    const wf_dev_ops_t *ops = wf_dev_layer(why, sizeof(why));
    bool gpu = ops && ops->set_device(0) == WEFT_OK;
    if (!ops)
        verdict(d, "WARN", "cuda: no device layer: %s (host buffers only)",
                why);
    else
        verdict(d, gpu ? "OK" : "WARN", "cuda: %s layer loaded, %s", ops->name,
                gpu ? "GPU 0 usable" : "no usable GPU");
    if (!gpu) {
        verdict(d, "OK", "gpudirect: not checked: no GPU");
        return;
    }
    if (!nverbs) {
        verdict(d, "OK", "gpudirect: not needed: no RDMA devices");
        return;
    }
    /* The registration the verbs transport would use (ib_gdr.c): dma-buf,
     * peer memory, or none. */
    char how[400];
    wf_transport_gpudirect(how, sizeof(how));
    verdict(d, strncmp(how, "none", 4) == 0 ? "WARN" : "OK", "gpudirect: %s",
            how);
}

WEFT_API weft_status_t weft_doctor(FILE *out)
{
    wf_config_t cfg;
    doc_t d = {.out = out, .fails = 0};
    if (!out)
        return WEFT_ERR_INVALID_ARG;
    weft_status_t st = wf_config_load(&cfg, NULL);
    if (st != WEFT_OK) {
        verdict(&d, "FAIL", "configuration: %s (see the warning above)",
                weft_strerror(st));
        return WEFT_ERR_SYSTEM;
    }
    check_interfaces(&d, &cfg);
    check_rendezvous(&d, cfg.rendezvous);
    check_ports(&d, &cfg);
    check_transports(&d, &cfg);
    int nverbs = check_verbs(&d);
    check_memlock(&d, nverbs > 0);
    check_cuda(&d, nverbs);
    fprintf(out, "%s: %d check(s) failed\n", d.fails ? "FAIL" : "OK", d.fails);
    return d.fails ? WEFT_ERR_SYSTEM : WEFT_OK;
}
