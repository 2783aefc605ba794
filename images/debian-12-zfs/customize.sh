#!/bin/sh
# mmdebstrap customize hook of debian-12-zfs (bootstrap.sh --variant): make sure the ZFS module is
# built for the image kernel, natively in the chroot (zfs-dkms's postinst may already have done it
# for the newest kernel with headers; then this is quick), and leave nothing behind that would
# differ from one build to the next.
#
#   customize.sh ROOT      (mmdebstrap mounts /dev, /proc and /sys in ROOT for its hooks)
set -eu

root=$1
die() {
	echo "customize.sh: error: $*" >&2
	exit 1
}

set -- "$root"/boot/vmlinuz-*
if [ $# -ne 1 ] || [ ! -f "$1" ]; then
	die "expected exactly one kernel in $root/boot, found: $*"
fi
kver=${1##*/vmlinuz-}
[ -d "$root/usr/src/linux-headers-$kver" ] || die "linux-headers-$kver is not installed"

echo "customize.sh: dkms autoinstall -k $kver (natively, in the chroot)" >&2
chroot "$root" dkms autoinstall -k "$kver"
chroot "$root" dkms status -k "$kver" >&2
chroot "$root" modinfo -k "$kver" -F version zfs >/dev/null || die "no zfs module for kernel $kver"
chroot "$root" modinfo -k "$kver" -F version spl >/dev/null || die "no spl module for kernel $kver"
chroot "$root" depmod "$kver"
