"""Every output ``gpuadvisor import`` reads, one row each: how it is recognised, parsed and merged.

A row (:class:`Format`, in :mod:`gpuadvisor.importers.format_row`) gives the output's kind (its name in the code and
tests), what the user reads (``name``: in ``--origins``, the scan's source, ``import --help`` and the README), the
detector that finds where it starts in a paste (by content, never the file name), the parser that turns its text
into a partial Rig, and the merge hook that puts that Rig into the imported one. ``split_sections`` tries the
detectors in the order of the rows; ``merge`` takes the outputs in order of ``trust`` (the lower keeps a fact two
outputs give). ``import --help``, the "not recognised" message and the README's list are made from these rows
(``python -m gpuadvisor.importers.registry`` prints the README's).

Adding a format: a module with its parser (``parse_x(text, source, first) -> Rig``) and its detector
(``starts(lines, i, current) -> bool``), one row below, fixtures and tests.
"""

from __future__ import annotations

import textwrap

from gpuadvisor.importers import (
    akash_gpu,
    app_log,
    beyond,
    beyond_tools,
    blockdev,
    club3090,
    collect_env,
    comfyui,
    container_errors,
    context_parsers,
    cuda_memtest,
    cuda_samples,
    cuda_samples_busgrind,
    cuda_samples_latency,
    cupy_config,
    daemon_log,
    dcgm,
    dcgm_diag_json,
    dcgm_proftester,
    dcgmi_dmon,
    dcgmi_profile,
    detect_gpu,
    detectron2_env,
    devicequery,
    df,
    digits_query,
    driver_container,
    driver_packages,
    env_generic,
    env_reports,
    fah_lspci,
    fio,
    framework_devices,
    gdscheck,
    go_log,
    gpu_burn,
    gpu_mr,
    gpu_tools,
    gpud,
    gpustat,
    hostengine,
    ibcounters,
    ibdev2netdev,
    iblinkinfo,
    ibv_pingpong,
    incus_gpu,
    ip_link,
    k8s,
    libgpu_devices,
    lshca,
    lspci,
    memlock,
    mst_status,
    nccl,
    nccl_topo_xml,
    nhc,
    numba_detect,
    nvbandwidth,
    nvc_info,
    nvitop,
    nvlink,
    nvme_ctrl,
    paddle_log,
    pair_matrix,
    perftest,
    pip_list,
    proc_info,
    proc_power,
    rdma_ports,
    rdma_res,
    show_gids,
    slurm_node,
    smi_csv,
    smi_dmon,
    smi_mig,
    smi_query,
    smi_summary,
    smi_vgpu,
    smi_xml_forms,
    storage,
    suite_env,
    sysfs_pci,
    topo,
    torch_config,
    ucc_perftest,
    verbs_devices,
    verbs_qp,
    verbs_wc,
    versions,
    xid_relay,
)
from gpuadvisor.importers.format_row import (
    BEYOND,
    GPU,
    STORAGE,
    Format,
    add,
    beyond_row,
    gpu_row,
    reads,
    reads_under,
)
from gpuadvisor.importers.merger import Merger

_add = add
_beyond = beyond_row
_gpu = gpu_row


