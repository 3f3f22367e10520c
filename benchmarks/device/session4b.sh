#!/usr/bin/env bash
# The second call of this session on the lent GPU (after session4.sh): the fabric probe again with its fix
# (a structure passed by reference), and training steps at real layer shapes (Mixtral 8x7B, Qwen3-30B-A3B,
# Llama 3 8B with activation checkpointing) -> $OUT/scan-v4b.json, train2.json. Changes no GPU setting.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONWARNINGS=ignore PYTHONUNBUFFERED=1
REPO=$PWD
python3 -m pip install -q --no-deps --no-build-isolation --no-index -t /tmp/ga . > "$OUT/run2.log" 2>&1 || exit 1
(cd /tmp && PYTHONPATH=/tmp/ga python3 -m gpuadvisor scan --json "$OUT/scan-v4b.json" > "$OUT/scan-v4b.txt" 2>> "$OUT/run2.log")
echo "scan rc=$?"
python3 - "$OUT/scan-v4b.json" <<'PY'
import json, sys
print(json.dumps(json.load(open(sys.argv[1]))["fabric"]))
PY
mkdir -p "$OUT/t2"
TRAIN_SET=2 timeout 300 python3 "$REPO/benchmarks/device/train_measure.py" "$OUT/t2" 260 > "$OUT/train2.log" 2>&1
echo "train rc=$?"; mv "$OUT/t2/train.json" "$OUT/train2.json"; rmdir "$OUT/t2"
grep -v Warning "$OUT/train2.log" | tail -n 10
