"""The Rig facts model: the one data structure every source fills and every consumer reads.

Sources: live probes (``probes/``), the simulated NVML (same probe code), a saved scan (``load``), an import
of nvidia-smi/lspci output, or a rig spec. Consumers: rules, advisor, renderers. Nothing else is passed
between those layers.

Conventions:
- units are in field names (``memory_total_bytes``, ``busbw_gbps``); GB/s means 1e9 bytes/s;
- a field that could not be read is ``None`` and its reason sits in the owning object's ``unavailable``
  mapping under the field name (``gpu.unavailable["power_limit_w"] == "not supported by this GPU or driver"``);
- ``schema_version`` guards loading: an unknown version, a file that is not a scan or a malformed field is a
  ``FactsError`` whose message names the field.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuadvisor.advice_model import AdviceModel
from gpuadvisor.errors import InputError

SCHEMA_VERSION = 1
KIND = "gpuadvisor-scan"

# Reasons a fact is missing: fixed phrases so rules and renderers can group them.
NOT_SUPPORTED = "not supported by this GPU or driver"
NO_PERMISSION = "no permission (run as root or grant access)"
NO_DRIVER = "no NVIDIA driver loaded"
NO_LIBRARY = "NVML library not found"
FUNCTION_NOT_FOUND = "NVML function not found (driver or nvidia-ml-py too old)"
GPU_LOST = "GPU fell off the bus or was lost"
NOT_IN_SOURCE = "not present in the source this scan was made from"
NOT_RECORDED = "not recorded in this scan (saved by a gpuadvisor that did not read it)"
NVLINKS_ALL_INACTIVE = "no active NVLink (all links are inactive)"
# An imported paste that does not show a fact ('...', '[...]', '<snip>', a file cut mid-line): the reason starts
# with this phrase and names the line, e.g. "elided in the paste (line 24): links after link 1 not shown".
ELIDED = "elided in the paste"


class FactsError(InputError):
    """A scan file that cannot be used; the message names the file and the field."""


@dataclass
class Unavailable:
    """Mixin: the reasons for fields left ``None``; key = field name."""

    unavailable: dict[str, str] = field(default_factory=dict)

    def missing(self, name: str, reason: str) -> None:
        setattr(self, name, None)
        self.unavailable[name] = reason

    def why(self, name: str) -> str | None:
        return self.unavailable.get(name)


@dataclass
class PcieHop(Unavailable):
    """One PCI device on the path from a GPU to its CPU root port (the GPU itself first).

    ``link_*`` describe the link register of this device: for an endpoint or a switch upstream port that is
    the link towards the CPU; for a root port or a switch downstream port it is the link below it (the same
    physical link its child reports). ``port_type`` says which.
    """

    bdf: str = ""
    port_type: str = "unknown"  # endpoint | upstream-port | downstream-port | root-port | bridge | unknown
    name: str | None = None
    vendor_id: str | None = None
    device_id: str | None = None
    class_code: str | None = None
    current_speed_gts: float | None = None
    max_speed_gts: float | None = None
    current_gen: int | None = None
    max_gen: int | None = None
    current_width: int | None = None
    max_width: int | None = None
    # Advanced Error Reporting totals since boot (sysfs aer_dev_correctable / _nonfatal / _fatal); BadTLP,
    # BadDLLP and replay rollovers on a link show up here, on switches as well as on the GPU.
    aer_correctable: int | None = None
    aer_nonfatal: int | None = None
    aer_fatal: int | None = None


@dataclass
class Pcie(Unavailable):
    """A GPU's own PCIe link as NVML reports it, and the upstream path from sysfs."""

    current_gen: int | None = None
    max_gen: int | None = None  # max of this GPU *and* the system it sits in (NVML)
    gpu_max_gen: int | None = None  # max the GPU itself supports
    current_width: int | None = None
    max_width: int | None = None
    replay_counter: int | None = None
    path: list[PcieHop] = field(default_factory=list)  # GPU first, root port last
    # What lspci marked "(downgraded)" on the GPU's LnkSta ("speed", "width"): below the card's own LnkCap
    # (pciutils ls-caps.c link_compare), evidence even where the LnkCap line is not shown.
    downgraded: list[str] = field(default_factory=list)


