#!/bin/bash
# ssh.sh - weftrun across hosts over real sshd: 4 network namespaces as
# hosts on a bridge (10.76.0.1-4), each with its own hostname (hostH, a UTS
# namespace) and its own sshd (a host key and an authorized key made here),
# weftrun run in host 0.  Checks:
#   ssh_c_program_2x2     comm_init_check on -H host0:2,10.76.0.2:2: rank,
#                         size and three collectives; ranks 2 and 3 ran on
#                         host1
#   ssh_c_program_4x2     the same on 4 hosts from a --hostfile
#                         ("host slots=2" lines)
#   ssh_torch_ddp_2x2     PyTorch's tutorial and a DDP training
#                         (tutorial.py --ddp) on 2 hosts x 2 ranks, where
#                         make python built the venv
#   ssh_rank_fails        rank 3 (host1) exits 7: weftrun exits 7 within
#                         the bound, naming the host, and no process of the
#                         job is left on any host
#   ssh_ctrl_c            SIGINT to weftrun mid-job: it ends, and no
#                         process of the job is left on any host
# Addresses exist only inside the namespaces; a trap kills everything in
# them and deletes them.  Needs root, iproute2, unshare and OpenSSH.
set -uo pipefail
here=$(dirname "$(readlink -f "$0")")
. "$here/lib.sh"

part=ssh
[ "$(id -u)" = 0 ] || { wf_skip $part "needs root to create network namespaces and run sshd"; exit 0; }
for b in ip unshare ssh ssh-keygen; do
    command -v $b >/dev/null || { wf_skip $part "$b is not installed (openssh-client, iproute2)"; exit 0; }
done
[ -x /usr/sbin/sshd ] || { wf_skip $part "sshd is not installed (openssh-server)"; exit 0; }

WEFTRUN=$(readlink -f "$WF_BUILD/bin/weftrun")
hosts=4
prefix="wfs$$"
dir=$(mktemp -d /tmp/weft-ssh-XXXXXX)
chmod 700 "$dir"

cleanup() {
    for ns in $(ip netns list | awk -v p="$prefix-" 'index($1, p) == 1 {print $1}'); do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null
    done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

host_ns() { echo "$prefix-h$1"; }
host_ip() { echo "10.76.0.$(($1 + 1))"; }

ssh-keygen -q -t ed25519 -N '' -f "$dir/hostkey" || { wf_fail $part "ssh-keygen failed"; exit 0; }
ssh-keygen -q -t ed25519 -N '' -f "$dir/id" || { wf_fail $part "ssh-keygen failed"; exit 0; }
cp "$dir/id.pub" "$dir/authorized_keys"
mkdir -p /run/sshd # sshd's privilege separation directory

ip netns add "$prefix-sw" || { wf_skip $part "cannot create network namespaces here"; exit 0; }
ip -n "$prefix-sw" link add br0 type bridge
ip -n "$prefix-sw" link set br0 up
for ((h = 0; h < hosts; h++)); do
    ns=$(host_ns $h)
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$prefix-sw" link add "p$h" type veth peer name eth0 netns "$ns"
    ip -n "$prefix-sw" link set "p$h" master br0 up
    ip -n "$ns" addr add "$(host_ip $h)/24" dev eth0
    ip -n "$ns" link set eth0 up
    cat > "$dir/sshd_config.$h" <<CONF
ListenAddress $(host_ip $h)
Port 22
HostKey $dir/hostkey
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $dir/sshd.$h.pid
CONF
    # sshd -D stays in the foreground: a child of the namespace, killed
    # with it.  Its own hostname, which every rank it starts inherits.
    ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec "$@"' \
        "host$h" /usr/sbin/sshd -D -e -f "$dir/sshd_config.$h" \
        > "$dir/sshd.$h.log" 2>&1 &
done

ssh_opts=(--ssh-identity-file "$dir/id" --ssh-option StrictHostKeyChecking=no
          --ssh-option UserKnownHostsFile=/dev/null --ssh-option LogLevel=ERROR
          --ssh-option ConnectTimeout=10)
# In host 0, as host0, within SECONDS: weftrun ARGS...  (timeout passes
# a SIGINT it gets on to weftrun.)
head_run() {
    local secs=$1
    shift
    timeout "$secs" ip netns exec "$(host_ns 0)" unshare --uts sh -c \
        'hostname host0 && exec "$@"' sh "$WEFTRUN" "${ssh_opts[@]}" "$@"
}

ready=""
for _ in $(seq 1 50); do
    ready=1
    for ((h = 1; h < hosts; h++)); do
        ip netns exec "$(host_ns 0)" ssh -i "$dir/id" -o BatchMode=yes \
            -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
            -o LogLevel=ERROR -o ConnectTimeout=2 "$(host_ip $h)" true \
            2>/dev/null || { ready=""; break; }
    done
    [ -n "$ready" ] && break
    sleep 0.2
done
[ -n "$ready" ] || { wf_fail $part "sshd did not come up: $(tail -3 "$dir"/sshd.*.log)"; exit 0; }

# Processes of the job left in the host namespaces (sshd itself aside).
leftovers() {
    local h pid n=0
    for ((h = 0; h < hosts; h++)); do
        for pid in $(ip netns pids "$(host_ns $h)" 2>/dev/null); do
            case "$(cat /proc/"$pid"/comm 2>/dev/null)" in
                sshd|"") ;;
                *) echo "host$h: $pid $(tr '\0' ' ' < /proc/"$pid"/cmdline)"; n=$((n + 1)) ;;
            esac
        done
    done
    return $((n > 0))
}

