#!/bin/sh
# Turn the build VM back into an image: no SSH, no build identity, no build network config,
# and nothing that waits for a network at boot (fslab VMs run with -nic none).
set -eu
# systemctl --root=/: on the unit files, not through the running manager (see 45-lean-boot.sh).

# SSH was only for Packer.
for unit in ssh.socket ssh.service sshd.socket sshd.service; do
	if systemctl --root=/ list-unit-files "$unit" | grep -q "^$unit"; then
		systemctl --root=/ disable "$unit"
	fi
done
rm -f /etc/ssh/ssh_host_*
rm -f /root/.ssh/authorized_keys

# The build's network config, as cloud-init wrote it (ifupdown, ifcfg or NetworkManager).
rm -f /etc/network/interfaces.d/50-cloud-init /etc/network/interfaces.d/50-cloud-init.cfg
rm -f /etc/sysconfig/network-scripts/ifcfg-eth0 /etc/NetworkManager/system-connections/cloud-init-*
rm -f /var/lib/dhcp/dhclient*.leases
# Nothing may hold boot waiting for a network that does not exist.
systemctl --root=/ mask systemd-networkd-wait-online.service
if systemctl --root=/ list-unit-files NetworkManager-wait-online.service | grep -q '^NetworkManager'; then
	systemctl --root=/ mask NetworkManager-wait-online.service
fi

# The probe (20-probe-filesystems.sh) imported fslabguest: python3 left its bytecode beside it.
# None in the image, which holds exactly its inputs (the bytecode would carry build-time stamps).
site=$(python3 -c 'import site; print(site.getsitepackages()[0])')
find "$site/fslabguest" -name __pycache__ -prune -exec rm -rf '{}' ';'

# The next boot is a first boot for cloud-init, with a new machine id.
cloud-init clean --logs
: >/etc/machine-id
rm -rf /var/log/journal/*
sync
