/*
 * algo_list.h - the registry of algorithms, in preference order when costs
 * tie.  One line per algorithm: WF_ALGO_DECLARE(symbol) names the const
 * wf_algo_t wf_algo_<symbol> defined in src/algo/<symbol>.c.
 * Algorithm ids (wf_algo_t.id, carried in message signatures) are unique.
 */
/* allreduce */
WF_ALGO_DECLARE(allreduce_ring)
/* -- allreduce: rhd, rd, tree -- */
/* broadcast, reduce, gather, scatter */
/* -- rooted collectives -- */
/* allgather, reduce-scatter, alltoall, barrier */
/* -- unrooted collectives -- */
/* point-to-point */
WF_ALGO_DECLARE(p2p_send)
WF_ALGO_DECLARE(p2p_recv)