@dataclass
class NvLink(Unavailable):
    link: int = 0
    active: bool | None = None
    version: int | None = None
    remote_bus_id: str | None = None
    remote_device_type: str | None = None  # gpu | switch | ibmnpu | unknown
    remote_gpu_index: int | None = None
    errors: dict[str, int] = field(default_factory=dict)  # replay, recovery, crc_flit, crc_data


@dataclass
class Gpu(Unavailable):
    index: int = 0
    name: str | None = None
    uuid: str | None = None
    serial: str | None = None
    bus_id: str | None = None  # NVML form, 0000:41:00.0 (domain normalised to 4 digits)
    architecture: str | None = None
    compute_capability: str | None = None  # "9.0"
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    power_limit_w: float | None = None
    power_default_limit_w: float | None = None
    power_draw_w: float | None = None
    temperature_c: float | None = None
    sm_clock_max_mhz: int | None = None
    ecc_enabled: bool | None = None
    ecc_errors_corrected_volatile: int | None = None
    ecc_errors_uncorrected_volatile: int | None = None
    ecc_errors_corrected_aggregate: int | None = None
    ecc_errors_uncorrected_aggregate: int | None = None
    # SRAM share of the corrected counts above (nvidia-smi -q "SRAM Correctable", Ampere on); None when not split
    ecc_errors_corrected_sram_volatile: int | None = None
    ecc_errors_corrected_sram_aggregate: int | None = None
    retired_pages_single_bit: int | None = None
    retired_pages_double_bit: int | None = None
    retired_pages_pending: bool | None = None
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    clocks_event_reasons: list[str] | None = None  # names, see probes.nvml.CLOCKS_EVENT_REASONS
    performance_state: int | None = None  # P-state number: 0 = P0 (maximum performance) .. 15 (minimum)
    persistence_mode: bool | None = None
    mig_mode: bool | None = None
    # MIG enabled: the framebuffer of each MIG device (nvidia-smi -q -x mig_devices), what a process on it gets
    mig_instances_memory_bytes: list[int] | None = None
    numa_node: int | None = None
    cpu_affinity: str | None = None  # cpulist, "0-55,112-167"
    pcie: Pcie = field(default_factory=Pcie)
    # A reason in unavailable["nvlinks"] next to a non-empty list means the list is incomplete (an imported paste
    # showed some links and elided the rest): see nvlinks_incomplete().
    nvlinks: list[NvLink] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"GPU {self.index}"

    def nvlinks_incomplete(self) -> str | None:
        """Why ``nvlinks`` lists only some of the GPU's links (the others not shown), or None if it is whole."""
        return self.unavailable.get("nvlinks") if self.nvlinks else None

    def active_nvlinks(self) -> list[NvLink]:
        return [n for n in self.nvlinks if n.active]


@dataclass
class Topology(Unavailable):
    """Pairwise facts, indexed by position in ``Rig.gpus``.

    ``matrix`` uses the ``nvidia-smi topo -m`` vocabulary: X (self), NV# (# NVLinks, bonded), PIX (at most one
    PCIe switch), PXB (several switches, no host bridge), PHB (through a host bridge), NODE (across host
    bridges within a NUMA node), SYS (across the inter-socket link). ``p2p_read``/``p2p_write`` use the
    ``nvidia-smi topo -p2p`` codes: X, OK, CNS (chipset), GNS (GPU), TNS (topology), NS (not supported),
    DIS (disabled by registry key), U (unknown).
    """

    matrix: list[list[str]] = field(default_factory=list)
    pcie_matrix: list[list[str]] = field(default_factory=list)  # the PCIe level alone (no NV#): PIX..SYS
    p2p_read: list[list[str]] | None = None
    p2p_write: list[list[str]] | None = None
    nics: list[str] = field(default_factory=list)
    nic_matrix: list[list[str]] = field(default_factory=list)  # rows = GPUs, columns = nics


