"""``nvidia-smi -q`` (text) and ``nvidia-smi -q -x`` (XML): per-GPU health, power, PCIe link, driver versions.

Read across driver generations: PCIe "Generation Max/Current" (all) plus "Device Max/Device Current/Host Max"
(R535+); "Clocks Throttle Reasons" (before R535) or "Clocks Event Reasons"; ECC counts as "Single Bit/Double
Bit ... Total" (before Ampere) or "SRAM/DRAM Correctable/Uncorrectable" (Ampere on); "Power Readings/Power
Limit" (older) or "GPU Power Readings/Current Power Limit"; "Power Draw" or "Average/Instantaneous Power Draw"
(R560+); retired pages and remapped rows; a GPU nvidia-smi could not read ("Unable to determine the device
handle") becomes a GPU with that reason on every field.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from gpuadvisor import facts
from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers import values as v
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.fragments import PCI_BUS_ID
from gpuadvisor.importers.listed import add_counted
from gpuadvisor.importers.sanity import TOO_LARGE, too_long
from gpuadvisor.importers.section import Section
from gpuadvisor.importers.smi_query_indent import reindented
from gpuadvisor.importers.smi_query_paths import CLOCKS, CLOCKS_REASON_NAMES, ECC_ERRORS, PATHS, regroup_power
from gpuadvisor.importers.smi_query_processes import PROCESS_KEYS as _PROCESS_KEYS
from gpuadvisor.importers.smi_query_processes import processes, processes_fragment, processes_only
from gpuadvisor.importers.tree import Node, open_unclosed, text_tree, xml_tree

_NOT_IN_Q = "nvidia-smi -q does not print it"
_ABSENT_Q = "not in this nvidia-smi -q output (older drivers, and -d filters, leave it out)"
_ABSENT_X = "not in this nvidia-smi -q -x output (older drivers, and -d filters, leave it out)"


class _Reader:
    """Fills one Gpu from its -q block and records each unreadable value as a problem with its line."""

    def __init__(self, block: Node, xml: bool, source: str, problems: list[str], elided: str | None = None) -> None:
        self.block = block
        self.col = 1 if xml else 0
        self.source = source
        self.problems = problems
        self.lines: dict[str, int] = {}  # fact path -> line it was read from
        self.elided = elided  # the block is shown in part: a fact not in it may sit in what was left out
        self.flagged: set[int] = set()  # lines whose error value ("ERR!") is already listed as a problem

    def absent(self) -> str:
        if self.elided:
            return f"{self.elided}: not shown"
        return _ABSENT_Q if self.col == 0 else _ABSENT_X

    def node(self, fact: str) -> Node | None:
        return self.block.first(*PATHS[fact][self.col])

    def raw(self, fact: str) -> str | None:
        n = self.node(fact)
        return n.value if n is not None else None

    def get(self, g: Any, attr: str, fact: str, conv: Callable[[str | None], Any], prefix: str = "") -> Any:
        n = self.node(fact)
        if n is None:
            g.unavailable.setdefault(attr, self.absent())
            return None
        if n.elided:
            g.unavailable[attr] = n.elided
            return None
        value = conv(n.value)
        if value is None:
            if v.absent(n.value):
                g.unavailable[attr] = v.printed(n.value)
                if v.state_meaning(n.value) and n.line not in self.flagged:
                    self.flagged.add(n.line)
                    self.problems.append(f"{self.source}: line {n.line}: {n.key}: {v.printed(n.value)}")
            elif too_long(n.value):
                g.unavailable[attr] = TOO_LARGE
                self.problems.append(f"{self.source}: line {n.line}: {n.key}: {TOO_LARGE}; left out")
            else:
                g.unavailable[attr] = f"unreadable value {n.value!r}"
                self.problems.append(f"{self.source}: line {n.line}: {n.key}: unreadable value {n.value!r}; left out")
            return None
        setattr(g, attr, value)
        g.unavailable.pop(attr, None)
        self.lines[prefix + attr] = n.line
        return value


def _str(s: str | None) -> str | None:
    return None if v.absent(s) else (s or "").strip()


NO_SRAM_SPLIT = "this nvidia-smi does not split SRAM from DRAM errors"


def _ecc_counts(node: Node | None) -> tuple[int | None, int | None, int | None | str]:
    """(corrected, uncorrected, SRAM corrected) from a Volatile/Aggregate block of either generation of names.

    The third is NO_SRAM_SPLIT for the per-unit Single/Double Bit layout of drivers before Ampere's.
    """
    if node is None:
        return None, None, None
    old_c = node.first(("Single Bit", "Total"), ("single_bit", "total"))
    old_u = node.first(("Double Bit", "Total"), ("double_bit", "total"))
    if old_c is not None or old_u is not None:
        return (v.to_int(old_c.value) if old_c else None), (v.to_int(old_u.value) if old_u else None), NO_SRAM_SPLIT
    corrected: int | None = None
    uncorrected: int | None = None
    sram: int | None = None
    for c in node.children:
        key = v.snake(c.key)
        n = v.to_int(c.value)
        if n is None or "threshold" in key:
            continue
        if "uncorrectable" in key:
            uncorrected = (uncorrected or 0) + n
        elif "correctable" in key:
            corrected = (corrected or 0) + n
            if "sram" in key:
                sram = (sram or 0) + n
    return corrected, uncorrected, sram


def _clock_reasons(node: Node | None) -> list[str] | None:
    if node is None:
        return None
    seen = False
    active: list[str] = []
    for c in node.walk():
        state = v.enabled(c.value)
        if state is None:
            continue
        seen = True
        key = re.sub(r"^clocks?_(event|throttle)_reasons?_", "", v.snake(c.key))
        if state:
            active.append(CLOCKS_REASON_NAMES.get(key, key))
    return active if seen else None


def _pstate(s: str | None) -> int | None:
    """``"P8"`` -> 8 (nvidia-smi prints P0 .. P15, or Unknown)."""
    m = re.fullmatch(r"\s*P(\d{1,2})\s*", s or "")
    return int(m.group(1)) if m and int(m.group(1)) <= 15 else None


def _gen(s: str | None) -> int | None:
    n = v.to_int(s)
    return n if n is not None and 1 <= n <= 7 else None


def _mig_instances(g: Gpu, block: Node, xml: bool) -> None:
    """The framebuffer of each MIG device (-q -x ``mig_devices/mig_device/fb_memory_usage/total``; -q "MIG devices"
    / "MIG Device" / "FB Memory Usage" / "Total"), when MIG is enabled."""
    if not g.mig_mode:
        g.unavailable["mig_instances_memory_bytes"] = (
            "MIG is not enabled" if g.mig_mode is False else "MIG mode not known"
        )
        return
    devs = block.child("mig_devices" if xml else "MIG devices")
    sizes = []
    for d in devs.children if devs is not None else []:
        total = d.find("fb_memory_usage", "total") if xml else d.find("FB Memory Usage", "Total")
        size = v.mem_bytes(total.value) if total is not None else None
        if size is not None:
            sizes.append(size)
    if sizes:
        g.mig_instances_memory_bytes = sizes
    else:
        g.unavailable["mig_instances_memory_bytes"] = (
            "MIG is enabled but the source lists no MIG device with its memory"
        )


def _gpu_from_block(
    block: Node, index: int, bus: str | None, xml: bool, source: str, rig: Rig, elided: str | None = None
) -> Gpu:
    g = Gpu(index=index)
    problems = rig.problems
    r = _Reader(block, xml, source, problems, elided or block.elision())
    lost = next((c for c in block.children if c.value is None and not c.children and "unable" in c.key.lower()), None)
    if lost is not None:
        problems.append(f"{source}: line {lost.line}: GPU {bus or index}: {lost.key}")
    r.get(g, "name", "name", _str)
    r.get(g, "brand", "brand", _str)
    r.get(g, "uuid", "uuid", _str)
    r.get(g, "serial", "serial", _str)
    r.get(g, "bus_id", "bus_id", v.normalize_bus_id)
    if g.bus_id is None and bus:
        g.bus_id = v.normalize_bus_id(bus)
        g.unavailable.pop("bus_id", None)
    r.get(g, "architecture", "architecture", _str)
    r.get(g, "memory_total_bytes", "memory_total", v.mem_bytes)
    r.get(g, "memory_used_bytes", "memory_used", v.mem_bytes)
    r.get(g, "power_limit_w", "power_limit", lambda s: v.to_float(s, "W"))
    r.get(g, "power_default_limit_w", "power_default", lambda s: v.to_float(s, "W"))
    r.get(g, "power_draw_w", "power_draw", lambda s: v.to_float(s, "W"))
    r.get(g, "temperature_c", "temperature", lambda s: v.to_float(s, "C"))
    r.get(
        g,
        "sm_clock_max_mhz",
        "sm_clock_max",
        lambda s: None if v.to_float(s, "MHz") is None else int(v.to_float(s, "MHz") or 0),
    )
    r.get(g, "performance_state", "pstate", _pstate)
    r.get(g, "ecc_enabled", "ecc_mode", v.enabled)
    r.get(g, "persistence_mode", "persistence", v.enabled)
    r.get(g, "mig_mode", "mig", v.enabled)
    if g.mig_mode is None and g.unavailable.get("mig_mode", "").startswith("nvidia-smi printed 'N/A'"):
        g.unavailable["mig_mode"] = f"{facts.NOT_SUPPORTED} (nvidia-smi prints MIG Mode N/A on GPUs without MIG)"
    _mig_instances(g, block, xml)
    if r.elided and g.mig_instances_memory_bytes is None and g.mig_mode is not False:
        g.unavailable["mig_instances_memory_bytes"] = f"{r.elided}: not shown"
    r.get(g, "retired_pages_single_bit", "retired_sbe", v.to_int)
    r.get(g, "retired_pages_double_bit", "retired_dbe", v.to_int)
    r.get(g, "retired_pages_pending", "retired_pending", v.enabled)
    r.get(g, "remapped_rows_correctable", "remap_corr", v.to_int)
    r.get(g, "remapped_rows_uncorrectable", "remap_unc", v.to_int)
    r.get(g, "remapped_rows_pending", "remap_pending", v.enabled)
    r.get(g, "remapped_rows_failure", "remap_failure", v.enabled)

    ecc = block.first(*ECC_ERRORS[r.col])
    for scope in ("volatile", "aggregate"):
        scope_node = ecc.child(scope) if ecc is not None else None
        cut = (scope_node.elision() if scope_node is not None else None) or (
            ecc.elision() if ecc is not None and scope_node is None else None
        )
        if cut or (ecc is None and r.elided):
            for attr in (
                f"ecc_errors_corrected_{scope}",
                f"ecc_errors_uncorrected_{scope}",
                f"ecc_errors_corrected_sram_{scope}",
            ):
                setattr(g, attr, None)
                g.unavailable[attr] = (
                    f"{cut or r.elided}: not shown" if not cut else f"{cut}: the counts are shown in part"
                )
            continue
        c, u, sram = _ecc_counts(scope_node)
        sram_attr = f"ecc_errors_corrected_sram_{scope}"
        if sram == NO_SRAM_SPLIT:
            g.unavailable[sram_attr] = NO_SRAM_SPLIT
            sram = None
        elif sram is None and c is not None:
            g.unavailable[sram_attr] = "no SRAM count in this output"
        for attr, val in (
            (f"ecc_errors_corrected_{scope}", c),
            (f"ecc_errors_uncorrected_{scope}", u),
            (sram_attr, sram),
        ):
            setattr(g, attr, val)
            if val is None:
                g.unavailable.setdefault(
                    attr,
                    "not in this output" if ecc is None else "nvidia-smi printed N/A (no ECC on this GPU or mode off)",
                )
    if ecc is not None and not ecc.elision():
        r.lines.update(
            {
                f"ecc_errors_{a}_{b}": ecc.line
                for a in ("corrected", "uncorrected", "corrected_sram")
                for b in ("volatile", "aggregate")
            }
        )
    clocks = block.first(*CLOCKS[r.col])
    cut = clocks.elision() if clocks is not None else None
    reasons = None if cut else _clock_reasons(clocks)
    if reasons is not None:
        r.lines["clocks_event_reasons"] = clocks.line  # type: ignore[union-attr]
    g.clocks_event_reasons = reasons
    if cut:
        g.unavailable["clocks_event_reasons"] = f"{cut}: the reasons are shown in part"
    elif reasons is None:
        g.unavailable["clocks_event_reasons"] = (
            f"{r.elided}: not shown" if clocks is None and r.elided else "not in this output or N/A"
        )

    p = g.pcie
    r.get(p, "max_gen", "pcie_max_gen", _gen, "pcie.")
    r.get(p, "current_gen", "pcie_cur_gen", _gen, "pcie.")
    r.get(p, "gpu_max_gen", "pcie_dev_max_gen", _gen, "pcie.")
    r.get(p, "max_width", "pcie_max_width", v.width, "pcie.")
    r.get(p, "current_width", "pcie_cur_width", v.width, "pcie.")
    r.get(p, "replay_counter", "replay", v.to_int, "pcie.")
    host_max = _gen(r.raw("pcie_host_max_gen"))
    if p.max_gen is None and p.gpu_max_gen is not None and host_max is not None:
        p.max_gen = min(p.gpu_max_gen, host_max)  # NVML's "max with this device and system"
        p.unavailable.pop("max_gen", None)
    p.unavailable["path"] = "nvidia-smi -q does not print the upstream PCIe path (add lspci -vv)"
    for name in ("compute_capability", "numa_node", "cpu_affinity"):
        g.unavailable[name] = _NOT_IN_Q
    g.unavailable["nvlinks"] = "nvidia-smi -q does not print NVLink state (add nvidia-smi nvlink -s)"
    if lost is not None:
        for f in dataclasses.fields(Gpu):
            if getattr(g, f.name) is None:
                g.unavailable[f.name] = f"{facts.GPU_LOST} (nvidia-smi: {lost.key})"
    rig.origins[f"gpus[{index}]"] = f"{source}:{block.line}"
    for path, line in r.lines.items():
        rig.origins[f"gpus[{index}].{path}"] = f"{source}:{line}"
    _error_values(block, r, bus or str(index))
    return g


def _error_values(block: Node, r: _Reader, gpu: str) -> None:
    """Every "ERR!", "[Unknown Error]", "[GPU requires reset]" of the block that no fact holds (a fan speed, a
    clock, a utilisation): a read that failed says something about the GPU, so it is listed, never dropped."""
    for node in block.walk():
        if node.line in r.flagged or not v.state_meaning(node.value):
            continue
        r.flagged.add(node.line)
        r.problems.append(f"{r.source}: line {node.line}: GPU {gpu}: {node.key}: {v.printed(node.value)}")


_GPU_HEADER = re.compile(r"^GPU\s+([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])$")


def _version(value: str | None) -> str | None:
    """``610.57.04 [Deprecated; will be removed in CUDA 14.0. Use KMD Version instead]`` -> ``610.57.04``
    (nvidia-smi 610's note on the old names); ``Not Found`` and placeholders are no version."""
    text = re.sub(r"\s*\[Deprecated[^\]]*\]\s*$", "", value or "")
    return None if v.absent(text) or text.strip().lower() == "not found" else text.strip()


def _software(rig: Rig, root: Node, xml: bool, source: str, elided: str | None = None) -> None:
    s = rig.software
    drv = root.child("driver_version" if xml else "Driver Version") or root.child("KMD Version")
    cuda = root.child("cuda_version" if xml else "CUDA Version") or root.child("CUDA UMD Version")
    s.driver_version = _version(drv.value) if drv is not None else None
    s.cuda_driver_version = _version(cuda.value) if cuda is not None else None
    for name, node in (("driver_version", drv), ("cuda_driver_version", cuda)):
        if node is not None and getattr(s, name) is not None:
            rig.origins[f"software.{name}"] = f"{source}:{node.line}"
    for name, node in (("driver_version", drv), ("cuda_driver_version", cuda)):
        if getattr(s, name) is None:
            s.unavailable[name] = (
                node.elided
                if node is not None and node.elided
                else f"{elided}: not shown"
                if elided
                else "not in this nvidia-smi -q output"
            )


def _check_count(rig: Rig, root: Node, xml: bool, source: str, elided: str | None = None) -> None:
    n = root.child("attached_gpus" if xml else "Attached GPUs")
    count = v.to_int(n.value) if n is not None and not n.elided else None
    elided = elided or root.elision()
    if count is not None and count != len(rig.gpus):
        rig.partial_gpu_list = True
        rig.problems.append(
            f"{source}: nvidia-smi reports {count} attached GPUs but the output holds {len(rig.gpus)} "
            + (
                f"(the rest is not shown: {elided})"
                if elided and count > len(rig.gpus)
                else "(cut short, or filtered with -i)"
            )
        )


_ATTACHED = re.compile(r"^\s*Attached GPUs\s*:\s*(\d{1,3})\s*$", re.M)


def add_unshown(rig: Rig, text: str, source: str, first_line: int) -> None:
    """A ``-q`` whose "Attached GPUs" is more than the records it shows, cut short (no ``-i`` above it): the GPUs not
    shown are counted (:func:`listed.add_counted`), in nvidia-smi's order after those shown."""
    m = _ATTACHED.search(text)
    if m is None or [g.index for g in rig.gpus] != list(range(len(rig.gpus))):
        return
    line = first_line + text[: m.start()].count("\n")
    add_counted(rig, int(m.group(1)), f"{source}: line {line}: 'Attached GPUs : {m.group(1)}'", "record(s) shown")


_I_FLAG = re.compile(r"\bnvidia-smi\b.*?\s(?:-i|--id)(?:\s+|=)(\d{1,2})(?=\s|$)")


def index_from_context(context: list[str]) -> tuple[int, str] | None:
    """``nvidia-smi -q -i 3`` on the line just above an output: the one GPU it shows is nvidia-smi's GPU 3."""
    line = next((x for x in reversed(context) if x.strip()), "")
    m = _I_FLAG.search(line)
    return (int(m.group(1)), line.strip()) if m else None


def parse_smi_q(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Facts from ``nvidia-smi -q`` text: GPUs in nvidia-smi's order (index = position), driver and CUDA.

    Also a paste without the banner (from ``Timestamp`` or a ``GPU 0000..`` line down). A line the paste left
    out (``[...]``, ``...``, ``<snip>``) hides the facts of the GPU block it sits in, or follows at the top
    level: those are unknown with ``facts.ELIDED`` as their reason, never absent or zero.
    """
    root = text_tree(reindented(text, _GPU_KEYS), first_line)  # a record that lost its indent: put back
    rig = Rig()
    blocks = [(c, _GPU_HEADER.match(c.key)) for c in root.children]
    gpu_blocks: list[tuple[Node, str | None]] = [(c, m.group(1)) for c, m in blocks if m]
    tail = _tail_record(root, gpu_blocks)
    if not gpu_blocks and root.child("Driver Version") is None and _one_gpu_fragment(root):
        return _fragment(root, source)
    if not gpu_blocks and root.child("Driver Version") is None and processes_only(root):
        rig = processes_fragment(root, source)
        _software(rig, root, False, source)
        return rig
    if not gpu_blocks and root.child("Driver Version") is None:
        first = root.children[0].line if root.children else first_line
        raise ImportParseError(
            source, first, "no 'Driver Version' and no 'GPU 0000:..' block: not nvidia-smi -q output"
        )
    # A top-level elision after a GPU block may hide the rest of that block: count it as the block's.
    after: dict[int, str] = {}
    last: Node | None = None
    top_elided: str | None = None
    for c in root.children:
        if _GPU_HEADER.match(c.key):
            last = c
        elif c.elided:
            if last is not None:
                after.setdefault(id(last), c.elided)
            top_elided = top_elided or c.elided
    if tail is not None:  # a GPU record's tail above the first whole one: a GPU whose identity is not shown
        rig.problems.append(f"{source}: line {tail.line}: {tail.key}")
        gpu_blocks.insert(0, (tail, None))
    for i, (block, bus) in enumerate(gpu_blocks):
        why = f"{facts.ELIDED} (line {tail.line} starts inside one GPU's record)" if block is tail else None
        rig.gpus.append(
            _gpu_from_block(block, i, bus, False, source, rig, why or block.elision() or after.get(id(block)))
        )
    rig.node.gpu_processes = processes([b for b, _ in gpu_blocks], False) if gpu_blocks else None
    _software(
        rig,
        root,
        False,
        source,
        top_elided if not gpu_blocks or top_elided and _line(top_elided) < gpu_blocks[0][0].line else None,
    )
    _check_count(rig, root, False, source, top_elided)
    return rig


_HEADER_KEYS = {"timestamp", "driver version", "cuda version", "attached gpus", "hic info"}  # -q's, above the GPUs


def _tail_record(root: Node, gpu_blocks: list[tuple[Node, str | None]]) -> Node | None:
    """The lines above the first ``GPU 0000:..`` record that belong to another GPU's record (one of its own keys
    among them: ``Clocks``, ``Max Customer Boost Clocks``, ...): the end of the record before it, cut at the top."""
    if not gpu_blocks:
        return None
    above = [c for c in root.children if c.line < gpu_blocks[0][0].line and not _GPU_HEADER.match(c.key)]
    if not any(c.key.lower() in _GPU_KEYS for c in above):
        return None
    rest = regroup_power([c for c in above if c.key.lower() not in _HEADER_KEYS and not c.key.startswith("=")])
    return Node(
        key="the end of one GPU's nvidia-smi -q record without its 'GPU ..' line", line=rest[0].line, children=rest
    )


# Keys only a GPU's section of nvidia-smi -q prints (a fragment from inside one is known by two of them)
_GPU_KEYS = {
    "product name", "product brand", "product architecture", "display mode", "display active", "persistence mode",
    "accounting mode", "accounting mode buffer size", "gpu uuid", "minor number", "vbios version",
    "multigpu board", "gpu part number", "inforom version", "gpu operation mode", "gpu virtualization mode",
    "gsp firmware version", "performance state", "fb memory usage", "bar1 memory usage", "clocks event reasons",
    "clocks throttle reasons", "retired pages", "remapped rows", "applications clocks", "max clocks", "clocks",
    "compute mode", "utilization", "encoder stats", "fbc stats", "ecc mode", "ecc errors", "gpu power readings",
    "power readings", "module power readings", "default applications clocks", "max customer boost clocks",
    "clock policy", "mig mode", "driver model", "gpu reset status", "board part number", "gpu fabric guid",
}  # fmt: skip


def _one_gpu_fragment(root: Node) -> bool:
    """Two or more of a GPU section's own keys at the top, or one of its blocks grepped alone (``nvidia-smi -q |
    grep -A8 'Clocks Throttle'``, a ``Remapped Rows`` block) with its fields under it."""
    own = [c for c in root.children if c.key.lower() in _GPU_KEYS]
    return len(own) >= 2 or (len(root.children) == 1 and len(own) == 1 and len(own[0].children) >= 2)


def _fragment(root: Node, source: str) -> Rig:
    """Lines from inside one GPU's section, its ``GPU 0000:..`` line not shown: one GPU (its bus id, when shown,
    from the PCI section); what the paste leaves out above and below is not shown, never absent."""
    rig, root.children = Rig(), regroup_power(root.children)
    why = f"{facts.ELIDED} (line {root.line} starts inside one GPU's section)"
    rig.problems.append(f"{source}: line {root.line}: one GPU's nvidia-smi -q section without its 'GPU ..' line")
    rig.gpus.append(_gpu_from_block(root, 0, None, False, source, rig, why))
    _software(rig, root, False, source, why)
    return rig


def _line(reason: str) -> int:
    m = re.search(r"line (\d+)", reason)
    return int(m.group(1)) if m else 0


def parse_smi_xml(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Facts from ``nvidia-smi -q -x``; a file cut short gives the GPUs read before the cut."""
    if not text.lstrip("\ufeff \t\r\n").startswith(("<?xml", "<nvidia_smi_log")):
        return _xml_fragment(text, source, first_line)  # a part of the record, pasted without its root
    root, stopped = xml_tree(text, source, first_line)
    if root.key != "nvidia_smi_log":
        raise ImportParseError(
            source, root.line, f"XML root is <{root.key[:40]}>, not <nvidia_smi_log> (nvidia-smi -q -x)"
        )
    rig = Rig()
    if stopped:
        rig.problems.append(f"{source}: XML ends early ({stopped}); kept what came before")
    blocks = [c for c in root.children if c.key == "gpu"]
    for i, block in enumerate(blocks):
        rig.gpus.append(_gpu_from_block(block, i, block.attrs.get("id"), True, source, rig))
    rig.node.gpu_processes = processes(blocks, True) if blocks else None
    _software(rig, root, True, source)
    _check_count(rig, root, True, source)
    return rig


