#!/bin/sh
# fslab initramfs hook (installed by bootstrap.sh as /etc/initramfs-tools/hooks/fslab): with
# MODULES=list, the drivers of the root disk on every bus a vmconfig may use, and ext4. udev loads
# them in the initramfs as the devices appear. virtio_console too, so that the agent's
# virtio-serial ports (/dev/virtio-ports/org.fslab.*) exist as soon as the root is mounted.
PREREQ=""
prereqs() { echo "$PREREQ"; }
case "$1" in
prereqs)
	prereqs
	exit 0
	;;
esac
# shellcheck source=/dev/null # initramfs-tools, in the image
. /usr/share/initramfs-tools/hook-functions
manual_add_modules virtio_pci virtio_blk virtio_scsi sd_mod nvme virtio_console ext4