@dataclass
class NumaNode:
    id: int = 0
    cpus: str | None = None  # cpulist
    memory_total_bytes: int | None = None


@dataclass
class Host(Unavailable):
    hostname: str | None = None
    os: str | None = None
    kernel: str | None = None
    arch: str | None = None
    cpu_model: str | None = None
    sockets: int | None = None
    cores_physical: int | None = None
    cores_logical: int | None = None
    memory_total_bytes: int | None = None
    memory_available_bytes: int | None = None
    numa_nodes: list[NumaNode] = field(default_factory=list)
    psu_watts: float | None = None  # given by the user (spec or --psu-watts); never probed
    net_interfaces: list[str] | None = None  # IP interface names (psutil.net_if_addrs); for NCCL_SOCKET_IFNAME checks


@dataclass
class Software(Unavailable):
    driver_version: str | None = None
    cuda_driver_version: str | None = None  # "13.0": the newest CUDA the driver supports
    nvml_version: str | None = None
    nvml_binding_version: str | None = None
    python_version: str | None = None
    torch_version: str | None = None
    torch_cuda_version: str | None = None
    nccl_version: str | None = None
    gpuadvisor_version: str | None = None
    env: dict[str, str] = field(default_factory=dict)  # CUDA_VISIBLE_DEVICES, NCCL_*, ...


@dataclass
class BlockDevice(Unavailable):
    """A block device under a path's filesystem: the disk itself, or an md/LVM volume with its members.

    kind: nvme | sata | sas | scsi | virtio | md | lvm | dm | loop | unknown. ``raid_level`` is md's
    (raid0, raid1, raid5, raid6, raid10, linear) or "lvm" for a device-mapper volume LVM made.
    ``pcie_path`` is the NVMe controller's path to its CPU root port (device first), as for a GPU.
    """

    name: str = ""  # kernel name: nvme0n1, sda, md0, dm-0
    kind: str = "unknown"
    model: str | None = None
    size_bytes: int | None = None
    rotational: bool | None = None
    raid_level: str | None = None
    members: list[BlockDevice] = field(default_factory=list)  # md / dm: the devices under it
    pcie_bdf: str | None = None
    pcie_path: list[PcieHop] = field(default_factory=list)
    numa_node: int | None = None


@dataclass
class StorageBench(Unavailable):
    """Measured (gpuadvisor bench --storage) or imported (fio output) throughput of one directory.

    GB/s means 1e9 bytes/s; IOPS are 4 KiB random reads at queue depth ``iodepth``.
    """

    provenance: str = "measured"  # measured | imported
    method: str | None = None  # "fio 3.36" | "gpuadvisor (python, O_DIRECT)"
    direct: bool | None = None  # O_DIRECT (page cache bypassed)
    file_bytes: int | None = None
    block_bytes: int | None = None
    iodepth: int | None = None
    seq_read_gbps: float | None = None
    seq_write_gbps: float | None = None
    rand_read_iops: float | None = None
    rand_read_latency_us: float | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class StoragePath(Unavailable):
    """A directory the job reads or writes (``role``: data | checkpoint | working) and what it lives on."""

    path: str = ""
    role: str = "working"
    mount_point: str | None = None
    fs_type: str | None = None  # ext4, xfs, nfs4, lustre, gpfs, fuse.s3fs, tmpfs ...
    fs_source: str | None = None  # /dev/nvme0n1p2, server:/export, ...
    network: bool | None = None  # NFS, Lustre, GPFS, CIFS, Ceph, object-store FUSE
    mount_options: list[str] = field(default_factory=list)
    size_bytes: int | None = None
    free_bytes: int | None = None
    devices: list[BlockDevice] = field(default_factory=list)
    bench: StorageBench | None = None


