"""The GPU and host half of the facts model: a GPU (its PCIe path and NVLinks), the topology between GPUs, the
host, the software stack, where the facts came from; the reasons a fact is missing; the error a bad scan raises.

Conventions:
- units are in field names (``memory_total_bytes``, ``busbw_gbps``); GB/s means 1e9 bytes/s;
- a field that could not be read is ``None`` and its reason sits in the owning object's ``unavailable``
  mapping under the field name (``gpu.unavailable["power_limit_w"] == "not supported by this GPU or driver"``);
- ``schema_version`` guards loading: an unknown version, a file that is not a scan or a malformed field is a
  ``FactsError`` whose message names the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuadvisor.errors import InputError

SCHEMA_VERSION = 1
KIND = "gpuadvisor-scan"

# Reasons a fact is missing: fixed phrases so rules and renderers can group them.
NOT_SUPPORTED = "not supported by this GPU or driver"
NO_PERMISSION = "no permission (run as root or grant access)"
NO_DRIVER = "no NVIDIA driver loaded"
# The driver is installed but cannot be used: nvidia-smi's "couldn't communicate with the NVIDIA driver", and NVML's
# "Driver/library version mismatch" (the user-space library and the loaded kernel module differ). A reason starting
# with one of these says so; rule GA507 judges it.
DRIVER_UNREACHABLE = "nvidia-smi could not talk to the NVIDIA driver"
DRIVER_MISMATCH = "Driver/library version mismatch: NVML and the loaded NVIDIA kernel module are different versions"
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
    # nvmlDeviceGetBrand / nvidia-smi -q "Product Brand" as nvidia-smi prints it: "GeForce", "Tesla", "NVIDIA", ...
    brand: str | None = None
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
