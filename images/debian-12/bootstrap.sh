#!/bin/bash
# Build the root tree of an fslab Debian 12 guest from Debian's archive with mmdebstrap, plus its
# kernel and initramfs for direct kernel boot. The harness makes the tree into the base image
# (harness/ext4image.py: deterministic mkfs.ext4 -d + qcow2) that Packer boots once to provision.
#
#   bootstrap.sh [--variant DIR] OUTDIR GUEST_DIR   build into OUTDIR (must not exist yet)
#   bootstrap.sh --print-mirror                     print the Debian mirror that would be used
#
# OUTDIR receives: root/ (the tree), vmlinuz, initrd.img, kernel-version, packages.installed
# (name<TAB>version of every package, sorted) and mmdebstrap.log.
#
# --variant DIR: an image that is this one plus more (images/debian-12-zfs): DIR/packages.txt
# adds packages, and DIR/customize.sh, if present, runs as an mmdebstrap customize hook with the
# root tree as $1 (/dev, /proc and /sys are mounted there then), e.g. to build a DKMS module;
# DIR/essential.sh, if present, runs as an essential hook (root tree as $1, after the Essential
# packages, before the rest are installed), e.g. to configure how DKMS will build that module.
#
# Environment:
#   FSLAB_PACKAGE_LOCK   lock file (images/<name>/packages.lock): install exactly these versions,
#                        every package as pkg=version; a version the mirror no longer has fails
#                        the build, naming it. Unset: resolve packages.txt afresh (`fslab image lock`).
#   SOURCE_DATE_EPOCH    required with a lock: the time every maintainer script and the initramfs
#                        see; mmdebstrap then also drops its own non-reproducible files
#   FSLAB_DEBIAN_MIRROR  Debian archive URL (default: the one this host's apt uses for SUITE)
#   FSLAB_DEBIAN_SUITE   Debian suite (default: bookworm)
#   FSLAB_EXTRA_PACKAGES packages to install besides packages.txt when resolving without a lock
#                        (comma-separated): the filesystem catalog's tools (`fslab image lock`)
#
# No loop devices and no mounts of our own. Root is needed because mmdebstrap runs in root mode
# to produce a root-owned tree.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
suite=${FSLAB_DEBIAN_SUITE:-bookworm}
label=fslab-root
# Modules the initramfs must carry to find the root disk on any bus a vmconfig may pick.
required_modules="virtio_pci virtio_blk virtio_scsi sd_mod nvme virtio_console ext4"

die() {
	echo "bootstrap.sh: error: $*" >&2
	exit 1
}

# The URI apt on this host uses for $suite, from deb822 .sources and one-line .list files.
host_mirror() {
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -e "$f" ] || continue
		awk -v suite="$suite" '
			function flush() {
				if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ") && enabled != "no" && uris != "") {
					split(uris, u, " "); print u[1]; found = 1; exit
				}
				types = ""; suites = ""; uris = ""; enabled = ""
			}
			/^[ \t]*$/ { flush(); next }
			/^#/ { next }
			/^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0 }
			/^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
			/^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $0 }
			/^Enabled:/ { sub(/^Enabled:[ \t]*/, ""); enabled = tolower($0) }
			END { if (!found) flush() }
		' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -e "$f" ] || continue
		awk -v suite="$suite" '
			$1 == "deb" {
				i = 2
				if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
				if ($(i + 1) == suite) { print $i; exit }
			}
		' "$f"
	done
}

mirror() {
	if [ -n "${FSLAB_DEBIAN_MIRROR:-}" ]; then
		echo "$FSLAB_DEBIAN_MIRROR"
		return
	fi
	local m
	m=$(host_mirror | head -n 1)
	[ -n "$m" ] || die "no apt source for suite '$suite' on this host; set FSLAB_DEBIAN_MIRROR"
	echo "$m"
}

if [ "${1:-}" = "--print-mirror" ]; then
	mirror
	exit 0
fi

variant=""
if [ "${1:-}" = "--variant" ]; then
	variant=$(cd "${2:?--variant needs a directory}" && pwd)
	shift 2
