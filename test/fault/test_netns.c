/*
 * test_netns.c - network faults between network namespaces: packet loss
 * must not change a result, a cut link must fail every rank within twice
 * the timeout; delayed, reordered, duplicated and corrupted packets must
 * not either.  The work is in netns-faults.sh (it needs root, iproute2,
 * nftables or sch_netem, and skips with the reason otherwise).
 * netns-stripe.sh checks that two NICs both carry a peer's traffic with
 * WEFT_SOCKET_IFNAME=eth0,eth1, with two TCP streams and with the default
 * count; netns-topo.sh that the topology's NIC choice does the same
 * without WEFT_SOCKET_IFNAME.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "test.h"

extern const char *wf_test_build_dir;

static void run_script(const char *script, const char *mode)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "test/fault/%s %s %s", script,
             wf_test_build_dir, mode);
    fflush(stdout);
    int ws = system(cmd);
    ASSERT_TRUE(WIFEXITED(ws));
    if (WEXITSTATUS(ws) == 77)
        WF_SKIP("%s %s could not set up its namespaces (see above)", script,
                mode);
    ASSERT_EQ(WEXITSTATUS(ws), 0);
}

WF_TEST(fault_netns_packet_loss_exact_and_link_cut_fails_everyone, 180)
{
    run_script("netns-faults.sh", "loss");
}

/* Delay with jitter, reordering, duplication and corruption (tc netem):
 * skipped on kernels without sch_netem; `make test-rdma` runs it in its
 * Debian guest. */
WF_TEST(fault_netns_netem_delay_reorder_duplicate_corrupt_exact, 300)
{
    run_script("netns-faults.sh", "netem");
}

/* Two veth pairs between two namespaces, WEFT_TCP_STREAMS=2 and unset:
 * the tx counters of both interfaces on both hosts grow (and with one
 * stream only eth0's do). */
WF_TEST(fault_netns_tcp_streams_two_nics_both_carry, 120)
{
    run_script("netns-stripe.sh", "");
}

/* Two NICs of different speed (tbf: 200 and 50 Mbit/s): pieces in
 * proportion to what each stream delivers reach at least 60% of the
 * 250 Mbit/s together; equal halves stopped at 91 Mbit/s. */
WF_TEST(fault_netns_tcp_stripe_follows_link_speeds, 120)
{
    run_script("netns-stripe.sh", "uneven");
}

/* WEFT_SOCKET_IFNAME unset, a topology (test/topo/one-socket-2eth.xml)
 * whose two equally near NICs are the veths eth0 and eth1: with the
 * default stream count both carry a large share of an allreduce on both
 * hosts. */
WF_TEST(fault_netns_topo_nics_both_carry, 120)
{
    run_script("netns-topo.sh", "both");
}

/* The same topology, but host a's eth1 cannot reach host b (b's eth1 in
 * another subnet; b's end of eth1 down): the streams that would use it
 * fall back to the addresses that reached the rendezvous server, the job
 * passes within 15 s and the info log says why. */
WF_TEST(fault_netns_topo_unreachable_nic_falls_back, 120)
{
    run_script("netns-topo.sh", "unreach");
}

/* Two namespaces as hosts, two ranks each, WEFT_TRANSPORT=auto: shared
 * memory inside each, tcp across, every pair agreeing, results exact. */
WF_TEST(fault_netns_shm_inside_tcp_across, 120)
{
    run_script("netns-shm.sh", "");
}