@dataclass
class Storage(Unavailable):
    """The paths the job uses and the host's page cache (/proc/meminfo ``Cached`` and ``MemAvailable``)."""

    paths: list[StoragePath] = field(default_factory=list)
    page_cache_bytes: int | None = None
    memory_available_bytes: int | None = None


@dataclass
class SweepRow:
    """One message size of a collective or copy sweep, nccl-tests style."""

    size_bytes: int = 0
    count: int = 0  # elements
    dtype: str = "float32"
    time_us: float = 0.0  # slowest rank's time per iteration
    algbw_gbps: float = 0.0
    busbw_gbps: float = 0.0
    correct: bool | None = None  # None: not checked
    errors: int | None = None  # wrong elements seen by the check


@dataclass
class Measurement(Unavailable):
    """One benchmark result (or an imported one) with its method and what the links should give.

    kind: all_reduce | all_gather | reduce_scatter | broadcast | p2p_unidir | p2p_bidir | p2p_latency | h2d |
    d2h | d2d | matmul | memory_bandwidth. ``value_gbps`` is the headline (largest-size busbw for collectives,
    bandwidth for copies and memory_bandwidth); matmul's is ``value_tflops`` (dense matmul TFLOP/s, 1e12 FLOP/s,
    2·M·N·K per product) of ``dtype`` (bf16 | fp16 | tf32 | fp8 | fp32) at ``shape`` ("MxNxK"), beside
    ``expected_tflops``, the datasheet dense peak (None on CPUs). backend "cuda" or "cpu" for these two.
    """

    kind: str = ""
    backend: str | None = None  # nccl | gloo | cuda | imported
    method: str | None = None
    provenance: str = "measured"  # measured | imported
    world_size: int | None = None
    gpus: list[int] = field(default_factory=list)
    hosts: list[str] = field(
        default_factory=list
    )  # collectives: each rank's host name, in rank order (multi-node runs)
    memory: str | None = None  # pinned | pageable (copies)
    concurrent: bool | None = None  # copies: all GPUs at once
    p2p_enabled: bool | None = None
    warmup_iters: int | None = None
    iters: int | None = None
    rows: list[SweepRow] = field(default_factory=list)
    value_gbps: float | None = None
    latency_us: float | None = None
    dtype: str | None = None  # matmul: bf16 | fp16 | tf32 | fp8 | fp32
    shape: str | None = None  # matmul: "MxNxK" (A is MxK, B is KxN)
    value_tflops: float | None = None  # matmul: measured dense TFLOP/s
    expected_tflops: float | None = None  # matmul: datasheet dense peak of that dtype
    expected_gbps: float | None = None
    expected_source: str | None = None
    ratio: float | None = None
    status: str = "ok"  # ok | partial | failed | timeout | skipped
    error: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Finding:
    """One rule's verdict on one subject."""

    code: str = ""
    name: str = ""
    area: str = ""
    severity: str = "info"  # info | warn | fail | error (rule crashed) | not-checked
    message: str = ""
    gpus: list[int] = field(default_factory=list)
    subject: str | None = None  # "GPU 2 0000:41:00.0", "link 0000:40:01.1 -> 0000:41:00.0", "host"
    observed: Any = None
    expected: Any = None
    expected_source: str | None = None
    fix: str | None = None


@dataclass
class Source:
    """Where these facts came from."""

    kind: str = "live"  # live | simulated | saved | imported | spec
    preset: str | None = None
    detail: str | None = None
    created_at: str | None = None  # ISO 8601 UTC
    tool_version: str | None = None
    files: list[str] = field(default_factory=list)  # imported: the files, in order

    @property
    def simulated(self) -> bool:
        return self.kind in ("simulated", "spec")


# -- beyond the GPU: kernel events, the RDMA network, GPUDirect, ACS/IOMMU, the NVSwitch fabric -----------------


