"""Ordering and counting findings, and the verdict of a scan: shared by the terminal renderer, the HTML report
and the check command."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from gpuadvisor import severity
from gpuadvisor.facts import Finding
from gpuadvisor.facts.beyond import SERVICE_LOG

# Worst first. "error" is a rule that crashed (we do not know the verdict: worse than a warning, below a
# failure); "not-checked" is a rule whose facts were missing.
SEVERITY_ORDER: tuple[str, ...] = severity.ORDER
_RANK = severity.RANK


def severity_rank(severity: str) -> int:
    return _RANK.get(severity, len(SEVERITY_ORDER))


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Worst first; then by rule code, then by the GPUs concerned."""
    return sorted(findings, key=lambda f: (severity_rank(f.severity), f.code, f.gpus, f.subject or ""))


def counts(findings: Iterable[Finding]) -> dict[str, int]:
    """Number of findings per severity, every severity present (zeros included), in SEVERITY_ORDER."""
    out = dict.fromkeys(SEVERITY_ORDER, 0)
    for f in findings:
        out[f.severity] = out.get(f.severity, 0) + 1
    return out


def verdict(findings: Iterable[Finding]) -> tuple[str, dict[str, int]]:
    """("failing" | "warnings" | "healthy", counts per severity).

    failing: at least one fail. warnings: no fail but a warning, or a rule that crashed (its verdict is
    unknown). healthy: neither. info and not-checked findings do not change the verdict.
    """
    c = counts(findings)
    if c["fail"]:
        return "failing", c
    if c["warn"] or c["error"]:
        return "warnings", c
    return "healthy", c


# -- the verdict of a whole scan ------------------------------------------------------------------------------

NO_GPUS = "no-gpus"
_EVIDENCE = re.compile(r"\s*\([^()]*=[^()]*\)")
WORST_SHOWN = 3  # the verdict names this many of the worst findings, then "+N more"
NO_GPU_PREFIX = "no NVIDIA GPU or driver found"
_NO_GPU_PREFIX = NO_GPU_PREFIX


def one_line(f: Finding) -> str:
    """A finding in one line: its code and the first clause of its message, without the evidence in brackets.

    "GA101 GPU 2 0000:41:00.0 runs at x8 where its slot and card support x16"
    """
    msg = " ".join(f.message.split())
    msg = _EVIDENCE.sub("", msg)  # "(current_link_width=8, max_link_width=16)": the evidence, shown with the finding
    msg = msg.split("; ")[0]
    if f.severity == "error":
        msg = f"rule crashed (a gpuadvisor bug): {msg}"
    return f"{f.code} {msg}".strip()


def worst(findings: Iterable[Finding], limit: int = WORST_SHOWN) -> tuple[list[Finding], int]:
    """The findings that decide the verdict (fail and error; else warn), worst first, at most ``limit``, and how
    many more of them there are."""
    ordered = sort_findings(findings)
    top = [f for f in ordered if f.severity in ("fail", "error")] or [f for f in ordered if f.severity == "warn"]
    return top[:limit], max(0, len(top) - limit)


def no_gpu_hint(reason: str | None, env: dict[str, str], container: str | None) -> str:
    """What to do when NVML shows no GPU, picked from why NVML failed, the environment and whether this runs in a
    container (``container``: the marker file found, e.g. "/.dockerenv", or None)."""
    hints: list[str] = []
    nvd = env.get("NVIDIA_VISIBLE_DEVICES")
    if nvd is not None and nvd.strip().lower() in ("", "void", "none"):
        hints.append(
            f"NVIDIA_VISIBLE_DEVICES={nvd!r} asks the NVIDIA container runtime for no GPU: set it to 'all' "
            "(or run the container with --gpus all)"
        )
    if reason == "NVML library not found":
        if container:
            hints.append(
                f"this is a container ({container} exists) without the NVIDIA runtime: run it with "
                "'docker run --gpus all' (nvidia-container-toolkit on the host; in Kubernetes request nvidia.com/gpu)"
            )
        else:
            hints.append(
                "no NVIDIA driver is installed (libnvidia-ml.so is missing): install the NVIDIA driver, then "
                "'nvidia-smi' should list the GPUs"
            )
    elif reason == "no NVIDIA driver loaded":
        hints.append(
            "the NVIDIA kernel module is not loaded: 'sudo modprobe nvidia' and read 'dmesg | grep -i nvidia' "
            "(after a kernel update the driver may need rebuilding)"
        )
    elif reason and reason.startswith("no permission"):
        hints.append(
            "no permission to open /dev/nvidia*: run as root or add this user to the group owning /dev/nvidia*"
        )
    elif reason == "NVML found no GPU":
        hints.append(
            "the driver is loaded but lists no GPU: check 'nvidia-smi' and 'dmesg' (a GPU that fell off the "
            "bus, or a container given no device)"
        )
    elif reason and reason.startswith("nvidia-ml-py is not installed"):
        hints.append("install nvidia-ml-py (pip install nvidia-ml-py) so gpuadvisor can read NVML")
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None and cvd.strip() in ("", "-1"):
        hints.append(f"CUDA_VISIBLE_DEVICES={cvd!r} also hides every GPU from CUDA programs: unset it")
    if not hints:
        hints.append("check that 'nvidia-smi' lists the GPUs")
    return "; ".join(hints)


