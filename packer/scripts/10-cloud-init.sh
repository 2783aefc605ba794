#!/bin/sh
# Runtime cloud-init settings. fslab VMs boot with no NIC (-nic none) and a NoCloud seed that
# only writes the plan (write_files) and starts the agent (runcmd), so network configuration and
# the ssh module (host keys, authorized keys) that the build boot needed are switched off.
#
# One cloud-init stage does it all, the first: each stage is a fresh Python process that spends
# seconds importing cloud-init under TCG, and the agent used to wait for all four. With the
# NoCloud datasource in dsmode "local", cloud-init-local (which starts right after the root is
# remounted read-write) runs cloud_init_modules itself; those are write-files (the plan), runcmd
# (which only writes the seed's commands to a script) and scripts-user (which runs that script:
# the agent). The agent then runs inside cloud-init-local.service, which is ordered before
# sysinit.target: nothing ordered after it (timers, gettys, logind, dbus, ...) starts while the
# agent measures, and its poweroff ends the boot. The three later stages are masked.
#
# dsmode comes from this image's datasource config: NoCloud merges its "meta-data" with the seed's,
# the first one found winning each key, so dsmode is "local" whatever the seed says and the seed
# supplies the rest (instance-id, local-hostname). Seeds need no change.
set -eu
# systemctl --root=/: on the unit files, not through the running manager (see 45-lean-boot.sh).

# Let the build boot's own cloud-init finish before changing its configuration. cloud-init 23.4
# and later (trixie's 25.1) exit 2 for "done, with recoverable errors" (warnings, deprecated
# keys): shown here, in the build's log, not fatal; an error (1) is.
rc=0
cloud-init status --wait || rc=$?
if [ "$rc" -eq 2 ]; then
	cloud-init status --long
elif [ "$rc" -ne 0 ]; then
	exit "$rc"
fi

cat >/etc/cloud/cloud.cfg.d/95-fslab-runtime.cfg <<'CFG'
#cloud-config
# fslab runtime (written by packer/scripts/10-cloud-init.sh)
datasource_list: [NoCloud]
datasource:
  NoCloud:
    meta-data: {dsmode: local}
    user-data: ""
network: {config: disabled}
cloud_init_modules: [write-files, runcmd, scripts-user]
cloud_config_modules: []
cloud_final_modules: []
CFG

# Fail the build here, not at the first run, if cloud-init cannot read the result: read as
# cloud-init reads its configuration (`cloud-init schema` checks user-data only since 23.x, and
# rejects a system configuration's datasource and network keys).
python3 - /etc/cloud/cloud.cfg.d/95-fslab-runtime.cfg <<'PY'
import sys
from cloudinit import util
cfg = util.read_conf(sys.argv[1])
if cfg.get("cloud_init_modules") != ["write-files", "runcmd", "scripts-user"]:
    sys.exit(f"{sys.argv[1]}: cloud-init read {cfg!r}")
PY

for unit in cloud-init.service cloud-config.service cloud-final.service; do
	systemctl --root=/ mask "$unit"
done