CLOCKS_XML = {p[0] for p in CLOCKS[1]}
# The elements of one GPU's record in -q -x (its <gpu> element, and those directly inside it)
_X_GPU_TAGS = (
    {"gpu", "processes", "process_info", "clocks", "fan_speed", "fb_memory_usage", "ecc_errors"}
    | {"clocks_event_reasons_counters"}
    | {v.snake(k) for k in _GPU_KEYS}
    | {paths[1][0][0] for paths in PATHS.values()}
    | CLOCKS_XML
)


def _xml_fragment(text: str, source: str, first_line: int) -> Rig:
    """A part of -q -x without its root: a <gpu> element is that GPU; elements from inside one name no GPU: noted,
    with the clocks event reasons they show (one GPU when they hold its name, ids, power limit or memory size)."""
    holder, stopped = xml_tree("<fragment>" + open_unclosed(text), source, first_line)  # lines keep their numbers
    rig = Rig()
    if stopped and "no element found" not in stopped:  # that one: only the holder is left open
        rig.problems.append(f"{source}: XML ends early ({stopped}); kept what came before")
    gpus = [c for c in holder.children if c.key == "gpu"]
    if not any(c.key in _X_GPU_TAGS for c in holder.children):
        first = holder.children[0].key if holder.children else "none"
        raise ImportParseError(
            source, first_line, f"XML root is <{first[:40]}>, not <nvidia_smi_log> (nvidia-smi -q -x)"
        )
    for i, block in enumerate(gpus):
        rig.gpus.append(_gpu_from_block(block, i, block.attrs.get("id"), True, source, rig))
    shown = [c.key for c in holder.children if c.key != "gpu" and c.key != "..."]
    one = _gpu_from_block(holder, 0, None, True, source, Rig()) if shown and not gpus else None
    facts_of_one = ("name", "uuid", "bus_id", "power_limit_w", "memory_total_bytes")
    one = one if one and any(getattr(one, k) is not None for k in facts_of_one) else None
    rig.gpus += [one] if one else []  # its elements hold facts of the one GPU (a <gpu_power_readings>): that GPU
    if shown:
        reasons = _clock_reasons(next((c for c in holder.children if c.key in CLOCKS_XML), None))
        rig.problems.append(
            f"{source}: line {first_line}: part of one GPU's nvidia-smi -q -x record without its <gpu> element "
            f"(<{'>, <'.join(shown[:4])}>): {'read as one GPU, ' if one else 'its GPU '}not identified"
            + (f"; clocks event reasons active: {', '.join(reasons) or 'none'}" if reasons is not None else "")
        )
    _software(rig, holder, True, source, f"{facts.ELIDED} (the paste starts inside the -q -x record)")
    return rig


