/*
 * ib_gdr.c - the order in which the verbs transport tries to register
 * device memory (transport/ib/ib_gdr.c), driven without a GPU or an HCA.
 *
 * Device memory comes from the fake device layer (wf_fake_dev_alloc), whose
 * dmabuf_fd hands out a stand-in fd; the verbs table is a fake whose
 * ibv_reg_dmabuf_mr and ibv_reg_mr succeed or fail as each case says and
 * record what they were given.  The expected order: dma-buf, then peer
 * memory (ibv_reg_mr on the device pointer), then WEFT_ERR_UNSUPPORTED
 * (the engine stages through host memory), each logged once at info
 * level.  Host memory never takes the dma-buf path.
 */
#include "dev_fake.h"
#include "test.h"

#if defined(WF_HAVE_IB)

#include <errno.h>
#include <fcntl.h>

#include "ib/ib.h"
#include "log.h"
#include "weft_cuda.h"

static bool dmabuf_ok, reg_ok;
static int dmabuf_calls, reg_calls, dereg_calls;
static int dmabuf_fd_seen = -1;
static uint64_t dmabuf_iova;
static void *reg_addr;

static struct ibv_mr *fake_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t off,
                                         size_t len, uint64_t iova, int fd,
                                         int access)
{
    (void)pd, (void)off, (void)len, (void)access;
    dmabuf_calls++;
    dmabuf_fd_seen = fd;
    dmabuf_iova = iova;
    /* The fd must be open while the registration is made. */
    ASSERT_TRUE(fcntl(fd, F_GETFD) >= 0);
    if (!dmabuf_ok) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    return calloc(1, sizeof(struct ibv_mr));
}

static struct ibv_mr *fake_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
                                  int access)
{
    (void)pd, (void)len, (void)access;
    reg_calls++;
    reg_addr = addr;
    if (!reg_ok) {
        errno = EFAULT; /* what mlx5 says for a GPU pointer without peermem */
        return NULL;
    }
    return calloc(1, sizeof(struct ibv_mr));
}

static int fake_dereg_mr(struct ibv_mr *mr)
{
    dereg_calls++;
    free(mr);
    return 0;
}

static wf_ibv_t fake_v = {
    .reg_mr = fake_reg_mr,
    .reg_dmabuf_mr = fake_reg_dmabuf_mr,
    .dereg_mr = fake_dereg_mr,
};

static void ctx_open(wf_tctx_t *ctx, bool have_dmabuf_symbol)
{
    memset(ctx, 0, sizeof(*ctx));
    fake_v.reg_dmabuf_mr = have_dmabuf_symbol ? fake_reg_dmabuf_mr : NULL;
    ctx->v = &fake_v;
    snprintf(ctx->rail[0].port.dev_name, sizeof(ctx->rail[0].port.dev_name),
             "fake0");
    ctx->nrails = 1;
    dmabuf_calls = reg_calls = dereg_calls = 0;
    dmabuf_fd_seen = -1;
    reg_addr = NULL;
}

static void setup(void)
{
    wf_dev_use_fake(true);
    wf_test_log_capture();
    wf_log_reconfigure("info", "all");
}

WF_TEST(transport_ib_gdr_dmabuf_first, 10)
{
    wf_tctx_t ctx;
    void *mh = NULL, *mh2 = NULL;
    char *dev;

    setup();
    dev = wf_fake_dev_alloc(1 << 20);
    ctx_open(&ctx, true);
    dmabuf_ok = reg_ok = true;
    ASSERT_OK(wf_ib_mem_reg(&ctx, dev + 4096, 8192, WF_MEM_DEVICE, &mh));
    ASSERT_EQ(dmabuf_calls, 1);
    ASSERT_EQ(reg_calls, 0); /* peer memory not tried */
    ASSERT_TRUE(dmabuf_iova == (uint64_t)(uintptr_t)(dev + 4096));
    ASSERT_TRUE(fcntl(dmabuf_fd_seen, F_GETFD) < 0); /* closed after */
    /* The cache serves the same range again without registering. */
    ASSERT_OK(wf_ib_mem_reg(&ctx, dev + 4096, 100, WF_MEM_DEVICE, &mh2));
    ASSERT_TRUE(mh2 == mh);
    ASSERT_EQ(dmabuf_calls, 1);
    wf_ib_mem_dereg(&ctx, mh2);
    ASSERT_EQ(dereg_calls, 0);
    wf_ib_mem_dereg(&ctx, mh);
    ASSERT_EQ(dereg_calls, 1);
    ASSERT_STR_CONTAINS(wf_test_log_text(), "registered as dma-buf");
    wf_ib_mrcache_free(&ctx);
    wf_fake_dev_free(dev);
}

