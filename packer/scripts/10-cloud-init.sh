#!/bin/sh
# Runtime cloud-init settings. fslab VMs boot with no NIC (-nic none) and a NoCloud seed that
# only writes the plan (write_files) and starts the agent (runcmd), so network configuration and
# the ssh module (host keys, authorized keys) that the build boot needed are switched off.
set -eu

# Let the build boot's own cloud-init finish before changing its configuration.
cloud-init status --wait

cat >/etc/cloud/cloud.cfg.d/95-fslab-runtime.cfg <<'CFG'
#cloud-config
# fslab runtime (written by packer/scripts/10-cloud-init.sh)
network: {config: disabled}
cloud_init_modules: [seed_random, bootcmd, write-files, set_hostname, update_hostname, update_etc_hosts]
cloud_config_modules: [runcmd]
cloud_final_modules: [write-files-deferred, scripts-per-once, scripts-per-boot, scripts-per-instance, scripts-user, final-message, power-state-change]
CFG

# Fail the build here, not at the first run, if cloud-init cannot read the result.
cloud-init schema --config-file /etc/cloud/cloud.cfg.d/95-fslab-runtime.cfg
