"""The Rig facts model: the one data structure every source fills and every consumer reads.

Sources: live probes (``probes/``), the simulated NVML (same probe code), a saved scan (``load``), an import
of nvidia-smi/lspci output, or a rig spec. Consumers: rules, advisor, renderers, the fleet view (through the
lean loader, ``lean``). Nothing else is passed between those layers.

The modules: ``model`` (a GPU, its PCIe path and NVLinks, the topology, host, software, source; the reasons a
fact is missing), ``measure`` (measurements, the measurement kinds, findings), ``beyond`` (storage, kernel
events, the RDMA network, the NVSwitch fabric, the node's state), ``rig`` (the Rig), ``serial`` (``to_dict``
and the JSON hook a dataclass may define), ``scanfile`` (``load``, ``from_dict``) and ``lean`` (the sections
the fleet view reads, fast and lenient). Import the names from here: ``from gpuadvisor.facts import Rig, Gpu``.
"""

from __future__ import annotations

from gpuadvisor.facts.beyond import (
    AcsPort,
    BlockDevice,
    Fabric,
    GpuFabric,
    GpuProcess,
    HealthCheck,
    KernelEvent,
    KernelLog,
    Network,
    NodeState,
    NvmeHealth,
    RdmaPort,
    Storage,
    StorageBench,
    StoragePath,
)
from gpuadvisor.facts.measure import (
    COLLECTIVES,
    COMPUTE,
    COPIES,
    HOST_COPIES,
    MEASUREMENT_KINDS,
    P2P,
    P2P_BW,
    Finding,
    Measurement,
    SweepRow,
)
from gpuadvisor.facts.model import (
    DRIVER_MISMATCH,
    DRIVER_UNREACHABLE,
    ELIDED,
    FUNCTION_NOT_FOUND,
    GPU_LOST,
    KIND,
    NO_DRIVER,
    NO_LIBRARY,
    NO_PERMISSION,
    NOT_IN_SOURCE,
    NOT_RECORDED,
    NOT_SUPPORTED,
    NVLINKS_ALL_INACTIVE,
    SCHEMA_VERSION,
    FactsError,
    Gpu,
    Host,
    NumaNode,
    NvLink,
    Pcie,
    PcieHop,
    Software,
    Source,
    Topology,
    Unavailable,
)
from gpuadvisor.facts.rig import Rig
from gpuadvisor.facts.scanfile import from_dict, load
from gpuadvisor.facts.serial import JsonHook, to_dict

__all__ = [
    "AcsPort",
    "BlockDevice",
    "COLLECTIVES",
    "COMPUTE",
    "COPIES",
    "DRIVER_MISMATCH",
    "DRIVER_UNREACHABLE",
    "ELIDED",
    "FUNCTION_NOT_FOUND",
    "FactsError",
    "Fabric",
    "Finding",
    "GPU_LOST",
    "Gpu",
    "GpuFabric",
    "GpuProcess",
    "HealthCheck",
    "HOST_COPIES",
    "Host",
    "JsonHook",
    "KIND",
    "KernelEvent",
    "KernelLog",
    "MEASUREMENT_KINDS",
    "Measurement",
    "NOT_IN_SOURCE",
    "NOT_RECORDED",
    "NOT_SUPPORTED",
    "NO_DRIVER",
    "NO_LIBRARY",
    "NO_PERMISSION",
    "NVLINKS_ALL_INACTIVE",
    "Network",
    "NodeState",
    "NvmeHealth",
    "NumaNode",
    "NvLink",
    "P2P",
    "P2P_BW",
    "Pcie",
    "PcieHop",
    "RdmaPort",
    "Rig",
    "SCHEMA_VERSION",
    "Software",
    "Source",
    "Storage",
    "StorageBench",
    "StoragePath",
    "SweepRow",
    "Topology",
    "Unavailable",
    "from_dict",
    "load",
    "to_dict",
]
