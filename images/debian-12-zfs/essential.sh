#!/bin/sh
# mmdebstrap essential hook of debian-12-zfs (bootstrap.sh --variant): runs before dkms and
# zfs-dkms are installed, whose postinst builds the module, so that the build it starts is already
# one that gives the same bytes every time.
#
# DKMS signs the modules it builds: with no key configured it makes one
# (`openssl req -newkey rsa:2048` -> /var/lib/dkms/mok.key and mok.pub), a new random key in every
# build, and appends a signature made with it to every .ko. Two builds then differ in the key, its
# certificate and every ZFS module (found by `fslab image build debian-12-zfs --check-reproducible`).
# The signature buys nothing here: the guest kernel boots without Secure Boot, so it enforces no
# signature, and a module signed with a key it does not trust taints it just as an unsigned one
# does ("module verification failed"). So no signing: dkms 3.0 signs only when `sign_file` is an
# executable file, and says "modules won't be signed" when it is not. (A fixed key would make the
# bytes equal too, but would put a private key into the repository and every image.)
#
#   essential.sh ROOT
set -eu

root=$1
mkdir -p "$root/etc/dkms/framework.conf.d"
cat >"$root/etc/dkms/framework.conf.d/fslab.conf" <<'CONF'
# fslab (images/debian-12-zfs/essential.sh): no module signing, so no random key is made and
# every build gives the same module bytes. The guest enforces no module signatures.
sign_file=/nonexistent/fslab-modules-are-not-signed
CONF
