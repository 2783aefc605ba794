#!/bin/sh
# Install the guest agent uploaded by Packer's file provisioner as /usr/local/bin/fslab-guest.
set -eu

python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' /tmp/fslab-guest
install -D -m 0755 /tmp/fslab-guest /usr/local/bin/fslab-guest
rm -f /tmp/fslab-guest
