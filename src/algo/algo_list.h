/*
 * algo_list.h - the registry of algorithms, in preference order when costs
 * tie.  One line per algorithm: WF_ALGO_DECLARE(symbol) names the const
 * wf_algo_t wf_algo_<symbol> defined in src/algo/<symbol>.c.
 * Algorithm ids (wf_algo_t.id, carried in message signatures) are unique.
 */
/* allreduce */
WF_ALGO_DECLARE(allreduce_ring)
/* -- allreduce: rhd, rd, tree -- */
WF_ALGO_DECLARE(allreduce_rhd)
WF_ALGO_DECLARE(allreduce_rd)
WF_ALGO_DECLARE(allreduce_tree)
WF_ALGO_DECLARE(allreduce_dbtree)
WF_ALGO_DECLARE(allreduce_linear)
/* -- node-aware: phases inside and across machines (hier_*.c) -- */
WF_ALGO_DECLARE(allreduce_hier)
/* broadcast, reduce, gather, scatter */
/* -- rooted collectives -- */
WF_ALGO_DECLARE(bcast_tree)
WF_ALGO_DECLARE(bcast_ring)
WF_ALGO_DECLARE(bcast_sag)
WF_ALGO_DECLARE(bcast_linear)
WF_ALGO_DECLARE(reduce_tree)
WF_ALGO_DECLARE(reduce_rsg)
WF_ALGO_DECLARE(reduce_ring)
WF_ALGO_DECLARE(reduce_linear)
WF_ALGO_DECLARE(gather_tree)
WF_ALGO_DECLARE(scatter_tree)
WF_ALGO_DECLARE(bcast_hier)
WF_ALGO_DECLARE(reduce_hier)
/* allgather, reduce-scatter, alltoall, barrier */
/* -- unrooted collectives -- */
WF_ALGO_DECLARE(allgather_ring)
WF_ALGO_DECLARE(allgather_rd)
WF_ALGO_DECLARE(allgather_bruck)
WF_ALGO_DECLARE(reducescatter_ring)
WF_ALGO_DECLARE(reducescatter_rhd)
WF_ALGO_DECLARE(alltoall_pairwise)
WF_ALGO_DECLARE(barrier_dissemination)
WF_ALGO_DECLARE(allgather_hier)
WF_ALGO_DECLARE(reducescatter_hier)
WF_ALGO_DECLARE(barrier_hier)
/* -- vector collectives: a count per rank -- */
WF_ALGO_DECLARE(allgatherv_ring)
WF_ALGO_DECLARE(gatherv_linear)
WF_ALGO_DECLARE(scatterv_linear)
WF_ALGO_DECLARE(alltoallv_pairwise)
WF_ALGO_DECLARE(reducescatterv_ring)
/* point-to-point */
WF_ALGO_DECLARE(p2p_send)
WF_ALGO_DECLARE(p2p_recv)
