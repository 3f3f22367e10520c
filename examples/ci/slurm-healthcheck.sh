#!/bin/bash
# gpuadvisor as a Slurm HealthCheckProgram (slurm.conf):
#
#   HealthCheckProgram=/usr/local/sbin/gpuadvisor-healthcheck
#   HealthCheckInterval=300
#
# Slurm ignores a health check's exit code and kills it after 60 seconds, so this wrapper acts itself and
# always exits 0. With GPUADVISOR_DRAIN=1 (opt-in) it drains the node only when gpuadvisor's own JSON report
# says the check failed (exit 1 and a JSON document with "exit_code": 1 and its failing findings), with
# Reason="gpuadvisor: <first failing finding>"; it resumes a node that passes only when the node's reason
# carries that prefix (a node drained by an admin or another tool is never touched). Anything else -- exit 2
# (no GPU visible, bad policy), exit 1 without that JSON (a crash: a broken venv, a failed import), no
# gpuadvisor, a timeout, a signal -- is "could not check": logged (syslog tag gpuadvisor, and stderr), never a
# drain and never a resume. Without GPUADVISOR_DRAIN=1 it only logs.
#
# Time: the whole run, every gpuadvisor / sinfo / scontrol / logger call included, is bounded by
# GPUADVISOR_DEADLINE seconds (default 50, inside Slurm's 60): each call runs under coreutils timeout with
# what is left of it, so a slow controller cannot push the run past the limit. Runs never overlap: a run
# that finds the lock held (the previous one still going) logs that and exits. Do not use --bench here: it
# takes longer than Slurm allows.
#
# Settings (environment, e.g. from a systemd drop-in, or /etc/default/gpuadvisor sourced below):
#   GPUADVISOR_DRAIN=1            drain / resume (default 0: log only)
#   GPUADVISOR_POLICY=FILE        node policy (default /etc/gpuadvisor/node.toml when it exists)
#   GPUADVISOR_ARGS="..."         extra arguments for gpuadvisor check (e.g. --fail-on warn)
#   GPUADVISOR=gpuadvisor         the gpuadvisor command (or GPUADVISOR_PYTHON=python3: run python3 -m gpuadvisor)
#   GPUADVISOR_NODENAME=NAME      the Slurm node name (default: hostname -s)
#   GPUADVISOR_DEADLINE=50        seconds the whole run may take
#   GPUADVISOR_LOCK=FILE          the lock file (default /run/gpuadvisor-healthcheck.lock; not root: in $TMPDIR)
# GPUADVISOR_DRAIN_ON_ERROR (drain when the check cannot run) is no longer supported: it is ignored, and logged.
set -u
# shellcheck source=/dev/null
[ -r "${GPUADVISOR_DEFAULTS:-/etc/default/gpuadvisor}" ] && . "${GPUADVISOR_DEFAULTS:-/etc/default/gpuadvisor}"

PREFIX="gpuadvisor:"
REASON_MAX=120  # characters of a drain reason: short enough for sinfo -R, one line, no quotes
DEADLINE="${GPUADVISOR_DEADLINE:-50}"
LOCK="${GPUADVISOR_LOCK:-/run/gpuadvisor-healthcheck.lock}"
[ -n "${GPUADVISOR_LOCK:-}" ] || [ -w /run ] || LOCK="${TMPDIR:-/tmp}/gpuadvisor-healthcheck.$(id -u).lock"  # not root
NODE="${GPUADVISOR_NODENAME:-$(hostname -s)}"
POLICY="${GPUADVISOR_POLICY:-/etc/gpuadvisor/node.toml}"
if [ -n "${GPUADVISOR_PYTHON:-}" ]; then
    TOOL=("$GPUADVISOR_PYTHON" -m gpuadvisor)
else
    TOOL=("${GPUADVISOR:-gpuadvisor}")
fi
read -ra EXTRA <<< "${GPUADVISOR_ARGS:-}"
ARGS=(check --format json "${EXTRA[@]}")
[ -r "$POLICY" ] && ARGS+=(--policy "$POLICY")

# bounded MAX CMD...: run CMD under timeout, for at most MAX seconds and never past the deadline less 3 s (kept
# for the last log lines); within KEEP MAX CMD...: the same keeping KEEP s. 124: timed out (or no time left);
# 137: killed 1 s after ignoring SIGTERM. timeout signals CMD's whole process group. The lock's descriptor is
# closed for CMD, so a child that outlives this script cannot keep the lock.
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
syslog() { within 1 2 logger -t gpuadvisor -- "$NODE: $*" 2>/dev/null; }
log() { printf 'gpuadvisor-healthcheck: %s: %s\n' "$NODE" "$*" >&2; syslog "$@"; }
could_not_check() { log "could not check (nothing drained or resumed): $*"; exit 0; }

if ! { exec 9>>"$LOCK"; } 2>/dev/null; then
    could_not_check "cannot open the lock file $LOCK"
fi
if ! flock -n 9; then
    syslog "a previous health check is still running (lock $LOCK held): this run skipped"
    exit 0
fi

if [ "${GPUADVISOR_DRAIN_ON_ERROR:-0}" != 0 ]; then
    syslog "GPUADVISOR_DRAIN_ON_ERROR is ignored: a check that cannot run never drains the node"
