"""Sourced platform data for planned machines: CPUs (platforms.toml) and reference prices (prices.toml).

A price is never fetched: each carries the date and source it was taken from, and ``load_prices(path)`` lays a
user's own file (same format) over the shipped one.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuadvisor.catalog import Matched, _read, gpus, rows
from gpuadvisor.errors import InputError


@dataclass(frozen=True)
class CpuSpec(Matched):
    """One CPU product. Lane and slot figures are per socket."""

    id: str
    name: str
    match: tuple[str, ...]
    kind: str  # desktop | workstation | server
    cores: int
    threads: int
    pcie_gen: int
    lanes: int
    gpu_lanes: int
    gpu_slots: int
    chipset_slots: int
    memory_channels: int
    memory_type: str
    max_memory_gib: int
    tdp_w: float
    max_sockets: int
    source: str
    chipset_uplink: dict[str, int] | None = None


@dataclass(frozen=True)
class Price:
    """A reference price: US dollars, the month (or year) it was listed, and where."""

    usd: float
    date: str
    source: str
    url: str = ""
    kind: str = ""  # launch MSRP | street | used | on-demand | quote
    provider: str = ""

    def label(self) -> str:
        what = f"{self.kind} " if self.kind else ""
        who = f"{self.provider}, " if self.provider else ""
        return f"{what}reference price, {who}{self.date}".strip()


@dataclass(frozen=True)
class Prices:
    gpu: dict[str, Price]
    cpu: dict[str, Price]
    system: dict[str, Price]
    cloud: dict[str, Price]  # per GPU-hour, by GPU catalog id (the cheapest on-demand offer)
    cloud_offers: dict[str, tuple[Price, ...]] = dataclasses.field(default_factory=dict)  # every provider's


def months_old(date: str, today: str | None = None) -> float | None:
    """Months from a price's date ("2025-06" or "2025-06-14") to ``today`` (default: now); None if undated."""
    import datetime as dt

    m = re.match(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$", date.strip())
    if not m:
        return None  # a year alone is taken as mid-year
    now = dt.date.fromisoformat(today) if today else dt.date.today()
    then = dt.date(int(m[1]), int(m[2] or 7), int(m[3] or 1))
    return (now - then).days / 30.44


@functools.cache
def cpus() -> tuple[CpuSpec, ...]:
    return rows(CpuSpec, "platforms.toml", "cpu")


def find_cpu(name: str) -> CpuSpec | None:
    """A CPU by catalog id or by a model name ("AMD Ryzen 9 7950X 16-Core Processor")."""
    key = name.strip().lower()
    for c in cpus():
        if key == c.id:
            return c
    return next((c for c in cpus() if c.matches(name)), None)


def find_gpu_spec(name: str):
    """A GPU by catalog id or by a product name ("RTX 4090", "NVIDIA H100 80GB HBM3")."""
    from gpuadvisor.catalog import find_gpu, gpu_by_id

    return gpu_by_id(name.strip().lower()) or find_gpu(name)


def resolve_gpu(name: str, where: str) -> Any:
    """The catalog GPU a person names: an id, or a name only one catalog GPU fits ("RTX 4090"); a name several
    fit ("H100": PCIe, SXM5 or NVL) is asked back with the choices, never guessed; else an NVML product name."""
    from gpuadvisor.catalog import gpu_by_id

    exact = gpu_by_id(name.strip().lower())
    if exact is not None:
        return exact
    words = [w for w in re.split(r"[\s_-]+", name.strip().lower()) if w and w != "nvidia"]
    fits = [g for g in gpus() if words and all(w in f"{g.id} {g.name}".lower() for w in words)]
    if len(fits) > 1:
        raise InputError(
            f"{where}: {name!r} is ambiguous: one of {', '.join(g.id for g in fits)} "
            "(they differ in memory, bandwidth and power)"
        )
    if len(fits) == 1:
        return fits[0]
    # a product name as nvidia-smi prints it ("NVIDIA H100 80GB HBM3"); an id-like word ("h100-sxm9") is no such name
    spec = find_gpu_spec(name) if " " in name.strip() else None
    if spec is None:
        raise InputError(f"{where}: {unknown_gpu(name)}")
    return spec


def nearest(name: str, choices: list[str], n: int = 3) -> str:
    """', or did you mean A, B' for a misspelt name (empty when nothing is close)."""
    close = difflib.get_close_matches(name.strip().lower(), choices, n=n, cutoff=0.5)
    return f"; did you mean {', '.join(close)}?" if close else ""


def unknown_gpu(name: str) -> InputError:
    ids = [g.id for g in gpus()]
    return InputError(f"unknown GPU {name!r}{nearest(name, ids)} (the catalog has {', '.join(ids)})")


def unknown_cpu(name: str) -> InputError:
    ids = [c.id for c in cpus()]
    return InputError(f"unknown CPU {name!r}{nearest(name, ids)} (the catalog has {', '.join(ids)})")


def _dated(row: dict[str, Any], where: str) -> None:
    """A buyer's price row says when it was read (YYYY-MM or YYYY-MM-DD, not in the future) and where from."""
    date = row.get("date")
    if not isinstance(date, str) or months_old(date) is None or re.fullmatch(r"\d{4}", date.strip()):
        raise InputError(
            f'{where}.date: {date!r}: every price needs the date it was read, as date = "YYYY-MM" (a price '
            "without one cannot be checked for age)"
        )
    age = months_old(date)
    if age is not None and age < -0.5:
        raise InputError(f"{where}.date: {date!r} is in the future")
    src = row.get("source")
    if not isinstance(src, str) or not src.strip():
        raise InputError(f'{where}.source: missing: say where the price is from (source = "shop quote, 2026-11")')


def _prices_from(data: dict[str, Any], origin: str, user: bool = False) -> Prices:
    tables: dict[str, dict[str, Price]] = {"gpu": {}, "cpu": {}, "system": {}, "cloud": {}}
    allowed = {"gpu", "cpu", "system", "cloud"}
    for key in data:
        if key not in allowed:
            raise InputError(f"{origin}: unknown table [[{key}]] (allowed: {', '.join(sorted(allowed))})")
    offers: dict[str, list[Price]] = {}
    for kind in sorted(allowed):
        rows = data.get(kind, [])
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise InputError(
                f"{origin}: [{kind}] must be an array of tables: write [[{kind}]] (two brackets), one per price"
            )
        for i, row in enumerate(rows):
            where = f"{origin}: {kind}[{i}]"
            ident = row.get("gpu" if kind == "cloud" else "id")
            usd = row.get("usd_per_gpu_hour" if kind == "cloud" else "usd")
            if not isinstance(ident, str) or not ident:
                raise InputError(f"{where}: missing {'gpu' if kind == 'cloud' else 'id'}")
            if not isinstance(usd, int | float) or isinstance(usd, bool) or not (0 < usd < 1e9):
                raise InputError(
                    f"{where}.{'usd_per_gpu_hour' if kind == 'cloud' else 'usd'}: expected a positive number of US "
                    f"dollars, got {usd!r}"
                )
            if kind in ("gpu", "cloud"):
                ident = resolve_gpu(ident, f"{where}.{'gpu' if kind == 'cloud' else 'id'}").id
            if kind == "cpu" and find_cpu(ident) is None:
                raise unknown_cpu(ident)
            if kind == "cpu":
                cpu = find_cpu(ident)
                assert cpu is not None  # checked above
                ident = cpu.id
            if user:
                _dated(row, where)
            extra = {k: str(row[k]) for k in ("url", "kind", "provider") if isinstance(row.get(k), str)}
            price = Price(float(usd), str(row.get("date", "date not given")), str(row.get("source", origin)), **extra)
            if kind == "cloud":
                offers.setdefault(ident, []).append(price)
                if ident in tables[kind] and tables[kind][ident].usd <= price.usd:
                    continue
            tables[kind][ident] = price
    return Prices(**tables, cloud_offers={k: tuple(v) for k, v in offers.items()})


@functools.cache
def _shipped_prices() -> Prices:
    return _prices_from(_read("prices.toml"), "prices.toml")


def load_prices(path: str | None = None) -> Prices:
    """The shipped reference prices, with a user's file laid over them."""
    base = _shipped_prices()
    if not path:
        return base
    from gpuadvisor.inputs import CONFIG_LIMIT, loads_toml, read_text

    text = read_text(Path(path), "a TOML prices file", CONFIG_LIMIT)
    data = loads_toml(text, str(path), "a TOML prices file")
    user = _prices_from(data, path, user=True)
    merged = Prices(**{k: {**getattr(base, k), **getattr(user, k)} for k in ("gpu", "cpu", "system", "cloud")})
    merged.cloud_offers.update(base.cloud_offers)
    merged.cloud_offers.update(user.cloud_offers)  # the buyer's own offers replace the reference ones
    return merged
