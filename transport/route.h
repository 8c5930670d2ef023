/*
 * route.h - one communicator over several transports, each peer by the
 * first of an ordered list that reaches it (route.c).
 */
#ifndef WF_ROUTE_H
#define WF_ROUTE_H

#include "transport.h"

/* Members of one route at most: every compiled-in transport. */
#define WF_ROUTE_MAX 4

/* The route: wf_transport_select returns it when WEFT_TRANSPORT names
 * more than one usable transport ("auto", or a list "shm,tcp"). */
extern const wf_transport_ops_t wf_route_transport;

/* The usable transports of WEFT_TRANSPORT `name`, in its order: every
 * compiled-in one whose probe passes for "auto" (or an empty name), else
 * those of the comma-separated list; WEFT_ERR_UNSUPPORTED when none is
 * usable, WEFT_ERR_INVALID_ARG for an unknown name (both logged). */
weft_status_t wf_transport_members(const char *name,
                                   const wf_transport_ops_t **ops, int *n);

/* The name of the transport the route uses for `peer` (rc: a route's
 * context), or NULL before the peer is connected. */
const char *wf_route_peer_transport(wf_tctx_t *rc, int peer);

#endif /* WF_ROUTE_H */
