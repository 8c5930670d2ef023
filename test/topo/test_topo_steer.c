/*
 * test_topo_steer.c - the topology's NIC choice as the transports see it:
 * the chosen NICs' netdev and verbs names (wf_topo_nic_names), and the
 * TCP address list those names yield from a made-up interface list
 * (wf_tcp_addrs_from_list): only interfaces that are up, not loopback and
 * with a usable address, of the first one's family, at most four.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "tcp/tcp.h"
#include "test.h"
#include "topo_test.h"

static void names(const char *file, int lr, int lsize, bool verbs,
                  const char *want)
{
    wf_topo_t *t = wf_test_topo_load(file);
    wf_topo_choice_t c;
    char got[128];
    wf_topo_choose(t, lr, lsize, &c);
    wf_topo_nic_names(t, &c, verbs, got, sizeof(got));
    if (strcmp(got, want))
        printf("%s local rank %d of %d: got '%s', want '%s'\n", file, lr,
               lsize, got, want);
    ASSERT_TRUE(!strcmp(got, want));
    wf_topo_free(t);
}

WF_TEST(topo_steer_nic_names, 10)
{
    names("one-socket-2eth.xml", 0, 1, false, "eth0,eth1");
    names("one-socket-2eth.xml", 0, 1, true, ""); /* no verbs names */
    names("two-socket-4gpu-2nic.xml", 0, 4, false, "ib0");
    names("two-socket-4gpu-2nic.xml", 0, 4, true, "mlx5_0");
    names("two-socket-4gpu-2nic.xml", 3, 4, true, "mlx5_1");
    names("gpu-far-from-nic.xml", 0, 1, false, "eth0");
}

/* A made-up getifaddrs() list. */
typedef struct {
    struct ifaddrs ifa[8];
    struct sockaddr_storage sa[8];
    int n;
} fake_ifs_t;

static void add_if(fake_ifs_t *f, const char *name, const char *ip, bool up)
{
    struct ifaddrs *ifa = &f->ifa[f->n];
    struct sockaddr_storage *ss = &f->sa[f->n];
    socklen_t len;
    ASSERT_TRUE(f->n < 8 && wf_tcp_parse_ip(ip, ss, &len));
    memset(ifa, 0, sizeof(*ifa));
    ifa->ifa_name = (char *)name;
    ifa->ifa_flags = (up ? IFF_UP : 0) |
                     (!strcmp(name, "lo") ? IFF_LOOPBACK : 0);
    ifa->ifa_addr = (struct sockaddr *)ss;
    if (f->n > 0)
        f->ifa[f->n - 1].ifa_next = ifa;
    f->n++;
}

/* The addresses `spec` yields, "ip,ip" (no ports), into out. */
static int addrs(const fake_ifs_t *f, const char *spec, const char *what,
                 char *out, size_t size, char *first)
{
    struct sockaddr_storage ss[WF_TCP_IF_MAX];
    socklen_t len[WF_TCP_IF_MAX];
    int n = wf_tcp_addrs_from_list(f->n ? &f->ifa[0] : NULL, spec, what, ss,
                                   len, first, 64);
    *out = '\0';
    for (int i = 0; i < n; i++) {
        char w[80];
        wf_tcp_format_addr((struct sockaddr *)&ss[i], w, sizeof(w));
        *strrchr(w, ':') = '\0';
        snprintf(out + strlen(out), size - strlen(out), "%s%s", i ? "," : "",
                 w);
    }
    return n;
}

#define EXPECT_ADDRS(f, spec, what, want, want_first)                         \
    do {                                                                      \
        char got_[256], first_[64] = "";                                      \
        addrs(f, spec, what, got_, sizeof(got_), first_);                     \
        if (strcmp(got_, want))                                               \
            printf("%s: got '%s', want '%s'\n", spec, got_, want);            \
        ASSERT_TRUE(!strcmp(got_, want));                                     \
        ASSERT_TRUE(!strcmp(first_, want_first));                             \
    } while (0)

WF_TEST(topo_steer_tcp_addrs, 10)
{
    fake_ifs_t f;
    memset(&f, 0, sizeof(f));
    add_if(&f, "lo", "127.0.0.1", true);
    add_if(&f, "eth0", "fe80::1", true);    /* link-local: never */
    add_if(&f, "eth0", "10.0.0.1", true);
    add_if(&f, "eth1", "fd00::2", true);    /* IPv6 only */
    add_if(&f, "eth2", "10.0.2.1", false);  /* down */
    add_if(&f, "eth3", "10.0.3.1", true);
    add_if(&f, "eth4", "10.0.4.1", true);
    add_if(&f, "eth5", "10.0.5.1", true);
    /* The topology's list: up, not loopback, the first one's family. */
    EXPECT_ADDRS(&f, "eth0,eth1,eth2,eth3", NULL, "10.0.0.1,10.0.3.1",
                 "eth0");
    EXPECT_ADDRS(&f, "eth1,eth0", NULL, "[fd00::2]", "eth1");
    EXPECT_ADDRS(&f, "eth2,eth3", NULL, "10.0.3.1", "eth3");
    EXPECT_ADDRS(&f, "lo,ib0,eth2", NULL, "", "");
    EXPECT_ADDRS(&f, "10.0.0.1", NULL, "", ""); /* names only */
    EXPECT_ADDRS(&f, "eth0,eth3,eth4,eth5,eth0", NULL,
                 "10.0.0.1,10.0.3.1,10.0.4.1,10.0.5.1", "eth0"); /* 4 at most */
    /* The user's list: literal IPs, and an interface that is down. */
    EXPECT_ADDRS(&f, "eth2,10.9.9.9", "WEFT_SOCKET_IFNAME",
                 "10.0.2.1,10.9.9.9", "eth2");
}