@dataclass
class KernelEvent:
    """One NVIDIA driver event from the kernel log: an ``NVRM: Xid`` (GPU) or ``SXid`` (NVSwitch) line."""

    kind: str = "xid"  # xid | sxid
    code: int = 0
    bus_id: str | None = None  # as logged, normalised: "0000:3b:00" (Xid prints no function) or "0000:3b:00.0"
    gpu_index: int | None = None  # the GPU with that bus id in this scan, when known
    uptime_s: float | None = None  # seconds since boot ("[ 1843.308145]", /dev/kmsg)
    time: str | None = None  # wall clock as logged (journalctl / syslog), verbatim
    pid: int | None = None
    process: str | None = None
    text: str = ""  # the rest of the line after the code
    line: int | None = None  # line number in the log or paste


@dataclass
class KernelLog(Unavailable):
    """NVIDIA events of the kernel log. ``events`` None: the log could not be read (reason under "events")."""

    source: str | None = None  # "/dev/kmsg", "journalctl -k", "imported"
    lines_read: int | None = None
    uptime_s: float | None = None  # the host's uptime when the log was read: how old each event is
    events: list[KernelEvent] | None = None


@dataclass
class RdmaPort(Unavailable):
    """One port of an RDMA adapter (InfiniBand or RoCE), as /sys/class/infiniband or ibstat shows it."""

    device: str = ""  # mlx5_0
    port: int = 1
    state: str | None = None  # ACTIVE | DOWN | INIT | ARMED | ACTIVE_DEFER
    phys_state: str | None = None  # LinkUp | Polling | Disabled | Sleep | LinkErrorRecovery | ...
    rate_gbps: float | None = None  # signalling rate of the port, Gb/s (400 for NDR x4)
    link_layer: str | None = None  # InfiniBand | Ethernet
    firmware: str | None = None
    ca_type: str | None = None  # MT4129 (ConnectX-7)
    bus_id: str | None = None  # the adapter's PCI function


@dataclass
class AcsPort:
    """A PCIe bridge on a GPU's or NIC's path with its ACS Control bits (lspci ACSCtl names)."""

    bus_id: str = ""
    control: dict[str, bool] = field(default_factory=dict)  # SrcValid TransBlk ReqRedir CmpltRedir UpstreamFwd ...
    gpus: list[int] = field(default_factory=list)  # GPUs below this bridge
    nics: list[str] = field(default_factory=list)  # RDMA adapters below this bridge


@dataclass
class Network(Unavailable):
    """The RDMA network and what GPUDirect RDMA and PCIe peer traffic depend on."""

    rdma_ports: list[RdmaPort] | None = None
    modules: list[str] | None = None  # loaded kernel modules of interest (nvidia_peermem, nv_peer_mem, mlx5_ib, ...)
    peermem_loaded: bool | None = None  # nvidia_peermem or nv_peer_mem loaded (GPUDirect RDMA through peer memory)
    iommu_mode: str | None = None  # off | passthrough | translated
    iommu_groups: int | None = None
    acs: list[AcsPort] | None = None  # bridges on the GPUs' and NICs' paths that have an ACS capability
    # "open" | "proprietary": which NVIDIA kernel module is loaded (/proc/driver/nvidia/version, or the kernel
    # log's "NVRM: loading NVIDIA UNIX ... Kernel Module" line); GPUDirect RDMA through dma-buf needs the open one
    gpu_kernel_module: str | None = None


@dataclass
class GpuFabric(Unavailable):
    """A GPU's registration with the NVLink fabric (NVML GPU fabric info, nvidia-smi -q "Fabric")."""

    gpu_index: int = 0
    state: str | None = None  # not-supported | not-started | in-progress | completed
    status: str | None = None  # "success" or the error nvidia-smi prints
    clique_id: int | None = None
    cluster_uuid: str | None = None
    degraded_bandwidth: bool | None = None  # the fabric health mask: this GPU's NVLink bandwidth is degraded


