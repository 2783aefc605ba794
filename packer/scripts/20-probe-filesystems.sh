#!/bin/sh
# Prove which filesystems this image can make: for each, mkfs a sparse scratch file attached to
# a loop device, mount it, unmount it; for ZFS (images with zfsutils-linux), create a pool on a
# file vdev, unmount and mount its dataset, destroy it. The list that worked goes to
# /var/lib/fslab/filesystems.json (the image manifest's "filesystems"). A filesystem that fails
# is logged to /var/lib/fslab/probe.log and left out; that is not an error of the build.
set -eu

out=/var/lib/fslab
log=$out/probe.log
# 512 MiB: above every minimum (xfs 300 MiB, nilfs2 128 MiB, btrfs 114 MiB). The scratch
# files live on a tmpfs so the image's qcow2 does not keep the blocks mkfs wrote.
size=512M
scratch=/var/tmp/fslab-probe

mkdir -p "$out" "$scratch"
mount -t tmpfs -o size=1g fslab-probe "$scratch"
mkdir "$scratch/mnt"
: >"$log"

# mkfs $1 on device $2, non-interactive.
run_mkfs() {
	case $1 in
	ext2 | ext3 | ext4) "mkfs.$1" -F -q "$2" ;;
	xfs | btrfs | f2fs | nilfs2) "mkfs.$1" -f -q "$2" ;;
	jfs) mkfs.jfs -q "$2" ;;
	reiserfs) mkfs.reiserfs -q -f "$2" ;;
	esac
}

# Exit status 0 when $1 could be made and mounted; everything it says goes to the log.
probe() {
	img=$scratch/$1.img
	truncate -s "$size" "$img" || return 1
	dev=$(losetup --find --show "$img") || return 1
	rc=0
	if ! run_mkfs "$1" "$dev"; then
		echo "$1: mkfs failed" && rc=1
	elif ! mount -t "$1" "$dev" "$scratch/mnt"; then
		echo "$1: mount failed" && rc=1
	else
		grep " $scratch/mnt " /proc/mounts
		umount "$scratch/mnt" || rc=1
	fi
	[ $rc -eq 0 ] || dmesg | tail -n 5
	losetup -d "$dev"
	rm -f "$img"
	return $rc
}

# ZFS has no mkfs: the pool is the filesystem. Its module is loaded by zpool itself. The pool is
# destroyed at the end whatever happened, so no zpool.cache entry outlives the probe.
probe_zfs() {
	img=$scratch/zfs.img
	truncate -s "$size" "$img" || return 1
	rc=0
	if ! zpool create -f -O mountpoint="$scratch/mnt" fslab-probe "$img"; then
		echo "zfs: zpool create failed" && rc=1
	elif ! zfs umount fslab-probe || ! zfs mount fslab-probe; then
		echo "zfs: zfs umount/mount failed" && rc=1
	elif ! grep " $scratch/mnt zfs " /proc/mounts; then
		echo "zfs: the dataset is not mounted" && rc=1
	fi
	zpool list -H fslab-probe >/dev/null 2>&1 && { zpool destroy -f fslab-probe || rc=1; }
	[ $rc -eq 0 ] || dmesg | tail -n 5
	rm -f "$img"
	return $rc
}

ok=""
for fs in btrfs ext2 ext3 ext4 f2fs jfs nilfs2 reiserfs xfs zfs; do
	tool=mkfs.$fs
	[ "$fs" != zfs ] || tool=zpool
	if ! command -v "$tool" >/dev/null; then
		echo "$fs: left out: $tool is not installed" >>"$log"
	elif [ "$fs" = zfs ] && probe_zfs >>"$log" 2>&1; then
		echo "$fs: ok" >>"$log"
		ok="$ok $fs"
	elif [ "$fs" != zfs ] && probe "$fs" >>"$log" 2>&1; then
		echo "$fs: ok" >>"$log"
		ok="$ok $fs"
	else
		echo "$fs: left out: see above" >>"$log"
	fi
done
umount "$scratch"
rmdir "$scratch"

json="["
sep=""
for fs in $ok; do
	json="$json$sep\"$fs\""
	sep=", "
done
echo "$json]" >"$out/filesystems.json"
cat "$log" "$out/filesystems.json"
