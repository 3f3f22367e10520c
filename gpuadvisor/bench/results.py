"""Turn worker events into Measurements: GPU numbers mapped onto the rig, expected figure and ratio added,
and whatever a hung or dead worker left unfinished recorded with its rows and the reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuadvisor.facts import COLLECTIVES, Measurement, Rig, SweepRow
from gpuadvisor.nodename import node_name
from gpuadvisor.physics.expected import expected_bandwidth

RISING = 1.1  # the last size doubling raised busbw by more than this factor: the sweep stopped before the plateau


def _bus_key(bus_id: str | None) -> tuple[int, int, int] | None:
    """(domain, bus, device) of a PCI bus id in NVML ("00000000:41:00.0") or torch ("0000:41:00.0") form."""
    if not bus_id:
        return None
    try:
        dom, bus, rest = bus_id.strip().lower().split(":")
        return int(dom, 16), int(bus, 16), int(rest.split(".")[0], 16)
    except ValueError:
        return None


def from_event(ev: dict[str, Any], names: tuple[str, ...], **made: Any) -> Measurement:
    """A Measurement of a worker's event: its kind, the fields ``names`` as the worker gave them (None where it
    gave none), and the fields ``made`` here."""
    fields: dict[str, Any] = {n: ev.get(n) for n in names}
    return Measurement(kind=ev["kind"], **fields, **made)


class Collector:
    """Feeds on events as they arrive (for progress) and builds the Measurements at the end."""

    def __init__(self, rig: Rig, progress: Callable[[int, int, str], None] | None = None) -> None:
        self.rig = rig
        self.progress = progress
        self.done = 0
        self.total = 0
        self.order: list[str] = []
        self.begin: dict[str, dict[str, Any]] = {}
        self.rows: dict[str, list[dict[str, Any]]] = {}
        self.end: dict[str, dict[str, Any]] = {}
        self.ranks: list[dict[str, Any]] = []
        self.devices: dict[int, dict[str, Any]] = {}
        self._planned_sizes: dict[str, int] = {}
        self.by_bus = {k: g.index for g in rig.gpus if (k := _bus_key(g.bus_id)) is not None}

    # -- progress -----------------------------------------------------------------------------------------
    def plan(self, steps: int) -> None:
        self.total += steps
        self._tick("")

    def _tick(self, label: str, steps: int = 0) -> None:
        self.done += steps
        self.total = max(self.total, self.done)
        if self.progress is not None:
            self.progress(self.done, self.total, label)

    # -- events -------------------------------------------------------------------------------------------
    def feed(self, events: list[dict[str, Any]]) -> None:
        for ev in events:
            kind = ev.get("ev")
            if kind == "ranks":
                self.ranks = ev["ranks"]
            elif kind == "devices":
                self.devices = {d["ordinal"]: d for d in ev["devices"]}
            elif kind == "plan":
                self.plan(int(ev["steps"]))
            elif kind == "result":  # compute: one figure
                what = (
                    f"{ev['value_tflops']:.3g} TFLOP/s"
                    if ev.get("value_tflops") is not None
                    else f"{ev['value_gbps']:.4g} GB/s"
                    if ev.get("value_gbps") is not None
                    else ev.get("status")
                )
                self._tick(
                    f"{ev.get('backend')} {ev.get('kind')} {ev.get('dtype') or ''} {ev.get('shape') or ''}: "
                    f"{what}".replace("  ", " "),
                    1,
                )
            elif kind == "begin":
                key = ev["key"]
                self.order.append(key)
                self.begin[key] = ev
                self.rows.setdefault(key, [])
            elif kind == "row":
                self.rows.setdefault(ev["key"], []).append(ev["row"])
                r = ev["row"]
                if ev["key"] in COLLECTIVES:  # a copy counts once, at its end
                    self._tick(f"{ev['key']} {r['size_bytes']} B: busbw {r['busbw_gbps']:.2f} GB/s", 1)
            elif kind == "end":
                key = ev["key"]
                self.end[key] = ev
                if key in COLLECTIVES:
                    planned = self._planned_sizes.get(key, 0)
                    self._tick(f"{key} done", max(0, planned - len(self.rows.get(key, []))))
                else:
                    v, lat = ev.get("value_gbps"), ev.get("latency_us")
                    what = (
                        f"{v:.2f} GB/s" if v is not None else f"{lat:.2f} us" if lat is not None else ev.get("status")
                    )
                    self._tick(f"{key}: {what}", 1)

    def plan_collectives(self, kinds: list[str], sizes: int) -> None:
        self._planned_sizes = {k: sizes for k in kinds}
        self.plan(len(kinds) * sizes)

    # -- mapping ------------------------------------------------------------------------------------------
    def _gpu_index(self, bus_id: str | None, ordinal: int | None, notes: list[str]) -> int | None:
        k = _bus_key(bus_id)
        if k is not None and k in self.by_bus:
            return self.by_bus[k]
        if ordinal is not None:
            note = "GPU numbers are CUDA ordinals: no GPU with that PCI bus id in this scan's facts"
            if note not in notes:
                notes.append(note)
        return ordinal

    def _gpus_of(self, b: dict[str, Any], notes: list[str]) -> tuple[list[int], bool]:
        """GPU indices of a measurement and whether its ranks span several hosts."""
        if "ranks" in b:
            ranks = b["ranks"] or self.ranks
            hosts = {r.get("host") for r in ranks}
            if len(hosts) > 1:  # the rig is this host: list its GPUs only
                here = node_name()
                notes.append(f"ranks on {len(hosts)} hosts; gpus lists the GPUs of this host ({here}) only")
                ranks = [r for r in ranks if r.get("host") == here]
            gpus = [
                g
                for r in ranks
                if r.get("ordinal") is not None
                and (g := self._gpu_index(r.get("bus_id"), r["ordinal"], notes)) is not None
            ]
            return gpus, len(hosts) > 1
        out = []
        for d in b.get("devices") or []:
            info = self.devices.get(d, {})
            g = self._gpu_index(info.get("bus_id"), d, notes)
            if g is not None:
                out.append(g)
        return out, False

    def _together(self, b: dict[str, Any]) -> list[int]:
        """The GPUs of every copy run at once with this one (same kind and memory, ``concurrent``)."""
        out: set[int] = set()
        for o in self.begin.values():
            if o.get("concurrent") and o.get("kind") == b.get("kind") and o.get("memory") == b.get("memory"):
                out.update(self._gpus_of(o, [])[0])
        return sorted(out)

    # -- assembly -----------------------------------------------------------------------------------------
    def measurement(self, key: str, outcome_status: str, outcome_error: str | None) -> Measurement:
        b = self.begin[key]
        end = self.end.get(key)
        notes: list[str] = list(end.get("notes") or []) if end else []
        rows = [SweepRow(**r) for r in self.rows.get(key, [])]
        gpus, spans = self._gpus_of(b, notes)
        given = ("backend", "method", "world_size", "memory", "concurrent", "p2p_enabled", "warmup_iters", "iters")
        m = from_event(b, given, gpus=gpus, rows=rows, notes=notes)
        if b.get("ranks") or self.ranks:
            m.hosts = [str(r.get("host")) for r in (b.get("ranks") or self.ranks)]
        if end is not None:
            m.status = end.get("status") or "ok"
            m.error = end.get("error")
        elif outcome_status == "interrupted":  # the user stopped it: what was measured stands, as when the budget ends
            m.status = "partial" if rows else "skipped"
            done = f"{len(rows)} size(s) measured before it" if rows else "nothing measured yet"
            m.error = f"{outcome_error} ({done})"
        else:
            m.status = outcome_status if outcome_status != "ok" else "failed"
            done = f"{len(rows)} size(s) measured before it" if rows else "nothing measured yet"
            m.error = f"{outcome_error or 'worker ended without finishing this measurement'} ({done})"
        if m.kind in COLLECTIVES:
            good = [r for r in rows if r.correct is not False]
            if m.world_size == 1:
                notes.append(
                    "world size 1: no data crosses a link, so there is no bus bandwidth to report "
                    "(busbw is 0 by the nccl-tests factor, or a local copy / no-op for broadcast)"
                )
            elif m.status != "failed" and good and len(good) == len(rows):
                m.value_gbps = good[-1].busbw_gbps
        elif end is not None and m.status == "ok":
            m.value_gbps = end.get("value_gbps")
            m.latency_us = end.get("latency_us")
        exp = expected_bandwidth(
            self.rig,
            m.kind,
            gpus,
            backend=m.backend,
            world_size=m.world_size,
            memory=m.memory,
            p2p_enabled=m.p2p_enabled,
            spans_nodes=spans,
            together=self._together(b) if m.concurrent else None,
        )
        m.expected_source = exp.source
        if exp.gbps is not None:
            m.expected_gbps = round(exp.gbps, 3)
            if m.value_gbps is not None:
                m.ratio = round(m.value_gbps / exp.gbps, 4)
            good = [r for r in rows if r.correct is not False]
            if (
                m.kind in COLLECTIVES
                and m.value_gbps is not None
                and len(good) >= 2
                and good[-1].busbw_gbps > RISING * good[-2].busbw_gbps
            ):
                notes.append(
                    f"busbw still rising at the largest size ({good[-2].busbw_gbps:.2f} -> "
                    f"{good[-1].busbw_gbps:.2f} GB/s from {good[-2].size_bytes} to {good[-1].size_bytes} B): "
                    "the sweep ended before busbw levels off, so the headline understates the links; a "
                    "larger -e measures the plateau"
                )
        else:
            m.unavailable["expected_gbps"] = exp.source
        return m

    def measurements(self, outcome_status: str, outcome_error: str | None) -> list[Measurement]:
        return [self.measurement(k, outcome_status, outcome_error) for k in self.order]