fi
[ $# -eq 2 ] || die "usage: bootstrap.sh [--variant DIR] OUTDIR GUEST_DIR | bootstrap.sh --print-mirror"
out=$1
guest=$2
agent=$guest/fslab_guest.py
[ ! -e "$out" ] || die "$out already exists"
[ -f "$agent" ] || die "guest agent $agent does not exist"
[ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap root mode makes a root-owned tree); run it with sudo"
command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed (apt-get install mmdebstrap)"
umask 022

mirror_url=$(mirror)
# packages.txt lines: one package each, "#" starts a comment.
list() { sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$@"; }
if [ -n "${FSLAB_PACKAGE_LOCK:-}" ]; then
	[ -f "$FSLAB_PACKAGE_LOCK" ] || die "package lock $FSLAB_PACKAGE_LOCK does not exist"
	[ -n "${SOURCE_DATE_EPOCH:-}" ] || die "SOURCE_DATE_EPOCH must be set with a package lock"
	packages=$(list "$FSLAB_PACKAGE_LOCK" | paste -sd, -)
else
	packages=$(list "$here/packages.txt" ${variant:+"$variant/packages.txt"} | paste -sd, -)
	# The filesystems' and layouts' tools come from fslab's catalog (harness/image/fs_needs.py).
	packages=$packages${FSLAB_EXTRA_PACKAGES:+,$FSLAB_EXTRA_PACKAGES}
fi
[ -n "$packages" ] || die "no packages to install"
hooks=()
if [ -n "$variant" ] && [ -f "$variant/essential.sh" ]; then
	hooks+=(--essential-hook="\"$variant/essential.sh\" \"\$1\"")
fi
if [ -n "$variant" ] && [ -f "$variant/customize.sh" ]; then
	hooks+=(--customize-hook="\"$variant/customize.sh\" \"\$1\"")
fi

mkdir -p "$out"
work=$(mktemp -d "$out/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs=$out/root

# Files that must be in place before the kernel is installed, because the initramfs is made
# from them: fstab, the initramfs-tools settings and hook (initramfs.conf, initramfs-hook.sh: a
# small initramfs with just the root disk's drivers) and the drivers no VM needs (modprobe.conf).
printf 'LABEL=%s\t/\text4\terrors=remount-ro\t0\t1\n' "$label" >"$work/fstab"
# The initramfs hooks of mdadm, lvm2, btrfs-progs and dmsetup put md, LVM and btrfs into every
# initramfs and load them at boot (raid456 benchmarks its algorithms, btrfs scans every disk): the
# root is never on them. A local diversion moves each aside, also before its package is installed;
# mkinitramfs skips hook names with a character outside [A-Za-z0-9._-], such as "~".
diversions=""
for hook in mdadm lvm2 btrfs dmsetup; do
	diversions+="dpkg-divert --quiet --local --rename --divert /usr/share/initramfs-tools/hooks/$hook~fslab-off"
	diversions+=" --add /usr/share/initramfs-tools/hooks/$hook && "
done
diversions+="true"

echo "bootstrap: mmdebstrap $suite from $mirror_url${FSLAB_PACKAGE_LOCK:+ (locked versions)}" >&2
# shellcheck disable=SC2016 # "$1" (the chroot) is expanded by mmdebstrap's hook shell
if ! mmdebstrap --mode=root --variant=apt --components=main,contrib \
	--include="$packages" \
	--aptopt='APT::Install-Recommends "false"' \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--dpkgopt='path-include=/usr/share/locale/locale.alias' \
	--essential-hook='mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/etc/initramfs-tools/hooks" "$1/etc/modprobe.d"' \
	--essential-hook="upload $work/fstab /etc/fstab" \
	--essential-hook="upload $here/initramfs.conf /etc/initramfs-tools/conf.d/fslab.conf" \
	--essential-hook="upload $here/initramfs-hook.sh /etc/initramfs-tools/hooks/fslab" \
	--essential-hook='chmod 0755 "$1/etc/initramfs-tools/hooks/fslab"' \
	--essential-hook="upload $here/modprobe.conf /etc/modprobe.d/fslab.conf" \
	--essential-hook='mkdir -p "$1/etc/postgresql-common/createcluster.d"' \
	--essential-hook="upload $here/postgresql-createcluster.conf /etc/postgresql-common/createcluster.d/fslab.conf" \
	--essential-hook="chroot \"\$1\" sh -c '$diversions'" \
	"${hooks[@]}" \
	"$suite" "$rootfs" "$mirror_url" >"$out/mmdebstrap.log" 2>&1; then
	# apt says "E: Version 'V' for 'P' was not found" for each locked version the mirror lacks.
	grep -E "^E: Version '.*' for '.*' was not found" "$out/mmdebstrap.log" >&2 || true
	die "mmdebstrap failed; see $out/mmdebstrap.log"
fi
# shellcheck disable=SC2016 # dpkg-query's own ${field} syntax
chroot "$rootfs" dpkg-query -W -f '${Package}\t${Version}\n' | LC_ALL=C sort >"$out/packages.installed"

echo "bootstrap: customize" >&2
echo fslab >"$rootfs/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tfslab\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$rootfs/etc/hosts"
# Only lo here; cloud-init's fallback DHCP (build boot only) drops its file into interfaces.d.
printf 'source /etc/network/interfaces.d/*\n\nauto lo\niface lo inet loopback\n' \
	>"$rootfs/etc/network/interfaces"
mkdir -p "$rootfs/etc/cloud/cloud.cfg.d"
cat >"$rootfs/etc/cloud/cloud.cfg.d/90-fslab.cfg" <<'EOF'
#cloud-config
# fslab: the only config source is the NoCloud seed (a "cidata" ISO) the harness attaches.
datasource_list: [NoCloud, None]
# No default user ("debian"): the build logs in as root with a key from its seed. A list (a dict
# is deprecated since cloud-init 22.2, and trixie's 25.1 says so).
users: []
# Only the modules fslab seeds use; the rest (locale, apt, grub, ntp, ...) would only slow a
# TCG boot down or fail without network. packer/scripts/10-cloud-init.sh trims these further
# for run time.
cloud_init_modules: [seed_random, bootcmd, write-files, set_hostname, update_hostname, update_etc_hosts, ssh]
cloud_config_modules: [runcmd]
cloud_final_modules: [write-files-deferred, scripts-per-once, scripts-per-boot, scripts-per-instance, scripts-user, final-message, power-state-change]
EOF
# A getty on the serial console (the one console fslab VMs have).
ln -sf /lib/systemd/system/serial-getty@.service \
	"$rootfs/etc/systemd/system/getty.target.wants/serial-getty@ttyS0.service"
# ssl-cert's postinst made a snakeoil key and certificate (random, named for the build host):
# nothing in the guest uses TLS, and they would make every build differ.
for f in "$rootfs"/etc/ssl/certs/*; do
	if [ -L "$f" ] && [ "$(readlink "$f")" = ssl-cert-snakeoil.pem ]; then rm -f "$f"; fi
done
rm -f "$rootfs/etc/ssl/certs/ssl-cert-snakeoil.pem" "$rootfs/etc/ssl/private/ssl-cert-snakeoil.key"
# No PostgreSQL cluster (postgresql-createcluster.conf): suite pgbench makes its own.
[ ! -e "$rootfs/var/lib/postgresql/15/main" ] || die "postgresql-15 made a cluster despite create_main_cluster = off"
# The host's resolv.conf was copied in for apt; the guest has no network at run time.
rm -f "$rootfs/etc/resolv.conf"
# The same sources whatever mirror the packages came from (a lock pins the versions, the mirror
# is only transport), so the image does not depend on it.
printf 'deb http://deb.debian.org/debian %s main contrib\n' "$suite" >"$rootfs/etc/apt/sources.list"
# The guest programs: harness/guest/fslab_NAME.py -> /usr/local/bin/fslab-NAME (the agent is
# fslab-guest), and each fslab_NAME.c compiled in the image with its own gcc -> fslab-NAME.
for prog in "$guest"/fslab_*.py; do
	name=$(basename "$prog" .py)
	install -D -m 0755 "$prog" "$rootfs/usr/local/bin/${name//_/-}"
done
# The package they share, harness/guest/fslabguest (its .py files), goes where the guest's python3
# looks for locally installed modules (Debian 12: /usr/local/lib/python3.11/dist-packages; not
# /usr/local/lib/python3/dist-packages, which is on no sys.path there): the programs import it
# with no sys.path line of their own, and `python3 -c 'import fslabguest'` works in the guest.
site=$(chroot "$rootfs" python3 -c 'import site; print(site.getsitepackages()[0])')
[ -d "$guest/fslabguest" ] || die "guest package $guest/fslabguest does not exist"
(cd "$guest" && find fslabguest -name '*.py' -exec install -D -m 0644 '{}' "$rootfs$site/{}" ';')
for src in "$guest"/fslab_*.c; do
	[ -e "$src" ] || continue
	name=$(basename "$src" .c)
	install -D -m 0644 "$src" "$rootfs/usr/local/src/fslab/$name.c"
	chroot "$rootfs" gcc -std=c99 -Wall -Wextra -Werror -O2 -o "/usr/local/bin/${name//_/-}" \
		"/usr/local/src/fslab/$name.c"
done
# Suite kernel-tree copies a Linux source tree: Debian's linux-source package, unpacked once here
# at a fixed path so that every guest copies the identical tree.
src_tar=("$rootfs"/usr/src/linux-source-*.tar.xz)
[ -f "${src_tar[0]}" ] || die "linux-source tarball missing in /usr/src"
mkdir -p "$rootfs/usr/src/fslab"
tar -xJf "${src_tar[0]}" -C "$rootfs/usr/src/fslab"
mv "$rootfs"/usr/src/fslab/linux-source-* "$rootfs/usr/src/fslab/linux"
rm -f "${src_tar[0]}"
# Its smoke profile's tree (a subset, tinyconfig, `make prepare`), made here natively once rather
# than in every TCG boot (minutes there); the metrics and .config it prints go to the build log.
chroot "$rootfs" /usr/local/bin/fslab-kernel-tree smoke /usr/src/fslab/linux --jobs "$(nproc)" >&2 ||
	die "fslab-kernel-tree smoke failed in the root tree"
mkdir -p "$rootfs/var/lib/fslab"

echo "bootstrap: kernel and initramfs" >&2
kernels=("$rootfs"/boot/vmlinuz-*)
if [ ${#kernels[@]} -ne 1 ] || [ ! -f "${kernels[0]}" ]; then
	die "expected exactly one kernel in /boot, found: ${kernels[*]}"
fi
kver=${kernels[0]##*/vmlinuz-}
initrd=$rootfs/boot/initrd.img-$kver
[ -f "$initrd" ] || die "no initramfs $initrd"
# Check the root disk drivers are in the initramfs (or built into the kernel), and that md, LVM
# and btrfs are not (the diversions above took effect).
listing=$(chroot "$rootfs" lsinitramfs "/boot/initrd.img-$kver")
for mod in $required_modules; do
	file=$(chroot "$rootfs" modinfo -k "$kver" -n "$mod") || die "kernel $kver has no module $mod"
	[ "$file" = "(builtin)" ] && continue
	grep -q "/${mod//_/[_-]}\.ko" <<<"$listing" || die "initramfs of $kver lacks $mod"
done
grep -q 'sbin/fsck\.ext4$' <<<"$listing" || die "initramfs of $kver lacks fsck.ext4"
grep -q 'modprobe.d/fslab.conf$' <<<"$listing" || die "initramfs of $kver lacks /etc/modprobe.d/fslab.conf"
for mod in raid456 dm-mod btrfs; do
	! grep -q "/$mod\.ko" <<<"$listing" || die "initramfs of $kver has $mod: an initramfs hook was not diverted"
done
cp "${kernels[0]}" "$out/vmlinuz"
cp "$initrd" "$out/initrd.img"
chmod 0644 "$out/vmlinuz" "$out/initrd.img"
echo "$kver" >"$out/kernel-version"
echo "bootstrap: done: $out (kernel $kver)" >&2
