#!/bin/sh
# gpuadvisor for node_exporter's textfile collector. Run it from cron, e.g. /etc/cron.d/gpuadvisor:
#
#   */15 * * * * root /usr/local/sbin/gpuadvisor-textfile
#
# node_exporter reads *.prom files from --collector.textfile.directory (TEXTFILE_DIR below). gpuadvisor
# writes a temp file beside gpuadvisor.prom and renames it into place, so node_exporter never reads half a
# file. Exit 1 (the node fails its policy) still writes the file, with gpuadvisor_check_status 1. Exit 2
# (the check could not run: no GPU visible, bad policy) leaves the previous file and logs why; alert on the
# file's age (alert rules in README.md beside this script).
TEXTFILE_DIR="${TEXTFILE_DIR:-/var/lib/node_exporter/textfile_collector}"
POLICY="${GPUADVISOR_POLICY:-/etc/gpuadvisor/node.toml}"
GPUADVISOR="${GPUADVISOR:-gpuadvisor}"

set -- check -q --format prom -o "$TEXTFILE_DIR/gpuadvisor.prom"
if [ -r "$POLICY" ]; then set -- "$@" --policy "$POLICY"; fi
err=$("$GPUADVISOR" "$@" 2>&1 >/dev/null)
rc=$?
if [ "$rc" -gt 1 ]; then
    logger -t gpuadvisor "check could not run (exit $rc): $err; $TEXTFILE_DIR/gpuadvisor.prom left as it was"
fi
exit 0
