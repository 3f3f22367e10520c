#!/usr/bin/env bash
# On a lent GPU machine, from the repository root, in one call (nothing here changes a GPU setting):
#   1. recon of what the beyond-the-GPU probes read (kernel log, RDMA, fabric, IOMMU, node state, drives)
#      -> $OUT/recon.txt
#   2. a live scan with every probe (kernel log, RDMA, fabric, ACS, storage of the data/checkpoint dirs) and a
#      model, its HTML report -> $OUT/scan-v4.json, scan-v4.txt
#   3. bench --compute against an independent CUDA-event (and CuPy) timing -> $OUT/compute.txt
#   4. real training steps (transformers models, random tokens): tokens/s and peak memory -> $OUT/train.json
# Usage: OUT=out bash benchmarks/device/session4.sh
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONWARNINGS=ignore PYTHONUNBUFFERED=1
T0=$(date +%s)
log() { echo "[$(( $(date +%s) - T0 )) s] $*"; }

# gpuadvisor installed as a user would (no deps: the image has click, tabulate, psutil, nvidia-ml-py, jinja2)
if ! python3 -m pip install -q --no-deps --no-build-isolation --no-index -t /tmp/ga . > "$OUT/run.log" 2>&1; then
  log "pip install failed; laying the package out by hand"; tail -3 "$OUT/run.log"
  mkdir -p /tmp/ga && cp -r gpuadvisor /tmp/ga/ && cp -r probes /tmp/ga/gpuadvisor/probes && cp -r reports /tmp/ga/gpuadvisor/reports
fi
REPO=$PWD
log "installed"

{
  echo "## nvidia-smi"; nvidia-smi; nvidia-smi -q | sed -n '/Fabric/,/^    [A-Z]/p' | head -20
  echo "## nvidia-smi -q (GPU section heads)"; nvidia-smi -q | grep -E '^    [A-Z]' | sort -u | head -60
  echo "## /dev/kmsg"; ls -l /dev/kmsg 2>&1; timeout 5 dmesg 2>&1 | tail -n 40
  echo "## NVRM/Xid lines"; timeout 5 dmesg 2>&1 | grep -Ei 'nvrm|xid|nvidia' | tail -n 40
  echo "## journalctl"; command -v journalctl && timeout 5 journalctl -k -b --no-pager 2>&1 | tail -n 5
  echo "## infiniband"; ls -la /sys/class/infiniband 2>&1; ls /sys/class/net; for n in /sys/class/net/*; do echo "$n $(cat "$n"/operstate 2>/dev/null) $(cat "$n"/speed 2>/dev/null) $(readlink -f "$n"/device 2>/dev/null)"; done
  echo "## modules"; grep -E '^(nvidia|ib_|mlx|rdma)' /proc/modules 2>&1
  echo "## cmdline"; cat /proc/cmdline; echo "iommu_groups: $(find /sys/kernel/iommu_groups -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)"
  echo "## nvidia-fabricmanager"; command -v nv-fabricmanager; systemctl is-active nvidia-fabricmanager 2>&1 | head -2
  echo "## /dev/shm, memlock"; df -h /dev/shm; ulimit -l
  echo "## lspci (NVIDIA, capabilities)"; command -v lspci && lspci -d 10de: -vvv 2>&1 | grep -E '^[0-9a-f]|LnkCap|LnkSta|ACSCap|ACSCtl' | head -30
  echo "## block devices"; lsblk -b -o NAME,TYPE,SIZE,ROTA,MODEL,TRAN,MOUNTPOINT 2>&1 | head -30
  for b in /sys/block/*; do echo "$b rot=$(cat "$b"/queue/rotational) size=$(cat "$b"/size) model=$(cat "$b"/device/model 2>/dev/null)"; done
  echo "## mounts"; grep -E ' / | /tmp | /root ' /proc/self/mountinfo; df -h / /tmp "$REPO"
  echo "## pip"; python3 -m pip list 2>/dev/null | grep -Ei '^(torch|transformers|nvidia-ml-py|cupy|nvidia-nccl)'
} > "$OUT/recon.txt" 2>&1
log "recon done"

cd /tmp || exit 1
export PYTHONPATH=/tmp/ga
/usr/bin/time -f "scan wall %e s, max RSS %M kB" python3 -m gpuadvisor scan --torch --model llama-3-8b \
  --data-dir "$REPO" --checkpoint-dir /tmp --json "$OUT/scan-v4.json" > "$OUT/scan-v4.txt" 2>> "$OUT/run.log"
log "scan rc=$?"; tail -n 1 "$OUT/run.log"
COLUMNS=100 python3 -m gpuadvisor scan --from "$OUT/scan-v4.json" --no-rules > /dev/null 2>> "$OUT/run.log"; log "reload rc=$?"
sed -n '/^Findings/,$p' "$OUT/scan-v4.txt" | head -40

timeout 120 python3 "$REPO/benchmarks/compute_vs_independent.py" --rounds 2 > "$OUT/compute.txt" 2>&1
log "compute_vs_independent rc=$?"; tail -n 12 "$OUT/compute.txt"

timeout 230 python3 "$REPO/benchmarks/device/train_measure.py" "$OUT" "${TRAIN_BUDGET:-180}" > "$OUT/train.log" 2>&1
log "train_measure rc=$?"; grep -v Warning "$OUT/train.log" | tail -n 12
