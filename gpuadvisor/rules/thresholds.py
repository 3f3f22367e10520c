"""Every number a rule compares against, in one place, each with its source.

A policy file (``[thresholds]`` table, see ``gpuadvisor.rules.policy``) can override any of them by name; the
override is range-checked against ``minimum``/``maximum`` here. Rules read them through their context
(``ctx.t("ram_per_gpu_gb")``) and declare the names they use, so ``gpuadvisor explain CODE`` lists the values
that apply.

Units are in the names. GB means 1e9 bytes (as nvidia-smi's bandwidths and the seed guides' RAM sizes do).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuadvisor.physics import links

# Sources quoted by more than one threshold.
SRC_PARALLELISM_HOST = (
    "rules of thumb of GPU workstation build guides, not measured limits (16 GB RAM or 2 GB per GB of GPU "
    "memory per GPU, 2-4 CPU cores per GPU, PSU above GPU board power + CPU TDP + 150 W)"
)
SRC_DCGM_75 = (
    "NVIDIA DCGM diagnostics set their pass marks at 75% of a healthy GPU's measurement "
    "(github.com/NVIDIA/DCGM testing/gen_validation.sh: 'Multiply by .75'; "
    "docs.nvidia.com/datacenter/dcgm/latest/reference/diagnostics/plugins/pcie.html)"
)
SRC_PRODUCTION_90 = (
    "production node health checks fail a node at roughly 85-95% of the healthy figure: Azure HPC NHC "
    "(github.com/Azure/azurehpc-health-checks conf/nd96isr_h100_v5.conf check_nccl_allreduce 460 GB/s vs "
    "the ~480 GB/s NVLS peak NVIDIA quotes in github.com/NVIDIA/nccl-tests/issues/212 = 0.96, check_cuda_bw "
    "52 GB/s vs 53.6 GB/s for PCIe 5.0 x16 x 0.85 = 0.97; conf/nd96amsr_a100_v4.conf 228 GB/s vs the 232.5 GB/s "
    "of github.com/NVIDIA/nccl-tests/issues/175 = 0.98); DCGM's 0.75 is the other end. gpuadvisor warns below "
    "0.90, inside that band."
)


@dataclass(frozen=True)
class Threshold:
    name: str
    value: float
    unit: str
    description: str
    source: str
    minimum: float | None = None  # inclusive bounds a policy override must respect
    maximum: float | None = None
    integer: bool = False

    def check(self, value: object, where: str) -> float:
        """Validate a policy override; returns the value or raises ValueError with one line."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{where}: expected a number, got {value!r}")
        if self.integer and float(value) != int(value):
            raise ValueError(f"{where}: expected a whole number, got {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"{where}: {value!r} is below the allowed minimum {self.minimum:g}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"{where}: {value!r} is above the allowed maximum {self.maximum:g}")
        return float(value)