c_program() { # NAME NRANKS PER_HOST WEFTRUN-HOST-ARGS...
    local name=$1 n=$2 per=$3 out=$WF_LOGDIR/$1.out status r
    shift 3
    head_run 120 -np "$n" "$@" sh -c \
        'echo "rank $RANK on $(hostname)"; exec "$0" "$RANK" "$WORLD_SIZE"' \
        "$LAUNCH_CHECK" > "$out" 2>&1
    status=$?
    cat "$out"
    [ $status = 0 ] || return 1
    [ "$(grep -c "^comm_init_check: rank [0-9] of $n ok" "$out")" = "$n" ] || return 1
    for ((r = 0; r < n; r++)); do
        grep -q "^rank $r on host$((r / per))$" "$out" || { echo "rank $r not on host$((r / per))"; return 1; }
    done
    leftovers
}
wf_check ssh_c_program_2x2 c_program ssh_c_program_2x2 4 2 \
    -H "host0:2,$(host_ip 1):2"

for ((h = 0; h < hosts; h++)); do
    if [ $h = 0 ]; then echo "host0 slots=2"; else echo "$(host_ip $h) slots=2 # host$h"; fi
done > "$dir/hostfile"
wf_check ssh_c_program_4x2 c_program ssh_c_program_4x2 8 2 \
    --hostfile "$dir/hostfile"

ddp() {
    local out=$WF_LOGDIR/ssh_torch_ddp_2x2.out status
    head_run 300 -np 4 -H "host0:2,$(host_ip 1):2" \
        "$WF_PY" "$TUTORIAL" 4 --ddp > "$out" 2>&1
    status=$?
    cat "$out"
    [ $status = 0 ] && [ "$(wf_ranks_ok tutorial 4 "$out")" = 4 ] &&
        leftovers
}
if why=$(wf_torch_ready); then
    wf_check ssh_torch_ddp_2x2 ddp
else
    wf_skip ssh_torch_ddp_2x2 "$why"
fi

# Rank 3 on host1 fails while the others would run for a minute.
rank_fails() {
    local out=$WF_LOGDIR/ssh_rank_fails.out status t0=$SECONDS
    head_run 60 -np 4 -H "host0:2,$(host_ip 1):2" sh -c \
        'if [ "$RANK" = 3 ]; then sleep 1; exit 7; fi; exec sleep 60' \
        > "$out" 2>&1
    status=$?
    cat "$out"
    echo "exit status $status after $((SECONDS - t0)) s"
    [ $status = 7 ] && [ $((SECONDS - t0)) -lt 20 ] &&
        grep -q "rank 3 on host $(host_ip 1) exited with code 7" "$out" &&
        grep -q "the ranks on host $(host_ip 1) failed (code 7)" "$out" &&
        leftovers
}
wf_check ssh_rank_fails rank_fails

ctrl_c() {
    local out=$WF_LOGDIR/ssh_ctrl_c.out pid status t0
    head_run 120 -np 8 --hostfile "$dir/hostfile" sh -c 'exec sleep 60' \
        > "$out" 2>&1 &
    pid=$!
    sleep 3
    t0=$SECONDS
    # SIGINT to weftrun itself, as Ctrl-C sends it ($pid is the subshell
    # running head_run).
    pkill -INT -o -f "^$WEFTRUN --ssh-identity-file"
    wait "$pid"
    status=$?
    cat "$out"
    echo "exit status $status, $((SECONDS - t0)) s after SIGINT"
    sleep 1
    [ $status = 130 ] && [ $((SECONDS - t0)) -lt 15 ] && leftovers
}
wf_check ssh_ctrl_c ctrl_c
exit 0
