/*
 * test_topo_info.c - weft-info --topology (tree, --json with one object
 * per local rank, --ranks) and weft-info --doctor (one OK/WARN/FAIL line
 * per check; failing checks make it exit 1).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test.h"

static bool have_hwloc(void)
{
    char cmd[512], *out;
    snprintf(cmd, sizeof(cmd), "%s", wf_test_tool("weft-info"));
    wf_test_run_cmd(cmd, &out);
    bool yes = strstr(out, "topology: hwloc") != NULL;
    free(out);
    return yes;
}

WF_TEST(topo_info_tree, 30)
{
    char cmd[1024], *out;
    if (!have_hwloc())
        WF_SKIP("built without hwloc (HWLOC=0)");
    snprintf(cmd, sizeof(cmd), "WEFT_TOPO_FILE=test/topo/two-socket-4gpu-"
             "2nic.xml %s --topology --ranks 4", wf_test_tool("weft-info"));
    ASSERT_EQ(wf_test_run_cmd(cmd, &out), 0);
    ASSERT_STR_CONTAINS(out, "2 package(s), 2 NUMA node(s), 8 core(s), "
                             "2 NIC(s), 4 GPU(s)");
    ASSERT_STR_CONTAINS(out, "NIC 0000:82:00.0 netdev ib1 verbs mlx5_1");
    ASSERT_STR_CONTAINS(out, "local rank 3: GPU 0000:91:00.0, NIC(s) "
                             "mlx5_1, NUMA node 1, core 5 (cpu 5)");
    free(out);
    /* hwloc's own HWLOC_XMLFILE works too. */
    snprintf(cmd, sizeof(cmd), "HWLOC_XMLFILE=test/topo/one-socket-1nic.xml "
             "%s --topology", wf_test_tool("weft-info"));
    ASSERT_EQ(wf_test_run_cmd(cmd, &out), 0);
    ASSERT_STR_CONTAINS(out, "local rank 0: GPU none, NIC(s) eth0, NUMA "
                             "node 0, core 0");
    free(out);
}

WF_TEST(topo_info_json, 30)
{
    char cmd[2048], *out;
    if (!have_hwloc())
        WF_SKIP("built without hwloc (HWLOC=0)");
    snprintf(cmd, sizeof(cmd), "WEFT_TOPO_FILE=test/topo/gpu-far-from-nic.xml"
             " %s --topology --json --ranks 3 | python3 -c 'import json,sys; "
             "r=json.load(sys.stdin); assert len(r)==3, r; "
             "assert [x[\"local_rank\"] for x in r]==[0,1,2]; "
             "assert all(x[\"gpu\"]==\"0000:11:00.0\" for x in r); "
             "assert r[0][\"nics\"][0][\"netdev\"]==\"eth0\"; "
             "assert [x[\"cpu\"] for x in r]==[0,1,2], r; print(\"parsed\")'",
             wf_test_tool("weft-info"));
    int rc = wf_test_run_cmd(cmd, &out);
    if (rc)
        printf("%s", out);
    ASSERT_EQ(rc, 0);
    ASSERT_STR_CONTAINS(out, "parsed");
    free(out);
}

/* No topology: one line (or an empty JSON array), exit 1, never a crash;
 * with hwloc, a missing file also warns. */
WF_TEST(topo_info_without_topology, 30)
{
    char cmd[1024], *out;
    snprintf(cmd, sizeof(cmd), "WEFT_TOPO_FILE=test/topo/no-such.xml %s "
             "--topology", wf_test_tool("weft-info"));
    ASSERT_EQ(wf_test_run_cmd(cmd, &out), 1);
    ASSERT_STR_CONTAINS(out, "no topology (backend: ");
    ASSERT_STR_CONTAINS(out, "warn init: topology of test/topo/no-such.xml");
    free(out);
    snprintf(cmd, sizeof(cmd), "WEFT_LOG=none WEFT_TOPO_FILE=test/topo/"
             "no-such.xml %s --topology --json", wf_test_tool("weft-info"));
    ASSERT_EQ(wf_test_run_cmd(cmd, &out), 1);
    ASSERT_TRUE(!strcmp(out, "[]\n"));
    free(out);
}

