#!/bin/busybox sh
# guest-init.sh - PID 1 of the rxe test guest (rxe-vm.sh builds it into the
# initramfs).  Loads the modules, mounts the host root read-only and the
# job and work folders read-write over 9p, creates rxe0 on a netdev, runs
# the job in a chroot of the host root and powers off.  Settings arrive as
# rxevm.* words on the kernel command line.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
stty -onlcr </dev/console 2>/dev/null # no \r\n on the serial console
for w in $(cat /proc/cmdline); do
    case $w in rxevm.*=*) k=${w%%=*}; eval "CFG_${k#rxevm.}=\${w#*=}" ;; esac
done
fail() { echo "rxe-vm guest: $*"; sync; poweroff -f; }
H=/host

for m in $(cat /modules/order); do
    opt=""
    [ "$m" = dummy.ko ] && opt=numdummies=0
    insmod /modules/$m $opt || fail "insmod $m failed"
done
P9="trans=virtio,version=9p2000.L,msize=262144"
mount -t 9p -o $P9,ro hostroot $H || fail "cannot mount the host root"
mount -t proc proc $H/proc
mount -t sysfs sysfs $H/sys
mount -t devtmpfs devtmpfs $H/dev
mkdir -p $H/dev/pts $H/dev/shm
mount -t devpts devpts $H/dev/pts
mount -t tmpfs tmpfs $H/dev/shm
for d in tmp var/tmp run; do mount -t tmpfs -o mode=1777 tmpfs $H/$d; done
mkdir -p $H$CFG_work $H$CFG_job 2>/dev/null
mount -t 9p -o $P9 work $H$CFG_work || fail "cannot mount $CFG_work"
mount -t 9p -o $P9 job $H$CFG_job || fail "cannot mount the job folder"

hostname rxevm
ip link set lo up
echo 0 >/proc/sys/net/ipv6/conf/all/accept_dad # GIDs never tentative
echo 0 >/proc/sys/net/ipv6/conf/default/accept_dad
if [ "$CFG_net" = link ]; then
    DEV=eth0
else
    DEV=rxenet0
    chroot $H ip link add $DEV type dummy || fail "dummy netdev"
fi
chroot $H ip link set $DEV mtu $CFG_mtu up || fail "$DEV up"
chroot $H ip addr add $CFG_ip dev $DEV || fail "address on $DEV"
chroot $H rdma link add rxe0 type rxe netdev $DEV || fail "rdma link add rxe0"
n=0
until grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null; do
    n=$((n + 1))
    [ $n -gt 100 ] && fail "rxe0 never became ACTIVE"
    sleep 0.1
done

chroot $H /bin/bash "$CFG_job/cmd.sh" </dev/null >/dev/console 2>&1
echo $? >$H$CFG_job/rc
dmesg >$H$CFG_job/dmesg
sync
poweroff -f