_nvlink_parse = reads(nvlink.parse_nvlink_status)
FORMATS: tuple[Format, ...] = (
    Format("smi-q", "nvidia-smi -q", GPU, "nvidia-smi", "-q",
           "`==============NVSMI LOG==============`, or (pasted without it) `Timestamp`, `Driver Version` or a "
           "`GPU 0000:..` line, or keys from inside one GPU's section (`Persistence Mode`, `GPU UUID`, ...)",
           smi_query.starts_q, context_parsers.smi_q, _add, 1, extras=beyond.add_fabric),
    _gpu("nccl-topo-xml", nccl_topo_xml.WHAT, "NCCL", "NCCL_TOPO_DUMP_FILE",
           '`<system version="1">` (its `<cpu>`, `<pci busid=..>`, `<gpu dev=..>`, `<nvlink>` elements), or a '
           "`<pci busid=..>` line over a `<gpu dev=..>` line", nccl_topo_xml.starts,
           nccl_topo_xml.parse_nccl_topo_xml, 10, ends=nccl_topo_xml.ends),
    _gpu("smi-xml", "nvidia-smi -q -x", "nvidia-smi", "-q -x", "`<?xml` or `<nvidia_smi_log`",
           smi_xml_forms.starts_xml, smi_query.parse_smi_xml, 0, ends=smi_xml_forms.xml_ends),
    _gpu("topo-m", "nvidia-smi topo -m", "nvidia-smi", "topo -m",
           "a header row `GPU0 GPU1 ...` followed by a `GPU0` row, or (pasted without the header) a `GPU0  X ...` "
           "row, or a `GPU4 ...` row when the rows below show every column", topo.starts,
           topo.parse_topo_matrix, 5, settle=topo.settle, after=Merger.add_topology),
    Format("topo-p2p", "nvidia-smi topo -p2p", GPU, "nvidia-smi", "topo -p2p",
           "as `topo -m`, its cells `OK`, `CNS`, `NS`...", None, context_parsers.topo_p2p, _add, 6,
           after=Merger.add_topology),
    Format("nvlink", "nvidia-smi nvlink -s", GPU, "nvidia-smi", "nvlink -s",
           "`GPU 0: <name> (UUID: GPU-...)` with `Link N:` lines", nvlink.starts, _nvlink_parse, _add, 3,
           settle=nvlink.settle),
    Format("smi-list", "nvidia-smi -L", GPU, "nvidia-smi", "-L", "`GPU 0: <name> (UUID: GPU-...)` lines alone",
           None, _nvlink_parse, _add, 4),
    _gpu("smi-mig", smi_mig.WHAT, "nvidia-smi", "mig -lgi",
           "`| GPU instances: |` over `| GPU  Name  Profile  Instance  Placement |`, or `| MIG devices: |` alone",
           smi_mig.starts, smi_mig.parse_smi_mig, 2),
    _gpu("smi-vgpu", smi_vgpu.WHAT, "nvidia-smi", "vgpu",
           "nvidia-smi's banner or `| GPU  Name | Bus-Id | GPU-Util |` over `|  vGPU ID  Name | VM ID  VM Name | "
           "vGPU-Util |` (a vGPU host)", smi_vgpu.starts, smi_vgpu.parse_smi_vgpu, 2),
    Format("smi-summary", "nvidia-smi", GPU, "nvidia-smi", "plain",
           "`| NVIDIA-SMI 580.95.05  Driver Version: ...` (its box optional), or its message alone "
           "(`NVIDIA-SMI has failed because it couldn't communicate ...`, `Failed to initialize NVML: Driver/library "
           "version mismatch`, `WARNING: infoROM is corrupted ...`, `No devices were found` under its command)",
           smi_summary.starts, reads_under(smi_summary.parse_smi_summary), _add, 2,
           extras=beyond.add_processes, finish=smi_summary.finish),
    Format("smi-csv", "nvidia-smi --query-gpu --format=csv", GPU, "nvidia-smi", "--query-gpu",
           "a header `index, name, memory.total [MiB], ...` over as many comma-separated cells, or (under its "
           "`nvidia-smi --query-gpu=...` command) a one-field header, or its rows alone (`noheader`)",
           smi_csv.starts, reads_under(smi_csv.parse_smi_csv), _add, 2),
    _gpu("collect-env", "PyTorch collect_env report", "PyTorch collect_env", "",
           "`Collecting environment information...` or `GPU models and configuration:`", collect_env.starts,
           collect_env.parse_collect_env, 8),
    _gpu("detectron2-env", detectron2_env.WHAT, detectron2_env.WHAT, "",
           "`sys.platform  linux` (a two-column table, its `-----  -----` ruler above it optional)",
           detectron2_env.starts, detectron2_env.parse_detectron2_env, 8),
    _gpu("lightning-env", suite_env.WHAT_LIGHTNING, suite_env.WHAT_LIGHTNING, "", "`* CUDA:` over `- GPU:`",
           suite_env.starts_lightning, suite_env.parse_lightning_env, 8),
    _gpu("paddle-env", suite_env.WHAT_PADDLE, suite_env.WHAT_PADDLE, "", "`platform:` over `Paddle compiled "
           "with cuda:`", suite_env.starts_paddle, suite_env.parse_paddle_env, 8),
    _gpu("torch-config", torch_config.WHAT, torch_config.WHAT, "",
           "`PyTorch built with:` over its `  - CUDA Runtime 12.1` lines", torch_config.starts,
           torch_config.parse_torch_config, 8),
    _gpu("hf-env", env_reports.WHAT_HF, "ML environment reports", "Hugging Face env",
           "``- `Accelerate` version: 0.21.0`` (or `transformers`, `diffusers`, `huggingface_hub`) over `- Platform:` "
           "or `- Python version:`", env_reports.starts_hf, env_reports.parse_hf_env, 8),
    Format("ds-report", env_reports.WHAT_DS, GPU, "ML environment reports", "ds_report",
           "`DeepSpeed C++/CUDA extension op report` or `DeepSpeed general environment info:`, or `torch version "
           "..... 2.3.0+cu121` over a `deepspeed ... .....` line", env_reports.starts_ds,
           reads(env_reports.parse_ds_report), env_reports.merge_ds, 8),
    _gpu("jax-env", env_reports.WHAT_JAX, "ML environment reports", "jax",
           "`jax:    0.4.33` over `jaxlib: 0.4.33` (its nvidia-smi table read as nvidia-smi's)", env_reports.starts_jax,
           env_reports.parse_jax_env, 8),
    _gpu("pip-list", pip_list.WHAT, "ML environment reports", "pip or conda list",
           "`Package  Version` over a ruler, `# packages in environment at ...:`, or a row `torch  2.3.0+cu121`, "
           "`torch==2.3.0+cu121`, `nvidia-nccl-cu12  2.20.5` (`pip list | grep`)", pip_list.starts,
           pip_list.parse_pip_list, 8),
    _gpu("cupy-config", cupy_config.WHAT, "ML environment reports", "cupy show_config",
           "`OS   : Linux-...` or `CuPy Version   : 14.0.0` (padded keys) within two lines of its `CuPy Version` line",
           cupy_config.starts, cupy_config.parse_cupy_config, 8),
    Format("lspci", "lspci -vv", GPU, "lspci -vv", "",
           "`01:00.0 VGA compatible controller: ...`, or `LnkCap`/`LnkSta`/`Capabilities:`/`ACSCtl:` lines "
           "without their device line", lspci.starts, reads_under(lspci.parse_lspci), _add, 10, extras=beyond.add_acs),
    _gpu("sysfs-pci", sysfs_pci.WHAT, "sysfs", "PCI attributes",
           "`/sys/bus/pci/devices/BUS/current_link_speed:8.0 GT/s PCIe` (`grep . /sys/bus/pci/devices/BUS/*`), or "
           "`cat /sys/.../current_link_width` over its value", sysfs_pci.starts,
           sysfs_pci.parse_sysfs_pci, 10),
    Format("nccl-tests", "nccl-tests", GPU, "nccl-tests", "",
           "`# nThread`, `# nccl-tests version`, `# Collective test starting` (`#` optional), or a result row",
           nccl.starts, context_parsers.nccl_run, _add, 8, extras=beyond_tools.add_nccl_debug),
    _gpu("ucc-perftest", ucc_perftest.WHAT, "UCC", "ucc_perftest",
           "`Collective:  Alltoall` over `Memory type:  cuda`, or its header `Count  Size  Time, us  Bandwidth, GB/s`",
           ucc_perftest.starts, ucc_perftest.parse_ucc_perftest, 8),
    Format("cuda-bw", "CUDA samples bandwidthTest", GPU, "CUDA samples", "bandwidthTest",
           "`[CUDA Bandwidth Test] - Starting...`, or (without it) `Running on...` / "
           "` Device 0: NAME` over ` Quick Mode`", cuda_samples.starts_bw,
           reads_under(cuda_samples.parse_bandwidth_test), _add, 9),
    _gpu("busgrind", cuda_samples_busgrind.WHAT, "CUDA samples", "busGrind",
           "`Host/Device Bandwidth Matrix (GB/s), memory=Pinned` over `Dir\\D  0  1 ...`",
           cuda_samples_busgrind.starts, cuda_samples_busgrind.parse, 9),
    _gpu("cuda-p2p", "CUDA samples p2pBandwidthLatencyTest", "CUDA samples", "p2pBandwidthLatencyTest",
           "`[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]`, or (without it) "
           "`Device: 0, NAME, pciBusID: ..`, `P2P Connectivity Matrix` or a matrix title", cuda_samples.starts_p2p,
           cuda_samples.parse_p2p_latency_test, 7, after=Merger.add_topology),
    _gpu("latency-rows", cuda_samples_latency.WHAT, "CUDA samples", "latency table",
           "p2pBandwidthLatencyTest's `   GPU     0      1 ...` header over its row `     0   2.41  3.28 ...`, the "
           "matrix's title cut", cuda_samples_latency.starts, cuda_samples_latency.parse, 7),
    _gpu("cuda-simplep2p", "CUDA samples simpleP2P", "CUDA samples", "simpleP2P",
           "`[./simpleP2P] - Starting...`, or (without it) `> GPU0 = \"NAME\" IS capable of Peer-to-Peer (P2P)` or "
           "`> Peer access from NAME (GPU0) -> NAME (GPU1) : Yes`", cuda_samples.starts_simple_p2p,
           cuda_samples.parse_simple_p2p, 7, after=Merger.add_topology),
    _gpu("devicequery", devicequery.WHAT, "CUDA samples", "deviceQuery",
           "`./deviceQuery Starting...`, `Detected 2 CUDA Capable device(s)`, or (without them) `Device 0: \"NAME\"` "
           "over `CUDA Driver Version / Runtime Version`", devicequery.starts,
           devicequery.parse_devicequery, 8),
    _gpu("digits-devices", digits_query.WHAT, "DIGITS", "device_query.py",
           "`Device #0:` over `>>> CUDA attributes:` (its `name`, `totalGlobalMem`, `major`, `minor` rows), or "
           "`Device #0: NAME` over a `name` row", digits_query.starts, digits_query.parse_digits_query, 8),
    _gpu("cuda-memtest", cuda_memtest.WHAT, cuda_memtest.WHAT, "",
           "`[07/25/2025 14:49:00][host][0]:` lines of its own (`Running cuda memtest, version`, `NVRM version:`, "
           "`Device name=NAME, global memory size=BYTES`, `Test0 [Walking 1 bit]`)", cuda_memtest.starts,
           cuda_memtest.parse_cuda_memtest, 8),
    _gpu("libgpu-devices", libgpu_devices.WHAT, "GPGPU course libgpu", "",
           "`Found 3 GPUs in 0.28 sec (CUDA: ...)` or `Available devices:` over `  Device #0: API: CUDA+OpenCL+Vulkan. "
           "GPU. NAME (CUDA 13040). Free memory: 5166/6143 Mb.`", libgpu_devices.starts,
           libgpu_devices.parse_libgpu_devices, 8),
    _gpu("pair-matrix", pair_matrix.WHAT, "CUDA samples", "matrix rows",
           "two rows or more of a square GPU-pair matrix, their diagonal 0.00 (`     1 376.61   0.00 376.70 ...`), "
           "its title and column header cut", pair_matrix.starts, pair_matrix.parse, 7),
    _gpu("nvbandwidth", "nvbandwidth", "nvbandwidth", "",
           "`nvbandwidth Version: v0.8`, or `Running host_to_device_memcpy_ce.` over its `memcpy CE ...` title",
           nvbandwidth.starts, nvbandwidth.parse_nvbandwidth, 9),
    Format("dcgm-proftester", dcgm_proftester.WHAT, GPU, dcgm_proftester.WHAT, "",
           "`Skipping CreateDcgmGroups() since DCGM validation is disabled`, or a progress line `Worker 0:0[1007]: "
           "Fp32EngineActive: target max, dcgm 0` (`TensorEngineActive: generated ???, dcgm 0.000 (27334.5 gflops)`)",
           dcgm_proftester.starts, reads_under(dcgm_proftester.parse_dcgm_proftester), _add, 9),
    _gpu("dcgm", "DCGM (dcgmi discovery -l, dcgmi nvlink -s, dcgmi diag, dcgm-exporter)", "DCGM", "",
           "`|  NvLink Link Status  |` or `| GPU ID | Device Information |` (dcgmi), `GPUs:` over `gpuId 0:`, or a "
           '`DCGM_FI_...{gpu="0",...}` metric line', dcgm.starts, dcgm.parse_dcgm, 9),
    _gpu("proc-info", proc_info.WHAT, proc_info.WHAT, "",
           "`Model:  NVIDIA H100 80GB HBM3` over `IRQ:  10` (the driver's per-GPU file)", proc_info.starts,
           proc_info.parse_proc_info, 9),
    Format("proc-power", proc_power.WHAT, GPU, proc_power.WHAT, "",
           "`Runtime D3 status:  Enabled (fine-grained)` over `Video Memory:  Off` (the driver's per-GPU power file)",
           proc_power.starts, reads_under(proc_power.parse_proc_power), _add, 9),
    _gpu("nvc-info", nvc_info.WHAT, "nvidia-container-cli", "info",
           "`NVRM version:` over `CUDA version:`, or its debug log's `listing device /dev/nvidia0 (GPU-... at ...)`",
           nvc_info.starts, nvc_info.parse_nvc_info, 9),
    _gpu("incus-gpu", incus_gpu.WHAT, "incus", "info --resources",
           "`GPU:` or `GPUs:` over a card's `NUMA node:` (or `Card 0:`), `Vendor: NVIDIA Corporation (10de)` and "
           "`PCI address:` (Incus or LXD)", incus_gpu.starts, incus_gpu.parse_incus_gpu, 9),
    _gpu("club3090", club3090.WHAT, "club-3090", "report.sh",
           "`# club-3090 rig report`, or a `- **GPU 0:** NVIDIA GeForce RTX 3090 | 24576 MiB | driver 590.48.01 | ...` "
           "line (its GPU hardware part)", club3090.starts, club3090.parse, 9),
    _gpu("akash-gpu", akash_gpu.WHAT, "Akash provider-services", "tools psutil list gpu",
           '`{` over `"cards": [` or (through jq) `"vendor": {"id": "10de", "name": "NVIDIA Corporation"}` and its '
           '`"product"`', akash_gpu.starts, akash_gpu.parse_akash_gpu, 9),
    _gpu("detect-gpu", detect_gpu.WHAT, "detect-gpu (NVML JSON)", "",
           '`[{"index":0,"uuid":"GPU-...","name":"NAME","memoryInfo":{"Total":...},...,"systemGetDriverVersion":...`',
           detect_gpu.starts, detect_gpu.parse_detect_gpu, 9),
    _gpu("numba-detect", numba_detect.WHAT, numba_detect.WHAT, "",
           "`Found 2 CUDA devices` over `id 0    b'NAME'    [SUPPORTED]`, or that `id 0` line", numba_detect.starts,
           numba_detect.parse_numba_detect, 8),
    _gpu("llama-devices", framework_devices.LLAMA, "ML framework logs", "llama.cpp",
           "`ggml_cuda_init: found 2 CUDA devices:` over `  Device 0: NAME, compute capability 8.6, VMM: yes`, or "
           "`using device CUDA0 (NAME) - 23000 MiB free`", framework_devices.starts_llama,
           framework_devices.parse_llama, 8),
    _gpu("ollama-devices", framework_devices.OLLAMA, "ML framework logs", "ollama",
           '`msg="inference compute" id=GPU-... library=cuda ... name="NAME" total="23.6 GiB"`',
           framework_devices.starts_ollama, framework_devices.parse_ollama, 8),
    _gpu("tf-devices", framework_devices.TF, "ML framework logs", "TensorFlow",
           "`Found device 0 with properties:`, `Created TensorFlow device (...) -> physical GPU (device: 0, name: "
           "NAME, pci bus id: ..., compute capability: 8.6)` or `StreamExecutor device (0): NAME, Compute Capability "
           "8.6`", framework_devices.starts_tf, framework_devices.parse_tf, 8,
           after=Merger.add_topology),
    _gpu("torch-devices", framework_devices.TORCH, "ML framework logs", "PyTorch",
           "`_CudaDeviceProperties(name='NAME', major=8, minor=0, total_memory=81050MB, ...)` (YOLO: `Using CUDA "
           "device0 _CudaDeviceProperties(name='NAME', total_memory=11176MB)`)", framework_devices.starts_torch,
           framework_devices.parse_torch, 8),
    _gpu("paddle-devices", paddle_log.WHAT, "ML framework logs", "PaddlePaddle",
           "`device: 0, GPU Compute Capability: 6.1, Driver API Version: 10.1, Runtime API Version: 10.1` or `Cannot "
           "enable P2P access from 0 to 4`", paddle_log.starts, paddle_log.parse_paddle_log, 8,
           after=Merger.add_topology),
    _gpu("comfyui", comfyui.WHAT, "ML framework logs", "ComfyUI", comfyui.STARTS_WITH, comfyui.starts,
           comfyui.parse_comfyui, 8),
    _gpu("nvitop", nvitop.WHAT, nvitop.WHAT, "",
           "`│ NVITOP 1.4.2  Driver Version: 550.90.12  CUDA Driver Version: 12.4 │` over its `│   0  NAME  Off │ "
           "00000000:18:00.0 Off │` rows", nvitop.starts, nvitop.parse_nvitop, 8),
    _gpu("gpustat", gpustat.WHAT, gpustat.WHAT, "",
           "`HOST  Mon Aug 22 15:23:57 2022  515.65.01` over `[0] NAME | 27'C,   0 % |   103 / 16384 MB |`, or that "
           "`[0]` row", gpustat.starts, gpustat.parse_gpustat, 8),
    _gpu("smi-dmon", "nvidia-smi dmon", "nvidia-smi", "dmon",
           "`# gpu   pwr  gtemp ...` (or `temp`; `\\#` as markdown escapes it) over `# Idx     W      C ...`",
           smi_dmon.starts, smi_dmon.parse_smi_dmon, 9),
    _gpu("dcgmi-dmon", "dcgmi dmon", "DCGM", "", "`#Entity  XIDER  TMPTR ...` over `ID` and `GPU 0` rows, or "
           "`dcgmi dmon -l`'s `Long Name  Short Name  Field Id` (a note)",
           dcgmi_dmon.starts, dcgmi_dmon.parse_dcgmi_dmon, 9),
    _gpu("dcgmi-profile", dcgmi_profile.WHAT, "DCGM", "",
           "`| Group.Subgroup | Field ID | Field Tag |` over `| A.1 | 1002 | sm_active |` rows (a note: no GPU fact)",
           dcgmi_profile.starts, dcgmi_profile.parse_dcgmi_profile, 9),
    _gpu("fah-lspci", fah_lspci.WHAT, "Folding@home", "FAHClient --lspci",
           "`0x10de:0x13c0:3:0:0:NVIDIA Corporation:` (vendor:device:bus:slot:function:vendor name:device name)",
           fah_lspci.starts, fah_lspci.parse_fah_lspci, 9),
    _gpu("gpu-burn", gpu_burn.WHAT, "stress tests", "gpu_burn",
           "`30.0%  proc'd: 2412 (16011 Gflop/s) - ...   errors: 0 - ...   temps: 45 C - ...` (one entry per GPU), "
           "or `Tested 8 GPUs:` over `GPU 0: OK` / `GPU 3: FAULTY`", gpu_burn.starts, gpu_burn.parse, 9),
    _beyond("kernel-log", "dmesg / journalctl -k",
            "a dmesg, journalctl -k, syslog or /dev/kmsg line that mentions NVRM, Xid or nvidia",
            beyond.starts_kernel_log, daemon_log.parse, 11),
    _beyond("ibstat", "ibstat", "`CA 'mlx5_0'`", beyond.starts_ibstat, rdma_ports.ports_parser(rdma_ports.parse_ibstat),
            12),
    _beyond("ibv-devinfo", "ibv_devinfo", "`hca_id: mlx5_0`", beyond.starts_ibv_devinfo,
            rdma_ports.ports_parser(rdma_ports.parse_ibv_devinfo), 13),
    _beyond("ibstatus", "ibstatus", "`Infiniband device 'mlx5_0' port 1 status:`, or its `Fatal error:  device '*': "
            "sys files not found (/sys/class/infiniband/*/ports)` (no adapter)", beyond.starts_ibstatus,
            rdma_ports.ports_parser(rdma_ports.parse_ibstatus), 14),
    _beyond("ib-sysfs", "grep of /sys/class/infiniband/*/ports/*/",
            "`/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE` (`grep \"\" .../{state,rate,phys_state}`, "
            "`.../counters/*`, `.../hw_counters/*`), or a prompt in `.../ports/1/counters$` over `=== ./NAME ===` "
            "and each file's value",
            beyond.starts_ib_sysfs, rdma_ports.ports_parser(rdma_ports.parse_sysfs), 14),
    _beyond("mlxlink", "mlxlink (a port's Operational Info)",
            "`Operational Info` over its dashes and `State                           : Active`, `Physical state`, "
            "`Speed`, `Width`", rdma_ports.starts_mlxlink, rdma_ports.ports_parser(rdma_ports.parse_mlxlink), 14),
    _beyond("fabric-manager", "systemctl status nvidia-fabricmanager",
            "`● nvidia-fabricmanager.service - NVIDIA fabric manager service`, or its log lines",
            beyond.starts_fabric_manager, beyond.parse_fabric_manager_output, 15),
    _beyond("smi-fabric", "nvidia-smi -q Fabric section", "a `Fabric` line followed by `State :` (`grep -A 4 Fabric`)",
            beyond.starts_smi_fabric, beyond.parse_smi_fabric, 16),
    _beyond("smi-lost", "nvidia-smi: Unable to determine the device handle",
            "`Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error`",
            beyond.starts_smi_no_handle, beyond.parse_smi_no_handle, 18, family="nvidia-smi errors"),
    _beyond(rdma_res.KIND, rdma_res.WHAT, "`0: mlx5_0: pd 2 cq 3 qp 1 cm_id 0 mr 0 ctx 0 srq 0`, or `rdma res show "
            "qp`'s `link mlx5_0/1 lqpn 1 type GSI state RTS sq-psn 0 comm [ib_core]`", rdma_res.starts,
            rdma_res.parse, 19, family="rdma res"),
    _beyond("rdma-link", "rdma link", "`link mlx5_0/1 state ACTIVE physical_state LINK_UP`",
            beyond_tools.starts_rdma_link, beyond_tools.parse_rdma_link, 19),
    _beyond("lsmod", "lsmod", "`Module  Size  Used by`, or a module row such as `nvidia_peermem  16384  0` "
            "(`lsmod | grep`), an `lsmod | grep` that printed nothing, or modinfo's "
            "`filename: /lib/modules/.../nvidia-peermem.ko`", beyond_tools.starts_lsmod, beyond_tools.parse_lsmod, 20),
    _beyond("nccl-debug", "NCCL debug log", "`host:pid:tid [0] NCCL INFO ...` (NCCL_DEBUG=INFO)",
            beyond_tools.starts_nccl_debug, beyond_tools.parse_nccl_debug, 21),
    _beyond("perfquery", "perfquery", "`# Port counters: Lid 5 port 1 (CapMask: 0x5300)`",
            beyond_tools.starts_perfquery, beyond_tools.parse_perfquery, 22),
    _beyond("ibqueryerrors", "ibqueryerrors",
            '`GUID 0x1070fd0300370ea2 port 1: [LinkDownedCounter == 25]`, under `Errors for 0x... "node HCA-1"`',
            ibcounters.starts, ibcounters.parse_ibqueryerrors, 23),
    _beyond("ibdev2netdev", "ibdev2netdev", "`mlx5_0 port 1 ==> ib0 (Up)`", ibdev2netdev.starts,
            ibdev2netdev.parse_ibdev2netdev, 24),
    _beyond("iblinkinfo", "iblinkinfo", "`CA: host HCA-1:` or `Switch: 0x... name:` over a port line "
            "`... ==( 4X 25.78125 Gbps Active/  LinkUp)==> ...`", iblinkinfo.starts, iblinkinfo.parse_iblinkinfo, 27),
    _beyond("nhc", "NHC (Node Health Check) failures",
            "`ERROR:  nhc:  Health check failed:  check_hw_ib:  ...`, syslog's `nhc[123]: Health check failed:  ...`, "
            "or `Node Health Check failed.  Check CHECK returned 1`", nhc.starts, nhc.parse_nhc, 25, family="NHC"),
    _beyond("gpud", "gpud component state (fabric manager)",
            '`"component": "accelerator-nvidia-fabric-manager"` in gpud\'s JSON (health, reason, fabric_states)',
            gpud.starts, gpud.parse_gpud, 26),
    _beyond("cuda-not-ready", "CUDA error 802 (system not yet initialized)",
            "`system not yet initialized` (cudaErrorSystemNotReady) as gpu_burn, PyTorch or a CUDA sample prints it, "
            "or its number on a CUDA line (ollama's `cuInit err: 802`)",
            beyond_tools.starts_cuda_not_ready, beyond_tools.parse_cuda_not_ready, 27, family="CUDA errors"),
    _beyond("cuda-ecc", "CUDA error: uncorrectable ECC error encountered",
            "`CUDA error: uncorrectable ECC error encountered` (cudaErrorECCUncorrectable) as PyTorch, its NCCL "
            "watchdog or TensorFlow prints it", beyond_tools.starts_cuda_ecc, beyond_tools.parse_cuda_ecc, 27,
            family="CUDA errors"),
    _beyond("nv-hostengine", "DCGM host engine log (nv-hostengine.log)",
            "`2024-04-02 12:54:06.828 ERROR [1264985:1264994] [[NvSwitch]] ... [.../DcgmNvSwitchManager.cpp:967]`",
            hostengine.starts, hostengine.parse, 28),
    _beyond("gpu-tools", gpu_tools.WHAT, gpu_tools.STARTS_WITH, gpu_tools.starts, gpu_tools.parse, 28),
    _beyond("nvsentinel", "NVSentinel node condition (DCGM health watch)",
            "`ErrorCode:DCGM_FR_IMEX_UNHEALTHY GPU:0 ... Recommended Action=CONTACT_SUPPORT;`", nhc.starts_sentinel,
            nhc.parse_sentinel, 30, family="NVSentinel"),
    _beyond("show-gids", "show_gids", "`DEV  PORT  INDEX  GID  IPv4  VER  DEV` over `mlx5_0  1  3  0000:...:ac13:003c "
            "172.19.0.60  v2  ens1f0` rows, then `n_gids_found=N`", show_gids.starts, show_gids.parse_show_gids, 29),
    Format("xid-relay", "Xid relayed by gpud, the Kubernetes device plugin or NVML", BEYOND, "Xid relayers", "",
           "`XID 79(GPU has fallen off the bus) detected on PCI:0000:ae:00` or `xid 119 detected by dmesg` (gpud), "
           "`XidCriticalError: Xid=69 on Device=GPU-...` (device plugin; its `Skipping "
           "non-nvmlEventTypeXidCriticalError event: {...}` a note), or `...: ERROR_GPU_IS_LOST` naming a GPU UUID",
           xid_relay.starts, reads(xid_relay.parse_xid_relay), _add, 31, finish=xid_relay.finish),
    _beyond("ip-link", "ip link show", "`2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP ...`",
            ip_link.starts, ip_link.parse_ip_link, 32),
    _beyond("ifconfig", "ifconfig", "`ib0: flags=4163<UP,BROADCAST,RUNNING,MULTICAST>  mtu 2044` or `ib0  Link "
            "encap:InfiniBand  HWaddr ...`", ip_link.starts_ifconfig, ip_link.parse_ifconfig, 32),
    _gpu("dcgm-json", dcgm_diag_json.WHAT, "DCGM", "",
           '`"DCGM GPU Diagnostic" :` (DCGM 4: `"DCGM Diagnostic" :`) or `"test_categories" :`, pretty-printed or on '
           "one line, elided or cut", dcgm_diag_json.starts, dcgm_diag_json.parse, 9),
    _gpu("nvvs", "DCGM diagnostic's MIG message (nvvs, dcgmi diag)", "DCGM", "",
           "`GPU 0's MIG configuration is incompatible with the diagnostic because it prevents access to the entire "
           "GPU.`", dcgm.starts_nvvs, dcgm.parse_nvvs, 9),
    Format("fio-json", "fio --output-format=json", STORAGE, "fio", "--output-format=json",
           '`{` with `"fio version"`', fio.starts_json, storage.parse_fio, storage.add_bench, 17,
           ends=fio.json_ends, finish=storage.finish),
    Format("fio", "fio", STORAGE, "fio", "text", "`seqread: (g=0): rw=read, bs=(R) ...` or `fio-3.33`",
           fio.starts_text, storage.parse_fio, storage.add_bench, 17, finish=storage.finish),
    Format("lsblk-json", "lsblk -J", STORAGE, "lsblk", "-J", '`{` with `"blockdevices"`', blockdev.starts_lsblk_json,
           storage.parse_lsblk, storage.add_devices, 17, ends=fio.json_ends, finish=storage.finish),
    Format("lsblk", "lsblk", STORAGE, "lsblk", "plain",
           "`NAME MAJ:MIN RM SIZE RO TYPE MOUNTPOINTS`, or -P's pairs `NAME=\"sda\" TYPE=\"disk\" ...`",
           blockdev.starts_lsblk, storage.parse_lsblk, storage.add_devices, 17, finish=storage.finish),
    Format("nvme-list-json", "nvme list -o json", STORAGE, "nvme list", "-o json", '`{` with `"Devices"`',
           blockdev.starts_nvme_json, storage.parse_nvme_list, storage.add_models, 17, ends=fio.json_ends,
           finish=storage.finish),
    Format("nvme-list", "nvme list", STORAGE, "nvme list", "plain",
           "`Node ...` (or `nvme list -v`'s `Device  Generic  NSID  Usage ...`) over a dashed ruler",
           blockdev.starts_nvme, storage.parse_nvme_list, storage.add_models, 17, finish=storage.finish),
    Format("nvme-id-ctrl", "nvme id-ctrl", STORAGE, "nvme id-ctrl", "", "`NVME Identify Controller:`",
           nvme_ctrl.starts, storage.parse_nvme_id_ctrl, storage.add_models, 17, finish=storage.finish),
    Format("smartctl-nvme", nvme_ctrl.SMART_WHAT, STORAGE, "smartctl", "-a",
           "`smartctl 7.1 ...` over `=== START OF INFORMATION SECTION ===` and an NVMe `Model Number:`",
           nvme_ctrl.starts_smartctl, storage.parse_smartctl, storage.add_drive, 17, finish=storage.finish),
    Format("gdscheck", gdscheck.WHAT, STORAGE, "gdscheck", "-p", "` GDS release version: 1.13.0.11` (CUDA's gds/tools)",
           gdscheck.starts, reads(gdscheck.parse), _add, 17),
    Format("df", "df -h", STORAGE, "df", "", "`Filesystem Size Used Avail Use% Mounted on` (`Type` with -T)",
           df.starts, storage.parse_df, storage.add_mounts, 17, finish=storage.finish),
    _beyond("perftest", "perftest (ib_write_bw, ib_send_lat ...)",
            "a test's title ` RDMA_Write BW Test` over its `Device : mlx5_0` block and ` #bytes #iterations BW "
            "peak[Gb/sec] ...` rows, `--use_cuda`'s `initializing CUDA`, or ` Port number 1 state is Down` "
            "(perftest's check of the port before a test)", perftest.starts,
            perftest.parse_perftest, 31, family="perftest"),
    _beyond("scontrol-node", "Slurm scontrol show node (State, Reason)",
            "`NodeName=NAME Arch=x86_64 CoresPerSocket=1` then its indented `State=IDLE+DRAIN` and `Reason=...` lines",
            slurm_node.starts, slurm_node.parse, 32, family="Slurm"),
    _beyond("k8s-node", "kubectl describe node (GPU Feature Discovery labels, nvidia.com/gpu capacity)",
            "`Name:  NODE` over `Roles:`, `Capacity:` over `  cpu:  128` (`capacity:` in -o yaml), a label "
            "`nvidia.com/gpu.count=8`, or `  nvidia.com/gpu:  2` among the kubelet's resources (`  pods:  110`)",
            k8s.starts_node, k8s.parse_node, 33, family="Kubernetes", merge=k8s.merge_node),
    _beyond("k8s-pods", "kubectl get pods (GPU operator components)",
            "`NAME  READY  STATUS  RESTARTS  AGE` (`NAMESPACE` first with -A) over rows such as "
            "`nvidia-device-plugin-daemonset-5crlk  0/1  CrashLoopBackOff  12  40m`", k8s.starts_pods, k8s.parse_pods,
            33, family="Kubernetes"),
    _beyond(driver_container.KIND, driver_container.WHAT,
            "`Installation of the kernel module for the NVIDIA Accelerated Graphics Driver for Linux-x86_64 (version "
            "450.80.02) is now complete.`, or a step of its script: `Loading NVIDIA driver kernel modules...`, `Done, "
            "now waiting for signal`", driver_container.starts, driver_container.parse, 34, family="Kubernetes"),
    _beyond("container-errors", container_errors.WHAT,
            '`docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].`, '
            "`nvidia-container-cli: initialization error: nvml error: driver not loaded`, `nvidia-container-cli: "
            "initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file`, or "
            "`Failed to initialize NVML: Unknown Error`", container_errors.starts, container_errors.parse, 34,
            family="container runtime"),
    _beyond("go-log", "Go service log (JSON lines, Go's log lines: NVSentinel, the Kubernetes device plugin)",
            '`{"time":"...","level":"INFO","msg":"..."}` or `2023/06/12 09:21:25 No devices found. Waiting '
            "indefinitely.`", go_log.starts, go_log.parse_go_log, 11,
            family="service logs"),
    _beyond("verbs-qp", "a verbs program's port check and queue-pair errors (UCCL)",
            "`Verifying port state:` over `  link_layer: Ethernet (RoCE)` and `  port_state: ACTIVE`, then `Failed to "
            "modify QP to RTR: ...`", verbs_qp.starts, verbs_qp.parse_verbs_qp, 31, family="UCCL"),
    Format("verbs", verbs_devices.WHAT, BEYOND, "libibverbs", "",
           "`libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbs0` "
           "(or `couldn't open config directory`, `couldn't load driver`, `Driver X does not support the kernel "
           "ABI`), `No IB devices found`, ibv_devices' `device  node GUID` over its dashes, or a prompt's `ls "
           "/dev/infiniband`",
           verbs_devices.starts, reads(verbs_devices.parse), _add, 31, finish=verbs_devices.finish),
    _beyond(gpu_mr.KIND, "ibv_reg_mr failed: Bad address (GPU memory)", "`ibv_reg_mr failed (errno 14) (Ib failure: "
            "Bad address)`, under its debug lines", gpu_mr.starts, gpu_mr.parse, 27, family="libibverbs"),
    _beyond("ibv-pingpong", ibv_pingpong.WHAT,
            "`  local address:  LID 0x0013, QPN 0x000063, PSN 0x566748, GID ::` (then the remote's), or `Failed status "
            "transport retry counter exceeded (12) for wr_id 2`", ibv_pingpong.starts, ibv_pingpong.parse, 31,
            family="libibverbs"),
    _beyond("ucx-log", verbs_qp.UCX_WHAT,
            "`[host:pid:0:tid] ib_mlx5_log.c:139  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 ...)` "
            "(UCX 1.5: `... FATAL: Error on mlx5_3:1 QP 0xe6d7 wqe[7821]: Transport retry count exceeded ...`)",
            verbs_qp.starts_ucx, verbs_qp.parse_ucx, 31, family="UCX"),
    _beyond("verbs-wc", verbs_wc.WHAT,
            "`CQE ERROR wr_id=3 status=12(transport retry counter exceeded) ... qp_num=0x2c10`, "
            "`IBV_WC_RETRY_EXC_ERR`, or NCCL's `NET/IB : Got completion from peer ... with error 12, opcode 0, ...`",
            verbs_wc.starts, verbs_wc.parse, 31, family="libibverbs"),
    Format("smi-version", versions.WHAT_SMI, GPU, "nvidia-smi", "--version",
           "`NVIDIA-SMI version  : 550.54.14` over `NVML version`, `DRIVER version`, `CUDA Version` lines",
           versions.starts_smi, reads(versions.parse_smi_version), versions.keep_mismatch, 2),
    Format("proc-version", versions.WHAT_PROC, GPU, versions.WHAT_PROC, "",
           "`NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  ...` (or `... Open Kernel Module for "
           "x86_64  565.57.01  Release Build ...`)", versions.starts_proc, reads(versions.parse_proc_version),
           versions.keep_mismatch, 3),
    _gpu("cuda-toolkit", "nvcc --version, /usr/local/cuda/version.txt or version.json", "CUDA toolkit", "",
           "`nvcc: NVIDIA (R) Cuda compiler driver` or `Cuda compilation tools, release 12.2, V12.2.140`; "
           '`CUDA Version 11.0.228`; `"cuda" : {` over `"name" : "CUDA SDK"`', versions.starts_toolkit,
           versions.parse_toolkit, 8),
    Format("driver-packages", driver_packages.WHAT, GPU, "driver packages", "",
           "dpkg -l's `Desired=Unknown/Install/...` or a row `ii  nvidia-driver-535  535.104.05-0ubuntu1 ...`, "
           "rpm -qa's `nvidia-driver-cuda-570.86.16-1.el8.x86_64`, dnf's `nvidia-driver.x86_64  3:550.54.15-1.el9 ...`",
           driver_packages.starts, reads(driver_packages.parse_driver_packages), versions.keep_mismatch, 33,
           after=driver_packages.against_loaded),
    _beyond("lshca", lshca.WHAT,
            "`PCI_addr | RDMA | Net | Numa | LnkStat | IpStat | Link | Rate | LnkCapWidth | LnkStaWidth | HCA_Type` "
            "over rows such as `000a:11:00.0 | mlx5_0 | ib0 | 2 | down | down | IB | 10* | x16 G3 | x8 >!< | MT4119`",
            lshca.starts, lshca.parse, 14),
    _beyond("mst-status", mst_status.WHAT,
            "`DEVICE_TYPE  MST  PCI  RDMA  NET  NUMA` over rows such as `ConnectX6(rev:0)  /dev/mst/mt4123_pciconf0  "
            "3b:00.0  mlx5_2  net-ens24np0  0`", mst_status.starts, mst_status.parse, 14),
    _beyond("memlock", memlock.WHAT,
            "UCX's `... failed: Cannot allocate memory. Please set max locked memory (ulimit -l) to 'unlimited' "
            "(current: 64 kbytes)`, or `libibverbs: Warning: RLIMIT_MEMLOCK is 32768 bytes.`", memlock.starts,
            memlock.parse, 31, family="RDMA libraries"),
    _beyond(beyond_tools.CODE_KIND, "a program's CUDA or NVML error (its return code, name or message)",
            "a line printing a documented CUDA or NVML return code in the program's own words: `cudaError 719 "
            "(unspecified launch failure) calling ...`, `CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was "
            "encountered`, `ggml_cuda_init: failed to initialize CUDA: system has unsupported display driver / cuda "
            "driver combination`", beyond_tools.starts_cuda_error, beyond_tools.parse_cuda_error, 27,
            family="CUDA errors"),
    _beyond("daemon-log", "service and application logs (syslog, journal, glog/klog, Python logging, log4j, vLLM, "
            "IBM CSM, Slurm command errors)",
            "`May 31 05:33:40 host nvidia-persistenced[19176]: ...` (a service's syslog or journal line), "
            "`I0819 07:02:54.756486  1 main.go:235] ...`, `2024-03-01 12:00:00,123 WARN [main] ...`, "
            "`WARNING:torch.distributed:...`, `[ERROR] ...` (two such lines near the top), or `srun: error: ...`, "
            "as a paste's first output", daemon_log.starts, daemon_log.parse, 11, family="service logs"),
    _gpu("env-generic", env_generic.WHAT, "other environment reports", "",
           "three of `GPU 0:`, `VRAM:`, `CUDA version:`, `NVIDIA driver:`, `PyTorch version:`, `Python:`, `NCCL:`, "
           "`cuDNN:` (as `key: value`, `- key: value`, `**Key:** value` or `key   value`, or a sentence's or a log "
           "line's clauses: `Max memory: 23.6 GB.`, `Num GPUs = 1`, `gpu.name:`, `Torch 2.1.2+cu118`, `VRAM 8188`) "
           "within 15 lines, one naming an NVIDIA GPU or CUDA, or alone a runtime's device line "
           "(`INFO --> Using torch device: NVIDIA ...`, `Torch detected GPU: NVIDIA ...`) (tried last)",
           env_generic.starts, env_generic.parse, 8),
    Format("app-log", app_log.WHAT, BEYOND, "application logs", "",
           "a paste no other row reads that starts with two log lines (a time or level prefix, "
           "`m  20:51:15|ethminer ...`, `17:07:34:WARNING:WU01:...`, or a program's recurring tag, `GPU #7: ...`, "
           "`# NVML : 0 : ...`) and that names GPU work (CUDA, NVML, NCCL, NVIDIA, `GPU 3`, `gpu/0`, `cuda-4`) "
           "(tried last)", app_log.starts, app_log.parse, add, 11),
)  # fmt: skip
BY_KIND = {f.kind: f for f in FORMATS}
KINDS = [f.kind for f in FORMATS]


