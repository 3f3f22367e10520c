"""A rig and its findings as a Prometheus textfile for node_exporter's textfile collector.

Format: https://prometheus.io/docs/instrumenting/exposition_formats/ (text format 0.0.4). Conventions kept
(Prometheus' metric and label naming guide): every name starts with ``gpuadvisor_``; HELP and TYPE once per name, before
its
samples; base units in the name (bytes, seconds, ratio 0-1; GB/s are converted: 1 GB/s = 1e9 bytes/s);
``_info`` metrics carry labels and the value 1; no timestamps. A label whose value is unknown (None) is left
out, which Prometheus treats the same as an empty value. Two samples with the same name and labels would make
node_exporter reject the whole file, so a repeated series keeps its first value and the repeat is dropped.

Public API: ``render_prometheus(rig, findings, *, failing, fail_on, policy=None) -> str``; the file is written
by gpuadvisor.output.write_atomic (a temp file beside PATH, then renamed into place).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from gpuadvisor.facts import Finding, Rig
from gpuadvisor.rules.summary import SEVERITY_ORDER, counts
from gpuadvisor.streams import sanitise

PREFIX = "gpuadvisor_"


def escape_label_value(value: str) -> str:
    """Backslash, double quote and line feed escaped, as the text format requires for label values; terminal
    control characters (and lone surrogates) first made visible (``\\x1b``) by gpuadvisor.streams.sanitise, so
    the file holds no byte a terminal obeys and the sanitised stdout stays valid text format."""
    return sanitise(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    """HELP text escapes backslash and line feed (not quotes)."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    value = float(value)
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))  # 1795371449, not 1795371449.0
    return repr(value)


@dataclass
class _Family:
    name: str
    type: str
    help: str
    samples: list[tuple[tuple[tuple[str, str], ...], float]] = field(default_factory=list)
    seen: set[tuple[tuple[str, str], ...]] = field(default_factory=set)


class Exposition:
    """Metric families in the order first added; renders HELP, TYPE, then the samples of each."""

    def __init__(self) -> None:
        self._families: dict[str, _Family] = {}

    def declare(self, name: str, type_: str, help_: str) -> None:
        full = PREFIX + name
        if full in self._families:
            fam = self._families[full]
            if (fam.type, fam.help) != (type_, help_):
                raise ValueError(f"metric {full} declared twice with different TYPE or HELP")
            return
        self._families[full] = _Family(full, type_, help_)

    def declare_all(self, families: Iterable[tuple[str, str, str]]) -> None:
        """Declare each (name, type, help) of a table of families, in its order (the order they are written)."""
        for name, type_, help_ in families:
            self.declare(name, type_, help_)

    def add(self, name: str, value: float, labels: Mapping[str, object | None] | None = None) -> None:
        fam = self._families[PREFIX + name]
        key = tuple((k, str(v)) for k, v in (labels or {}).items() if v is not None)
        if key in fam.seen:  # a repeated series: keep the first
            return
        fam.seen.add(key)
        fam.samples.append((key, value))

    def render(self) -> str:
        lines: list[str] = []
        for fam in self._families.values():
            if not fam.samples:
                continue
            lines.append(f"# HELP {fam.name} {escape_help(fam.help)}")
            lines.append(f"# TYPE {fam.name} {fam.type}")
            lines += [f"{fam.name}{_labels(key)} {format_value(v)}" for key, v in fam.samples]
        return "\n".join(lines) + "\n" if lines else ""


def _labels(key: Iterable[tuple[str, str]]) -> str:
    parts = [f'{k}="{escape_label_value(v)}"' for k, v in key]
    return "{" + ",".join(parts) + "}" if parts else ""


def _timestamp(iso: str | None) -> float | None:
    if not iso:
        return None
    try:
        t = dt.datetime.fromisoformat(iso)
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return t.timestamp()


def _gpus_label(gpus: Iterable[int]) -> str:
    return ",".join(str(g) for g in gpus)


def render_prometheus(
    rig: Rig,
    findings: Iterable[Finding],
    *,
    failing: bool,
    fail_on: str,
    policy: str | None = None,
    judged: bool = True,
) -> str:
    """The node_exporter textfile for one check: status, findings, GPUs, PCIe links and measurements.

    ``failing`` is the gate's outcome (the check command decides it from ``fail_on``); per-finding series
    leave out not-checked findings (their number is in ``gpuadvisor_findings{severity="not-checked"}``).
    ``judged`` False: the gate could not judge the node (no GPU found and nothing failing; the check exits 2).
    """
    findings = list(findings)
    ex = Exposition()
    _add_check(ex, rig, findings, failing=failing, fail_on=fail_on, policy=policy)
    if not judged:  # only then: a node that was judged keeps the series it always had
        ex.declare("check_not_judged", "gauge", "1: the gate could not judge the node (no GPU found, nothing failing).")
        ex.add("check_not_judged", 1)
    _add_gpus(ex, rig)
    _add_measurements(ex, rig)

    from gpuadvisor.render.machine.prometheus_network import add_beyond

    add_beyond(ex, rig)  # Xid counts, RDMA port rates, fabric, /dev/shm
    ts = _timestamp(rig.source.created_at)
    if ts is not None:
        ex.declare("scan_timestamp_seconds", "gauge", "When the facts were collected, in seconds since the Unix epoch.")
        ex.add("scan_timestamp_seconds", ts)
    return ex.render()


