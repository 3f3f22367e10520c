"""Beyond the GPU in the facts model: storage (the job's directories, their devices and throughput), kernel events,
the RDMA network, GPUDirect, ACS/IOMMU, the NVSwitch fabric and the node's state around the GPUs."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from gpuadvisor.facts.model import PcieHop, Unavailable


@dataclass
class NvmeHealth:
    """An NVMe drive's SMART / Health Information log (log page 02h, NVMe Base Specification), as smartctl prints it.

    ``critical_warning`` is the log's bit field (bit 0 spare below threshold, 1 temperature, 2 reliability degraded,
    3 read-only, 4 volatile backup failed, 5 persistent memory region read-only); ``overall`` smartctl's
    self-assessment word (PASSED, FAILED!). A field the paste does not show is None."""

    overall: str | None = None
    critical_warning: int | None = None
    temperature_c: int | None = None
    available_spare_pct: int | None = None
    spare_threshold_pct: int | None = None
    percentage_used: int | None = None
    media_errors: int | None = None
    error_log_entries: int | None = None
    unsafe_shutdowns: int | None = None
    power_on_hours: int | None = None


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
    health: NvmeHealth | None = None  # smartctl's NVMe health log; written only when read

    def to_json_dict(self) -> dict[str, Any]:
        """Its fields, ``health`` (and a reason for it) only when a health log was read: scans stay as they were, and
        a scan read back without it is what was written."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if self.health is None:
            del out["health"]
            out["unavailable"] = {k: v for k, v in self.unavailable.items() if k != "health"}
        return out


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
class KernelEvent:
    """One event from the kernel log: an ``NVRM: Xid`` (GPU) or ``SXid`` (NVSwitch) line, or a sign without an
    Xid number (code 0): a GPU that failed to initialise, a GSP timeout, a PCIe AER error, an RDMA link flap."""

    # xid | sxid | gpu-init-failed | gpu-reset-required | gsp-timeout | aer-fatal | aer-nonfatal | aer-unrecovered
    # | aer-corrected | link-down | link-up | gsp-boot-failed | nvlink-discovery-failed | driver-hung | driver-oops
    kind: str = "xid"
    code: int = 0
    bus_id: str | None = None  # as logged, normalised: "0000:3b:00" (Xid prints no function) or "0000:3b:00.0"
    gpu_index: int | None = None  # the GPU with that bus id in this scan, when known
    uptime_s: float | None = None  # seconds since boot ("[ 1843.308145]", /dev/kmsg)
    time: str | None = None  # wall clock as logged (journalctl / syslog), verbatim
    pid: int | None = None
    process: str | None = None
    text: str = ""  # the rest of the line after the code
    line: int | None = None  # line number in the log or paste
    # events like this one (same kind, number, device and severity) before it in a long log, counted but not kept
    # (the first and the last few of each are kept: probes/kmsg_keep.py); written only when not 0
    more: int = 0

    def to_json_dict(self) -> dict[str, Any]:
        """Its fields, ``more`` only when some were counted without being kept (scans stay as they were)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if not self.more:
            del out["more"]
        return out


@dataclass
class KernelLog(Unavailable):
    """NVIDIA events of the kernel log. ``events`` None: the log could not be read (reason under "events")."""

    source: str | None = None  # "/dev/kmsg", "journalctl -k", "imported", SERVICE_LOG
    lines_read: int | None = None
    uptime_s: float | None = None  # the host's uptime when the log was read: how old each event is
    events: list[KernelEvent] | None = None


@dataclass
class RdmaPort(Unavailable):
    """One port of an RDMA adapter (InfiniBand or RoCE), as /sys/class/infiniband or ibstat shows it."""

    device: str = ""  # mlx5_0
    port: int | None = None  # None where the output names the adapter but not its port (unavailable["port"] says why)
    state: str | None = None  # ACTIVE | DOWN | INIT | ARMED | ACTIVE_DEFER
    phys_state: str | None = None  # LinkUp | Polling | Disabled | Sleep | LinkErrorRecovery | ...
    rate_gbps: float | None = None  # signalling rate of the port, Gb/s (400 for NDR x4)
    link_layer: str | None = None  # InfiniBand | Ethernet
    firmware: str | None = None
    ca_type: str | None = None  # MT4129 (ConnectX-7)
    bus_id: str | None = None  # the adapter's PCI function
    # error counters since the counters were last cleared (/sys/class/infiniband/DEV/ports/N/counters/, the
    # names sysfs uses: symbol_error, link_downed, link_error_recovery, port_rcv_errors, ...)
    counters: dict[str, int] | None = None

    def named(self, sep: str = "/") -> str:
        """The port as the tools name it ("mlx5_0/1"), or the adapter alone ("mlx5_0") where its number is unknown."""
        return self.device if self.port is None else f"{self.device}{sep}{self.port}"


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
    # from a pasted NCCL debug log (NCCL_DEBUG=INFO): the NICs NCCL used ("mlx5_0:1/IB"), the HCAs it disabled
    # GPUDirect RDMA for with its reason ("mlx5_1 (no module)"; [] none), the transports its channels took
    nccl_nics: list[str] | None = None
    nccl_gdr_disabled: list[str] | None = None
    nccl_transports: list[str] | None = None
    # NCCL's WARN that /dev/shm had no room for its shared-memory segment ("Call to posix_fallocate failed : No space
    # left on device", "Error: failed to extend /dev/shm/nccl-X to N bytes"): the line, as NCCL said it
    nccl_shm_full: str | None = None


@dataclass
class GpuFabric(Unavailable):
    """A GPU's registration with the NVLink fabric (NVML GPU fabric info, nvidia-smi -q "Fabric")."""

    gpu_index: int = 0
    state: str | None = None  # not-supported | not-started | in-progress | completed
    status: str | None = None  # "success" or the error nvidia-smi prints
    clique_id: int | None = None
    cluster_uuid: str | None = None
    degraded_bandwidth: bool | None = None  # the fabric health mask: this GPU's NVLink bandwidth is degraded
    health_summary: str | None = None  # nvidia-smi -q "Fabric / Health / Summary": Healthy | Unhealthy | ...


