#!/usr/bin/env bash
# One-off reconnaissance on a lent GPU machine: what nvidia-smi, sysfs and NVML say, saved under $OUT.
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
(nvidia-smi; nvidia-smi -q; nvidia-smi topo -m; nvidia-smi topo -p2p r; nvidia-smi nvlink -s) > "$OUT/smi.txt" 2>&1
nvidia-smi -q -x > "$OUT/smi-q.xml" 2>&1
(for d in /sys/bus/pci/devices/*; do echo "== $d -> $(readlink -f $d) class=$(cat $d/class) numa=$(cat $d/numa_node 2>&1) $(cat $d/current_link_speed 2>&1)/$(cat $d/max_link_speed 2>&1) x$(cat $d/current_link_width 2>&1)/x$(cat $d/max_link_width 2>&1) cpus=$(cat $d/local_cpulist 2>&1)"; done
 ls /sys/devices/system/node; cat /sys/devices/system/node/node*/cpulist; lscpu; free -b; uname -a; cat /etc/os-release) > "$OUT/sys.txt" 2>&1
python3 - > "$OUT/nvml.txt" 2>&1 <<'PY'
import pynvml, torch, sys
print(sys.version); print('pynvml', pynvml.__file__)
print('torch', torch.__version__, torch.version.cuda, torch.cuda.nccl.version(), torch.cuda.is_available())
pynvml.nvmlInit(); print(pynvml.nvmlSystemGetDriverVersion(), pynvml.nvmlSystemGetCudaDriverVersion(), pynvml.nvmlSystemGetNVMLVersion())
h = pynvml.nvmlDeviceGetHandleByIndex(0)
calls = {'nvmlDeviceGetTemperature': [0], 'nvmlDeviceGetRetiredPages': [1], 'nvmlDeviceGetMaxClockInfo': [1], 'nvmlDeviceGetCpuAffinity': [4], 'nvmlDeviceGetMemoryAffinity': [4, 0]}
for f in ['nvmlDeviceGetName','nvmlDeviceGetPciInfo','nvmlDeviceGetUUID','nvmlDeviceGetMemoryInfo','nvmlDeviceGetCudaComputeCapability','nvmlDeviceGetPowerManagementLimit','nvmlDeviceGetPowerManagementDefaultLimit','nvmlDeviceGetEnforcedPowerLimit','nvmlDeviceGetTemperature','nvmlDeviceGetEccMode','nvmlDeviceGetRetiredPages','nvmlDeviceGetRetiredPagesPendingStatus','nvmlDeviceGetRemappedRows','nvmlDeviceGetCurrentClocksEventReasons','nvmlDeviceGetCurrentClocksThrottleReasons','nvmlDeviceGetPersistenceMode','nvmlDeviceGetMigMode','nvmlDeviceGetNumaNodeId','nvmlDeviceGetCurrPcieLinkGeneration','nvmlDeviceGetMaxPcieLinkGeneration','nvmlDeviceGetGpuMaxPcieLinkGeneration','nvmlDeviceGetCurrPcieLinkWidth','nvmlDeviceGetMaxPcieLinkWidth','nvmlDeviceGetPcieReplayCounter','nvmlDeviceGetPowerUsage','nvmlDeviceGetSerial','nvmlDeviceGetArchitecture','nvmlDeviceGetBoardPartNumber','nvmlDeviceGetPcieSpeed','nvmlDeviceGetMaxClockInfo','nvmlDeviceGetCpuAffinity','nvmlDeviceGetMemoryAffinity','nvmlDeviceGetTotalEccErrors','nvmlDeviceGetBrand']:
    try:
        print(f, repr(getattr(pynvml, f)(h, *calls.get(f, []))))
    except Exception as e:
        print(f, 'ERR', type(e).__name__, e)
for l in range(18):
    try:
        print('link', l, pynvml.nvmlDeviceGetNvLinkState(h, l), pynvml.nvmlDeviceGetNvLinkVersion(h, l), pynvml.nvmlDeviceGetNvLinkRemotePciInfo(h, l).busId)
    except Exception as e:
        print('link', l, 'ERR', type(e).__name__, e); break
for lvl_fn in ['nvmlDeviceGetTopologyCommonAncestor']:
    try: print(lvl_fn, getattr(pynvml, lvl_fn)(h, h))
    except Exception as e: print(lvl_fn, 'ERR', e)
PY
cat "$OUT/nvml.txt"; grep -E '== ' "$OUT/sys.txt" | head -40; head -60 "$OUT/smi.txt"
