# netns-lib.sh - sourced by the scripts that build "hosts" out of network
# namespaces (scripts/bench-netns.sh, test/fault/netns-*.sh).

# Kills every process in, and deletes, each namespace whose name starts
# with "$1-" (deleting a namespace deletes its links).
wf_netns_delete() {
    local ns pid
    for ns in $(ip netns list | awk -v p="$1-" 'index($1, p) == 1 {print $1}'); do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill -9 "$pid" 2>/dev/null || true
        done
        ip netns del "$ns" 2>/dev/null || true
    done
}
