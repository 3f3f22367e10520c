#!/usr/bin/env bash
# Install gpuadvisor on the lent GPU machine (offline, no deps: the image has click, tabulate, psutil,
# nvidia-ml-py, jinja2, torch) and record a live scan of the real GPU as a test fixture.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-build-isolation --no-index -t /tmp/ga . > "$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
export PYTHONPATH=/tmp/ga
cd /tmp
/usr/bin/time -v python3 -m gpuadvisor scan --json "$OUT/scan-live.json" > "$OUT/scan-live.txt" 2> "$OUT/scan-time.txt"; echo "rc=$?"
python3 -m gpuadvisor scan --torch --json "$OUT/scan-live-torch.json" > /dev/null; echo "rc=$?"
grep -E "Elapsed|Maximum resident" "$OUT/scan-time.txt"
cat "$OUT/scan-live.txt"
