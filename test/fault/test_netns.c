/*
 * test_netns.c - network faults between network namespaces: packet loss
 * must not change a result, a cut link must fail every rank within twice
 * the timeout.  The work is in netns-faults.sh (it needs root, iproute2 and
 * nftables, and skips with the reason otherwise).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "test.h"

extern const char *wf_test_build_dir;

WF_TEST(netns_packet_loss_exact_and_link_cut_fails_everyone, 180)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "test/fault/netns-faults.sh %s",
             wf_test_build_dir);
    fflush(stdout);
    int ws = system(cmd);
    ASSERT_TRUE(WIFEXITED(ws));
    if (WEXITSTATUS(ws) == 77)
        WF_SKIP("netns-faults.sh could not set up namespaces (see above)");
    ASSERT_EQ(WEXITSTATUS(ws), 0);
}
