/*
 * transport_list.h - the transports compiled into weft, in preference order.
 *
 * X(name, ops, probe): `ops` is the transport's const ops table and `probe`
 * a function `bool probe(void)` that says whether it can run on this host
 * (NULL when it always can, like TCP).  "auto" picks the first entry whose
 * probe passes, so faster transports go first.  A transport that depends on
 * an optional library is wrapped in the Makefile's WF_HAVE_* define here.
 */
#ifndef WF_TRANSPORT_LIST_H
#define WF_TRANSPORT_LIST_H

#define WF_TRANSPORT_LIST(X) X(tcp, wf_tcp_transport, NULL)

#endif /* WF_TRANSPORT_LIST_H */
