#!/usr/bin/env bash
# On a lent GPU machine, from the repository root: run gpuadvisor's NCCL/CUDA benchmarks and an independent
# CuPy copy measurement in one run; results under $OUT (copied to tests/fixtures/h100-vm/ afterwards).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,pci.bus_id,pcie.link.gen.current,pcie.link.width.current,clocks.sm,clocks.mem --format=csv
python3 benchmarks/device/gpu_bench.py "$OUT" "${BUDGET:-200}" 2>&1 | tee "$OUT/gpu_bench.log"
