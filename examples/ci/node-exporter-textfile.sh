#!/bin/bash
# gpuadvisor for node_exporter's textfile collector. Run it from cron, e.g. /etc/cron.d/gpuadvisor:
#
#   */15 * * * * root /usr/local/sbin/gpuadvisor-textfile
#
# node_exporter reads *.prom files from --collector.textfile.directory (TEXTFILE_DIR below). Two files:
#
#   gpuadvisor.prom           the check's report (gpuadvisor_check_status 0 pass / 1 the node fails, findings,
#                             GPUs, links). Replaced only by a complete, valid report of this run.
#   gpuadvisor_check_up.prom  gpuadvisor_check_up 1 when this run produced that report, 0 when it could not
#                             check (exit 2: no GPU visible, bad policy; a crash; no gpuadvisor; a timeout),
#                             and gpuadvisor_check_last_run_timestamp_seconds.
#
# Both are written to a temp file in TEXTFILE_DIR (a name node_exporter ignores) and renamed into place, so
# node_exporter never reads half a file; when the check cannot run, gpuadvisor.prom stays as it was and
# gpuadvisor_check_up says 0 (alert on it, and on the report's age: rules in README.md beside this script).
# A report counts only when gpuadvisor exits 0 or 1 and its gpuadvisor_check_status line agrees with that
# exit: a crash that exits 1 (a broken venv, a failed import) is "could not check", never "the node fails".
#
# The run is bounded by GPUADVISOR_DEADLINE seconds (default 50) with coreutils timeout; runs never overlap
# (a run that finds the lock held logs that and exits).
#
# Settings (environment): TEXTFILE_DIR, GPUADVISOR_POLICY (default /etc/gpuadvisor/node.toml when it exists),
# GPUADVISOR (the command, default gpuadvisor), GPUADVISOR_ARGS (extra check arguments),
# GPUADVISOR_DEADLINE, GPUADVISOR_LOCK (default /run/gpuadvisor-textfile.lock; not root: in $TMPDIR).
set -u
TEXTFILE_DIR="${TEXTFILE_DIR:-/var/lib/node_exporter/textfile_collector}"
POLICY="${GPUADVISOR_POLICY:-/etc/gpuadvisor/node.toml}"
GPUADVISOR="${GPUADVISOR:-gpuadvisor}"
DEADLINE="${GPUADVISOR_DEADLINE:-50}"
LOCK="${GPUADVISOR_LOCK:-/run/gpuadvisor-textfile.lock}"
[ -n "${GPUADVISOR_LOCK:-}" ] || [ -w /run ] || LOCK="${TMPDIR:-/tmp}/gpuadvisor-textfile.$(id -u).lock"  # not root
REPORT="$TEXTFILE_DIR/gpuadvisor.prom"
UP="$TEXTFILE_DIR/gpuadvisor_check_up.prom"
read -ra EXTRA <<< "${GPUADVISOR_ARGS:-}"
ARGS=(check --format prom "${EXTRA[@]}")
[ -r "$POLICY" ] && ARGS+=(--policy "$POLICY")

# bounded MAX CMD... / within KEEP MAX CMD...: CMD under timeout, at most MAX seconds and never past the
# deadline less 3 (KEEP) seconds, kept for the last log lines and the up file (as in slurm-healthcheck.sh).
bounded() { within 3 "$@"; }
within() {
    local keep=$1 max=$2 left
    shift 2
    left=$((DEADLINE - SECONDS - keep))
    [ "$left" -lt "$max" ] && max=$left
    [ "$max" -ge 1 ] || return 124
    LIMIT=$max STARTED=$SECONDS
    timeout -k 1 "$max" "$@" 9>&-
}
# killed: why a bounded command ended with 137 (SIGKILL): at its limit, timeout's -k after SIGTERM was
# ignored (a time-out); before it, something else killed it (the out-of-memory killer, an operator).
killed() {
    if [ $((SECONDS - STARTED)) -ge "$LIMIT" ]; then
        echo "gpuadvisor timed out (killed at the ${DEADLINE} s deadline)"
    else
        echo "gpuadvisor was killed (SIGKILL) after $((SECONDS - STARTED)) s, before its ${LIMIT} s limit: out of memory? (dmesg)"
    fi
}
syslog() { within 1 2 logger -t gpuadvisor -- "textfile: $*" 2>/dev/null; }
log() { printf 'gpuadvisor-textfile: %s\n' "$*" >&2; syslog "$@"; }

