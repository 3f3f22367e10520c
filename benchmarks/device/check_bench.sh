#!/usr/bin/env bash
# On the lent GPU machine: the operator's gate with a quick benchmark, in all four output formats.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-build-isolation --no-index -t /tmp/ga . > "$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
export PYTHONPATH=/tmp/ga
cd /tmp
python3 -m gpuadvisor check --bench --quick --fail-on warn --json "$OUT/check-scan.json" --format prom -o "$OUT/gpuadvisor.prom" > "$OUT/check.txt" 2> "$OUT/check.err"
echo "check rc=$?"
python3 -m gpuadvisor check --from "$OUT/check-scan.json" --format junit -q -o "$OUT/check-junit.xml"; echo "junit rc=$?"
python3 -m gpuadvisor check --from "$OUT/check-scan.json" --format json | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['summary'])"
tail -4 "$OUT/check.txt"; tail -2 "$OUT/check.err"
grep -E "^gpuadvisor_(check_status|measurement_bandwidth)" "$OUT/gpuadvisor.prom" | head -12
