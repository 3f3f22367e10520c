#!/bin/sh
# node-problem-detector custom plugin: exit 0 OK, 1 problem, 2 unknown (the same codes as gpuadvisor check),
# and one line of at most 80 characters on stdout (check's summary).
#
# Only gpuadvisor's own verdict is a node problem: a JSON report whose exit_code is the process's exit status.
# A crash (a Python traceback that exits 1, a broken install, a kill, a timeout) is "unknown" (2), never a
# problem, so a broken tool never marks healthy nodes. GPUADVISOR_TIMEOUT bounds the check (default 50 s,
# inside node-problem-detector's default plugin timeout of 60 s).
GPUADVISOR=${GPUADVISOR:-gpuadvisor}
PYTHON=${PYTHON:-python3}
TIMEOUT=${GPUADVISOR_TIMEOUT:-50}
out=$(mktemp) || { echo "gpuadvisor check could not run (mktemp)"; exit 2; }
trap 'rm -f "$out"' EXIT
timeout -k 5 "$TIMEOUT" "$GPUADVISOR" check --format json >"$out" 2>/dev/null </dev/null
rc=$?
line=$("$PYTHON" -I -S -c 'import json, sys
rc = int(sys.argv[2])
try:
    with open(sys.argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    ok = isinstance(doc, dict) and doc.get("exit_code") == rc and rc in (0, 1) and isinstance(doc.get("summary"), str)
except Exception:
    ok = False
if ok:
    print(str(doc["summary"]).replace("\n", " ")[:80])
else:
    print(f"gpuadvisor check could not run (exit {rc}); not a node problem"[:80])
    sys.exit(3)' "$out" "$rc" 2>/dev/null)
prc=$?
if [ "$prc" -ne 0 ]; then
    echo "${line:-gpuadvisor check could not run (exit $rc)}"
    exit 2
fi
echo "$line"
exit "$rc"
