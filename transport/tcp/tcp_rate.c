/*
 * tcp_rate.c - how fast each stream of a peer delivers, and the shares of
 * a striped message that follow from it.
 *
 * Equal pieces over two NICs of different speed finish when the slower
 * one has carried its half: a 200 and a 50 Mbit/s link move 100 Mbit/s
 * together instead of 250.  The kernel counts, per socket, the bytes the
 * peer acknowledged and the time the socket had data to send (TCP_INFO
 * tcpi_bytes_acked, tcpi_busy_time, Linux 4.10+); their quotient over a
 * window of WF_TCP_RATE_WINDOW_US busy time is what the path delivers
 * whatever the application did meanwhile, and a piece per stream in
 * proportion to it keeps the streams finishing together.  (The delivery
 * rate of the last flight, tcpi_delivery_rate, is no measure on a shaped
 * link, where a shaper's burst passes at wire speed:
 * bench/results/2026-11-24-tcp-streams-and-two-nics.md.)
 * Rates that differ by less than WF_TCP_RATE_SPREAD are noise between
 * equal paths (the CPU, not the link, limits loopback): pieces stay equal.
 */
#include <linux/tcp.h> /* struct tcp_info with the delivery rate */
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>

#include "tcp.h"

/* Rates closer than this ratio count as equal. */
#define WF_TCP_RATE_SPREAD 1.25
/* Busy time (us) a rate sample spans. */
#define WF_TCP_RATE_WINDOW_US 10000

void wf_tcp_rates_refresh(wf_tcp_peer_t *p)
{
    uint64_t now = wf_time_ms();

    if (p->rates_at == now)
        return; /* once a millisecond is enough for a path's speed */
    p->rates_at = now;
    for (int k = 0; k < p->nstreams; k++) {
        wf_tcp_stream_t *s = &p->streams[k];
        struct tcp_info ti = {0};
        socklen_t len = sizeof(ti);
        if (s->fd < 0 ||
            getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
            len < offsetof(struct tcp_info, tcpi_busy_time) +
                      sizeof(ti.tcpi_busy_time))
            continue;
        /* Acknowledged bytes over the time the socket had data to send,
         * over at least WF_TCP_RATE_WINDOW_US of it. */
        uint64_t acked = ti.tcpi_bytes_acked - s->acked_seen;
        uint64_t busy = ti.tcpi_busy_time - s->busy_seen;
        if (busy < WF_TCP_RATE_WINDOW_US)
            continue;
        s->acked_seen = ti.tcpi_bytes_acked;
        s->busy_seen = ti.tcpi_busy_time;
        uint64_t sample = (uint64_t)((double)acked * 1e6 / (double)busy);
        s->rate = s->rate ? (s->rate + sample) / 2 : sample;
    }
}

int wf_tcp_stripe_cut(size_t len, int n, const uint64_t *rates, size_t align,
                      size_t *pieces)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    double sum = 0;
    for (int k = 0; rates && k < n; k++) {
        lo = WF_MIN(lo, rates[k]);
        hi = WF_MAX(hi, rates[k]);
        sum += (double)rates[k];
    }
    size_t off = 0;
    int count = 0;
    if (!rates || lo == 0 || (double)hi < WF_TCP_RATE_SPREAD * (double)lo) {
        /* Equal pieces, rounded up to the alignment: the last is the
         * shorter one, and a small message may need fewer. */
        size_t piece = (len + (size_t)n - 1) / (size_t)n;
        piece = (piece + align - 1) / align * align;
        for (; off < len; off += pieces[count++])
            pieces[count] = WF_MIN(piece, len - off);
        return count;
    }
    for (int k = 0; k < n; k++) {
        size_t want = k == n - 1 ? len - off
                                 : (size_t)((double)len *
                                            ((double)rates[k] / sum)) /
                                       align * align;
        pieces[k] = WF_MIN(want, len - off);
        off += pieces[k];
    }
    return n;
}
