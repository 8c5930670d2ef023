/*
 * ib_dev_select.c - which verbs device and port wf_ib_dev_open takes, on a
 * fake device table (no hardware): WEFT_IB_HCA when set (the topology is
 * ignored), else the devices the topology chose when one of them has an
 * ACTIVE port, else the first ACTIVE port of any device; each choice said
 * at info.
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

/* Opens with (hca, topo_hca) and expects device `want`, port `port`. */
static void expect(const char *hca, const char *topo, const char *want,
                   int port)
{
    struct ibv_context *c = NULL;
    wf_ib_port_t p;
    opened = 0;
    ASSERT_OK(wf_ib_dev_open(&fake, hca, topo, "nearest NIC(s) to GPU x",
                             -1, 4, &c, &p));
    if (strcmp(p.dev_name, want) || p.port != port)
        printf("WEFT_IB_HCA='%s' topology '%s': got %s:%d, want %s:%d\n",
               hca, topo, p.dev_name, p.port, want, port);
    ASSERT_TRUE(!strcmp(p.dev_name, want));
    ASSERT_EQ(p.port, port);
    ASSERT_TRUE(c && c->device && !strcmp(c->device->name, want));
    ASSERT_EQ(opened, 1); /* the others were closed again */
}

WF_TEST(ib_dev_select_topology, 10)
{
    wf_log_reconfigure("info", "all");
    wf_test_log_capture();
    expect("", "", "mlx5_1", 1);               /* no topology: first ACTIVE */
    expect("", "rxe0", "rxe0", 2);             /* the topology's device */
    expect("", "mlx5_0,rxe0", "rxe0", 2);      /* mlx5_0 is down */
    ASSERT_STR_CONTAINS(wf_test_log_text(),
                        "ib: rxe0 port 2 chosen: nearest NIC(s) to GPU x");
    expect("", "mlx5_0", "mlx5_1", 1);         /* none ACTIVE: any */
    ASSERT_STR_CONTAINS(wf_test_log_text(), "the topology's device(s) "
                        "mlx5_0: none has an ACTIVE port");
    expect("", "nonesuch", "mlx5_1", 1);       /* not a device here */
    expect("rxe0", "mlx5_1", "rxe0", 2);       /* WEFT_IB_HCA wins */
    expect("^mlx5_1", "mlx5_1", "rxe0", 2);
    /* An explicit list that matches nothing still fails. */
    struct ibv_context *c = NULL;
    wf_ib_port_t p;
    ASSERT_STATUS(wf_ib_dev_open(&fake, "mlx5_0", "mlx5_1", "", -1, 4, &c,
                                 &p), WEFT_ERR_INVALID_ARG);
}

#else

WF_TEST(ib_dev_select_topology, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

#endif
