"""A build's data drives: the drive catalog, the array's price and write rate, and the checkpoint stall.

A build names its drives in a ``[storage]`` table: ``drive`` (a catalog id), ``count`` (per node, default 1) and
``raid`` (0, 1 or "none", default "none"); ``price_usd`` overrides the catalog's price per drive. The array's
write rate: RAID 0 stripes (the sum of the drives), RAID 1 mirrors and "none" writes a checkpoint to one drive
(one drive's rate). A drive's rate is its sustained write after the SLC cache when the checkpoint share it
takes is larger than the cache, else its datasheet sequential write. The stall uses the advisor's checkpoint
model (bytes per parameter per framework, sharded writes per node).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from gpuadvisor.errors import InputError
from gpuadvisor.plain import FieldsDict

RAIDS = ("0", "1", "none")
STORAGE_KEYS = {"drive", "count", "raid", "price_usd"}


@dataclass(frozen=True)
class Drive:
    id: str
    name: str
    interface: str
    seq_read_mbps: float | None
    seq_write_mbps: float | None
    spec_source: str | None
    slc_cache_gb: float | None
    sustained_write_mbps: float | None
    sustained_source: str | None
    price_usd: float | None
    price_date: str | None
    price_source: str | None
    missing: str | None
    accessed: str | None


def load_drives() -> dict[str, Drive]:
    text = resources.files("gpuadvisor.catalog").joinpath("drives.toml").read_text(encoding="utf-8")
    out: dict[str, Drive] = {}

    def cited(row: dict[str, Any], what: str) -> str | None:
        src, url = row.get(f"{what}_source"), row.get(f"{what}_url")
        return f"{src}, {url}" if src and url else src

    for row in tomllib.loads(text)["drive"]:
        out[row["id"]] = Drive(
            id=row["id"],
            name=row["name"],
            interface=row["interface"],
            seq_read_mbps=row.get("seq_read_mbps"),
            seq_write_mbps=row.get("seq_write_mbps"),
            spec_source=cited(row, "spec"),
            slc_cache_gb=row.get("slc_cache_gb"),
            sustained_write_mbps=row.get("sustained_write_mbps"),
            sustained_source=cited(row, "sustained"),
            price_usd=row.get("price_usd"),
            price_date=row.get("price_date"),
            price_source=cited(row, "price"),
            missing=row.get("missing"),
            accessed=row.get("accessed"),
        )
    return out


MAX_DRIVES = 64  # per node (a build has at most 64 GPUs; a 2U server holds 24-32 drives)
MAX_DRIVE_USD = 1e6  # per drive: the dearest enterprise SSD costs a few tens of thousands of dollars


@dataclass
class Storage:
    drive: Drive
    count: int
    raid: str  # "0" | "1" | "none"
    price_usd: float | None  # per drive
    price_basis: str | None

    def label(self) -> str:
        raid = {"0": "RAID 0", "1": "RAID 1", "none": "no RAID"}[self.raid]
        return f"{self.count} x {self.drive.name}, {raid}" if self.count > 1 else f"1 x {self.drive.name}"


def parse_storage(origin: str, table: Any) -> Storage:
    """The ``[storage]`` table of a build; bad input raises InputError (one line, exit 2)."""
    if not isinstance(table, dict):
        raise InputError(f"{origin}: [storage]: expected a table (drive, count, raid)")
    extra = sorted(set(table) - STORAGE_KEYS)
    if extra:
        raise InputError(f"{origin}: storage.{extra[0]}: unknown key (allowed: {', '.join(sorted(STORAGE_KEYS))})")
    drives = load_drives()
    drive_id = table.get("drive")
    if drive_id is None:
        raise InputError(f"{origin}: storage.drive: missing (name the drive: {', '.join(sorted(drives))})")
    if not isinstance(drive_id, str) or drive_id not in drives:
        raise InputError(f"{origin}: storage.drive {drive_id!r}: unknown drive (known: {', '.join(sorted(drives))})")
    count = table.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_DRIVES:
        raise InputError(
            f"{origin}: storage.count {count!r}: expected a whole number of drives per node, at least 1 and at "
            f"most {MAX_DRIVES}"
        )
    raid_raw = table.get("raid", "none")
    raid = str(raid_raw).lower() if not isinstance(raid_raw, bool) else "?"
    if raid not in RAIDS:
        raise InputError(f'{origin}: storage.raid {raid_raw!r}: expected 0, 1 or "none"')
    d = drives[drive_id]
    given = table.get("price_usd")
    if given is not None:
        if isinstance(given, bool) or not isinstance(given, (int, float)) or not 0 <= given <= MAX_DRIVE_USD:
            raise InputError(
                f"{origin}: storage.price_usd {given!r}: expected a price in US$ per drive, 0 to {MAX_DRIVE_USD:,.0f}"
            )
        return Storage(d, count, raid, float(given), f"US${float(given):,.2f} per drive (given in the build)")
    if d.price_usd is not None:
        return Storage(
            d, count, raid, d.price_usd, f"US${d.price_usd:,.2f} per drive ({d.price_date}: {d.price_source})"
        )
    return Storage(d, count, raid, None, None)


def add_drive_price(cost: Any, st: Storage, nodes: int, rent: bool) -> None:
    """Add the drives' price to a bought build's purchase price (in place)."""
    if rent:
        cost.notes.append(f"storage {st.label()}: not priced for a rented machine (the provider's disks)")
        return
    n = st.count * nodes
    if st.price_usd is None:
        cost.notes.append(f"storage: no public price for {st.drive.name}; give storage.price_usd (not added)")
        return
    if cost.purchase_usd is None:
        return
    cost.purchase_usd += st.price_usd * n
    cost.purchase_basis = f"{cost.purchase_basis} + {n} x {st.price_basis} drives"


@dataclass
class StorageStall(FieldsDict):
    counted: bool
    note: str
    storage: str | None = None
    checkpoint_bytes: int | None = None  # per node
    write_gbps: float | None = None
    write_basis: str | None = None
    save_seconds: float | None = None
    interval_seconds: float | None = None
    interval_source: str | None = None
    checkpoints: int | None = None
    stall_seconds: float | None = None
    train_hours: float | None = None
    hours_with_stall: float | None = None
    sources: list[str] = field(default_factory=list)


def array_write(st: Storage, checkpoint_bytes: int) -> tuple[float | None, str]:
    """(GB/s, basis) of the array for one checkpoint of ``checkpoint_bytes`` per node."""
    d = st.drive
    share = checkpoint_bytes / st.count if st.raid == "0" else checkpoint_bytes
    over_cache = d.slc_cache_gb is not None and share > d.slc_cache_gb * 1e9
    if over_cache and d.sustained_write_mbps:
        mbps, what = float(d.sustained_write_mbps), f"sustained write after the {d.slc_cache_gb:g} GB SLC cache"
    elif not over_cache and d.seq_write_mbps:
        mbps, what = float(d.seq_write_mbps), "datasheet sequential write"
    else:
        need = "sustained write after the SLC cache" if over_cache else "datasheet sequential write"
        return None, f"{d.name}: no sourced {need}"
    if st.raid == "0":
        return st.count * mbps / 1000, f"RAID 0 of {st.count} x {mbps:,.0f} MB/s ({what})"
    how = "RAID 1: one drive's" if st.raid == "1" else "one drive's"
    return mbps / 1000, f"{how} {mbps:,.0f} MB/s ({what})"


def checkpoint_stall(
    storage: Storage | None,
    total_bytes: int | None,
    per_node_bytes: int | None,
    train_hours: float | None,
    interval_s: float,
    interval_source: str,
) -> StorageStall:
    """The checkpoint stall added to the time to train (blocking saves every ``interval_s``)."""
    if storage is None:
        return StorageStall(False, "checkpoint stall not counted: the build names no [storage] drives (assumed none)")
    if per_node_bytes is None or total_bytes is None:
        return StorageStall(
            False, "checkpoint stall not counted: no training pick to size a checkpoint", storage.label()
        )
    gbps, basis = array_write(storage, per_node_bytes)
    d = storage.drive
    sources = [s for s in (d.spec_source, d.sustained_source) if s]
    if gbps is None:
        return StorageStall(False, f"checkpoint stall not counted: {basis}", storage.label(), per_node_bytes)
    save = per_node_bytes / (gbps * 1e9)
    out = StorageStall(
        True,
        "",
        storage.label(),
        per_node_bytes,
        gbps,
        basis,
        save,
        interval_s,
        interval_source,
        sources=sources,
    )
    if train_hours is None:
        out.note = f"{save:,.0f} s per checkpoint; no time to train to add it to (give --tokens)"
        return out
    train_s = train_hours * 3600
    n = math.floor(train_s / interval_s)
    out.checkpoints = n
    out.stall_seconds = n * save
    out.train_hours = train_hours
    out.hours_with_stall = (train_s + n * save) / 3600
    out.note = (
        f"checkpoint stall: {n:,} saves x {save:,.0f} s = {n * save / 3600:,.2f} h "
        f"({per_node_bytes / 1e9:,.0f} GB per node at {gbps:g} GB/s, {basis}; {interval_source})"
    )
    return out