_ALL = [
    # -- PCIe -----------------------------------------------------------------------------------------
    Threshold(
        "pcie_replay_max",
        80,
        "replays",
        "PCIe replay counter (NVML, since the driver loaded) above which the link is reported as unreliable",
        "NVIDIA DCGM PCIe plugin default max_pcie_replays = 80, 'maximum PCIe replays allowed per device while the "
        "plugin runs' (github.com/NVIDIA/DCGM nvvs/plugin_src/pcie; docs.nvidia.com/datacenter/dcgm/latest/reference/"
        "diagnostics/plugins/pcie.html). NVML's counter covers the whole time since the driver loaded, so on a node "
        "up for weeks the same figure is stricter: what tells a bad link is a count that keeps rising",
        minimum=0,
        integer=True,
    ),
    Threshold(
        "pcie_aer_correctable_max",
        80,
        "errors",
        "AER correctable-error total (sysfs, since boot) of a device on a GPU's PCIe path above which its link is "
        "reported; any uncorrectable (non-fatal or fatal) error is reported regardless",
        "replays are correctable errors in the PCIe base spec's Advanced Error Reporting (Replay Timer Timeout, "
        "REPLAY_NUM Rollover, Bad TLP, Bad DLLP), so the same tolerance as pcie_replay_max (DCGM's 80); Linux "
        "Documentation/PCI/pcieaer-howto.rst: correctable errors are recovered by hardware, uncorrectable ones are not",
        minimum=0,
        integer=True,
    ),
    # -- NVLink / topology -----------------------------------------------------------------------------
    Threshold(
        "nvlink_error_max",
        0,
        "errors per counter",
        "NVLink replay, recovery or CRC error count per link above which the link is reported",
        "NVIDIA DCGM PCIe/NVLink plugin default max_nvlink_recovery_errors = 0; Meta GCM health checks "
        "(facebookresearch.github.io/gcm, check-dcgmi nvlink) default CRC/replay/recovery thresholds 0",
        minimum=0,
        integer=True,
    ),
    Threshold(
        "no_nvlink_min_gpus",
        4,
        "GPUs",
        "number of GPUs from which a rig without NVLink is reported (large-model training is PCIe-bound)",
        "Megatron-LM (Narayanan et al. 2021, section 3): tensor parallel puts collectives on every layer's "
        "critical path and belongs inside an NVLink domain; on PCIe-only machines t > 2 rarely pays",
        minimum=2,
        integer=True,
    ),
    # -- GPU health ------------------------------------------------------------------------------------
    Threshold(
        "ecc_corrected_max",
        10000,
        "errors",
        "corrected SRAM ECC errors (volatile or aggregate) above which a GPU's on-chip memory is reported as degrading",
        "Azure HPC NHC check_gpu_ecc SRAM correctable threshold 10000 (github.com/Azure/azurehpc-health-checks "
        "customTests/azure_gpu_ecc.nhc, conf/nd96isr_h100_v5.conf 'check_gpu_ecc 20000000 10000': the second "
        "argument, compared with ecc.errors.corrected.volatile.sram and .aggregate.sram)",
        minimum=0,
        integer=True,
    ),
    Threshold(
        "ecc_dram_corrected_max",
        20_000_000,
        "errors",
        "corrected ECC errors in total (volatile or aggregate; DRAM, or DRAM and SRAM where the scan does not "
        "split them) above which a GPU's memory is reported as degrading",
        "Azure HPC NHC check_gpu_ecc DRAM threshold 20000000 (conf/nd96isr_h100_v5.conf 'check_gpu_ecc 20000000 "
        "10000': the first argument, compared with ecc.errors.corrected.volatile.dram and .aggregate.dram; "
        "customTests/azure_gpu_ecc.nhc)",
        minimum=0,
        integer=True,
    ),
    Threshold(
        "retired_pages_max",
        60,
        "pages",
        "retired pages (single + double bit) at which a pre-Ampere GPU is close to running out of retirements",
        "NVIDIA: page retirement supports at most 64 retirements per frame buffer "
        "(docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/row-remapping.html); Azure NHC fails a V100 at 62 "
        "pending (customTests/azure_gpu_ecc.nhc). gpuadvisor reports at 60, before the table is full.",
        minimum=1,
        integer=True,
    ),
    Threshold(
        "row_remap_uncorrectable_max",
        512,
        "rows",
        "rows remapped for uncorrectable errors at which the remapper is exhausted",
        "NVIDIA RMA policy: 512 uncorrectable remappings set the row-remapping failure flag "
        "(docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/rma-policy-thresholds-for-row-remapping.html); "
        "Azure NHC uses the same 512",
        minimum=1,
        integer=True,
    ),
    Threshold(
        "power_limit_min_fraction",
        0.99,
        "fraction of default",
        "power limit below this fraction of the board's default limit is reported as capped",
        "NVML nvmlDeviceGetPowerManagementDefaultLimit (the board's rated limit); 1% tolerance for the "
        "milliwatt rounding of NVML and nvidia-smi",
        minimum=0.0,
        maximum=1.0,
    ),
    # -- host ------------------------------------------------------------------------------------------
    Threshold(
        "ram_per_gpu_gb",
        16,
        "GB per GPU",
        "system RAM per GPU below which data loading and checkpointing run short of memory",
        SRC_PARALLELISM_HOST,
        minimum=0,
    ),
    Threshold(
        "ram_per_gpu_memory_ratio",
        2.0,
        "GB RAM per GB of GPU memory",
        "system RAM per GB of total GPU memory recommended for heavy data loading and CPU offload",
        SRC_PARALLELISM_HOST,
        minimum=0,
    ),
    Threshold(
        "cpu_cores_per_gpu_min",
        2,
        "cores per GPU",
        "CPU cores per GPU below which data-loader workers starve the GPUs",
        SRC_PARALLELISM_HOST,
        minimum=0,
    ),
    Threshold(
        "psu_headroom_w",
        150,
        "W",
        "power added to the GPUs' board power and the CPUs' TDP for the rest of the platform (board, memory, "
        "disks, fans) when sizing the PSU (Intel's ATX 3.0 sizing example)",
        SRC_PARALLELISM_HOST,
        minimum=0,
    ),
    # -- bandwidth -------------------------------------------------------------------------------------
    Threshold(
        "bandwidth_warn_ratio",
        0.90,
        "measured / expected",
        "a measured bandwidth below this fraction of the expected figure is a warning",
        SRC_PRODUCTION_90,
        minimum=0.0,
        maximum=1.0,
    ),
    Threshold(
        "bandwidth_fail_ratio",
        0.75,
        "measured / expected",
        "a measured bandwidth below this fraction of the expected figure is a failure",
        SRC_DCGM_75,
        minimum=0.0,
        maximum=1.0,
    ),
    Threshold(
        "straggler_ratio",
        0.90,
        "GPU / median of its peers",
        "a GPU whose bandwidth is below this fraction of the median of identical measurements on its peers",
        "same tolerance as bandwidth_warn_ratio: production health checks accept a few percent of spread "
        "between healthy GPUs (Azure NHC floors sit 2-4% under typical values, see bandwidth_warn_ratio)",
        minimum=0.0,
        maximum=1.0,
    ),
    Threshold(
        "nccl_nvlink_efficiency",
        links.NCCL_NVLINK_EFFICIENCY,
        "busbw / NVLink line rate",
        "fraction of the NVLink line rate that NCCL ring collectives reach as busbw (protocol overhead)",
        "NCCL maintainer S. Jeaugey, github.com/NVIDIA/nccl-tests/issues/212: '450GB/s is the line rate. With "
        "the protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s' (370/450 = 0.82)",
        minimum=0.0,
        maximum=1.0,
    ),
    Threshold(
        "nccl_pcie_efficiency",
        links.NCCL_PCIE_EFFICIENCY,
        "busbw / PCIe line rate",
        "fraction of the narrowest PCIe link's per-direction rate that NCCL collectives reach as busbw with P2P",
        "24.54 GB/s busbw on 6x RTX 4090 over PCIe 4.0 x16 = 31.5 GB/s (nccl-tests all_reduce_perf published by "
        "tinygrad for its 6x RTX 4090 tinybox); the advisor predicts with the same figure",
        minimum=0.0,
        maximum=1.0,
    ),
    Threshold(
        "compute_peak_warn_ratio",
        0.5,
        "measured / datasheet dense peak",
        "a GPU's measured dense matmul TFLOP/s (bench --compute, large square and transformer-shaped products) "
        "below this fraction of its datasheet dense peak for that precision",
        "healthy GPUs reach 0.7-0.87 of their dense bf16 peak with cuBLAS on large products: 794.5 of 989 TFLOP/s "
        "(0.80) on H100 SXM and 271.2 of 312 (0.87) on A100 SXM, best shapes found by mamf-finder.py (Stas Bekman, "
        "Machine Learning Engineering, chapter 'Accelerators', table 'Maximum Achievable Matmul FLOPS'); one fixed "
        "shape and a short run lose up to about 0.1 more. Below 0.5 the GPU runs at roughly two thirds of the clock "
        "its peak assumes or less, which is what a power cap, a thermal or hardware slowdown or locked clocks do",
        minimum=0.0,
        maximum=1.0,
    ),
    Threshold(
        "memory_bandwidth_warn_ratio",
        0.6,
        "measured / datasheet memory bandwidth",
        "a GPU's measured device-memory copy bandwidth (bytes read + written per second) below this fraction of "
        "its datasheet memory bandwidth",
        "a large device-to-device copy reaches about 0.8-0.9 of the datasheet HBM bandwidth on healthy A100 and "
        "H100 GPUs (BabelStream copy and nvbandwidth device_local_copy results, e.g. about 1.3-1.4 of 1.555 TB/s on "
        "A100 40GB); 0.6 leaves room for the copy size and ECC on GDDR cards and still catches memory clocks held "
        "low",
        minimum=0.0,
        maximum=1.0,
    ),
    Threshold(
        "p2p_latency_fail_us",
        1000.0,
        "us",
        "a GPU-to-GPU copy latency (p2pBandwidthLatencyTest's GPU latency table) above this is a peer path that "
        "stalls: the copy neither went peer-to-peer nor through host memory at their usual speed",
        "published p2pBandwidthLatencyTest outputs (NVIDIA cuda-samples Samples/5_Domain_Specific/"
        "p2pBandwidthLatencyTest): P2P writes take 2.8-3.4 us over NVLink and copies staged through host memory "
        "(P2P disabled) 21-24 us on 8x A100 SXM4 (github.com/aistabci/abci2.0benchmark "
        "pt2pt/intra_anode/intra_anode.out). 1 ms is forty times the slowest of these; a redirected peer path "
        "(IOMMU, PCIe ACS: NCCL User Guide, Troubleshooting, "
        "docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html) shows tens of milliseconds",
        minimum=0.0,
    ),
    Threshold(
        "nccl_no_p2p_factor",
        links.NCCL_NO_P2P_FACTOR,
        "fraction",
        "what is left of PCIe busbw when the GPUs cannot do peer-to-peer and NCCL stages through host memory",
        "assumed: every byte crosses the root complex twice (NCCL SHM transport); the advisor uses the same figure",
        minimum=0.0,
        maximum=1.0,
    ),
]

from gpuadvisor.rules.thresholds_beyond import BEYOND  # noqa: E402 (needs Threshold above)

_ALL += BEYOND
THRESHOLDS: dict[str, Threshold] = {t.name: t for t in _ALL}
if len(THRESHOLDS) != len(_ALL):  # pragma: no cover - caught at import by every test
    raise RuntimeError("duplicate threshold name in gpuadvisor.rules.thresholds")


def fmt(value: float) -> str:
    """A threshold for people: 20000000 (not 2e+07), 0.9, 10000."""
    v = float(value)
    return str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:g}"


def defaults() -> dict[str, float]:
    """Name -> default value."""
    return {name: float(t.value) for name, t in THRESHOLDS.items()}