# -- recognising them in a paste ----------------------------------------------------------------------------

_Q_TOP = re.compile(r"^(?:Timestamp|Driver Version)\s+:\s")  # -q pasted without its banner
Q_GPU = re.compile(rf"^GPU {PCI_BUS_ID}\s*$")  # a GPU's block, as beyond.smi_fabric reads it too
_Q_KEY = re.compile(r"^\s+\S.*?\s+:(?:\s|$)")
_Q_FIELD = re.compile(r"^\s*(\S.*?)\s+:(?:\s|$)|^\s*(?=\S)([\w ]{2,40}?)\s*$")  # "Key : value", or a block's name


def starts_q(lines: list[str], i: int, current: Section | None) -> bool:
    """The ``NVSMI LOG`` banner, or a fragment from ``Timestamp``, ``Driver Version`` or a ``GPU 0000..`` line
    followed by ``key : value`` lines."""
    line, s = lines[i], lines[i].strip()
    if "NVSMI LOG" in s and s.startswith("="):
        return True
    if current is not None and current.kind == "smi-q":
        return False
    if _Q_TOP.match(line) or Q_GPU.match(line):
        return any(_Q_KEY.match(x) or _Q_TOP.match(x) for x in lines[i + 1 : i + 3])
    if _ATTACHED.match(line):  # the paste starts at 'Attached GPUs : 8', its GPU records below
        return any(Q_GPU.match(x) for x in lines[i + 1 : i + 3])
    return _starts_fragment(lines, i)


