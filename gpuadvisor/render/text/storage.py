"""The storage section of the text view: each directory, its filesystem and drives, the figures.

``storage_rows(rig)`` is the one reading of ``rig.storage`` the text and HTML views share: a list of (label, value)
per directory; ``render_text`` lays them out for the terminal, gpuadvisor.render.html.storage as a table.
"""

from __future__ import annotations

from gpuadvisor.advice_model import CheckpointPlan, checkpoint_plan
from gpuadvisor.facts import BlockDevice, Rig, StoragePath
from gpuadvisor.text import pcie_link

GiB = 2**30


def _size(n: int | None) -> str:
    if n is None:
        return "unknown"
    return f"{n / 2**40:,.1f} TiB" if n >= 2**40 else f"{n / GiB:,.1f} GiB"


def _link(d: BlockDevice) -> str:
    if not d.pcie_path:
        return ""
    h = d.pcie_path[0]
    if h.current_width is None and h.current_gen is None:
        return ""
    cur = pcie_link(h.current_gen or None, h.current_width or None)  # a 0 read from sysfs is not known either
    top = pcie_link(h.max_gen or None, h.max_width or None)
    numa = f", NUMA {d.numa_node}" if d.numa_node is not None else ""
    return f", PCIe {cur}" + ("" if cur == top else f" (capable {top})") + numa


def device_text(d: BlockDevice) -> str:
    if d.kind in ("md", "lvm", "dm"):
        what = d.raid_level if d.kind == "md" else ("LVM volume" if d.kind == "lvm" else "device-mapper volume")
        members = ", ".join(device_text(m) for m in d.members) or "members unknown"
        return f"{d.name} ({what}, {_size(d.size_bytes)}) over [{members}]"
    kind = {"nvme": "NVMe", "sata": "SATA", "sas": "SAS", "scsi": "SCSI"}.get(d.kind, d.kind)
    hdd = ", rotational" if d.rotational else ""
    return f"{d.name} {kind} {d.model or '(model unknown)'} {_size(d.size_bytes)}{hdd}{_link(d)}"


def path_rows(sp: StoragePath) -> list[tuple[str, str]]:
    fs = sp.fs_type or f"unknown ({sp.why('fs_type') or 'not recorded'})"
    if sp.network:
        fs += " (network filesystem)"
    rows = [
        ("filesystem", f"{fs} on {sp.fs_source or '?'} at {sp.mount_point or '?'}"),
        ("mount options", ",".join(sp.mount_options) or "none recorded"),
        ("space", f"{_size(sp.free_bytes)} free of {_size(sp.size_bytes)}"),
    ]
    if sp.devices:
        rows += [("device", device_text(d)) for d in sp.devices]
    elif sp.why("devices"):
        rows.append(("device", str(sp.why("devices"))))
    b = sp.bench
    if b is not None:
        figs = []
        if b.seq_read_gbps is not None:
            figs.append(f"read {b.seq_read_gbps:g} GB/s")
        if b.seq_write_gbps is not None:
            figs.append(f"write {b.seq_write_gbps:g} GB/s")
        if b.rand_read_iops is not None:
            figs.append(f"4 KiB random read {b.rand_read_iops:,.0f} IOPS (QD{b.iodepth or 1})")
        rows.append((b.provenance, "; ".join(figs) + f" [{b.method or 'unknown method'}]"))
    return rows


def storage_rows(rig: Rig) -> list[tuple[str, list[tuple[str, str]]]]:
    return [(f"{sp.role}: {sp.path}", path_rows(sp)) for sp in rig.storage.paths]


def cache_line(rig: Rig) -> str | None:
    st = rig.storage
    if st.page_cache_bytes is None and st.memory_available_bytes is None:
        return None
    return (
        f"page cache {_size(st.page_cache_bytes)} now; {_size(st.memory_available_bytes)} of RAM available "
        "(MemAvailable) for caching the dataset"
    )


def render_text(rig: Rig) -> str:
    """Plain lines (the caller fits them to the terminal); empty when the scan holds no storage facts."""
    if not rig.storage.paths:
        return ""
    out: list[str] = []
    for title, rows in storage_rows(rig):
        out.append(title)
        out += [f"  {k}: {v}" for k, v in rows]
    cache = cache_line(rig)
    if cache:
        out.append(cache)
    plan = checkpoint_plan(rig.advice)
    if plan is not None:
        out.append(checkpoint_line(plan))
    return "\n".join(out) + "\n"


def checkpoint_line(plan: CheckpointPlan) -> str:
    assumed = " (assumed rate)" if plan.write_provenance == "assumed" else ""
    return (
        f"checkpoint: {plan.total_bytes / GiB:,.1f} GiB, {plan.save_seconds:,.0f} s per save at "
        f"{plan.write_gbps:g} GB/s{assumed} = {plan.stall_fraction:.1%} of training time, {plan.interval_source}"
    )
