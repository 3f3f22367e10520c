"""The rules engine: coded findings with evidence and fixes.

Public API (stable; ``gpuadvisor scan`` / ``check`` / the HTML report call it):

- ``evaluate(rig, policy=None) -> list[Finding]``: run every selected rule, worst finding first; also sets
  ``rig.findings``. ``policy`` is a ``Policy``, a path to a TOML policy file, or None.
- ``load_policy(path) -> Policy``: read a TOML policy (select / ignore / severity / thresholds / fail_on);
  an unknown key, code or threshold is an ``InputError`` (one line, exit 2).
- ``verdict(findings) -> tuple[str, dict[str, int]]``: "healthy" | "warnings" | "failing" and the count per
  severity.
- ``all_rules() -> list[Rule]``, ``get_rule(code_or_name) -> Rule | None``.

Codes, grouped by area (codes are never reused):

======  =========================================================================================
GA1xx   PCIe: link width and generation on the GPU and every hop of its path, slot limits, replays
GA2xx   GPU-to-GPU topology and NVLink: sockets, host bridges, NVLink presence/state/errors, P2P
GA3xx   the GPUs: mixed models, ECC, retired pages, row remapping, clock slowdowns, power limit,
        persistence, MIG
GA4xx   the host: RAM, CPU cores, NUMA affinity, power supply
GA5xx   software and environment: CUDA_VISIBLE_DEVICES, torch vs driver CUDA, NCCL variables
GA6xx   measured bandwidth and compute: host<->device, collectives, peer-to-peer, stragglers, bench
        failures, compute below the datasheet peak (GA607)
GA8xx   beyond the GPU: kernel-log Xid/SXid events, RDMA ports, GPUDirect, ACS/IOMMU, NVSwitch fabric,
        lost GPUs, GPU memory held, /dev/shm and memlock
GA9xx   the data path: NVMe links, network or slow filesystems, read rate vs need, checkpoint space and stall
======  =========================================================================================

Severities: a rule's default is info, warn or fail; a finding may also be "error" (the rule crashed; the other
rules still ran) or "not-checked" (the facts it needs are missing, with the reason). Thresholds live in
``gpuadvisor.rules.thresholds``, each with its source; published reference measurements in
``gpuadvisor.rules.references``.
"""

from __future__ import annotations

# The rule modules register their rules on import (GA101-GA103 pcie, GA104-GA105 pcie_errors, GA2xx topology,
# GA3xx gpu and gpu_memory, GA4xx host, GA5xx software, GA601-GA603 bandwidth, GA604-GA606 bench_record, GA607
# compute, GA9xx storage).
from gpuadvisor.rules import (  # noqa: F401
    bandwidth,
    bench_record,
    compute,
    gpu,
    gpu_memory,
    host,
    pcie,
    pcie_errors,
    software,
    storage,
    topology,
)
from gpuadvisor.rules import fabric as _fabric  # noqa: F401  (GA8xx: beyond the GPU)
from gpuadvisor.rules import health_checks as _health_checks  # noqa: F401
from gpuadvisor.rules import kernel as _kernel  # noqa: F401
from gpuadvisor.rules import log_lines as _log_lines  # noqa: F401
from gpuadvisor.rules import network as _network  # noqa: F401
from gpuadvisor.rules import rdma_health as _rdma_health  # noqa: F401
from gpuadvisor.rules.engine import Context, evaluate
from gpuadvisor.rules.policy import Policy, PolicyError, load_policy, parse_policy
from gpuadvisor.rules.registry import AREAS, REGISTRY, Rule, RuleDefinitionError
from gpuadvisor.rules.summary import SEVERITY_ORDER, counts, sort_findings, verdict


def all_rules() -> list[Rule]:
    """Every registered rule, by code."""
    return REGISTRY.all()


def get_rule(code_or_name: str) -> Rule | None:
    """A rule by code (case-insensitive, "ga101") or by name ("pcie-link-downgraded")."""
    return REGISTRY.get(code_or_name)


__all__ = [
    "AREAS",
    "REGISTRY",
    "SEVERITY_ORDER",
    "Context",
    "Policy",
    "PolicyError",
    "Rule",
    "RuleDefinitionError",
    "all_rules",
    "counts",
    "evaluate",
    "get_rule",
    "load_policy",
    "parse_policy",
    "sort_findings",
    "verdict",
]
