/*
 * transport_list.h - the transports compiled into weft, in preference order.
 *
 * X(name, ops, probe): `ops` is the transport's const ops table and `probe`
 * a function `bool probe(char *why, size_t why_len)` that says whether it
 * can run on this host, and if not why (NULL when it always can, like
 * TCP).  "auto" reaches each peer by the first entry whose probe passes
 * and that reaches it (route.c), so faster transports go first: shared
 * memory for the ranks of this machine, then the networks.  transport.h declares every `ops` from this list,
 * and registry.c builds the registry from it.
 *
 * A transport is a folder transport/<name>/ (built by wildcard) and its
 * line here.  One that depends on an optional library is wrapped in the
 * WF_HAVE_* define its folder's transport.mk sets when the library is
 * there.  Its knobs, if any, are a <name>_params.def in its folder,
 * included from src/params.def where they stand in the table.
 */
#ifndef WF_TRANSPORT_LIST_H
#define WF_TRANSPORT_LIST_H

#include <stdbool.h>
#include <stddef.h>

#ifdef WF_HAVE_IB
bool wf_ib_probe(char *why, size_t why_len);
void wf_ib_gdr_describe(char *out, size_t len);
#define WF_TRANSPORT_GDR_DESCRIBE_ wf_ib_gdr_describe
#define WF_TRANSPORT_IB_(X) X(ib, wf_ib_transport, wf_ib_probe)
#else
#define WF_TRANSPORT_IB_(X)
#endif

bool wf_shm_probe(char *why, size_t why_len);

#define WF_TRANSPORT_LIST(X)                                                   \
    X(shm, wf_shm_transport, wf_shm_probe)                                     \
    WF_TRANSPORT_IB_(X)                                                        \
    X(tcp, wf_tcp_transport, NULL)

#endif /* WF_TRANSPORT_LIST_H */