def no_gpu_reason(rig: Any) -> tuple[str, str | None]:
    """Why a scan lists no GPU and what to do, as the scan recorded them (the NVML reason beside the driver
    version, the hint in its problems), or what its source implies."""
    reason = rig.software.why("driver_version") if rig.source.kind == "live" else None
    todo = None
    for p in rig.problems:
        if p.startswith(_NO_GPU_PREFIX):
            todo = p.split(f"({reason}): ", 1)[1] if reason and f"({reason}): " in p else p
            break
    if reason is None:
        reason = {"imported": "the imported outputs list no GPU", "live": "NVML lists no GPU"}.get(
            rig.source.kind, "the scan lists no GPU"
        )
    return reason, todo


@dataclass
class Verdict:
    """The verdict of a scan: what every view of it shows (terminal, report, HTML, JSON)."""

    state: str  # no-gpus | failing | warnings | healthy
    counts: dict[str, int]
    worst: list[str] = field(default_factory=list)  # one line per worst finding (one_line)
    more: int = 0  # further findings at the worst level, not named
    why: str | None = None  # no-gpus: why (the NVML reason)
    todo: str | None = None  # no-gpus: what to do

    @property
    def headline(self) -> str:
        return {NO_GPUS: "No GPUs found", "failing": "Failing", "warnings": "Warnings", "healthy": "Healthy"}[
            self.state
        ]

    def to_dict(self) -> dict[str, Any]:
        rest = {f.name: getattr(self, f.name) for f in fields(self)[1:]}  # counts, worst, more, why, todo
        return {"state": self.state, "headline": self.headline} | rest


NO_FAULT_IN_LOGS = "no fault in the logs given"
NO_KNOWN_FAULT_IN_LOGS = "no known fault in the logs given, but error lines the tool does not judge (GA828)"
NO_NODE_FAULT_APP_ERROR = "no fault of the node in the logs given, but an application's own CUDA error (GA828)"
NO_FAULT_IN_OUTPUTS = "no fault in the outputs given"  # no log among them: the driver's version alone


def _app_fault(f: Any) -> bool:
    """A GA828 finding of an application's own CUDA error (its evidence names the code), not of unjudged lines."""
    return isinstance(f.observed, dict) and "code" in f.observed


def log_name(source: str | None) -> str:
    """What the log whose events a scan holds is: a kernel log, or a service's or program's own log."""
    return "service or application log" if source == SERVICE_LOG else "kernel log"


def logs_given(rig: Any) -> list[str]:
    """What a scan holds for the rules besides GPUs: a kernel log, RDMA ports, the fabric manager's state, the
    GPUs' fabric registration, the NVIDIA functions on the PCI bus, the driver's version (empty: nothing to judge
    without a GPU)."""
    held = {
        log_name(rig.kernel.source): rig.kernel.events is not None,
        "RDMA ports": rig.network.rdma_ports is not None,
        "fabric manager": rig.fabric.manager_state is not None,
        "IMEX daemon": getattr(rig.fabric, "imex_state", None) is not None,
        "GPU fabric state": rig.fabric.gpus is not None,
        "PCI functions": rig.node.nvidia_pci_functions is not None,
        # nvidia-smi --version, /proc/driver/nvidia/version, the driver packages (a live scan always has it)
        "driver version": rig.source.kind == "imported" and rig.software.driver_version is not None,
    }
    return [name for name, yes in held.items() if yes]


def rig_verdict(rig: Any) -> Verdict:
    """The scan's verdict: the findings' verdict, with the worst findings named; "no-gpus" when the scan lists no
    GPU and no rule found a fault in what it does hold (a pasted kernel log or ibstat is judged without a GPU
    list: its Xid events or ports down are not hidden behind "no GPUs found")."""
    state, c = verdict(rig.findings)
    if not rig.gpus:
        why, todo = no_gpu_reason(rig)
        if state == "healthy" and rig.source.kind != "live" and logs_given(rig):
            held = logs_given(rig)
            said = NO_FAULT_IN_OUTPUTS if held == ["driver version"] else NO_FAULT_IN_LOGS
            ga828 = [f for f in rig.findings if f.code == "GA828"]
            if any(not _app_fault(f) for f in ga828):  # error lines no sign judged: not "no fault"
                said = NO_KNOWN_FAULT_IN_LOGS
            elif ga828:  # only an application's own CUDA error: the node is not at fault
                said = NO_NODE_FAULT_APP_ERROR
            return Verdict(state, c, why=f"{said} ({', '.join(held)}; no GPU listed)")
        if state == "healthy":
            return Verdict(NO_GPUS, c, why=why, todo=todo)
        top, more = worst(rig.findings)
        return Verdict(state, c, [one_line(f) for f in top], more, why=why)
    top, more = worst(rig.findings)
    return Verdict(state, c, [one_line(f) for f in top], more)