@dataclass
class Fabric(Unavailable):
    """The NVSwitch fabric: the fabric manager service and each GPU's fabric state."""

    manager_state: str | None = None  # active | inactive | failed | activating | not-installed
    manager_detail: str | None = None  # the line it was read from ("Active: failed (Result: exit-code) since ...")
    gpus: list[GpuFabric] | None = None


@dataclass
class GpuProcess:
    gpu_index: int = 0
    pid: int = 0
    name: str | None = None
    used_bytes: int | None = None


@dataclass
class NodeState(Unavailable):
    """What jobs trip over around the GPUs: GPUs the driver lost, memory held, container limits."""

    nvidia_pci_functions: list[str] | None = None  # NVIDIA GPUs on the PCI bus (class 0x0300 / 0x0302), by bus id
    gpu_processes: list[GpuProcess] | None = None  # compute processes holding GPU memory when scanned
    shm_bytes: int | None = None  # size of /dev/shm
    memlock_bytes: int | None = None  # RLIMIT_MEMLOCK soft limit; None with memlock_unlimited True = unlimited
    memlock_unlimited: bool | None = None


@dataclass
class Rig:
    schema_version: int = SCHEMA_VERSION
    kind: str = KIND
    source: Source = field(default_factory=Source)
    host: Host = field(default_factory=Host)
    software: Software = field(default_factory=Software)
    gpus: list[Gpu] = field(default_factory=list)
    topology: Topology = field(default_factory=Topology)
    measurements: list[Measurement] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    advice: AdviceModel | None = None  # the advisor's output (gpuadvisor.advisor), or another tool's object
    # Derived when the rules ran (rules.summary.rig_verdict): state no-gpus|failing|warnings|healthy, headline,
    # counts, the worst findings in one line each, why (no-gpus). Views recompute it; JSON readers get it here.
    verdict: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)  # what went wrong while collecting, in order
    provenance: dict[str, str] = field(
        default_factory=dict
    )  # section -> read | measured | predicted | imported | simulated
    origins: dict[str, str] = field(
        default_factory=dict
    )  # imported: fact path ("gpus[0].pcie.current_width") -> "FILE:LINE (command)"
    kernel: KernelLog = field(default_factory=KernelLog)  # NVRM Xid / SXid events of the kernel log
    network: Network = field(default_factory=Network)  # RDMA ports, peermem, IOMMU, ACS
    fabric: Fabric = field(default_factory=Fabric)  # NVSwitch fabric manager and per-GPU fabric state
    node: NodeState = field(default_factory=NodeState)  # lost GPUs, GPU memory held, /dev/shm, memlock
    # The data path (probes.storage, bench --storage): the dataset/checkpoint directories, their devices, page cache.
    storage: Storage = field(default_factory=Storage)

    # -- convenience ------------------------------------------------------------------------------------
    def gpu(self, index: int) -> Gpu:
        for g in self.gpus:
            if g.index == index:
                return g
        raise KeyError(index)

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False, allow_nan=False) + "\n"

    def save(self, path: str | Path) -> None:
        """Write the scan atomically (gpuadvisor.output.write_atomic: never through a link, never half a file)."""
        from gpuadvisor.output import write_atomic

        write_atomic(path, self.to_json(), what="scan")


# -- serialisation ---------------------------------------------------------------------------------------

_PLAIN = (str, int, float, bool, type(None))


def to_dict(obj: Any) -> Any:
    if type(obj) in _PLAIN:  # most values (a 256-GPU matrix is 65,536 strings): no dataclass check per cell
        return obj
    if isinstance(obj, list | tuple) and all(type(v) in _PLAIN for v in obj):
        return list(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if hasattr(obj, "to_json_dict"):  # a type that writes its own JSON (the advice)
            return obj.to_json_dict()
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, list | tuple):
        return [to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return obj


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _typename(tp: Any) -> str:
    if tp is type(None):
        return "null"
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_typename(a) for a in typing.get_args(tp))
    if origin is list:
        return "list"
    if origin is dict:
        return "object"
    if dataclasses.is_dataclass(tp):
        return "object"
    return {int: "integer", float: "number", str: "string", bool: "boolean"}.get(tp, getattr(tp, "__name__", str(tp)))