fi

errfile=$(mktemp) || could_not_check "mktemp failed"
outfile=$(mktemp) || could_not_check "mktemp failed"
trap 'rm -f "$errfile" "$outfile"' EXIT
# stdout to a file, not a pipe: $(...) would wait for every process holding the pipe open, so a child that
# left timeout's process group (setsid) and kept stdout would hold the run past the deadline.
bounded 40 "${TOOL[@]}" "${ARGS[@]}" >"$outfile" 2>"$errfile"
rc=$?
out=$(head -c 1000000 "$outfile")
err=$(head -c 2000 "$errfile" | tr -c '[:print:]\n' ' ' | grep -v '^[[:space:]]*$' | tail -n 1 | cut -c1-200)

case $rc in
    124) could_not_check "gpuadvisor timed out (killed at the ${DEADLINE} s deadline)" ;;
    137) could_not_check "$(killed)" ;;
    126|127) could_not_check "${TOOL[0]} not found or not executable (exit $rc)" ;;
    0|1) ;;
    *) if [ "$rc" -gt 128 ]; then
           could_not_check "gpuadvisor killed by signal $((rc - 128))"
       fi
       could_not_check "gpuadvisor exit $rc: ${err:-no message}" ;;
esac

# The verdict, from gpuadvisor's own JSON only: "pass SUMMARY", "fail REASON", or "invalid WHY". A document
# whose exit_code is not the process's, or a failing list that disagrees with it, is not a verdict.
# Parsed by the system python3 in isolated mode (no site, no PYTHON* variables): a broken gpuadvisor
# install cannot make it say "fail".
PARSE='
import json, re, sys
rc, limit = int(sys.argv[1]), int(sys.argv[2])
try:
    d = json.loads(sys.stdin.read())
except Exception as e:
    print("invalid", "stdout is not a JSON document:", type(e).__name__); sys.exit()
ok = (isinstance(d, dict) and d.get("exit_code") in (0, 1) and isinstance(d.get("failing"), list)
      and isinstance(d.get("summary"), str) and isinstance(d.get("findings"), list))
if not ok:
    print("invalid", "stdout is JSON but not a gpuadvisor check report"); sys.exit()
if d["exit_code"] != rc or bool(d["failing"]) != (rc == 1):
    print("invalid", "the report (exit_code %r, %d failing) disagrees with exit %d" % (d["exit_code"], len(d["failing"]), rc)); sys.exit()
def clean(s):
    s = " ".join(re.sub(r"[^A-Za-z0-9 _.,:;()/+@#%=-]", " ", str(s)).split())
    return s if len(s) <= limit else s[: limit - 3].rstrip() + "..."
if rc == 0:
    print("pass", clean(d["summary"])); sys.exit()
codes = [c for c in d["failing"] if isinstance(c, str)]
print("fail", clean(d["summary"] or "failing " + ",".join(codes)) or "failing (no summary)")
'
verdict=$(printf '%s' "$out" | bounded 10 python3 -I -S -c "$PARSE" "$rc" "$((REASON_MAX - ${#PREFIX} - 1))" 2>/dev/null) ||
    could_not_check "cannot parse gpuadvisor's report (python3 failed or timed out)"
what=${verdict%% *}
text=${verdict#* }
case $what in
    pass|fail) ;;
    invalid) could_not_check "gpuadvisor exit $rc without a valid report ($text)${err:+; stderr: $err}" ;;
    *) could_not_check "cannot parse gpuadvisor's report" ;;
esac

if [ "$what" = pass ]; then log "ok ($text)"; else log "node fails: $text"; fi
[ "${GPUADVISOR_DRAIN:-0}" = 1 ] || exit 0

# Compact state (idle, drain, drng, mix@, ...) and reason of this node; nothing is done without them.
line=$(bounded 10 sinfo -h -N -n "$NODE" -o '%t %E' 2>/dev/null)
src=$?
line=${line%%$'\n'*}
if [ "$src" -ne 0 ] || [ -z "$line" ]; then
    could_not_check "sinfo gave no state for node $NODE (exit $src): not draining or resuming"
fi
read -r state reason <<< "$line"
reason="${reason:-none}"
ours=0; [[ "$reason" == "$PREFIX"* ]] && ours=1

if [ "$what" = pass ]; then
    if [ "$ours" = 1 ]; then
        case "${state:-}" in
            *@) log "not resuming: a reboot is pending" ;;
            drain*|drng*|down*|fail*)
                log "resuming (was drained for: $reason)"
                bounded 10 scontrol update NodeName="$NODE" State=RESUME ||
                    log "scontrol resume failed or timed out (exit $?)" ;;
        esac
    fi
    exit 0
fi

new="$PREFIX $text"
if [ "$reason" != none ] && [ "$ours" = 0 ]; then
    log "not draining: the node already has a reason set by someone else ($reason)"
elif [ "$reason" != "$new" ]; then
    log "draining: $new"
    bounded 10 scontrol update NodeName="$NODE" State=DRAIN Reason="$new" ||
        log "scontrol drain failed or timed out (exit $?)"
fi
exit 0
