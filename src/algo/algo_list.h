/*
 * algo_list.h - the registry of algorithms, in preference order when costs
 * tie.  One line per algorithm: WF_ALGO_DECLARE(symbol) names the const
 * wf_algo_t wf_algo_<symbol> defined in src/algo/<symbol>.c.
 */
WF_ALGO_DECLARE(allreduce_ring)
WF_ALGO_DECLARE(p2p_send)
WF_ALGO_DECLARE(p2p_recv)