def _add_check(
    ex: Exposition, rig: Rig, findings: list[Finding], *, failing: bool, fail_on: str, policy: str | None
) -> None:
    """The version and source, the gate's outcome and the findings."""
    from gpuadvisor import __version__

    ex.declare("info", "gauge", "gpuadvisor version and where the checked facts came from (value 1).")
    ex.add(
        "info",
        1,
        {"version": __version__, "source": rig.source.kind, "preset": rig.source.preset, "hostname": rig.host.hostname},
    )
    ex.declare("check_status", "gauge", "1 when a finding at or above the fail-on severity fails the node, else 0.")
    ex.add("check_status", 1 if failing else 0)
    ex.declare("check_info", "gauge", "The gate in force: fail_on severity and the policy file (value 1).")
    ex.add("check_info", 1, {"fail_on": fail_on, "policy": policy})
    ex.declare(
        "findings", "gauge", "Number of findings per severity (error: a rule crashed; not-checked: facts missing)."
    )
    for sev, n in counts(findings).items():
        ex.add("findings", n, {"severity": sev})
    ex.declare(
        "finding", "gauge", "One series per rule finding and GPU it concerns (value 1); not-checked findings left out."
    )
    order = {s: i for i, s in enumerate(SEVERITY_ORDER)}
    for f in sorted(findings, key=lambda f: (order.get(f.severity, 99), f.code)):
        if f.severity == "not-checked":
            continue
        gpu_indices: list[int | None] = list(f.gpus) or [None]
        for gi in gpu_indices:
            ex.add("finding", 1, {"code": f.code, "name": f.name, "severity": f.severity, "gpu": gi})


# The families of a scan's GPUs and of its measurements: (name, type, help), in the order they are written.
GPU_FAMILIES = (
    ("gpus", "gauge", "Number of GPUs in the scan."),
    ("gpu_info", "gauge", "One series per GPU: index, model, PCI bus id, UUID (value 1)."),
    ("gpu_memory_total_bytes", "gauge", "GPU memory in bytes (NVML memory total)."),
    ("gpu_pcie_link_width", "gauge", "PCIe link width of the GPU in lanes (kind: current or max)."),
    ("gpu_pcie_link_generation", "gauge", "PCIe link generation of the GPU (kind: current or max)."),
    (
        "gpu_pcie_replays_total",
        "counter",
        "PCIe replays of the GPU's link since the driver loaded (NVML replay counter).",
    ),
    ("gpu_nvlink_active_links", "gauge", "Number of active NVLink links of the GPU."),
)
MEASUREMENT_FAMILIES = (
    (
        "measurement_bandwidth_bytes_per_second",
        "gauge",
        "Measured bandwidth in bytes per second (busbw for collectives; GB/s x 1e9).",
    ),
    (
        "measurement_expected_bandwidth_bytes_per_second",
        "gauge",
        "Bandwidth the rig's links should give for this measurement, in bytes per second.",
    ),
    ("measurement_ratio", "gauge", "Measured over expected bandwidth (1 = as expected)."),
    ("measurement_latency_seconds", "gauge", "Measured latency in seconds."),
)


def _add_gpus(ex: Exposition, rig: Rig) -> None:
    """Per GPU: its identity, memory, PCIe link (current and max) and replays, active NVLinks."""
    ex.declare_all(GPU_FAMILIES)
    ex.add("gpus", len(rig.gpus))
    for g in rig.gpus:
        idx = {"index": g.index}
        ex.add("gpu_info", 1, {"index": g.index, "name": g.name, "bus_id": g.bus_id, "uuid": g.uuid})
        if g.memory_total_bytes is not None:
            ex.add("gpu_memory_total_bytes", g.memory_total_bytes, idx)
        p = g.pcie
        for kind, width, gen in (("current", p.current_width, p.current_gen), ("max", p.max_width, p.max_gen)):
            if width is not None:
                ex.add("gpu_pcie_link_width", width, {**idx, "kind": kind})
            if gen is not None:
                ex.add("gpu_pcie_link_generation", gen, {**idx, "kind": kind})
        if p.replay_counter is not None:
            ex.add("gpu_pcie_replays_total", p.replay_counter, idx)
        if g.nvlinks:
            ex.add("gpu_nvlink_active_links", len(g.active_nvlinks()), idx)


def _add_measurements(ex: Exposition, rig: Rig) -> None:
    """Each measurement's bandwidth, expected bandwidth, ratio and latency."""
    ex.declare_all(MEASUREMENT_FAMILIES)
    for m in rig.measurements:
        labels = {
            "kind": m.kind,
            "gpus": _gpus_label(m.gpus) or None,
            "backend": m.backend,
            "memory": m.memory,
            "concurrent": None if m.concurrent is None else str(m.concurrent).lower(),
            "p2p": None if m.p2p_enabled is None else str(m.p2p_enabled).lower(),
        }
        if m.value_gbps is not None:
            ex.add("measurement_bandwidth_bytes_per_second", m.value_gbps * 1e9, labels)
        if m.expected_gbps is not None:
            ex.add("measurement_expected_bandwidth_bytes_per_second", m.expected_gbps * 1e9, labels)
        if m.ratio is not None:
            ex.add("measurement_ratio", m.ratio, labels)
        if m.latency_us is not None:
            ex.add("measurement_latency_seconds", m.latency_us * 1e-6, labels)
