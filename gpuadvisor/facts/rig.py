"""The Rig: one scan, every section of the facts model, and its saved-file form (``to_json``, ``save``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuadvisor.advice_model import AdviceModel
from gpuadvisor.facts.beyond import Fabric, KernelLog, Network, NodeState, Storage
from gpuadvisor.facts.measure import Finding, Measurement
from gpuadvisor.facts.model import KIND, SCHEMA_VERSION, Gpu, Host, Software, Source, Topology
from gpuadvisor.facts.serial import to_dict


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
    # Not a field (it has no annotation), so never in the scan JSON: set by an import's readers when the driver's
    # output holds only some of the machine's GPUs (nvidia-smi -q -i N, an "Attached GPUs" count above the GPUs
    # shown, a paste cut inside its fence); GA810 then does not hold lspci's GPUs against it.
    partial_gpu_list = False

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
