#!/bin/sh
# Guest side of the Debian package tests: run by blksnap-test.service.
# Runs /usr/local/lib/blksnap-test/NAME.sh for blksnap.test=NAME on the
# kernel command line; its last line of output ("PASS NAME" or "FAIL NAME:
# reason") goes to the results port, everything to the console. Then
# powers off.
dir=/usr/local/lib/blksnap-test
name=$(sed -n 's/.*blksnap\.test=\([^ ]*\).*/\1/p' /proc/cmdline)
results=/dev/virtio-ports/results
echo "@@@ START $name"
if [ -x "$dir/$name.sh" ]; then
	"$dir/$name.sh" 2>&1 | tee /run/blksnap-test.log
	verdict=$(grep -E '^(PASS|FAIL) ' /run/blksnap-test.log | tail -n 1)
else
	verdict="FAIL $name: no such guest scenario"
fi
[ -n "$verdict" ] || verdict="FAIL $name: the scenario ended without a verdict"
grep -qxF "$verdict" /run/blksnap-test.log 2>/dev/null || echo "$verdict"
echo "@@@ END $name"
[ -e "$results" ] && echo "$verdict" > "$results"
sync
systemctl poweroff --force
