#!/usr/bin/env bash
# On the lent GPU machine: a scan with the current probe (P-state, SRAM ECC counts, AER per hop, net interfaces)
# and the default benchmark preset, plus its HTML report — recorded as tests/fixtures/h100-vm/scan-v2-bench.json.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-build-isolation --no-index -t /tmp/ga . > "$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
export PYTHONPATH=/tmp/ga
cd /tmp
ls /sys/bus/pci/devices/*/aer_dev_correctable 2>&1 | head -3
/usr/bin/time -f "wall %e s" python3 -m gpuadvisor scan --bench --model llama-3-8b --json "$OUT/scan-v2-bench.json" \
  --html "$OUT/scan-v2-bench.html" > "$OUT/scan-v2-bench.txt" 2> "$OUT/scan-v2.err"; echo "rc=$?"
tail -2 "$OUT/scan-v2.err"
python3 - "$OUT/scan-v2-bench.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); g = d["gpus"][0]
print("pstate", g["performance_state"], "sram", g["ecc_errors_corrected_sram_volatile"], g["ecc_errors_corrected_sram_aggregate"], g["unavailable"])
print("aer", [(h["bdf"], h["aer_correctable"], h["aer_nonfatal"], h["aer_fatal"], h["unavailable"].get("aer_correctable")) for h in g["pcie"]["path"]])
print("net", d["host"]["net_interfaces"])
for m in d["measurements"]:
    print(m["kind"], m["memory"], m["status"], m["value_gbps"], m["expected_gbps"], m["ratio"], len(m["rows"]), m["rows"][-1]["size_bytes"] if m["rows"] else None)
PY
sed -n '/^Findings/,/^Strategy/p' "$OUT/scan-v2-bench.txt" | head -30