/* Every line is a verdict, OK, WARN or FAIL, except the summary. */
static void all_verdicts(const char *out)
{
    for (const char *l = out; *l; l = strchr(l, '\n') + 1) {
        ASSERT_TRUE(!strncmp(l, "OK ", 3) || !strncmp(l, "WARN ", 5) ||
                    !strncmp(l, "FAIL ", 5) || !strncmp(l, "OK:", 3) ||
                    !strncmp(l, "FAIL:", 5));
        if (!strchr(l, '\n'))
            break;
    }
}

WF_TEST(topo_doctor_verdicts, 30)
{
    char cmd[1024], *out;
    /* A port held here: the range of one port cannot be bound. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    ASSERT_EQ(listen(fd, 1), 0);
    ASSERT_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    int port = ntohs(a.sin_port);
    snprintf(cmd, sizeof(cmd), "WEFT_PORT_RANGE=%d-%d WEFT_RENDEZVOUS="
             "127.0.0.1:%d %s --doctor", port, port, port,
             wf_test_tool("weft-info"));
    ASSERT_EQ(wf_test_run_cmd(cmd, &out), 1);
    all_verdicts(out);
    char want[128];
    snprintf(want, sizeof(want), "FAIL  ports %d-%d: 0 of 1 can be bound",
             port, port);
    ASSERT_STR_CONTAINS(out, want);
    snprintf(want, sizeof(want), "OK    rendezvous 127.0.0.1:%d: reachable",
             port);
    ASSERT_STR_CONTAINS(out, want);
    ASSERT_STR_CONTAINS(out, "interface lo 127.0.0.1: up");
    ASSERT_STR_CONTAINS(out, "memlock: ");
    ASSERT_STR_CONTAINS(out, "gpudirect: ");
    ASSERT_STR_CONTAINS(out, "FAIL: 1 check(s) failed");
    /* The default reaches this machine's ranks by shared memory first. */
    ASSERT_STR_CONTAINS(out, "OK    transports: WEFT_TRANSPORT=auto: each "
                             "peer by the first that reaches it of shm, then");
    ASSERT_STR_CONTAINS(out, "shm single copy: ");
    free(out);
    snprintf(cmd, sizeof(cmd), "WEFT_TRANSPORT=tcp %s --doctor",
             wf_test_tool("weft-info"));
    wf_test_run_cmd(cmd, &out);
    ASSERT_STR_CONTAINS(out, "OK    transports: WEFT_TRANSPORT=tcp: every "
                             "peer by tcp");
    free(out);
    snprintf(cmd, sizeof(cmd), "WEFT_TRANSPORT=pigeon %s --doctor",
             wf_test_tool("weft-info"));
    ASSERT_EQ(wf_test_run_cmd(cmd, &out), 1);
    ASSERT_STR_CONTAINS(out, "FAIL  transports: WEFT_TRANSPORT=pigeon");
    free(out);
    close(fd);
    /* A closed port; an interface that is not there is skipped while
     * another in the list is up, and fails alone. */
    snprintf(cmd, sizeof(cmd), "WEFT_SOCKET_IFNAME=lo,nosuch0 WEFT_RENDEZVOUS="
             "127.0.0.1:%d %s --doctor", port, wf_test_tool("weft-info"));
    ASSERT_EQ(wf_test_run_cmd(cmd, &out), 1);
    all_verdicts(out);
    ASSERT_STR_CONTAINS(out, "OK    WEFT_SOCKET_IFNAME: lo is up");
    ASSERT_STR_CONTAINS(out, "WARN  WEFT_SOCKET_IFNAME: nosuch0 is no "
                             "interface that is up (skipped)");
    ASSERT_STR_CONTAINS(out, "Connection refused");
    ASSERT_STR_CONTAINS(out, "FAIL: 1 check(s) failed");
    free(out);
    snprintf(cmd, sizeof(cmd), "WEFT_SOCKET_IFNAME=nosuch0 %s --doctor",
             wf_test_tool("weft-info"));
    ASSERT_EQ(wf_test_run_cmd(cmd, &out), 1);
    ASSERT_STR_CONTAINS(out, "FAIL  WEFT_SOCKET_IFNAME=nosuch0: no entry is "
                             "usable");
    free(out);
}
