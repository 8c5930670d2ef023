#!/bin/sh
# netns-rsh.sh - Open MPI's launch agent (plm_rsh_agent) for hosts that
# are network namespaces (scripts/bench-netns.sh): "netns-rsh.sh NS CMD"
# runs CMD in namespace NS with a hostname of its own (a UTS namespace),
# so that Open MPI tells the namespaces apart as nodes: shared memory
# inside one, TCP between them.
ns=$1
shift
exec ip netns exec "$ns" unshare --uts sh -c "hostname '$ns' && $*"