def _starts_fragment(lines: list[str], i: int) -> bool:
    """Key lines from inside one GPU's section (``Persistence Mode : Disabled``, ``GPU UUID : GPU-..``): the first
    a key of that section, or any ``Key   : value`` line as -q pads it (a paste that starts inside a block), and
    two of the section's keys among the next dozen lines; or one of its blocks alone (``Clocks Throttle Reasons``,
    ``Remapped Rows``) over two or more of its ``Key : value`` lines, indented deeper."""
    keys = [(m.group(1) or m.group(2)).lower() if (m := _Q_FIELD.match(x)) else "" for x in lines[i : i + 12]]
    if keys[0] in _PROCESS_KEYS and (_Q_KEY.match(lines[i]) or keys[0] == "processes") and "process id" in keys[:5]:
        return {"type", "used gpu memory"} & set(keys) != set()  # -q's Processes section alone
    if (keys[0] in _GPU_KEYS or _Q_KEY.match(lines[i])) and sum(k in _GPU_KEYS for k in keys) >= 2:
        return True
    if keys[0] not in _GPU_KEYS or ":" in lines[i]:
        return False
    indent = len(lines[i]) - len(lines[i].lstrip())
    below = lines[i + 1 : i + 4]
    return len(below) >= 2 and all(_Q_KEY.match(x) and len(x) - len(x.lstrip()) > indent for x in below[:2])
