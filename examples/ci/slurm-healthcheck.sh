#!/bin/bash
# gpuadvisor as a Slurm HealthCheckProgram (slurm.conf):
#
#   HealthCheckProgram=/usr/local/sbin/gpuadvisor-healthcheck
#   HealthCheckInterval=300
#
# Slurm ignores a health check's exit code and kills it after 60 seconds, so this wrapper acts itself:
# with GPUADVISOR_DRAIN=1 (opt-in) it drains a failing node with Reason="gpuadvisor: <first failing
# finding>" and resumes a passing node only when the reason carries that prefix (a node drained by an admin
# or another tool is never touched). Without GPUADVISOR_DRAIN=1 it only logs (syslog tag gpuadvisor).
# It always exits 0. Do not use --bench here: it takes longer than Slurm allows.
#
# Settings (environment, e.g. from a systemd drop-in or an /etc/default file sourced below):
#   GPUADVISOR_DRAIN=1            drain / resume (default 0: log only)
#   GPUADVISOR_DRAIN_ON_ERROR=1   also drain when the check cannot run (exit 2: no GPU visible, driver gone)
#   GPUADVISOR_POLICY=FILE        node policy (default /etc/gpuadvisor/node.toml when it exists)
#   GPUADVISOR_ARGS="..."         extra arguments for gpuadvisor check (e.g. --fail-on warn)
#   GPUADVISOR_PYTHON=python3     the interpreter gpuadvisor is installed in
#   GPUADVISOR_NODENAME=NAME      the Slurm node name (default: hostname -s)
set -u
# shellcheck source=/dev/null
[ -r /etc/default/gpuadvisor ] && . /etc/default/gpuadvisor

PREFIX="gpuadvisor:"
PY="${GPUADVISOR_PYTHON:-python3}"
NODE="${GPUADVISOR_NODENAME:-$(hostname -s)}"
POLICY="${GPUADVISOR_POLICY:-/etc/gpuadvisor/node.toml}"
read -ra EXTRA <<< "${GPUADVISOR_ARGS:-}"
ARGS=(check --format json "${EXTRA[@]}")
[ -r "$POLICY" ] && ARGS+=(--policy "$POLICY")

log() { logger -t gpuadvisor -- "$NODE: $*"; }

errfile=$(mktemp) || exit 0
trap 'rm -f "$errfile"' EXIT
out=$(timeout -k 5 45 "$PY" -m gpuadvisor "${ARGS[@]}" 2>"$errfile")
rc=$?
case $rc in
    0|1) summary=$(printf '%s' "$out" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["summary"])') ;;
    124|137) summary="check timed out after 45 s" ;;
    *) summary="check could not run: $(head -n 1 "$errfile" | sed 's/^gpuadvisor: error: //' | cut -c1-59)" ;;
esac

# Compact state (idle, drain, drng, mix@, ...) and reason ("none" when unset) of this node.
read -r state reason <<< "$(sinfo -h -N -n "$NODE" -o '%t %E' 2>/dev/null | head -n 1)"
reason="${reason:-none}"
ours=0; [[ "$reason" == "$PREFIX"* ]] && ours=1

if [ "$rc" -eq 0 ]; then
    log "ok ($summary)"
    if [ "${GPUADVISOR_DRAIN:-0}" = 1 ] && [ "$ours" = 1 ]; then
        case "${state:-}" in
            *@) log "not resuming: a reboot is pending" ;;
            drain*|drng*|down*|fail*)
                log "resuming (was drained for: $reason)"
                scontrol update NodeName="$NODE" State=RESUME ;;
        esac
    fi
    exit 0
fi

log "node fails (exit $rc): $summary"
[ "${GPUADVISOR_DRAIN:-0}" = 1 ] || exit 0
[ "$rc" -eq 1 ] || [ "${GPUADVISOR_DRAIN_ON_ERROR:-0}" = 1 ] || exit 0
new="$PREFIX $summary"
if [ "$reason" != none ] && [ "$ours" = 0 ]; then
    log "not draining: the node already has a reason set by someone else ($reason)"
elif [ "$reason" != "$new" ]; then
    scontrol update NodeName="$NODE" State=DRAIN Reason="$new"
fi
exit 0
