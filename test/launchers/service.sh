#!/bin/bash
# service.sh - weft-rendezvous as a service, through the shipped systemd
# unit (docs/examples/weft-rendezvous.service).  systemd is not PID 1 in a
# test, so the unit's own lines are run the way systemd runs them:
#   service_unit_verify   systemd-analyze verify accepts the unit (paths
#                         pointed at a `make install` in a temp dir)
#   service_unit_run      ExecStart with the unit's Environment= lines and
#                         the token as a credential file; ExecStartPost
#                         (the --check probe) must succeed; 4 ranks with the
#                         token run an allreduce through it; a rank without
#                         the token is refused; KillSignal (SIGTERM) ends
#                         it with status 0 within TimeoutStopSec, and the
#                         log has the key=value events of all that
# Loopback only: the unit's 0.0.0.0 listen address becomes 127.0.0.1.
set -uo pipefail
here=$(dirname "$(readlink -f "$0")")
. "$here/lib.sh"
root=$(readlink -f "$here/../..")
unit_src=$root/docs/examples/weft-rendezvous.service

tmp=$(mktemp -d /tmp/weft-service-XXXXXX)
srv_pid=""
cleanup() {
    [ -n "$srv_pid" ] && kill -9 "$srv_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

make -C "$root" --no-print-directory install BUILD="$WF_BUILD" \
    PREFIX="$tmp/prefix" > "$tmp/install.log" 2>&1 ||
    { wf_fail service "make install failed: $(tail -3 "$tmp/install.log")"; exit 0; }
mkdir -p "$tmp/creds"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$tmp/creds/token"
chmod 600 "$tmp/creds/token"
port=$(wf_free_port)
sed -e "s|/usr/local/bin/|$tmp/prefix/bin/|g" -e "s|/etc/weft/token|$tmp/creds/token|" \
    -e "s|0\.0\.0\.0:29400|127.0.0.1:$port|; s|127\.0\.0\.1:29400|127.0.0.1:$port|" \
    "$unit_src" > "$tmp/weft-rendezvous.service"

verify() {
    systemd-analyze verify "$tmp/weft-rendezvous.service"
}
if command -v systemd-analyze >/dev/null; then
    wf_check service_unit_verify verify
else
    wf_skip service_unit_verify "systemd-analyze is not installed"
fi

# A unit key's value (the first line of it).
unit_value() { sed -n "s/^$1=//p" "$tmp/weft-rendezvous.service" | head -n 1; }
# Expands ${CREDENTIALS_DIRECTORY} as systemd does for LoadCredential=.
expand() { local v=$1; echo "${v//\$\{CREDENTIALS_DIRECTORY\}/$tmp/creds}"; }

run_unit() {
    local log=$tmp/service.log env=() status stop
    while read -r kv; do env+=("$kv"); done < <(sed -n 's/^Environment=//p' "$tmp/weft-rendezvous.service")
    # shellcheck disable=SC2046
    env -u WEFT_TOKEN -u WEFT_TOKEN_FILE "${env[@]}" $(expand "$(unit_value ExecStart)") > "$log" 2>&1 &
    srv_pid=$!
    # shellcheck disable=SC2046
    env -u WEFT_TOKEN -u WEFT_TOKEN_FILE $(expand "$(unit_value ExecStartPost)") || { echo "ExecStartPost failed"; cat "$log"; return 1; }
    local pids=() r
    for r in 0 1 2 3; do
        WEFT_TOKEN_FILE=$tmp/creds/token WEFT_RENDEZVOUS=127.0.0.1:$port \
            WEFT_RANK=$r WEFT_WORLD_SIZE=4 WEFT_JOB_ID=svc-job WEFT_SOCKET_IFNAME=lo \
            timeout 60 "$BENCH" allreduce -b 8 -e 64K -f 8 -w 1 -r 2 \
            > "$tmp/bench.$r" 2>&1 &
        pids+=($!)
    done
    wait "${pids[@]}"
    cat "$tmp/bench.0"
    wf_bench_clean "$tmp/bench.0" || { echo "the job through the service failed"; return 1; }
    # Without the token: refused (the job id is new, so only auth can stop it).
    if env -u WEFT_TOKEN_FILE WEFT_RENDEZVOUS=127.0.0.1:$port WEFT_RANK=0 \
        WEFT_WORLD_SIZE=1 WEFT_JOB_ID=no-token WEFT_TIMEOUT=5s \
        timeout 30 "$BENCH" allreduce -b 8 -e 8 > "$tmp/notoken.out" 2>&1; then
        echo "a rank without the token was served"; return 1
    fi
    stop=$(unit_value TimeoutStopSec)
    kill -TERM "$srv_pid"
    for _ in $(seq 1 $((stop * 10))); do
        kill -0 "$srv_pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$srv_pid" 2>/dev/null && { echo "still running ${stop}s after SIGTERM"; return 1; }
    wait "$srv_pid"
    status=$?
    srv_pid=""
    cat "$log"
    [ $status = 0 ] || { echo "exit status $status after SIGTERM"; return 1; }
    grep -q "event=listening address=127.0.0.1:$port auth=server_token max_jobs=256 keepalive_ms=60000" "$log" &&
        grep -q 'event=job_start job=weft-check-' "$log" &&
        grep -q 'event=job_start job=svc-job .*auth=token' "$log" &&
        grep -q 'event=job_end job=svc-job .*reason=last_client_left' "$log" &&
        grep -q 'unauthenticated client for job no-token' "$log" &&
        grep -q 'event=stopped address=' "$log"
}
wf_check service_unit_run run_unit
exit 0