@dataclass
class Fabric(Unavailable):
    """The NVSwitch fabric: the fabric manager service and each GPU's fabric state."""

    manager_state: str | None = None  # active | inactive | failed | activating | not-installed
    manager_detail: str | None = None  # the line it was read from ("Active: failed (Result: exit-code) since ...")
    # what the fabric manager's own log says of the box: True it configured NVSwitches, False it found none
    # (NV_WARN_NOTHING_TO_DO: a box without NVSwitch, where the service has nothing to do)
    nvswitches: bool | None = None
    gpus: list[GpuFabric] | None = None
    # the IMEX daemon (multi-node NVLink memory export) as its own log says: "failed" (its log ends at an [ERROR] or
    # [FATAL] line: it did not start), "started" (its start, no error); None: no IMEX log given (not written then)
    imex_state: str | None = None
    imex_detail: str | None = None

    def __post_init__(self) -> None:
        for name in IMEX_FIELDS:  # null until an IMEX log gives them (the importer drops the reason then)
            if getattr(self, name) is None:
                self.unavailable.setdefault(name, NO_IMEX_LOG)

    def to_json_dict(self) -> dict[str, Any]:
        """Its fields, the IMEX daemon's (and their reason) only when an IMEX log gave them: scans stay as they
        were, and a scan read back without them is what was written."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name in IMEX_FIELDS:
            if out[name] is None:
                del out[name]
                out["unavailable"] = {k: v for k, v in out["unavailable"].items() if k != name}
        return out


IMEX_FIELDS = ("imex_state", "imex_detail")
NO_IMEX_LOG = "no IMEX daemon log (nvidia-imex) among the imported outputs"
# KernelLog.source of events read from a service's or a program's own log (syslog, journal, Python logging, a daemon):
# no kernel line among them, so no "kernel log"
SERVICE_LOG = "imported service or application log"
# a fabric manager detail that starts so: its log shows it failing to configure the fabric (rule GA809 judges it)
FABRIC_NOT_CONFIGURED = "the fabric manager did not configure the NVSwitches and GPUs"


@dataclass
class GpuProcess:
    gpu_index: int = 0
    pid: int = 0
    name: str | None = None
    used_bytes: int | None = None
    # nvidia-smi's Type column: C (compute), G (graphics), C+G, M (MPS), M+C; None where not given (NVML's
    # compute-process list holds only processes with a compute context)
    kind: str | None = None


@dataclass
class HealthCheck:
    """A check another health checker ran and did not pass, as its output says (imported: DCGM's dcgmi diag,
    LBNL NHC). ``verdict``: fail | warn, the checker's own word; ``section``: where the checker files the check
    (dcgmi diag's Deployment, Integration, Hardware, Stress), None where it does not say."""

    tool: str = ""  # "dcgmi diag" | "NHC"
    check: str = ""  # "GPU Memory", "check_hw_ib"
    verdict: str = "fail"
    detail: str = ""  # the checker's message, as printed
    gpus: list[int] = field(default_factory=list)
    section: str | None = None
    evidence: str = ""  # FILE:LINE of the verdict


@dataclass
class NodeState(Unavailable):
    """What jobs trip over around the GPUs: GPUs the driver lost, memory held, container limits."""

    nvidia_pci_functions: list[str] | None = None  # NVIDIA GPUs on the PCI bus (class 0x0300 / 0x0302), by bus id
    gpu_processes: list[GpuProcess] | None = None  # compute processes holding GPU memory when scanned
    shm_bytes: int | None = None  # size of /dev/shm
    memlock_bytes: int | None = None  # RLIMIT_MEMLOCK soft limit; None with memlock_unlimited True = unlimited
    memlock_unlimited: bool | None = None
    # another health checker's checks that failed or warned (imported); None: no checker's output was given
    health_checks: list[HealthCheck] | None = None
    # an RDMA library's own message that states the limit it failed or warned under (UCX's "Please set max locked
    # memory (ulimit -l) to 'unlimited' (current: 64 kbytes)", libibverbs' "RLIMIT_MEMLOCK is 32768 bytes"), as it
    # said it: RDMA was used on the node and the limit held it back; None: no such message (not written then)
    memlock_message: str | None = None

    def __post_init__(self) -> None:
        if self.memlock_message is None:  # null until a log gives it (the importer drops the reason then)
            self.unavailable.setdefault("memlock_message", NO_MEMLOCK_MESSAGE)

    def to_json_dict(self) -> dict[str, Any]:
        """Its fields, the RDMA library's message (and its reason) only when a log gave it: scans stay as they were,
        and a scan read back without it is what was written."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if out["memlock_message"] is None:
            del out["memlock_message"]
            out["unavailable"] = {k: v for k, v in out["unavailable"].items() if k != "memlock_message"}
        return out


NO_MEMLOCK_MESSAGE = "no RDMA library's locked-memory message (UCX, libibverbs) among the imported outputs"
