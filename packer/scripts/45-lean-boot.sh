#!/bin/sh
# A lean run-time boot: only what brings up the root, udev, the journal and cloud-init-local (which
# starts the agent, see 10-cloud-init.sh). Under TCG every unit and generator started at boot
# costs CPU time the agent's start waits for, and anything still running could disturb a case.
# Everything here takes effect from the next boot on: the build boot (SSH, DHCP, a seed CD on the
# q35 machine's AHCI controller) is not affected.
set -eu

# systemctl on the unit files alone (--root=/): no call to the running manager, which under a
# loaded emulated build boot can time out (its bus calls have a 25 s limit; seen at host load 20+).
offline() { systemctl --root=/ "$@"; }

# Mask each unit of the list that this image has (units of packages it does not have are skipped).
mask_present() {
	for unit in "$@"; do
		if offline list-unit-files "$unit" | grep -q "^$unit"; then
			offline mask "$unit"
		fi
	done
}

# No logins: no gettys, no logind, no D-Bus (systemctl poweroff talks to systemd directly).
mask_present getty@.service serial-getty@.service systemd-logind.service dbus.service dbus.socket \
	systemd-update-utmp.service systemd-update-utmp-runlevel.service
# No network: the VM has no NIC.
mask_present networking.service ifupdown-pre.service cloud-init-hotplugd.socket
# Filesystems and helpers no run uses: binfmt_misc, debugfs, tracefs, hugetlbfs, mqueue, fusectl,
# configfs; e2scrub_reap (LVM snapshots of an e2scrub that never ran); sysusers (the users exist).
mask_present systemd-binfmt.service proc-sys-fs-binfmt_misc.automount sys-kernel-debug.mount \
	sys-kernel-tracing.mount dev-hugepages.mount dev-mqueue.mount sys-fs-fuse-connections.mount \
	sys-kernel-config.mount e2scrub_reap.service systemd-sysusers.service
# LVM monitoring of volumes found at boot (there are none: every disk is new); lvcreate still
# reaches dmeventd through its socket.
mask_present lvm2-monitor.service
# OpenZFS (debian-12-zfs): the agent creates and destroys its pools itself; nothing is imported,
# mounted or shared at boot, and no event daemon runs. Not even the module is loaded at boot
# (zfs-load-module waits for udev to settle, then loads it while the agent starts): zpool loads
# it when the agent first runs it.
mask_present zfs-load-module.service zfs-import-cache.service zfs-import-scan.service \
	zfs-mount.service zfs-share.service zfs-zed.service zfs-volume-wait.service

# Generators run before any unit starts: the boot waits for the slowest. Masked: those
# whose units no run uses (gettys, GPT auto-mounts, hibernation, SysV scripts (every one here has a
# native unit), rc.local, offline updates, dm-crypt/integrity/verity), and cloud-init's, which runs
# ds-identify (a shell script that probes the datasources: seconds under TCG) only to enable
# cloud-init.target; that target is enabled here instead, and the datasource list is fixed.
# Kept: fstab, debug (systemd.mask=, systemd.debug_shell on the kernel command line) and run.
mkdir -p /etc/systemd/system-generators
for gen in cloud-init-generator systemd-getty-generator systemd-gpt-auto-generator \
	systemd-hibernate-resume-generator systemd-sysv-generator systemd-rc-local-generator \
	systemd-system-update-generator systemd-cryptsetup-generator systemd-integritysetup-generator \
	systemd-veritysetup-generator; do
	ln -sf /dev/null "/etc/systemd/system-generators/$gen"
done
offline add-wants multi-user.target cloud-init.target

# The journal stays in memory: nothing flushes it to, or writes it on, the root disk during a run
# (the console log keeps what the guest says).
mkdir -p /etc/systemd/journald.conf.d
printf '[Journal]\nStorage=volatile\n' >/etc/systemd/journald.conf.d/fslab.conf

# No AHCI driver: fslab's buses are virtio-blk, virtio-scsi and NVMe, and loading it makes the
# kernel probe the six SATA ports of q35. Not in bootstrap.sh's modprobe.conf because the build
# boot reads its seed from a CD on that controller.
printf '# fslab (packer/scripts/45-lean-boot.sh): no SATA bus in fslab VMs\nblacklist ahci\n' \
	>/etc/modprobe.d/fslab-runtime.conf

offline list-unit-files --state=masked --no-pager
