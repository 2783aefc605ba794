#!/bin/sh
# Install the guest agent and the package the guest programs share, uploaded by Packer's file
# provisioners: /tmp/fslab-guest -> /usr/local/bin/fslab-guest, /tmp/fslabguest -> the first
# site directory of python3 (Debian 12: /usr/local/lib/python3.11/dist-packages), where it finds
# them with no sys.path line. The Debian image has both from bootstrap.sh already (the same files
# again); a CentOS image gets them only here.
set -eu

python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' /tmp/fslab-guest
install -D -m 0755 /tmp/fslab-guest /usr/local/bin/fslab-guest
rm -f /tmp/fslab-guest
site=$(python3 -c 'import site; print(site.getsitepackages()[0])')
rm -rf "$site/fslabguest"
(cd /tmp && find fslabguest -name '*.py' -exec install -D -m 0644 '{}' "$site/{}" ';')
rm -rf /tmp/fslabguest
# -B: no bytecode written into the image
python3 -B -c 'import fslabguest.stream, fslabguest.powerloss.check, fslabguest.powerloss.report'
