#!/bin/sh
# mmdebstrap customize hook of debian-12-zfs (bootstrap.sh --variant): make sure the ZFS module is
# built for the image kernel, natively in the chroot (zfs-dkms's postinst may already have done it
# for the newest kernel with headers; then this is quick), unsigned (essential.sh), and leave
# nothing behind that would differ from one build to the next.
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
# essential.sh turned DKMS's module signing off (it would sign with a new random key every build):
# stop if it ever signs again, rather than give an image whose bytes differ each time.
[ ! -e "$root/var/lib/dkms/mok.key" ] || die "dkms made a signing key (/var/lib/dkms/mok.key): signing is not off"
signer=$(chroot "$root" modinfo -k "$kver" -F signer zfs)
[ -z "$signer" ] || die "the zfs module is signed (by '$signer'): dkms module signing is not off (essential.sh)"
chroot "$root" depmod "$kver"
