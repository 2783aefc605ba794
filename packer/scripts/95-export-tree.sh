#!/bin/sh
# The last provisioning step: hand the host what this boot changed, so that it can make the final
# image itself, deterministically, from its own copy of the tree (harness/image/tree.py). The
# disk Packer leaves behind is not the image: it carries the build boot's traces.
#
#   /run/fslab-export/paths.gz      every path of the root filesystem, NUL-separated (gzip -n)
#   /run/fslab-export/changed.tar   every path whose ctime is after SOURCE_DATE_EPOCH: the base
#                                   image was made with all ctimes at that epoch, so this is
#                                   exactly what the boot and the provisioning scripts wrote
#
# /run is a tmpfs, so none of this lands in the root filesystem.
set -eu

: "${SOURCE_DATE_EPOCH:?the template passes the epoch of the base image}"
out=/run/fslab-export
mkdir -p "$out/root"
# A bind mount of / alone shows the root filesystem as it is, also under /dev, /run and /tmp,
# where other filesystems are mounted in the running system.
mount --bind / "$out/root"
cd "$out/root"
# What is under /tmp and /var/tmp is left out: the host drops it anyway (tree.py's VOLATILE), and a
# service's private directory there can vanish between find and tar (logind's, on a build at load
# 30: tar "Cannot stat", exit 2).
find . -xdev \( -path ./tmp/\* -o -path ./var/tmp/\* \) -prune -o -print0 | gzip -n >"$out/paths.gz"
find . -xdev \( -path ./tmp/\* -o -path ./var/tmp/\* \) -prune -o -newerct "@$SOURCE_DATE_EPOCH" -print0 \
	>"$out/changed.list"
# GNU tar: --no-recursion and --null are positional, so they come before --files-from.
tar --create --file "$out/changed.tar" --numeric-owner --xattrs --xattrs-include='*' \
	--no-recursion --null --files-from "$out/changed.list"
cd /
umount "$out/root"
rmdir "$out/root"
tr '\0' '\n' <"$out/changed.list"
echo "export: $(tr -cd '\0' <"$out/changed.list" | wc -c) changed paths"
