/*
 * ib_dev_select.c - which verbs device and port wf_ib_dev_open takes, on a
 * fake device table (no hardware): every ACTIVE port WEFT_IB_HCA admits
 * when set (the topology is ignored), else those of the devices the
 * topology chose when one of them has one, else the first ACTIVE port of
 * any device; each choice said at info.
 */
#include <string.h>

#include "ib_fake.h"
#include "log.h"

#if defined(WF_HAVE_IB)

/* mlx5_0: port 1 DOWN; mlx5_1: port 1 ACTIVE; rxe0: ports 1 DOWN, 2
 * ACTIVE.  All InfiniBand link layer, so no GID is needed. */
#define NDEV 3
static struct ibv_device devs[NDEV];
static struct ibv_device *list[NDEV + 1];
static struct ibv_context ctxs[NDEV];
static int opened;

static struct ibv_device **get_list(int *n)
{
    static const char *const names[NDEV] = {"mlx5_0", "mlx5_1", "rxe0"};
    for (int i = 0; i < NDEV; i++) {
        wf_strlcpy(devs[i].name, names[i], sizeof(devs[i].name));
        list[i] = &devs[i];
        ctxs[i].device = &devs[i];
    }
    *n = NDEV;
    return list;
}

static void free_list(struct ibv_device **l) { (void)l; }
static const char *dev_name(struct ibv_device *d) { return d->name; }

static struct ibv_context *open_dev(struct ibv_device *d)
{
    opened++;
    return &ctxs[d - devs];
}

static int close_dev(struct ibv_context *c)
{
    (void)c;
    opened--;
    return 0;
}

static int query_dev(struct ibv_context *c, struct ibv_device_attr *a)
{
    a->phys_port_cnt = c->device == &devs[2] ? 2 : 1;
    return 0;
}

static int query_port(struct ibv_context *c, uint8_t port,
                      struct ibv_port_attr *a)
{
    int d = (int)(c->device - devs);
    bool active = (d == 1 && port == 1) || (d == 2 && port == 2);
    a->state = active ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    a->link_layer = IBV_LINK_LAYER_INFINIBAND;
    a->active_mtu = IBV_MTU_2048;
    a->lid = (uint16_t)(d + 1);
    return 0;
}

static const wf_ibv_t fake = {
    .get_device_list = get_list, .free_device_list = free_list,
    .get_device_name = dev_name, .open_device = open_dev,
    .close_device = close_dev, .query_device = query_dev,
    .query_port = query_port,
};

/* Opens with (hca, topo_hca) and at most `max` rails; expects the rails
 * `want`, "name:port" joined by '+'. */
static void expect_max(const char *hca, const char *topo, int max,
                       const char *want)
{
    struct ibv_context *c[WF_IB_RAILS_MAX] = {0};
    wf_ib_port_t p[WF_IB_RAILS_MAX];
    char got[512] = "";
    int n = 0;
    opened = 0;
    ASSERT_OK(wf_ib_dev_open(&fake, hca, topo, "nearest NIC(s) to GPU x",
                             -1, 4, max, c, p, &n));
    for (int i = 0; i < n; i++) {
        size_t used = strlen(got);
        snprintf(got + used, sizeof(got) - used, "%s%s:%d", i ? "+" : "",
                 p[i].dev_name, p[i].port);
        ASSERT_TRUE(c[i] && c[i]->device &&
                    !strcmp(c[i]->device->name, p[i].dev_name));
    }
    if (strcmp(got, want))
        printf("WEFT_IB_HCA='%s' topology '%s': got %s, want %s\n", hca,
               topo, got, want);
    ASSERT_TRUE(!strcmp(got, want));
    ASSERT_EQ(opened, n); /* one context per rail, the others closed */
}

static void expect(const char *hca, const char *topo, const char *want)
{
    expect_max(hca, topo, WF_IB_RAILS_MAX, want);
}

WF_TEST(transport_ib_dev_select_topology, 10)
{
    wf_log_reconfigure("info", "all");
    wf_test_log_capture();
    expect("", "", "mlx5_1:1");              /* no topology: first ACTIVE */
    expect("", "rxe0", "rxe0:2");            /* the topology's device */
    expect("", "mlx5_0,rxe0", "rxe0:2");     /* mlx5_0 is down */
    ASSERT_STR_CONTAINS(wf_test_log_text(),
                        "ib: rxe0 port 2 chosen: nearest NIC(s) to GPU x");
    expect("", "mlx5_0", "mlx5_1:1");        /* none ACTIVE: any */
    ASSERT_STR_CONTAINS(wf_test_log_text(), "the topology's device(s) "
                        "mlx5_0: none has an ACTIVE port");
    expect("", "nonesuch", "mlx5_1:1");      /* not a device here */
    expect("rxe0", "mlx5_1", "rxe0:2");      /* WEFT_IB_HCA wins */
    expect("^mlx5_1", "mlx5_1", "rxe0:2");
    /* An explicit list that matches nothing still fails. */
    struct ibv_context *c[WF_IB_RAILS_MAX];
    wf_ib_port_t p[WF_IB_RAILS_MAX];
    int n = 0;
    ASSERT_STATUS(wf_ib_dev_open(&fake, "mlx5_0", "mlx5_1", "", -1, 4,
                                 WF_IB_RAILS_MAX, c, p, &n),
                  WEFT_ERR_INVALID_ARG);
    ASSERT_EQ(n, 0);
}

/* Several ACTIVE ports that the list or the topology names are rails, in
 * device order; without either, one port (nobody said which are near). */
WF_TEST(transport_ib_dev_select_rails, 10)
{
    wf_log_reconfigure("info", "all");
    wf_test_log_capture();
    expect("mlx5_1,rxe0", "", "mlx5_1:1+rxe0:2");
    expect("rxe0,mlx5_1", "", "mlx5_1:1+rxe0:2"); /* device order */
    expect("^mlx5_0", "", "mlx5_1:1+rxe0:2");
    expect("rxe0:2,mlx5_1:1", "mlx5_1", "mlx5_1:1+rxe0:2");
    expect("", "mlx5_1,rxe0", "mlx5_1:1+rxe0:2");
    ASSERT_STR_CONTAINS(wf_test_log_text(),
                        "ib: mlx5_1 port 1 and rxe0 port 2 chosen: nearest "
                        "NIC(s) to GPU x");
    expect("", "", "mlx5_1:1");
    expect_max("mlx5_1,rxe0", "", 1, "mlx5_1:1");
}

#else

WF_TEST(transport_ib_dev_select_topology, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

WF_TEST(transport_ib_dev_select_rails, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

#endif
