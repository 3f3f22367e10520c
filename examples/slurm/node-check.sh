#!/bin/sh
# One node's part of a fleet check: `gpuadvisor check --bench --quick` saves this node's scan (facts,
# measurements, findings) as DIR/<node>.json. A check that could not run (exit 2: no GPU, no driver, torch
# broken) leaves a failure record there instead, so `gpuadvisor fleet` lists the node as failed, not missing.
#
#   node-check.sh DIR [extra check options...]
#
# The node's name: GPUADVISOR_HOSTNAME, else Slurm's SLURMD_NODENAME, else Kubernetes' NODE_NAME (downward
# API), else hostname. GPUADVISOR names the gpuadvisor command (default: gpuadvisor on PATH).
set -u
DIR=${1:?usage: node-check.sh DIR [check options]}
shift
NODE=${GPUADVISOR_HOSTNAME:-${SLURMD_NODENAME:-${NODE_NAME:-$(hostname)}}}
export GPUADVISOR_HOSTNAME="$NODE"
GPUADVISOR=${GPUADVISOR:-gpuadvisor}
PYTHON=${PYTHON:-python3}
mkdir -p "$DIR"
PART="$DIR/.$NODE.json.partial"   # not *.json: fleet never reads a half-written scan
ERR=$(mktemp)
trap 'rm -f "$ERR" "$PART"' EXIT
$GPUADVISOR check --bench --quick -q --json "$PART" "$@" 2>"$ERR"
rc=$?
if [ "$rc" -le 1 ] && [ -s "$PART" ]; then
    mv -f "$PART" "$DIR/$NODE.json"   # rename in one directory: atomic
else
    "$PYTHON" - "$NODE" "$rc" "$ERR" "$DIR/.$NODE.error.partial" <<'PY'
import datetime, json, sys
node, rc, err, out = sys.argv[1:5]
lines = [ln.strip() for ln in open(err, encoding="utf-8", errors="replace") if ln.strip()]
doc = {"kind": "gpuadvisor-node-error", "hostname": node, "exit_code": int(rc),
       "error": (lines[-1] if lines else f"gpuadvisor check exited {rc}")[:300],
       "created_at": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")}
with open(out, "w", encoding="utf-8") as f:
    json.dump(doc, f)
PY
    mv -f "$DIR/.$NODE.error.partial" "$DIR/$NODE.json"
fi
exit "$rc"
