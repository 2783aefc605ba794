#!/bin/sh
# CentOS Stream 9 only: the workload and filesystem tools fslab needs (from CentOS mirrors).
# The RHEL kernel makes ext2/ext3/ext4 (one ext4 driver) and xfs; 20-probe-filesystems.sh
# records what actually works.
set -eu

dnf -y install fio xfsprogs e2fsprogs python3 time hdparm util-linux
dnf clean all
