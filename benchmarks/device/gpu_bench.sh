#!/usr/bin/env bash
# On a lent GPU machine, from the repository root (see benchmarks/README.md):
#   1. gpuadvisor's NCCL/CUDA benchmarks and an independent CuPy copy measurement, in one run
#      -> $OUT/bench-measurements.json, bench-terminal.txt, bench-compare.txt, gpu_bench.log
#   2. (COMPARE=1) the harness vs a bare torch.distributed loop, gloo on this machine's CPUs -> harness-vs-bare.txt
#   3. (CLI=1) `gpuadvisor bench --quick` through the installed command line -> cli-quick.txt
# Nothing here changes a GPU setting.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} PYTHONWARNINGS=ignore
nvidia-smi --query-gpu=name,pci.bus_id,pcie.link.gen.current,pcie.link.width.current,clocks.sm,clocks.mem --format=csv
python3 benchmarks/device/gpu_bench.py "$OUT" "${BUDGET:-200}" > "$OUT/gpu_bench.log" 2>&1; echo "gpu_bench.py rc=$?"
tail -n 25 "$OUT/gpu_bench.log"
if [ "${COMPARE:-0}" = 1 ]; then
  python3 benchmarks/bench_harness_vs_bare.py --min 1M --max 64M --iters 50 --rounds 5 > "$OUT/harness-vs-bare.txt" 2>&1
  echo "harness vs bare rc=$?"; cat "$OUT/harness-vs-bare.txt"
fi
if [ "${CLI:-0}" = 1 ]; then
  if python3 -m pip install -q --no-deps --no-build-isolation . > "$OUT/cli-quick.txt" 2>&1; then
    (cd /tmp && env -u PYTHONPATH gpuadvisor bench --quick --json /tmp/cli-quick.json) >> "$OUT/cli-quick.txt" 2>&1
    echo "cli rc=$?" | tee -a "$OUT/cli-quick.txt"
    tail -n 15 "$OUT/cli-quick.txt"
  else
    echo "pip install failed (see cli-quick.txt)"; tail -n 5 "$OUT/cli-quick.txt"
  fi
fi