tmp=""
cleanup() { [ -n "$tmp" ] && rm -f "$tmp"; }
trap cleanup EXIT

# install FILE: move $tmp (complete, flushed) over FILE, in the same directory, readable by node_exporter.
install_tmp() {
    chmod 0644 "$tmp" || return 1
    bounded 5 sync -- "$tmp" 2>/dev/null  # the bytes on disk before the rename makes them the file
    mv -f -- "$tmp" "$1" && tmp=""
}

# up VALUE REASON: write gpuadvisor_check_up.prom atomically.
up() {
    tmp=$(mktemp "$TEXTFILE_DIR/.gpuadvisor_check_up.XXXXXX") || { log "cannot write in $TEXTFILE_DIR"; exit 0; }
    {
        echo "# HELP gpuadvisor_check_up 1 when the last run produced gpuadvisor.prom, 0 when it could not check (the file then holds an older report)."
        echo "# TYPE gpuadvisor_check_up gauge"
        echo "gpuadvisor_check_up $1"
        echo "# HELP gpuadvisor_check_last_run_timestamp_seconds When the last run ended (Unix time)."
        echo "# TYPE gpuadvisor_check_last_run_timestamp_seconds gauge"
        echo "gpuadvisor_check_last_run_timestamp_seconds $(date +%s)"
    } >"$tmp" || { log "cannot write $tmp"; return 1; }
    install_tmp "$UP" || log "cannot rename $tmp to $UP"
}

could_not_check() {
    log "could not check: $*; $REPORT left as it was"
    cleanup  # this run's partial report
    tmp=""
    up 0
    exit 0
}

if ! { exec 9>>"$LOCK"; } 2>/dev/null; then
    log "cannot open the lock file $LOCK"
    exit 0
fi
if ! flock -n 9; then
    syslog "a previous run is still going (lock $LOCK held): this run skipped"
    exit 0
fi

tmp=$(mktemp "$TEXTFILE_DIR/.gpuadvisor.prom.XXXXXX") || { log "cannot write in $TEXTFILE_DIR"; exit 0; }
errfile=$(mktemp) || could_not_check "mktemp failed"
trap 'cleanup; rm -f "$errfile"' EXIT
# The report through -o: gpuadvisor writes it atomically (all or nothing), so a run that prints part of it
# and then fails leaves $tmp empty; stdout is not the report and goes nowhere.
bounded 40 "$GPUADVISOR" "${ARGS[@]}" -o "$tmp" >/dev/null 2>"$errfile"
rc=$?
err=$(head -c 2000 "$errfile" | tr -c '[:print:]\n' ' ' | grep -v '^[[:space:]]*$' | tail -n 1 | cut -c1-200)
case $rc in
    0|1) ;;
    124) could_not_check "gpuadvisor timed out (killed at the ${DEADLINE} s deadline)" ;;
    137) could_not_check "$(killed)" ;;
    126|127) could_not_check "$GPUADVISOR not found or not executable (exit $rc)" ;;
    *) could_not_check "gpuadvisor exit $rc: ${err:-no message}" ;;
esac
if [ ! -s "$tmp" ] || [ "$(tail -c 1 "$tmp" | od -An -c | tr -d ' ')" != '\n' ]; then
    could_not_check "gpuadvisor exit $rc without a complete report${err:+ (stderr: $err)}"
fi
status=$(grep -E '^gpuadvisor_check_status [01]$' "$tmp" | head -n 1)
if [ "$status" != "gpuadvisor_check_status $rc" ]; then
    could_not_check "gpuadvisor exit $rc without a matching gpuadvisor_check_status line${err:+ (stderr: $err)}"
fi
install_tmp "$REPORT" || could_not_check "cannot rename the report into $REPORT"
up 1
exit 0