def name_of(kind: str) -> str:
    return BY_KIND[kind].name if kind in BY_KIND else kind


def _either(items: list[str]) -> str:
    """``a, b, or c`` (``a, b`` for two)."""
    return ", ".join(items[:-1]) + ", or " + items[-1] if len(items) > 2 else ", ".join(items)


def summary(group: str) -> str:
    """The group's formats in one phrase: ``nvidia-smi (-q, -q -x, ...), lspci -vv, ...``."""
    families: dict[str, list[str]] = {}
    for f in FORMATS:
        if f.group == group:
            families.setdefault(f.family, [])
            if f.variant:
                families[f.family].append(f.variant)
    return _either([fam + (f" ({', '.join(v)})" if len(v) == 2 else f" ({_either(v)})" if v else "")
                    for fam, v in families.items()])  # fmt: skip


def recognised() -> str:
    """What the "not recognised as ..." message names: the GPU outputs, and the other groups by name."""
    return (
        f"{summary(GPU)} output, nor as a kernel or service log, RDMA, fabric manager or storage output (import --help)"
    )


def help_text() -> str:
    """The ``import --help`` block listing every format, by group."""
    return "\n".join(
        textwrap.fill(
            f"{group}: {summary(group)}", 78, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False
        )
        for group in (GPU, BEYOND, STORAGE)
    )


README_START = "<!-- import formats: generated by python -m gpuadvisor.importers.registry -->"
README_END = "<!-- end of import formats -->"


def readme_table() -> str:
    """The README's list of the formats (between its markers), one row each."""
    rows = ["| Output | Group | Recognised by its first line |", "| --- | --- | --- |"]
    rows += [f"| {f.name} | {f.group} | {f.starts_with.replace('|', chr(92) + '|')} |" for f in FORMATS]
    return "\n".join([README_START, *rows, README_END])


if __name__ == "__main__":
    print(readme_table())
