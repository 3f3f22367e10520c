"""The scan as text: what the machine is. Reads only the Rig.

Missing facts print as "-" and their reasons are listed once, grouped, at the end ("not available"), so a
reader sees every gap and why without a column of "N/A".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.links import gpu_link, hop_is_downgraded, link_at, pcie_gbps
from gpuadvisor.render.text.width import fit_lines, fit_table, plain_table, term_width  # noqa: F401  (plain_table: re-exported)
from gpuadvisor.text import plural

DASH = "-"
LEGEND = [
    ("X", "self"),
    ("SYS", "PCIe + the SMP interconnect between NUMA nodes (QPI/UPI/Infinity Fabric)"),
    ("NODE", "PCIe + the interconnect between PCIe host bridges within a NUMA node"),
    ("PHB", "PCIe + a PCIe host bridge (typically the CPU)"),
    ("PXB", "multiple PCIe bridges (switches), no host bridge"),
    ("PIX", "at most a single PCIe bridge (switch)"),
    ("NV#", "a bonded set of # NVLinks"),
]


class Style:
    def __init__(self, color: bool, width: int = 80, verbose: bool = False) -> None:
        self.color = color
        self.width = width
        self.verbose = verbose  # every hop of every PCIe path, not only the ones that differ

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def head(self, text: str) -> str:
        return self._wrap("1", text)

    def bad(self, text: str) -> str:
        return self._wrap("31", text)

    def warn(self, text: str) -> str:
        return self._wrap("33", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)


def _v(value: Any, fmt: str = "{}") -> str:
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "on" if value else "off"
    return fmt.format(value)


def gib(n: int | None) -> str:
    return DASH if n is None else f"{n / 2**30:.1f} GiB"


def source_line(rig: Rig) -> str:
    s = rig.source
    when = f" at {s.created_at}" if s.created_at else ""
    if s.kind == "simulated":
        return f"SIMULATED rig — preset {s.preset}: {s.detail} (not a real machine; simulated NVML and sysfs){when}"
    if s.kind == "imported":
        files = ", ".join(s.files) if s.files else "files"
        return f"IMPORTED from {files}{when}"
    if s.kind == "spec":
        return f"PLANNED rig (from a spec, predicted figures){when}"
    return f"live scan of {rig.host.hostname or 'this machine'}{when}"


def _section(st: Style, title: str) -> str:
    return "\n" + st.head(title) + "\n" + "-" * len(title)


def render_host(rig: Rig, st: Style) -> list[str]:
    h = rig.host
    lines = [_section(st, "Host")]
    ident = " ".join(
        x
        for x in (
            h.hostname,
            f"{h.os}," if h.os else None,
            f"kernel {h.kernel}" if h.kernel else None,
            f"({h.arch})" if h.arch else None,
        )
        if x
    )
    if ident:
        lines.append(f"  {ident.rstrip(',')}")
    if h.cpu_model or h.sockets or h.cores_logical:
        lines.append(
            f"  CPU: {_v(h.cpu_model)} — {_v(h.sockets)} socket{'' if h.sockets == 1 else 's'}, {_v(h.cores_physical)} "
            f"cores / {_v(h.cores_logical)} threads"
        )
    if h.memory_total_bytes:
        lines.append(
            f"  RAM: {gib(h.memory_total_bytes)}"
            + (f" ({gib(h.memory_available_bytes)} available)" if h.memory_available_bytes else "")
        )
    if h.numa_nodes:
        nodes = "; ".join(
            f"node {n.id}: CPUs {_v(n.cpus)}" + (f", {gib(n.memory_total_bytes)}" if n.memory_total_bytes else "")
            for n in h.numa_nodes
        )
        lines.append(f"  NUMA: {plural(len(h.numa_nodes), 'node')} — {nodes}")
    if h.psu_watts:
        lines.append(f"  PSU: {h.psu_watts:.0f} W (as given)")
    if len(lines) == 1:
        lines.append(f"  not in this scan ({rig.source.kind} source)")
    return lines


def render_software(rig: Rig, st: Style) -> list[str]:
    s = rig.software
    lines = [_section(st, "Software")]
    lines.append(
        f"  NVIDIA driver {_v(s.driver_version)} (supports CUDA up to {_v(s.cuda_driver_version)}), NVML "
        f"{_v(s.nvml_version)}"
    )
    torch_cuda = f"CUDA {s.torch_cuda_version}" if s.torch_cuda_version else "no CUDA"
    lines.append(
        f"  torch {_v(s.torch_version)} ({torch_cuda}), NCCL {_v(s.nccl_version)}, Python {_v(s.python_version)}, "
        f"nvidia-ml-py {_v(s.nvml_binding_version)}"
    )
    env = ", ".join(f"{k}={v}" for k, v in s.env.items()) if s.env else "(no CUDA_* / NCCL_* variables set)"
    lines.append(f"  env: {env}")
    return lines


def _mem(g: Gpu) -> str:
    return gib(g.memory_total_bytes)


def _health(g: Gpu) -> str:
    parts = []
    if g.ecc_enabled is not None:
        parts.append(f"ECC {'on' if g.ecc_enabled else 'off'}")
    if g.ecc_errors_uncorrected_volatile is not None or g.ecc_errors_corrected_volatile is not None:
        parts.append(
            f"errors corr/uncorr {_v(g.ecc_errors_corrected_volatile)}/{_v(g.ecc_errors_uncorrected_volatile)} (vol) "
            f"{_v(g.ecc_errors_corrected_aggregate)}/{_v(g.ecc_errors_uncorrected_aggregate)} (agg)"
        )
    if g.retired_pages_single_bit is not None or g.retired_pages_double_bit is not None:
        parts.append(
            f"retired pages sbe/dbe {_v(g.retired_pages_single_bit)}/{_v(g.retired_pages_double_bit)}"
            + (" PENDING" if g.retired_pages_pending else "")
        )
    if g.remapped_rows_correctable is not None:
        parts.append(
            f"remapped rows {g.remapped_rows_correctable}/{_v(g.remapped_rows_uncorrectable)}"
            + (" PENDING" if g.remapped_rows_pending else "")
            + (" FAILURE" if g.remapped_rows_failure else "")
        )
    return "; ".join(parts) or DASH


def render_gpus(rig: Rig, st: Style) -> list[str]:
    lines = [_section(st, f"GPUs ({len(rig.gpus)})")]
    if not rig.gpus:
        lines.append("  none")
        return lines
    rows = []
    for g in rig.gpus:
        power = f"{_v(g.power_limit_w, '{:.0f}')}/{_v(g.power_default_limit_w, '{:.0f}')} W"
        rows.append(
            [
                g.index,
                _v(g.name),
                _v(g.bus_id),
                _mem(g),
                _v(g.compute_capability),
                power,
                _v(g.temperature_c, "{}C"),
                _v(g.performance_state, "P{}"),
                _v(g.persistence_mode),
                _v(g.mig_mode),
                _v(g.numa_node),
                _v(g.cpu_affinity),
                ",".join(g.clocks_event_reasons)
                if g.clocks_event_reasons
                else (DASH if g.clocks_event_reasons is None else "none"),
            ]
        )
    headers = [
        "GPU",
        "name",
        "bus id",
        "memory",
        "CC",
        "power limit/default",
        "temp",
        "perf",
        "persist",
        "MIG",
        "NUMA",
        "CPU affinity",
        "clocks events",
    ]
    # A column no GPU has a value for says nothing: leave it out (the "Not available" section says why).
    keep = [i for i in range(len(headers)) if i < 2 or any(r[i] not in (DASH, f"{DASH}/{DASH} W") for r in rows)]
    lines += fit_table([[r[i] for i in keep] for r in rows], [headers[i] for i in keep], st.width)
    lines.append("")
    health: dict[str, list[int]] = {}
    for g in rig.gpus:
        health.setdefault(_health(g), []).append(g.index)
    lines += [f"  {gpu_label(idx)} health: {text}" for text, idx in health.items()]
    return lines


def _link(gen: int | None, width: int | None) -> str:
    return f"Gen{_v(gen)} x{_v(width)}"


def _hop_marks(p: Any, k: int, st: Style) -> tuple[str, bool]:
    """The marks of hop ``k`` of a PCIe path (downgraded width, gen below max, AER errors), and whether any is
    a problem a reader must see (a downgraded width or AER errors)."""
    hop = p.path[k]
    w_down, g_down = hop_is_downgraded(link_at(p.path, k))  # against the lower of the link's two ends
    mark = ""
    if w_down:
        mark = "  " + st.bad("width downgraded")
    elif g_down:
        mark = "  " + st.warn("gen below max (idle power saving, or a fault under load)")
    errors = ""
    if hop.aer_correctable or hop.aer_nonfatal or hop.aer_fatal:
        errors = "  " + st.warn(
            f"AER errors corr/nonfatal/fatal {_v(hop.aer_correctable)}/{_v(hop.aer_nonfatal)}/{_v(hop.aer_fatal)}"
        )
    return mark + errors, bool(w_down or errors)


def _hop_line(p: Any, k: int, st: Style) -> str:
    hop = p.path[k]
    marks, _ = _hop_marks(p, k, st)
    return (
        f"      {hop.bdf}  {hop.port_type:<15} {_link(hop.current_gen, hop.current_width)} / "
        f"{_link(hop.max_gen, hop.max_width)}{marks}"
    )


def _gpu_pcie_head(g: Gpu, st: Style, *, bus_id: bool = True) -> str:
    p = g.pcie
    bw = pcie_gbps(p.current_gen, p.current_width)
    head = (
        f" {_v(g.bus_id)}" if bus_id else ""
    ) + f": {_link(p.current_gen, p.current_width)} / {_link(p.max_gen, p.max_width)}"
    head += f" ({bw:.1f} GB/s per direction now)" if bw else ""
    head += f", replays {_v(p.replay_counter)}"
    own = gpu_link(g)  # the lower of the card's and the slot's maximum: an x16 card in an x8 slot is not downgraded
    if own.current_width is not None and own.max_width is not None and own.current_width < own.max_width:
        head += "  " + st.bad(f"WIDTH DOWNGRADED x{own.current_width} < x{own.max_width}")
    elif p.max_width is not None and own.max_width is not None and own.max_width < p.max_width:
        head += "  " + st.warn(f"slot allows x{own.max_width} of the card's x{p.max_width}")
    return head


def gpu_label(indices: list[int]) -> str:
    """ "GPU 3", "GPUs 0–15" (a run), "GPUs 0, 1, 3"."""
    if len(indices) == 1:
        return f"GPU {indices[0]}"
    if len(indices) > 2 and indices == list(range(indices[0], indices[-1] + 1)):
        return f"GPUs {indices[0]}–{indices[-1]}"
    return "GPUs " + ", ".join(map(str, indices))


def _path_summary(p: Any) -> str:
    """The path in a few words when no hop needs a look: how many hops, and whether each runs at its maximum."""
    n = len(p.path)
    if not n:
        return ""
    links = {(h.current_gen, h.current_width, h.max_gen, h.max_width) for h in p.path}
    at_max = all(not any(hop_is_downgraded(link_at(p.path, k))) for k in range(n))
    if len(links) == 1:
        ((cg, cw, mg, mw),) = links
        if (cg, cw, mg, mw) == (p.current_gen, p.current_width, p.max_gen, p.max_width):
            return "the same on both hops to the CPU" if n == 2 else f"the same on all {n} hops to the CPU"
        same = f"{_link(cg, cw)}" if (cg, cw) == (mg, mw) else f"{_link(cg, cw)} / {_link(mg, mw)}"
        return f"{same} on {'both' if n == 2 else f'all {n}'} hops to the CPU"
    return f"{n} hops to the CPU, " + (
        "each at its maximum" if at_max else "some below their maximum (gpuadvisor -v scan lists them)"
    )


def _pcie_signature(g: Gpu, st: Style) -> tuple[Any, ...]:
    p = g.pcie
    hops = tuple(
        (h.port_type, h.current_gen, h.current_width, h.max_gen, h.max_width, _hop_marks(p, k, st)[0])
        for k, h in enumerate(p.path)
    )
    return (_gpu_pcie_head(g, st, bus_id=False), hops, p.unavailable.get("path"))


def render_pcie(rig: Rig, st: Style) -> list[str]:
    """Per GPU, its link and every hop to the CPU. By default GPUs whose links are all alike share one line
    ("GPUs 0–15: Gen3 x16 / Gen3 x16 ..., Gen3 x16 on every hop"), and only the hops with a downgraded width or
    AER errors are listed; ``st.verbose`` lists every hop of every GPU."""
    lines = [_section(st, "PCIe (current / max, every hop to the CPU)")]
    if st.verbose:
        for g in rig.gpus:
            lines.append(f"  GPU {g.index}" + _gpu_pcie_head(g, st))
            lines += [_hop_line(g.pcie, k, st) for k in range(len(g.pcie.path))]
            if not g.pcie.path and "path" in g.pcie.unavailable:
                lines.append(f"      path: {g.pcie.unavailable['path']}")
        return lines
    groups: dict[tuple[Any, ...], list[Gpu]] = {}
    for g in rig.gpus:
        groups.setdefault(_pcie_signature(g, st), []).append(g)
    for gs in groups.values():
        g = gs[0]
        p = g.pcie
        problems = [k for k in range(len(p.path)) if _hop_marks(p, k, st)[1]]
        for member in gs if problems else [g]:
            label = (
                gpu_label([member.index]) + _gpu_pcie_head(member, st)
                if problems or len(gs) == 1
                else gpu_label([x.index for x in gs]) + _gpu_pcie_head(g, st, bus_id=False)
            )
            summary = _path_summary(member.pcie)
            if problems:
                lines.append("  " + label)
                lines += [_hop_line(member.pcie, k, st) for k in problems]
            else:
                lines.append("  " + label + (f"; {summary}" if summary else ""))
            if not member.pcie.path and "path" in member.pcie.unavailable:
                lines.append(f"      path: {member.pcie.unavailable['path']}")
    if any(len(g.pcie.path) > 1 for g in rig.gpus):
        lines.append(st.dim("  (gpuadvisor -v scan lists every hop; the JSON and the HTML report hold them)"))
    return lines


def render_nvlink(rig: Rig, st: Style) -> list[str]:
    lines = [_section(st, "NVLink")]
    if not any(g.nvlinks for g in rig.gpus):
        nv_pairs = any(c.startswith("NV") for row in rig.topology.matrix for c in row)
        reasons = sorted({g.unavailable["nvlinks"] for g in rig.gpus if "nvlinks" in g.unavailable})
        if not rig.gpus:
            lines.append("  -")
        elif nv_pairs or reasons:
            why = "; ".join(reasons) or "no per-link facts in this scan"
            lines.append(
                f"  per-link state not available ({why})"
                + ("; the topology matrix shows NVLink pairs" if nv_pairs else "")
            )
        else:
            lines.append("  no NVLink on these GPUs")
        return lines
    per_gpu: dict[str, list[int]] = {}  # GPUs whose links read alike share one line
    for g in rig.gpus:
        if not g.nvlinks:
            per_gpu.setdefault("none", []).append(g.index)
            continue
        active = g.active_nvlinks()
        versions = sorted({n.version for n in active if n.version})
        peers: dict[str, int] = defaultdict(int)
        for n in active:
            if n.remote_device_type == "switch":
                peers["NVSwitch"] += 1
            elif n.remote_gpu_index is not None:
                peers[f"GPU {n.remote_gpu_index}"] += 1
            else:
                peers[n.remote_bus_id or "unknown"] += 1
        peer_text = ", ".join(f"{c} to {p}" for p, c in peers.items())
        line = f"{len(active)}/{len(g.nvlinks)} links active, NVLink {'/'.join(map(str, versions)) or '-'}: {peer_text}"
        inactive = [n.link for n in g.nvlinks if not n.active]
        if inactive:
            line += "  " + st.bad(f"inactive: {', '.join(map(str, inactive))}")
        partial = g.nvlinks_incomplete()
        if partial:
            line += f"  (the others not known: {partial})"
        errs = {f"link {n.link} {k}": v for n in g.nvlinks for k, v in n.errors.items() if v}
        if errs:
            line += "  " + st.warn("errors: " + ", ".join(f"{k}={v}" for k, v in errs.items()))
        per_gpu.setdefault(line, []).append(g.index)
    lines += [f"  {gpu_label(idx)}: {text}" for text, idx in per_gpu.items()]
    return lines


def matrix_rows(rig: Rig) -> tuple[list[list[str]], list[str]]:
    t = rig.topology
    names = [f"GPU{g.index}" for g in rig.gpus]
    nics = [f"NIC{k}" for k in range(len(t.nics))]
    rows = []
    n = len(rig.gpus)

    def cells(matrix: list[list[str]], i: int, width: int) -> list[str]:
        # An imported matrix may be partial (a -q file without topo -m): pad with "-" rather than fail.
        row = list(matrix[i]) if i < len(matrix) else []
        return (row + [DASH] * width)[:width]

    for i, g in enumerate(rig.gpus):
        row = [names[i]] + cells(t.matrix, i, n) + cells(t.nic_matrix, i, len(t.nics))
        row += [_v(g.cpu_affinity), _v(g.numa_node)]
        rows.append(row)
    for k in range(len(t.nics)):
        row = [nics[k]] + [cells(t.nic_matrix, i, len(t.nics))[k] for i in range(n)]
        row += ["X" if k == m else _nic_pair(rig, k, m) for m in range(len(t.nics))] + ["", ""]
        rows.append(row)
    return rows, [""] + names + nics + ["CPU Affinity", "NUMA Affinity"]


def _nic_pair(rig: Rig, a: int, b: int) -> str:
    # NIC-to-NIC levels are not probed; show the relation through GPU placement only where obvious.
    return "-"


def render_topology(rig: Rig, st: Style) -> list[str]:
    t = rig.topology
    lines = [_section(st, "Topology (nvidia-smi topo -m vocabulary)")]
    if not rig.gpus:
        lines.append("  -")
        return lines
    if not t.matrix:
        lines.append(f"  not available: {t.unavailable.get('matrix', 'no topology in this scan')}")
        return lines
    rows, headers = matrix_rows(rig)
    lines += fit_table(rows, headers, st.width, tablefmt="plain")
    if t.nics:
        lines.append("")
        lines.append("  NIC legend: " + ", ".join(f"NIC{k}: {n}" for k, n in enumerate(t.nics)))
    lines.append("")
    lines.append("  Legend: " + "; ".join(f"{a} = {b}" for a, b in LEGEND))
    if t.p2p_read and len(rig.gpus) > 1 and len(t.p2p_read) == len(rig.gpus):
        lines.append("")
        lines.append(
            "  P2P read capability (nvidia-smi topo -p2p r): OK, CNS chipset / GNS GPU / TNS topology not supported, "
            "NS not supported, DIS disabled, U unknown"
        )
        rows = [[f"GPU{g.index}"] + list(t.p2p_read[i]) for i, g in enumerate(rig.gpus)]
        lines += fit_table(rows, [""] + [f"GPU{g.index}" for g in rig.gpus], st.width, tablefmt="plain")
    return lines


def _missing_groups(rig: Rig) -> list[str]:
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)

    def add(owner: str, fields: Iterable[tuple[str, str]]) -> None:
        for f, reason in fields:
            groups[(f, reason)].append(owner)

    add("host", rig.host.unavailable.items())
    add("software", rig.software.unavailable.items())
    add("topology", rig.topology.unavailable.items())
    for g in rig.gpus:
        add(f"GPU {g.index}", g.unavailable.items())
        add(f"GPU {g.index} PCIe", g.pcie.unavailable.items())
    by_reason: dict[tuple[str, tuple[str, ...]], list[str]] = defaultdict(list)
    for (f, reason), owners in groups.items():
        by_reason[(reason, tuple(owners))].append(f)
    out = []
    for (reason, owner_names), fields in by_reason.items():
        who = owner_names[0] if len(owner_names) == 1 else _compress_owners(list(owner_names))
        out.append(f"  {who}: {', '.join(sorted(fields))} — {reason}")
    return out


def _compress_owners(owners: list[str]) -> str:
    gpu = [o for o in owners if o.startswith("GPU ") and o[4:].isdigit()]
    if len(gpu) == len(owners) and len(gpu) > 2:
        return (
            f"GPUs {gpu[0][4:]}-{gpu[-1][4:]}"
            if [int(o[4:]) for o in gpu] == list(range(int(gpu[0][4:]), int(gpu[-1][4:]) + 1))
            else "GPUs " + ",".join(o[4:] for o in gpu)
        )
    return ", ".join(owners)


def render_scan(rig: Rig, *, color: bool = False, verbose: bool = False, width: int | None = None) -> str:
    """The scan as text, every line at most ``width`` columns (default: the terminal's, see render.text.width).
    ``verbose``: every hop of every GPU's PCIe path (by default GPUs with the same links share one line)."""
    st = Style(color, width or term_width(), verbose)
    lines = [st.head("gpuadvisor scan") + " — " + source_line(rig)]
    for p in rig.problems:
        lines.append(st.warn("! " + p))
    lines += render_host(rig, st)
    lines += render_software(rig, st)
    lines += render_gpus(rig, st)
    if rig.gpus:
        lines += render_pcie(rig, st)
        lines += render_nvlink(rig, st)
        lines += render_topology(rig, st)
    from gpuadvisor.render.text.network import render_beyond

    lines += render_beyond(rig, lambda title: _section(st, title))  # kernel log, RDMA, GPUDirect, fabric, limits
    missing = _missing_groups(rig)
    if missing:
        lines.append(_section(st, "Not available (null in the JSON, with these reasons)"))
        lines += missing
    return "\n".join(fit_lines("\n".join(lines).split("\n"), st.width)) + "\n"


def render_rest(rig: Rig, *, color: bool = False, width: int | None = None, findings: bool = True) -> str:
    """What follows the scan in every text view of it (scan, report, import): the measured bandwidth, the
    findings and the verdict, the strategy; each section only when the scan holds it. ``findings`` False: the
    rules were not asked for (scan --no-rules)."""
    width = width or term_width()
    out: list[str] = []
    if rig.measurements:
        from gpuadvisor.render.text.bench import render_measurements

        out += ["", "Measured bandwidth", "------------------", render_measurements(rig.measurements).rstrip("\n")]
    if rig.storage.paths:
        from gpuadvisor.render.text.storage import render_text as render_storage

        out += ["", "Storage", "-------", render_storage(rig).rstrip("\n")]
    if findings:
        from gpuadvisor.render.text.findings import render_findings

        out += ["", "Findings", "--------"]
        if rig.findings or rig.verdict is not None or not rig.gpus:
            out.append(render_findings(rig.findings, color=color, rig=rig, width=width).rstrip("\n"))
        else:
            out.append("Verdict: not checked (this scan carries no rule results; add --rules to run them)")
    if rig.advice:
        from gpuadvisor.render.text.advice import render_advice

        out += ["", "Strategy", "--------", render_advice(rig.advice, width=width, keep_marks=True).rstrip("\n")]
    if not out:
        return ""
    return "\n".join(fit_lines("\n".join(out).split("\n"), width)) + "\n"
