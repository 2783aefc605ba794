#!/bin/sh
# Prove which filesystems this image can make: the guest agent makes and mounts each filesystem
# of fslab's catalog (/tmp/fslab-catalog.json, uploaded by Packer; harness/image/fs_needs.py) on a
# loop device, exactly as a run would (the same mkfs, setup and teardown; ZFS as a one-disk pool).
# The list that worked goes to /var/lib/fslab/filesystems.json (the image manifest's
# "filesystems"), what each said to /var/lib/fslab/probe.log. A filesystem that fails is left out
# (and its kernel messages logged); that is not an error of the build.
set -eu

fslab-guest probe /tmp/fslab-catalog.json --out /var/lib/fslab
rm -f /tmp/fslab-catalog.json
