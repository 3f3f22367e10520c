#!/usr/bin/env bash
# On the lent GPU machine: the whole user path in one command — live probe, --bench --quick (NCCL + CUDA
# copies), rules, advice, JSON and HTML — recorded as the measured-scan fixture. Offline install, no deps.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-build-isolation --no-index -t /tmp/ga . > "$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
export PYTHONPATH=/tmp/ga
cd /tmp
/usr/bin/time -f "wall %e s, max RSS %M kB" python3 -m gpuadvisor scan --bench --quick --model llama-3-8b \
  --json "$OUT/scan-bench.json" --html "$OUT/scan-bench.html" > "$OUT/scan-bench.txt" 2> "$OUT/scan-bench.err"
echo "rc=$?"
tail -3 "$OUT/scan-bench.err"
sed -n '/^Measured bandwidth/,/^Strategy/p' "$OUT/scan-bench.txt"
