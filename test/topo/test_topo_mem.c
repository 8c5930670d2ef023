/*
 * test_topo_mem.c - staging memory on a NUMA node (wf_topo_mem_alloc):
 * the kernel's own record of a block's policy (get_mempolicy, the raw
 * system call: libnuma is not needed) shows it bound to node 0 of this
 * host; a topology read from an XML file, a node this host lacks, or no
 * node at all give ordinary memory that works, said once.
 */
#include <errno.h>
#include <linux/mempolicy.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "test.h"
#include "topo_test.h"

/* Enum values that older <linux/mempolicy.h> may lack (kernel 5.15). */
#define WF_MPOL_PREFERRED_MANY 5
#define MASK_BITS 1024

int wf_test_mempolicy(void *p, int *only_node)
{
    int mode = -1;
    unsigned long mask[MASK_BITS / (8 * sizeof(unsigned long))];
    memset(mask, 0, sizeof(mask));
    ASSERT_EQ(syscall(SYS_get_mempolicy, &mode, mask, MASK_BITS, p,
                      MPOL_F_ADDR), 0);
    *only_node = -1;
    for (int n = 0; n < MASK_BITS; n++)
        if (mask[n / (8 * sizeof(long))] & (1UL << (n % (8 * sizeof(long)))))
            *only_node = *only_node == -1 ? n : -2;
    return mode;
}

bool wf_test_mem_on_node(void *p, int node)
{
    int only;
    int mode = wf_test_mempolicy(p, &only);
    /* What hwloc's non-strict HWLOC_MEMBIND_BIND becomes on Linux. */
    return (mode == WF_MPOL_PREFERRED_MANY || mode == MPOL_PREFERRED) &&
           only == node;
}

void wf_test_need_binding(void)
{
    if (strncmp(wf_topo_backend(), "hwloc", 5))
        WF_SKIP("built without hwloc (HWLOC=0): nothing is bound");
    if (access("/sys/devices/system/node/node0", F_OK) != 0)
        WF_SKIP("this host has no NUMA node 0");
    /* Whether the kernel lets this process bind at all, asked without
     * weft (a container's seccomp profile may forbid mbind). */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_TRUE(p != MAP_FAILED);
    unsigned long node0 = 1;
    long rc = syscall(SYS_mbind, p, page, MPOL_BIND, &node0,
                      8 * sizeof(node0), 0);
    int err = errno;
    munmap(p, page);
    if (rc != 0)
        WF_SKIP("the kernel refuses mbind here: %s", strerror(err));
}

WF_TEST(topo_mem_binds_to_node_0, 10)
{
    wf_test_need_binding();
    char why[160] = "";
    ASSERT_TRUE(wf_topo_mem_bindable(0, why, sizeof(why)));
    size_t len = 1 << 20;
    char *p = wf_topo_mem_alloc(len, 0);
    ASSERT_TRUE(p != NULL);
    ASSERT_EQ((uintptr_t)p % (uintptr_t)sysconf(_SC_PAGESIZE), 0);
    ASSERT_TRUE(wf_test_mem_on_node(p, 0));
    ASSERT_TRUE(wf_test_mem_on_node(p + len - 1, 0)); /* the whole block */
    /* Touched, its pages are on node 0 (the kernel says where). */
    memset(p, 1, len);
    int node = -1;
    ASSERT_EQ(syscall(SYS_get_mempolicy, &node, NULL, 0, p + len / 2,
                      MPOL_F_NODE | MPOL_F_ADDR), 0);
    ASSERT_EQ(node, 0);
    wf_topo_mem_free(p, len);
    /* An ordinary allocation next to it keeps the default policy. */
    int only;
    char *q = wf_topo_mem_alloc(len, -1);
    ASSERT_TRUE(q != NULL);
    ASSERT_EQ(wf_test_mempolicy(q, &only), MPOL_DEFAULT);
    wf_topo_mem_free(q, len);
}

/* Unbound memory that works: zeroed, writable, default policy. */
static void expect_unbound(size_t len, int numa_os)
{
    int only;
    char *p = wf_topo_mem_alloc(len, numa_os);
    ASSERT_TRUE(p != NULL);
    ASSERT_TRUE(p[0] == 0 && p[len - 1] == 0);
    memset(p, 7, len);
    ASSERT_EQ(wf_test_mempolicy(p, &only), MPOL_DEFAULT);
    wf_topo_mem_free(p, len);
}

/* One info line for any number of blocks that could not be bound. */
static void expect_said_once(const char *why)
{
    const char *log = wf_test_log_text();
    const char *first = strstr(log, "staging memory not bound to NUMA node");
    ASSERT_TRUE(first != NULL);
    ASSERT_STR_CONTAINS(first, why);
    ASSERT_TRUE(strstr(first + 1, "staging memory not bound to NUMA node") ==
                NULL);
}

WF_TEST(topo_mem_xml_topology_falls_back, 10)
{
    /* hwloc then describes the file's node, not this host: its node
     * numbers mean nothing to this kernel. */
    ASSERT_EQ(setenv("HWLOC_XMLFILE", "test/topo/two-socket-4gpu-2nic.xml",
                     1), 0);
    wf_test_log_capture();
    wf_log_reconfigure("info", "all");
    char why[160] = "";
    ASSERT_TRUE(!wf_topo_mem_bindable(0, why, sizeof(why)));
    const char *expect = strncmp(wf_topo_backend(), "hwloc", 5)
                             ? "built without hwloc"
                             : "HWLOC_XMLFILE";
    ASSERT_STR_CONTAINS(why, expect);
    expect_unbound(1 << 20, 0);
    expect_unbound(64 << 10, 1);
    expect_said_once(expect);
}

WF_TEST(topo_mem_unknown_node_falls_back, 10)
{
    wf_test_log_capture();
    wf_log_reconfigure("info", "all");
    char why[160] = "";
    ASSERT_TRUE(!wf_topo_mem_bindable(-1, why, sizeof(why)));
    ASSERT_STR_CONTAINS(why, "no NUMA node chosen");
    expect_unbound(4096, -1); /* nothing asked: nothing said */
    ASSERT_TRUE(strstr(wf_test_log_text(), "not bound") == NULL);
    ASSERT_TRUE(!wf_topo_mem_bindable(4000, why, sizeof(why)));
    expect_unbound(1 << 20, 4000);
    expect_unbound(1 << 20, 4000);
    expect_said_once(strncmp(wf_topo_backend(), "hwloc", 5)
                         ? "built without hwloc"
                         : "this host has no NUMA node 4000");
    ASSERT_TRUE(wf_topo_mem_alloc(0, 0) == NULL);
    wf_topo_mem_free(NULL, 0);
}
