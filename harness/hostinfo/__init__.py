"""Facts about the machine fslab runs on, needed by images and VMs alike: which accelerator really
runs a guest (accel.py) and the host's provenance (kernel, CPU, tool versions, git revision)."""
