#!/bin/sh
# One node's part of a fleet check: `gpuadvisor check --bench --quick` saves this node's scan (facts,
# measurements, findings) as DIR/<node>.json. A check that could not run (exit 2: no GPU, no driver, torch
# broken), crashed or hung past its timeout leaves a failure record there instead, so `gpuadvisor fleet` lists
# the node as failed, not missing.
#
#   node-check.sh DIR [extra check options...]
#
# The node's name: GPUADVISOR_HOSTNAME, else Slurm's SLURMD_NODENAME, else Kubernetes' NODE_NAME (downward
# API), else hostname. GPUADVISOR names the gpuadvisor command (default: gpuadvisor on PATH).
# GPUADVISOR_TIMEOUT: seconds the check may take (default 600; coreutils timeout, KILL 10 s after TERM); keep
# it shorter than the job's or step's time limit so a wedged node is reported, not left to the scheduler.
#
# GPUADVISOR_BENCH=0: the passive check only (facts and rules, no benchmark, no GPU held for long), for a
# Kubernetes DaemonSet that requests no GPU resource.
#
# Nothing half-written ever replaces DIR/<node>.json: the scan and the failure record are written beside it
# under names fleet does not read and renamed only when complete and non-empty. When even the failure record
# cannot be written (a full disk), the previous file stays and the exit status says what happened.
set -u
DIR=${1:?usage: node-check.sh DIR [check options]}
shift
NODE=${GPUADVISOR_HOSTNAME:-${SLURMD_NODENAME:-${NODE_NAME:-$(hostname)}}}
export GPUADVISOR_HOSTNAME="$NODE"
GPUADVISOR=${GPUADVISOR:-gpuadvisor}
PYTHON=${PYTHON:-python3}
TIMEOUT=${GPUADVISOR_TIMEOUT:-600}
if [ "${GPUADVISOR_BENCH:-1}" = 0 ]; then set -- "$@"; else set -- --bench --quick "$@"; fi
mkdir -p "$DIR"
PART="$DIR/.$NODE.json.partial"   # not *.json: fleet never reads a half-written scan
EPART="$DIR/.$NODE.error.partial"
ERR=$(mktemp)
trap 'rm -f "$ERR" "$PART" "$EPART"' EXIT
started=$(date +%s)
timeout -k 10 "$TIMEOUT" "$GPUADVISOR" check -q --json "$PART" "$@" 2>"$ERR" </dev/null >/dev/null
rc=$?
# 124: timeout stopped it at the limit; 137 (SIGKILL) before the limit: something else killed it (the kernel's
# out-of-memory killer, an operator), which is not a time-out; at the limit, timeout's own -k after SIGTERM.
case $rc in
    124) echo "gpuadvisor check timed out after $TIMEOUT s (killed)" >>"$ERR" ;;
    137) if [ $(($(date +%s) - started)) -ge "$TIMEOUT" ]; then
             echo "gpuadvisor check timed out after $TIMEOUT s (killed with SIGKILL: it ignored SIGTERM)" >>"$ERR"
         else
             echo "gpuadvisor check was killed (SIGKILL) after $(($(date +%s) - started)) s, before the $TIMEOUT s limit: out of memory? (dmesg)" >>"$ERR"
         fi ;;
esac
if [ "$rc" -le 1 ] && [ -s "$PART" ]; then
    mv -f "$PART" "$DIR/$NODE.json"   # rename in one directory: atomic
else
    if "$PYTHON" - "$NODE" "$rc" "$ERR" "$EPART" <<'PY' && [ -s "$EPART" ]; then
import datetime, json, sys
node, rc, err, out = sys.argv[1:5]
lines = [ln.strip() for ln in open(err, encoding="utf-8", errors="replace") if ln.strip()]
doc = {"kind": "gpuadvisor-node-error", "hostname": node, "exit_code": int(rc),
       "error": (lines[-1] if lines else f"gpuadvisor check exited {rc}")[:300],
       "created_at": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")}
with open(out, "w", encoding="utf-8") as f:
    json.dump(doc, f)
    f.flush()
PY
        mv -f "$EPART" "$DIR/$NODE.json"
    else
        echo "node-check: cannot write the failure record in $DIR (disk full?); $DIR/$NODE.json left as it was" >&2
    fi
    [ "$rc" -le 1 ] && rc=2   # exit 0/1 without a scan: the check did not complete
fi
exit "$rc"
