#!/bin/sh
# node-problem-detector custom plugin: exit 0 OK, 1 problem, 2 unknown (the same codes as gpuadvisor check),
# and one line of at most 80 characters on stdout (check's summary).
GPUADVISOR=${GPUADVISOR:-gpuadvisor}
PYTHON=${PYTHON:-python3}
out=$($GPUADVISOR check --format json 2>/dev/null)
rc=$?
if [ "$rc" -gt 2 ]; then rc=2; fi
printf '%s' "$out" | "$PYTHON" -c 'import json,sys
try:
    print(json.load(sys.stdin)["summary"][:80])
except Exception:
    print("gpuadvisor check could not run")' || echo "gpuadvisor check could not run"
exit "$rc"
