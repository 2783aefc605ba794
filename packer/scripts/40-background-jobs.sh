#!/bin/sh
# No background jobs in a benchmark guest: a timer that fires during a run (fstrim trimming the
# filesystem under test, an md array check, e2scrub snapshotting an LV, apt or dnf waking up)
# would change what is measured. Mask every such timer the image has.
set -eu
# systemctl --root=/: on the unit files, not through the running manager (see 45-lean-boot.sh).

for timer in fstrim.timer e2scrub_all.timer mdcheck_start.timer mdcheck_continue.timer \
	mdmonitor-oneshot.timer apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer \
	man-db.timer logrotate.timer dnf-makecache.timer mlocate-updatedb.timer plocate-updatedb.timer \
	raid-check.timer; do
	if systemctl --root=/ list-unit-files "$timer" | grep -q "^$timer"; then
		systemctl --root=/ mask "$timer"
	fi
done
systemctl --root=/ list-unit-files --type=timer --no-pager
