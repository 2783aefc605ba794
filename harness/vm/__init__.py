"""One VM: the QEMU argv and libvirt XML from one disk rendering, disks, the seed, the QEMU process,
the backends behind one Protocol, libvirt hosts, the console watch and live progress."""