def _convert(value: Any, tp: Any, where: str) -> Any:
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise FactsError(f"{where}: expected {_typename(tp)}, got null")
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _convert(value, a, where)
            except FactsError as e:
                errors.append(e)
        raise (
            errors[0] if len(errors) == 1 else FactsError(f"{where}: expected {_typename(tp)}, got {_describe(value)}")
        )
    if origin is list:
        (item,) = typing.get_args(tp)
        if not isinstance(value, list):
            raise FactsError(f"{where}: expected a list, got {_describe(value)}")
        return [_convert(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        _, vt = typing.get_args(tp)
        if not isinstance(value, dict):
            raise FactsError(f"{where}: expected an object, got {_describe(value)}")
        return {str(k): _convert(v, vt, f"{where}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if hasattr(tp, "from_json_dict"):  # a type that reads its own JSON (the advice), one-line errors
            try:
                return tp.from_json_dict(value, where)
            except ValueError as e:
                raise FactsError(str(e)) from None
        return _from_dict(tp, value, where)
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value  # an int stays an int, so a saved scan round-trips byte for byte
    elif tp is str:
        if isinstance(value, str):
            return value
    else:  # pragma: no cover - a type this model does not use
        return value
    raise FactsError(f"{where}: expected {_typename(tp)}, got {_describe(value)}")


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _from_dict(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise FactsError(f"{where or 'top level'}: expected an object, got {_describe(data)}")
    hints = _hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise FactsError(
            f"{(where + '.') if where else ''}{unknown[0]}: unknown field (not in schema version {SCHEMA_VERSION})"
        )
    kwargs = {}
    for name in names:
        if name in data:
            kwargs[name] = _convert(data[name], hints[name], f"{where}.{name}" if where else name)
    obj = cls(**kwargs)
    if isinstance(obj, Unavailable):
        # A fact this file does not carry (saved before the field existed) is null with that reason, like any
        # other missing fact, never a silent None.
        for f in dataclasses.fields(cls):
            if f.name not in data and f.name != "unavailable" and f.default is None and f.name not in obj.unavailable:
                obj.unavailable[f.name] = NOT_RECORDED
    return obj


def from_dict(data: Any, origin: str = "scan") -> Rig:
    """Build a Rig from parsed JSON, checking kind and schema_version first."""
    if not isinstance(data, dict):
        raise FactsError(f"{origin}: not a gpuadvisor scan (top level is {_describe(data)}, expected an object)")
    if data.get("kind") != KIND:
        raise FactsError(
            f"{origin}: not a gpuadvisor scan (field 'kind' is {_describe(data.get('kind'))}, expected \"{KIND}\")"
        )
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise FactsError(
            f"{origin}: field 'schema_version' is {_describe(version)}; this gpuadvisor reads version {SCHEMA_VERSION} "
            "(re-run the scan with this version, or upgrade gpuadvisor)"
        )
    try:
        return _from_dict(Rig, data, "")
    except FactsError as e:
        raise FactsError(f"{origin}: field {e}") from None


def load(path: str | Path) -> Rig:
    """Read a saved scan; every failure is a FactsError with one readable line."""
    from gpuadvisor.inputs import SCAN_LIMIT, loads_json, read_text

    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise FactsError(f"{p}: no such file (give the path of a scan saved with 'gpuadvisor scan --json FILE')")
    text = read_text(p, "a scan saved with --json", SCAN_LIMIT, FactsError)
    data = loads_json(text, str(p), "a scan saved with --json", FactsError)
    rig = from_dict(data, origin=str(p))
    return rig
