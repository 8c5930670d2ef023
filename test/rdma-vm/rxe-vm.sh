#!/usr/bin/env bash
# rxe-vm.sh - runs a command inside a throw-away QEMU guest that has a real
# kernel RDMA stack: Debian's stock kernel with Soft-RoCE (rdma_rxe) and a
# device rxe0 ACTIVE on port 1.
#
#   test/rdma-vm/rxe-vm.sh [options] [--] COMMAND [ARGS...]
#
# The guest mounts the host's root filesystem read-only over virtio-9p and
# chroots into it, so binaries built on the host run there unchanged; the
# current directory is shared read-write (results land in the work tree).
# Exit status: COMMAND's, 124 on timeout, 125 when the guest could not run
# it.  Options:
#   --cpus N --mem MIB    guest size (default 2 CPUs, 3072 MiB)
#   --timeout SEC         hard limit for the whole boot (default 1500)
#   --ip ADDR/PFX         address of the netdev under rxe0 (10.77.0.1/24)
#   --mtu N               its MTU (1500: RoCE MTU 1024; 9000: 4096)
#   --link LPORT:RPORT    an e1000 NIC whose frames travel as UDP between
#                         127.0.0.1:LPORT and :RPORT (two guests, one wire);
#                         without it rxe0 sits on a guest-local dummy netdev
#   --prepare             install packages, fetch the kernel, build the
#                         initramfs, then exit
# Environment: RXE_VM_CACHE (default build/rdma-vm), RXE_VM_KERNEL_PKG.
#
# Why this shape (docs/transports.md has the long version): TCG, not KVM
# (on nested-virtualisation hosts KVM guests run ~1000x slower); the
# generic linux-image-*-amd64 flavour (the -cloud one lacks rdma_rxe and
# 9p); crc32_generic loaded by hand (rdma_rxe needs it without declaring
# it); e1000 for two guests (virtio-net TX queues stalled under TCG).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${RXE_VM_CACHE:-$(pwd)/build/rdma-vm}
HOST_PKGS=(qemu-system-x86 busybox-static kmod iproute2 libibverbs1
           ibverbs-providers ibverbs-utils perftest)
# Modules the guest loads; modprobe adds their dependencies in order.
MODULES=(virtio_pci 9pnet_virtio 9p crc32_generic rdma_rxe dummy e1000 veth bridge
    sch_netem)

CPUS=2 MEM=3072 TIMEOUT=1500 IP=10.77.0.1/24 MTU=1500 LINK="" PREPARE=0
die() { echo "rxe-vm: $*" >&2; exit 125; }
while [[ $# -gt 0 ]]; do
    case $1 in
    --cpus) CPUS=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --ip) IP=$2; shift 2 ;;
    --mtu) MTU=$2; shift 2 ;;
    --link) LINK=$2; shift 2 ;;
    --prepare) PREPARE=1; shift ;;
    --) shift; break ;;
    -*) die "unknown option $1" ;;
    *) break ;;
    esac
