#!/usr/bin/env python3
"""Writes the hwloc XML topologies the topology tests load (test_topo.c).
Run from this directory; check each with `lstopo-no-graphics --input F`.

  two-socket-4gpu-2nic.xml  2 packages, 4 cores each; per package two PCIe
                            switches: GPU + NIC behind one, GPU alone behind
                            the other (mlx5_0/ib0 on 0, mlx5_1/ib1 on 1)
  one-socket-1nic.xml       1 package, 4 cores, one Ethernet NIC (eth0)
  gpu-far-from-nic.xml      2 packages; the GPU on package 0, the only NIC
                            (eth0) on package 1
  one-socket-2eth.xml       1 package, 4 cores, two Ethernet NICs (eth0,
                            eth1) on one host bridge: equally near, so the
                            netns tests (test/fault/netns-topo.sh) see the
                            topology choose both
"""
gp = [100]


def nid():
    gp[0] += 1
    return gp[0]


def mask(bits):
    v = 0
    for b in bits:
        v |= 1 << b
    return "0x%08x" % v


def sets(cpus, nodes):
    c, n = mask(cpus), mask(nodes)
    return ('cpuset="%s" complete_cpuset="%s" nodeset="%s" '
            'complete_nodeset="%s"' % (c, c, n, n))


def pcidev(bus, cls, vendor, osdevs, ind):
    s = ('%s<object type="PCIDev" gp_index="%d" pci_busid="0000:%s" '
         'pci_type="%s [%s:0001] [%s:0001] 00" pci_link_speed="0.000000">\n'
         % (ind, nid(), bus, cls, vendor, vendor))
    for name, ot, sub in osdevs:
        s += ('%s  <object type="OSDev" gp_index="%d" name="%s" '
              'osdev_type="%d"%s/>\n'
              % (ind, nid(), name, ot, ' subtype="%s"' % sub if sub else ''))
    return s + ind + "</object>\n"


def switch(bus, lo, hi, devs, ind):
    s = ('%s<object type="Bridge" gp_index="%d" bridge_type="1-1" depth="1" '
         'bridge_pci="0000:[%02x-%02x]" pci_busid="0000:%s" '
         'pci_type="0604 [10b5:8747] [0000:0000] 00" '
         'pci_link_speed="0.000000">\n' % (ind, nid(), lo, hi, bus))
    for d in devs:
        s += pcidev(*d, ind + "  ")
    return s + ind + "</object>\n"


def hostbridge(lo, hi, children, ind):
    s = ('%s<object type="Bridge" gp_index="%d" bridge_type="0-1" depth="0" '
         'bridge_pci="0000:[%02x-%02x]">\n' % (ind, nid(), lo, hi))
    return s + "".join(children) + ind + "</object>\n"


GPU = ("0302", "10de")
NIC_IB = ("0207", "15b3")
NIC_ETH = ("0200", "8086")


def gpu(bus, n):
    return (bus, GPU[0], GPU[1], [("cuda%d" % n, 5, "CUDA")])


def ib(bus, n):
    return (bus, NIC_IB[0], NIC_IB[1],
            [("ib%d" % n, 2, None), ("mlx5_%d" % n, 3, None)])


def eth(bus, name):
    return (bus, NIC_ETH[0], NIC_ETH[1], [(name, 2, None)])


def package(p, ncores, io):
    cpus = list(range(p * ncores, (p + 1) * ncores))
    ind = "    "
    s = ('%s<object type="Package" os_index="%d" %s gp_index="%d">\n'
         % (ind, p, sets(cpus, [p]), nid()))
    s += ('%s  <object type="NUMANode" os_index="%d" %s gp_index="%d" '
          'local_memory="17179869184"/>\n' % (ind, p, sets(cpus, [p]), nid()))
    for c in cpus:
        s += ('%s  <object type="Core" os_index="%d" %s gp_index="%d">\n'
              '%s    <object type="PU" os_index="%d" %s gp_index="%d"/>\n'
              '%s  </object>\n' % (ind, c, sets([c], [p]), nid(), ind, c,
                                   sets([c], [p]), nid(), ind))
    return s + "".join(io) + ind + "</object>\n"


def machine(npk, ncores, ios):
    cpus = list(range(npk * ncores))
    s = ('<?xml version="1.0" encoding="UTF-8"?>\n'
         '<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n<topology version="2.0">\n'
         '  <object type="Machine" os_index="0" %s gp_index="1">\n'
         % sets(cpus, range(npk)))
    for p in range(npk):
        s += package(p, ncores, ios[p])
    return s + "  </object>\n</topology>\n"


I = "      "
two = machine(2, 4, [
    [hostbridge(0x10, 0x2f, [
        switch("10:00.0", 0x11, 0x1f, [gpu("11:00.0", 0), ib("12:00.0", 0)],
               I + "  "),
        switch("20:00.0", 0x21, 0x2f, [gpu("21:00.0", 1)], I + "  ")], I)],
    [hostbridge(0x80, 0x9f, [
        switch("80:00.0", 0x81, 0x8f, [gpu("81:00.0", 2), ib("82:00.0", 1)],
               I + "  "),
        switch("90:00.0", 0x91, 0x9f, [gpu("91:00.0", 3)], I + "  ")], I)]])
one = machine(1, 4, [[hostbridge(0, 0x0f, [
    pcidev(*eth("03:00.0", "eth0"), I + "  ")], I)]])
far = machine(2, 4, [
    [hostbridge(0x10, 0x1f, [switch("10:00.0", 0x11, 0x1f,
                                    [gpu("11:00.0", 0)], I + "  ")], I)],
    [hostbridge(0x80, 0x8f, [pcidev(*eth("81:00.0", "eth0"), I + "  ")],
                I)]])
twoeth = machine(1, 4, [[hostbridge(0, 0x0f, [
    pcidev(*eth("03:00.0", "eth0"), I + "  "),
    pcidev(*eth("04:00.0", "eth1"), I + "  ")], I)]])
for name, text in [("two-socket-4gpu-2nic.xml", two),
                   ("one-socket-1nic.xml", one),
                   ("gpu-far-from-nic.xml", far),
                   ("one-socket-2eth.xml", twoeth)]:
    with open(name, "w") as f:
        f.write(text)
