/*
 * test_topo.c - the placement weft chooses on shipped hwloc XML nodes
 * (the XML files of test/topo/, written by test/topo/gen.py): each local rank's GPU,
 * NIC(s), NUMA node and core; and the degrade path (a missing or garbled
 * file: one warning, no topology, no failure).
 */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include "test.h"
#include "topo_test.h"

wf_topo_t *wf_test_topo_load(const char *name)
{
    char path[256];
    snprintf(path, sizeof(path), "test/topo/%s", name);
    wf_topo_t *t = NULL;
    weft_status_t st = wf_topo_load(path, &t);
    if (st == WEFT_ERR_UNSUPPORTED && strncmp(wf_topo_backend(), "hwloc", 5))
        WF_SKIP("built without hwloc (HWLOC=0)");
    ASSERT_OK(st);
    return t;
}

/* Local rank `lr` of `lsize`: GPU bus id (or NULL), the names of its NICs
 * ("mlx5_0" or "eth0", comma separated), NUMA node and cpu. */
static void expect(const wf_topo_t *t, int lr, int lsize, const char *gpu,
                   const char *nics, int numa, int cpu)
{
    wf_topo_choice_t c;
    wf_topo_choose(t, lr, lsize, &c);
    if (gpu)
        ASSERT_TRUE(c.gpu >= 0 && !strcmp(t->devs[c.gpu].busid, gpu));
    else
        ASSERT_EQ(c.gpu, -1);
    char got[128] = "";
    for (int k = 0; k < c.nnics; k++) {
        const wf_topo_dev_t *d = &t->devs[c.nics[k]];
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s",
                 k ? "," : "", *d->verbs ? d->verbs : d->netdev);
    }
    if (strcmp(got, nics))
        printf("local rank %d: NICs %s, expected %s (%s)\n", lr, got, nics,
               c.why);
    ASSERT_TRUE(!strcmp(got, nics));
    ASSERT_EQ(c.numa, numa);
    ASSERT_TRUE(c.core >= 0);
    ASSERT_EQ(t->cores[c.core].cpu, cpu);
}

WF_TEST(topo_two_socket_4gpu_2nic, 10)
{
    wf_topo_t *t = wf_test_topo_load("two-socket-4gpu-2nic.xml");
    ASSERT_EQ(t->npackages, 2);
    ASSERT_EQ(t->nnuma, 2);
    ASSERT_EQ(t->ncores, 8);
    ASSERT_EQ(wf_topo_count(t, WF_TOPO_GPU), 4);
    ASSERT_EQ(wf_topo_count(t, WF_TOPO_NIC), 2);
    /* Each GPU gets the NIC of its socket: behind the same switch for
     * GPUs 0 and 2, through the host bridge for GPUs 1 and 3. */
    expect(t, 0, 4, "0000:11:00.0", "mlx5_0", 0, 0);
    expect(t, 1, 4, "0000:21:00.0", "mlx5_0", 0, 1);
    expect(t, 2, 4, "0000:81:00.0", "mlx5_1", 1, 4);
    expect(t, 3, 4, "0000:91:00.0", "mlx5_1", 1, 5);
    wf_topo_choice_t c;
    wf_topo_choose(t, 0, 4, &c);
    ASSERT_EQ(c.nic_distance, 2); /* GPU and NIC share a switch */
    wf_topo_choose(t, 1, 4, &c);
    ASSERT_EQ(c.nic_distance, 4);
    /* The NIC shows its netdev as well as its verbs name. */
    ASSERT_TRUE(!strcmp(t->devs[c.nics[0]].netdev, "ib0"));
    /* More ranks than GPUs: they share GPUs round robin and the cores of
     * a node are handed out in turn. */
    expect(t, 4, 8, "0000:11:00.0", "mlx5_0", 0, 2);
    expect(t, 5, 8, "0000:21:00.0", "mlx5_0", 0, 3);
    wf_topo_free(t);
}

WF_TEST(topo_one_socket_1nic, 10)
{
    wf_topo_t *t = wf_test_topo_load("one-socket-1nic.xml");
    ASSERT_EQ(t->nnuma, 1);
    ASSERT_EQ(wf_topo_count(t, WF_TOPO_GPU), 0);
    /* Host-only ranks: the NIC nearest their NUMA node, one core each. */
    expect(t, 0, 2, NULL, "eth0", 0, 0);
    expect(t, 1, 2, NULL, "eth0", 0, 1);
    /* More ranks than cores wrap around. */
    expect(t, 5, 6, NULL, "eth0", 0, 1);
    wf_topo_free(t);
}

WF_TEST(topo_gpu_far_from_nic, 10)
{
    wf_topo_t *t = wf_test_topo_load("gpu-far-from-nic.xml");
    /* The only NIC is on the other socket: still used, the NUMA node
     * stays the GPU's, and the reason says it crosses nodes. */
    expect(t, 0, 1, "0000:11:00.0", "eth0", 0, 0);
    wf_topo_choice_t c;
    wf_topo_choose(t, 0, 1, &c);
    ASSERT_STR_CONTAINS(c.why, "crosses NUMA nodes");
    wf_topo_free(t);
}

static void degrade(const char *path)
{
    wf_test_log_capture();
    wf_topo_t *t = NULL;
    ASSERT_STATUS(wf_topo_load(path, &t), WEFT_ERR_UNSUPPORTED);
    ASSERT_TRUE(t == NULL);
    ASSERT_STATUS(wf_topo_load(path, &t), WEFT_ERR_UNSUPPORTED);
    const char *log = wf_test_log_text();
    ASSERT_STR_CONTAINS(log, "without affinity");
    /* One warning, however often it is tried. */
    ASSERT_TRUE(strstr(strstr(log, "without affinity") + 1,
                       "without affinity") == NULL);
}

WF_TEST(topo_missing_file_degrades, 10)
{
    degrade("test/topo/no-such-file.xml");
}

WF_TEST(topo_garbled_file_degrades, 10)
{
    char path[] = "/tmp/weft-topo-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_TRUE(fd >= 0);
    ASSERT_TRUE(write(fd, "<topology version=\"2.0\"><object", 32) == 32);
    close(fd);
    degrade(path);
    unlink(path);
}

WF_TEST(topo_report_json_parses, 20)
{
    wf_topo_t *t = wf_test_topo_load("two-socket-4gpu-2nic.xml");
    char path[] = "/tmp/weft-topo-json-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_TRUE(fd >= 0);
    FILE *f = fdopen(fd, "w");
    wf_topo_print(f, t, 4, true);
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "python3 -c 'import json,sys; r=json.load("
             "open(sys.argv[1])); assert len(r)==4; assert r[2][\"nics\"][0]"
             "[\"verbs\"]==\"mlx5_1\"; assert r[3][\"numa\"]==1' %s", path);
    ASSERT_EQ(system(cmd), 0);
    unlink(path);
    wf_topo_free(t);
}