done
[[ $PREPARE == 1 || $# -gt 0 ]] || die "usage: rxe-vm.sh [options] COMMAND..."
[[ $(id -u) == 0 ]] || die "needs root (9p passthrough of /, apt-get)"

apt_quiet() {
    DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=600 \
        -o APT::Sandbox::User=root "$@" >/dev/null
}

ensure_host_packages() {
    local missing=() p
    for p in "${HOST_PKGS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
            missing+=("$p")
    done
    [[ ${#missing[@]} == 0 ]] && return 0
    echo "rxe-vm: installing ${missing[*]}" >&2
    apt_quiet update
    apt_quiet install --no-install-recommends "${missing[@]}"
}

# vmlinuz and the needed modules (in load order) of the stock kernel.
ensure_kernel() {
    local k=$CACHE/kernel want="${MODULES[*]}"
    [[ -f $k/vmlinuz && "$(cat "$k/modules.list" 2>/dev/null)" == "$want" ]] &&
        return 0
    local deb pkg root kver
    mkdir -p "$CACHE/debs"
    deb=$(ls "$CACHE"/debs/linux-image-*.deb 2>/dev/null | head -1 || true)
    if [[ -z $deb ]]; then
        apt_quiet update
        pkg=${RXE_VM_KERNEL_PKG:-$(apt-cache depends linux-image-amd64 |
            awk '/Depends: linux-image-[0-9]/ {print $2; exit}')}
        [[ -n $pkg ]] || die "cannot tell which kernel linux-image-amd64 wants"
        echo "rxe-vm: fetching guest kernel $pkg" >&2
        (cd "$CACHE/debs" && apt-get download -q -o APT::Sandbox::User=root \
            "$pkg" >/dev/null) || die "apt-get download $pkg failed"
        deb=$(ls "$CACHE"/debs/linux-image-*.deb | head -1)
    fi
    root=$(mktemp -d "$CACHE/unpack.XXXXXX")
    dpkg-deb -x "$deb" "$root"
    kver=$(ls "$root/lib/modules")
    depmod -b "$root" "$kver"
    rm -rf "$k.new" && mkdir -p "$k.new/modules"
    for m in "${MODULES[@]}"; do
        modprobe -d "$root" -S "$kver" --show-depends "$m"
    done | awk '$1 == "insmod" && !seen[$2]++ {print $2}' | while read -r ko; do
        cp "$ko" "$k.new/modules/" && basename "$ko" >>"$k.new/modules/order"
    done
    cp "$root/boot/vmlinuz-$kver" "$k.new/vmlinuz"
    echo "$want" >"$k.new/modules.list"
    rm -rf "$root" "$k" && mv "$k.new" "$k"
}

ensure_initrd() {
    local img=$CACHE/initrd.img d
    [[ -f $img && $img -nt $HERE/guest-init.sh && $img -nt $CACHE/kernel/vmlinuz ]] &&
        return 0
    d=$(mktemp -d "$CACHE/initrd.XXXXXX")
    mkdir -p "$d"/{bin,proc,sys,dev,host,modules}
    cp /bin/busybox "$d/bin/"
    cp "$CACHE"/kernel/modules/* "$d/modules/"
    cp "$HERE/guest-init.sh" "$d/init" && chmod 755 "$d/init"
    (cd "$d" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 >"$img.new"
    mv "$img.new" "$img" && rm -rf "$d"
}

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock" # two guests share one cache
flock 9
ensure_host_packages
ensure_kernel
ensure_initrd
flock -u 9
[[ $PREPARE == 1 ]] && exit 0

# The job: environment, working directory and command as a script the
# guest runs; its exit status comes back through the job folder.
JOB=$(mktemp -d "$CACHE/job.XXXXXX")
trap 'rm -rf "$JOB"' EXIT
for p in "$JOB" "$PWD"; do
    [[ $p =~ ^/[^[:space:],]+$ && $p != / ]] || die "cannot share '$p' (spaces, commas or /)"
done
{
    export -p | grep -vE '^declare -x (PWD|OLDPWD|SHLVL|_|HOSTNAME)='
    printf 'cd -- %q || exit 126\n' "$PWD"
    echo 'ulimit -l unlimited'
    printf 'exec'; printf ' %q' "$@"; echo
} >"$JOB/cmd.sh"

FS=local,security_model=passthrough,multidevs=remap
QEMU=(qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot
      -accel tcg,thread=multi -cpu max -smp "$CPUS" -m "$MEM" -serial stdio
      -kernel "$CACHE/kernel/vmlinuz" -initrd "$CACHE/initrd.img"
      -virtfs "$FS,path=/,mount_tag=hostroot,readonly=on"
      -virtfs "$FS,path=$JOB,mount_tag=job"
      -virtfs "$FS,path=$PWD,mount_tag=work")
NET=dummy
if [[ -n $LINK ]]; then
    NET=link
    lp=${LINK%:*} rp=${LINK#*:}
    # A distinct MAC per guest, or both get the same link-local GID.
    mac=$(printf '52:54:00:77:%02x:%02x' $((lp >> 8 & 255)) $((lp & 255)))
    QEMU+=(-netdev "socket,id=n0,udp=127.0.0.1:$rp,localaddr=127.0.0.1:$lp"
           -device "e1000,netdev=n0,mac=$mac,romfile=")
fi
APPEND="console=ttyS0 panic=-1 quiet rxevm.job=$JOB rxevm.work=$PWD"
APPEND+=" rxevm.net=$NET rxevm.ip=$IP rxevm.mtu=$MTU"
set +e
timeout --kill-after=10 "$TIMEOUT" "${QEMU[@]}" -append "$APPEND" </dev/null |
    sed -u '/reboot: Power down/d'
qrc=${PIPESTATUS[0]}
set -e
if [[ -f $JOB/rc ]]; then
    exit "$(cat "$JOB/rc")"
elif [[ $qrc == 124 || $qrc == 137 ]]; then
    echo "rxe-vm: guest timed out after ${TIMEOUT}s" >&2
    exit 124
fi
echo "rxe-vm: the guest ended without running the command (qemu status $qrc)" >&2
exit 125