WF_TEST(transport_ib_gdr_peermem_second, 10)
{
    wf_tctx_t ctx;
    void *mh = NULL;
    char *dev;

    setup();
    dev = wf_fake_dev_alloc(1 << 16);
    ctx_open(&ctx, true);
    dmabuf_ok = false;
    reg_ok = true;
    ASSERT_OK(wf_ib_mem_reg(&ctx, dev, 1 << 16, WF_MEM_DEVICE, &mh));
    ASSERT_EQ(dmabuf_calls, 1);
    ASSERT_EQ(reg_calls, 1);
    ASSERT_TRUE(reg_addr == dev);
    ASSERT_STR_CONTAINS(wf_test_log_text(), "through peer memory");
    ASSERT_STR_CONTAINS(wf_test_log_text(), "ibv_reg_dmabuf_mr failed");
    wf_ib_mem_dereg(&ctx, mh);
    ASSERT_EQ(dereg_calls, 1);
    wf_fake_dev_free(dev);
}

WF_TEST(transport_ib_gdr_unsupported_last, 10)
{
    wf_tctx_t ctx;
    void *mh = NULL;
    char *dev;

    setup();
    dev = wf_fake_dev_alloc(1 << 16);
    /* An rdma-core without ibv_reg_dmabuf_mr, and no peer memory. */
    ctx_open(&ctx, false);
    reg_ok = false;
    ASSERT_STATUS(wf_ib_mem_reg(&ctx, dev, 1 << 16, WF_MEM_DEVICE, &mh),
                  WEFT_ERR_UNSUPPORTED);
    ASSERT_TRUE(mh == NULL);
    ASSERT_EQ(reg_calls, 1);
    ASSERT_EQ(ctx.mrc.n, 0);
    ASSERT_STR_CONTAINS(wf_test_log_text(), "older than v34");
    ASSERT_STR_CONTAINS(wf_test_log_text(), "nvidia-peermem not loaded?");
    ASSERT_STR_CONTAINS(wf_test_log_text(), "staged through host memory");
    /* Said once per context, not once per buffer. */
    ASSERT_STATUS(wf_ib_mem_reg(&ctx, dev, 10, WF_MEM_DEVICE, &mh),
                  WEFT_ERR_UNSUPPORTED);
    const char *first = strstr(wf_test_log_text(), "staged through host");
    ASSERT_TRUE(strstr(first + 1, "staged through host") == NULL);
    /* Both ways refused, with the symbol there too. */
    ctx_open(&ctx, true);
    dmabuf_ok = reg_ok = false;
    ASSERT_STATUS(wf_ib_mem_reg(&ctx, dev, 64, WF_MEM_DEVICE, &mh),
                  WEFT_ERR_UNSUPPORTED);
    ASSERT_EQ(dmabuf_calls, 1);
    ASSERT_EQ(reg_calls, 1);
    wf_fake_dev_free(dev);
}

WF_TEST(transport_ib_gdr_host_memory_plain, 10)
{
    wf_tctx_t ctx;
    void *mh = NULL;
    static char host[4096];

    setup();
    ctx_open(&ctx, true);
    dmabuf_ok = reg_ok = true;
    ASSERT_OK(wf_ib_mem_reg(&ctx, host, sizeof(host), WF_MEM_HOST, &mh));
    ASSERT_EQ(dmabuf_calls, 0);
    ASSERT_EQ(reg_calls, 1);
    wf_ib_mem_dereg(&ctx, mh);
    /* Host memory called device memory is refused, not pinned as "peer
     * memory" (the conformance suite's transport_query on rxe). */
    ASSERT_STATUS(wf_ib_mem_reg(&ctx, host, sizeof(host), WF_MEM_DEVICE, &mh),
                  WEFT_ERR_UNSUPPORTED);
    ASSERT_EQ(dmabuf_calls, 0);
    ASSERT_EQ(reg_calls, 1);
}

#else

WF_TEST(transport_ib_gdr_dmabuf_first, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

WF_TEST(transport_ib_gdr_peermem_second, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

WF_TEST(transport_ib_gdr_unsupported_last, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

WF_TEST(transport_ib_gdr_host_memory_plain, 10)
{
    WF_SKIP("needs the verbs transport (built without libibverbs-dev)");
}

#endif
