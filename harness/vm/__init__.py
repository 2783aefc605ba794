"""Running VMs: the QEMU argv and libvirt XML, disks, the seed, the accelerator probe, the machine, the
runner and its backends, several hosts, several boots, live progress, provenance, reproduce."""
