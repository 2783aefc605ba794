#!/bin/sh
# Record every installed package and its version (name<TAB>version, sorted) in
# /var/lib/fslab/packages.tsv, for the image manifest.
set -eu

mkdir -p /var/lib/fslab
if command -v dpkg-query >/dev/null; then
	dpkg-query -W -f '${Package}\t${Version}\n' >/var/lib/fslab/packages.unsorted
else
	rpm -qa --qf '%{NAME}\t%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}\n' >/var/lib/fslab/packages.unsorted
fi
LC_ALL=C sort /var/lib/fslab/packages.unsorted >/var/lib/fslab/packages.tsv
rm /var/lib/fslab/packages.unsorted
wc -l /var/lib/fslab/packages.tsv
