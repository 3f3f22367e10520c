"""Worker side of the copy benchmarks on CUDA GPUs: host<->device, device-to-device, peer-to-peer.

Measured the way NVIDIA's nvbandwidth does (its README, "Measurement Details"): large buffers; a spin kernel
first holds the stream (here ``torch.cuda._sleep``, calibrated in clock cycles) while the start event, the
copies and the stop event are queued, so host launch gaps stay out of the timed window; CUDA events; the
median of several runs; and the copied bytes compared with the source afterwards. A run whose start event
was already reached when queueing ended (the spin was too short) is repeated with a longer spin.

Peer copies follow p2pBandwidthLatencyTest (CUDA samples): ``cudaMemcpyPeerAsync`` with peer access off
(the driver stages through host memory), then on; bidirectional = both directions at once, the two
directions' bandwidths summed; latency = a 4-byte copy, averaged over many.

One process drives every visible GPU. Bandwidth is bytes / time with GB/s = 1e9 B/s; a copy within one GPU
counts each byte once (CUDA samples' bandwidthTest counts it twice, once read and once written).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpuadvisor.bench.cudart import CudaRt
from gpuadvisor.bench.events import EventWriter
from gpuadvisor.bench.launcher import set_status
from gpuadvisor.bench.timing import median

SPIN_METHOD = "queued behind a spin kernel (torch.cuda._sleep), CUDA events"


@dataclass
class Lane:
    """One stream of copies: its device, stream and the call that queues one copy on it."""

    device: int
    stream: Any
    copy: Callable[[], object]  # queues one copy (a torch copy returns its tensor)
    nbytes: int


class CopyBench:
    def __init__(self, torch: Any, cfg: dict[str, Any], events: EventWriter) -> None:
        self.torch = torch
        self.cfg = cfg
        self.events = events
        self.n = int(cfg["copies_per_run"])
        self.runs = int(cfg["copy_runs"])
        self.deadline = float(cfg["soft_deadline"])
        self.devices = list(range(torch.cuda.device_count()))
        self.cycles_per_ms = {d: self._calibrate(d) for d in self.devices}
        self.streams = {d: torch.cuda.Stream(device=d) for d in self.devices}

    # -- timing ------------------------------------------------------------------------------------------
    def _calibrate(self, d: int) -> float:
        torch = self.torch
        with torch.cuda.device(d):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            cycles = 20_000_000
            for _ in range(2):  # the first launch includes module load
                s.record()
                torch.cuda._sleep(cycles)
                e.record()
                e.synchronize()
            return cycles / max(s.elapsed_time(e), 1e-3)

    def _run_once(self, lanes: list[Lane], n: int, spin_ms: float) -> tuple[list[float], bool]:
        """Queue n copies on every lane behind spins; seconds per copy per lane, and whether the spin held."""
        torch = self.torch
        if spin_ms > 0:
            for lane in lanes:
                with torch.cuda.device(lane.device), torch.cuda.stream(lane.stream):
                    torch.cuda._sleep(int(self.cycles_per_ms[lane.device] * spin_ms))
        marks = []
        for lane in lanes:
            with torch.cuda.device(lane.device), torch.cuda.stream(lane.stream):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(lane.stream)
                for _ in range(n):
                    lane.copy()
                e.record(lane.stream)
                marks.append((s, e))
        held = spin_ms <= 0 or not any(s.query() for s, _ in marks)
        for _, e in marks:
            e.synchronize()
        return [s.elapsed_time(e) / 1e3 / n for s, e in marks], held

    def measure(self, lanes: list[Lane], n: int, spin: bool = True) -> tuple[list[float], list[str]]:
        """Median seconds per copy on each lane over ``runs`` runs (after one warm-up run)."""
        notes: list[str] = []
        spin_ms = (2.0 + 0.05 * n * len(lanes)) if spin else 0.0
        self._run_once(lanes, min(n, 2), spin_ms)  # warm-up
        per_lane: list[list[float]] = [[] for _ in lanes]
        for _ in range(self.runs):
            for _attempt in range(4):
                times, held = self._run_once(lanes, n, spin_ms)
                if held:
                    break
                spin_ms *= 2
            else:
                notes.append("spin kernel too short in some runs: launch gaps may be inside the timed window")
            for i, t in enumerate(times):
                per_lane[i].append(t)
        return [median(ts) for ts in per_lane], sorted(set(notes))

    # -- events --------------------------------------------------------------------------------------------
    def time_left(self, key: str) -> bool:
        """Whether the soft deadline allows another measurement; notes which one for the supervisor."""
        set_status(f"measuring {key}")
        return time.time() < self.deadline

    def emit(
        self,
        key: str,
        kind: str,
        devices: list[int],
        method: str,
        size: int,
        sec: float | None,
        mismatches: int,
        *,
        memory: str | None = None,
        concurrent: bool | None = None,
        p2p_enabled: bool | None = None,
        value_gbps: float | None = None,
        latency_us: float | None = None,
        notes: list[str] | None = None,
        status: str | None = None,
        error: str | None = None,
    ) -> None:
        ev = self.events
        self._begin(
            key,
            kind,
            devices,
            method,
            memory=memory,
            concurrent=concurrent,
            p2p_enabled=p2p_enabled,
            warmup_iters=1,
            iters=self.n,
        )
        if sec is not None:
            bw = value_gbps if value_gbps is not None else size / sec / 1e9
            ev.emit(
                "row",
                key=key,
                row={
                    "size_bytes": size,
                    "count": size,
                    "dtype": "uint8",
                    "time_us": sec * 1e6,
                    "algbw_gbps": bw,
                    "busbw_gbps": bw,
                    "correct": mismatches == 0,
                    "errors": mismatches,
                },
            )
            if value_gbps is None and latency_us is None:
                value_gbps = bw
        if status is None:
            status = "ok" if mismatches == 0 else "failed"
        if mismatches and error is None:
            error = f"copied data differs from the source in {mismatches} bytes"
        ev.emit(
            "end",
            key=key,
            status=status,
            error=error,
            notes=notes or [],
            value_gbps=value_gbps if status == "ok" else None,
            latency_us=latency_us,
        )

    def skip(self, key: str, kind: str, devices: list[int], reason: str, **fields: Any) -> None:
        self._begin(key, kind, devices, None, **fields)
        self.events.emit("end", key=key, status="skipped", error=reason, notes=[])

    def _begin(self, key: str, kind: str, devices: list[int], method: str | None, **fields: Any) -> None:
        """The "begin" event of one copy measurement (measured or skipped): one process, the CUDA copy engines."""
        self.events.emit(
            "begin", key=key, kind=kind, backend="cuda", world_size=1, devices=devices, method=method, **fields
        )


def _pattern(torch: Any, nbytes: int, device: Any, pin: bool = False) -> Any:
    base = torch.arange(251, dtype=torch.uint8, device=device)
    out = base.repeat(-(-nbytes // 251))[:nbytes].clone()
    return out.pin_memory() if pin else out


def _mismatches(a: Any, b: Any) -> int:
    return int((a != b).sum().item())


def run(cfg: dict[str, Any]) -> int:
    """The copy benchmarks of one process over every visible GPU, each phase within the time budget."""
    import warnings

    warnings.filterwarnings("ignore", message=".*NumPy.*")
    import torch

    events = EventWriter(cfg["events"])
    bench = CopyBench(torch, cfg, events)
    _announce_devices(torch, bench.devices, events)
    c = _Copies(torch, cfg, bench)
    c.host_device_alone()
    c.host_device_all()
    c.device_to_device()
    c.peer_to_peer()
    events.close()
    return 0


def _announce_devices(torch: Any, devs: list[int], events: EventWriter) -> None:
    info = []
    for d in devs:
        p = torch.cuda.get_device_properties(d)
        bus = None
        if hasattr(p, "pci_bus_id"):
            bus = f"{getattr(p, 'pci_domain_id', 0):04x}:{p.pci_bus_id:02x}:{getattr(p, 'pci_device_id', 0):02x}.0"
        info.append({"ordinal": d, "bus_id": bus, "name": p.name})
    events.emit("devices", devices=info)


P2P_KINDS = {"p2p_unidir", "p2p_bidir", "p2p_latency"}


class _Copies:
    """The buffers every copy phase shares (sized once for all GPUs), and one method per phase."""

    def __init__(self, torch: Any, cfg: dict[str, Any], bench: CopyBench) -> None:
        import psutil

        self.torch, self.cfg, self.bench = torch, cfg, bench
        devs = self.devs = bench.devices
        free = min(torch.cuda.mem_get_info(d)[0] for d in devs)
        host_avail = psutil.virtual_memory().available
        size = int(min(cfg["copy_bytes"], free * 0.2, host_avail * 0.25 / (2 * len(devs))))
        self.size = size = size - size % 4096
        self.n, self.runs = bench.n, bench.runs
        self.common = f"{self.n} copies of {size} B {SPIN_METHOD}, median of {self.runs} runs, data verified"
        self.kinds = set(cfg.get("kinds") or ("h2d", "d2h", "d2d", *sorted(P2P_KINDS)))
        bench.events.emit("plan", steps=max(1, self._steps()))
        self.dev_ref = {d: _pattern(torch, size, torch.device("cuda", d)) for d in devs}
        self.host_ref = _pattern(torch, size, "cpu")
        self.pinned = {
            d: (self.host_ref.pin_memory(), torch.empty(size, dtype=torch.uint8, pin_memory=True)) for d in devs
        }
        self.pageable = (self.host_ref.clone(), torch.empty(size, dtype=torch.uint8).fill_(0))
        self.dev_dst = {d: torch.empty(size, dtype=torch.uint8, device=torch.device("cuda", d)) for d in devs}

    def _steps(self) -> int:
        kinds, nd = self.kinds, len(self.devs)
        np_ = nd * (nd - 1)
        hd = len(kinds & {"h2d", "d2h"})
        p2p = np_ * len(kinds & {"p2p_unidir", "p2p_latency"}) + (np_ // 2 if "p2p_bidir" in kinds else 0)
        return (
            2 * nd * hd
            + (nd * hd if nd > 1 else 0)
            + (nd if "d2d" in kinds else 0)
            + (2 if self.cfg.get("p2p_off", True) else 1) * p2p
        )

    def h2d_lane(self, d: int, src: Any) -> Lane:
        return Lane(
            d, self.bench.streams[d], functools.partial(self.dev_dst[d].copy_, src, non_blocking=True), self.size
        )

    def d2h_lane(self, d: int, dst: Any) -> Lane:
        return Lane(
            d, self.bench.streams[d], functools.partial(dst.copy_, self.dev_ref[d], non_blocking=True), self.size
        )

    def host_device_alone(self) -> None:
        """Host <-> device, each GPU alone, pinned and pageable memory."""
        torch, bench, n, size = self.torch, self.bench, self.n, self.size
        for d in self.devs:
            for memory in ("pinned", "pageable"):
                for kind in ("h2d", "d2h"):
                    if kind not in self.kinds:
                        continue
                    key = f"{kind}:{memory}:alone:{d}"
                    if not bench.time_left(key):
                        bench.skip(key, kind, [d], "time budget spent", memory=memory, concurrent=False)
                        continue
                    spin = memory == "pinned"
                    how = (
                        self.common
                        if spin
                        else f"{n} copies of {size} B from/to pageable memory (staged by the driver; the call blocks "
                        f"the host, so no spin kernel), CUDA events, median of {self.runs} runs, data verified"
                    )
                    if kind == "h2d":
                        src = self.pinned[d][0] if memory == "pinned" else self.pageable[0]
                        self.dev_dst[d].zero_()
                        (sec,), notes = bench.measure([self.h2d_lane(d, src)], n, spin=spin)
                        torch.cuda.synchronize(d)
                        bad = _mismatches(self.dev_dst[d], self.dev_ref[d])
                    else:
                        dst = self.pinned[d][1] if memory == "pinned" else self.pageable[1]
                        dst.zero_()
                        (sec,), notes = bench.measure([self.d2h_lane(d, dst)], n, spin=spin)
                        torch.cuda.synchronize(d)
                        bad = _mismatches(dst, self.host_ref)
                    bench.emit(
                        key,
                        kind,
                        [d],
                        f"torch copy_ (cudaMemcpyAsync), {how}",
                        size,
                        sec,
                        bad,
                        memory=memory,
                        concurrent=False,
                        notes=notes,
                    )

    def host_device_all(self) -> None:
        """Host <-> device, every GPU at once (pinned)."""
        torch, bench, devs, size = self.torch, self.bench, self.devs, self.size
        if len(devs) < 2:
            return
        for kind in ("h2d", "d2h"):
            if kind not in self.kinds:
                continue
            keys = [f"{kind}:pinned:all:{d}" for d in devs]
            if not bench.time_left(f"{kind}:pinned:all"):
                for d, key in zip(devs, keys, strict=True):
                    bench.skip(key, kind, [d], "time budget spent", memory="pinned", concurrent=True)
                continue
            if kind == "h2d":
                for d in devs:
                    self.dev_dst[d].zero_()
                lanes = [self.h2d_lane(d, self.pinned[d][0]) for d in devs]
            else:
                for d in devs:
                    self.pinned[d][1].zero_()
                lanes = [self.d2h_lane(d, self.pinned[d][1]) for d in devs]
            secs, notes = bench.measure(lanes, self.n)
            torch.cuda.synchronize()
            total = sum(size / s / 1e9 for s in secs)
            for d, key, sec in zip(devs, keys, secs, strict=True):
                if kind == "h2d":
                    bad = _mismatches(self.dev_dst[d], self.dev_ref[d])
                else:
                    bad = _mismatches(self.pinned[d][1], self.host_ref)
                bench.emit(
                    key,
                    kind,
                    [d],
                    f"torch copy_ (cudaMemcpyAsync), all {len(devs)} GPUs at once "
                    f"(spins launched on every GPU first), {self.common}",
                    size,
                    sec,
                    bad,
                    memory="pinned",
                    concurrent=True,
                    notes=[*notes, f"all GPUs together: {total:.2f} GB/s"],
                )

    def device_to_device(self) -> None:
        """Device to device within one GPU."""
        torch, bench = self.torch, self.bench
        if "d2d" not in self.kinds:
            return
        for d in self.devs:
            key = f"d2d:{d}"
            if not bench.time_left(key):
                bench.skip(key, "d2d", [d], "time budget spent")
                continue
            src, dst = self.dev_ref[d], self.dev_dst[d]
            dst.zero_()
            lane = Lane(d, bench.streams[d], functools.partial(dst.copy_, src, non_blocking=True), self.size)
            (sec,), notes = bench.measure([lane], self.n)
            torch.cuda.synchronize(d)
            bench.emit(
                key,
                "d2d",
                [d],
                f"torch copy_ (cudaMemcpyAsync device to device), {self.common}; bytes counted "
                "once (size / time): the memory reads and writes each byte, and CUDA samples' bandwidthTest "
                "reports twice this figure",
                self.size,
                sec,
                _mismatches(dst, src),
                notes=notes,
            )

    def peer_to_peer(self) -> None:
        """Peer to peer: every ordered pair, with peer access off (staged by the driver) and on."""
        devs, bench = self.devs, self.bench
        if not self.kinds & P2P_KINDS:
            return
        if len(devs) < 2:
            bench.skip(
                "p2p:none", "p2p_unidir", list(devs), f"{len(devs)} GPU visible: no pair to measure peer to peer"
            )
            return
        rt = CudaRt()
        tiny = {d: self.torch.zeros(1, dtype=self.torch.int32, device=self.torch.device("cuda", d)) for d in devs}
        pairs = [(i, j) for i in devs for j in devs if i != j]
        modes = ([False] if self.cfg.get("p2p_off", True) else []) + [True]
        for enabled in modes:  # off first: nothing has enabled peer access yet
            if enabled:
                for i, j in pairs:
                    if rt.can_access_peer(i, j):
                        rt.enable_peer_access(i, j)
            for i, j in pairs:
                self._pair(rt, tiny, i, j, enabled)

    def _pair(self, rt: CudaRt, tiny: dict[int, Any], i: int, j: int, enabled: bool) -> None:
        bench, kinds, tag = self.bench, self.kinds, "on" if enabled else "off"
        can = rt.can_access_peer(i, j)
        todo = []
        if "p2p_unidir" in kinds:
            todo.append(("p2p_unidir", f"p2p_unidir:{tag}:{i}-{j}"))
        if "p2p_bidir" in kinds and i < j:
            todo.append(("p2p_bidir", f"p2p_bidir:{tag}:{i}-{j}"))
        if "p2p_latency" in kinds:
            todo.append(("p2p_latency", f"p2p_latency:{tag}:{i}-{j}"))
        for kind, key in todo:
            if enabled and not can:
                bench.skip(
                    key, kind, [i, j], "cudaDeviceCanAccessPeer: P2P not supported between these GPUs", p2p_enabled=True
                )
                continue
            if not bench.time_left(key):
                bench.skip(key, kind, [i, j], "time budget spent", p2p_enabled=enabled)
                continue
            how = (
                "cudaMemcpyPeerAsync with peer access "
                f"{'enabled' if enabled else 'disabled (staged through host memory by the driver)'}, as "
                "p2pBandwidthLatencyTest"
            )
            if kind == "p2p_latency":
                self._latency(rt, tiny, i, j, enabled, key, how)
            else:
                self._peer_bandwidth(rt, kind, i, j, enabled, key, how)

    def _peer_lane(self, rt: CudaRt, a: int, b: int, nbytes: int, src: Any, dst: Any) -> Lane:
        stream = self.bench.streams[a]
        copy = functools.partial(rt.memcpy_peer_async, dst.data_ptr(), b, src.data_ptr(), a, nbytes, stream.cuda_stream)
        return Lane(a, stream, copy, nbytes)

    def _latency(self, rt: CudaRt, tiny: dict[int, Any], i: int, j: int, enabled: bool, key: str, how: str) -> None:
        reps = int(self.cfg["latency_reps"])
        (sec,), notes = self.bench.measure([self._peer_lane(rt, i, j, 4, tiny[i], tiny[j])], reps)
        self.bench.emit(
            key,
            "p2p_latency",
            [i, j],
            f"{how}: 4-byte copies × {reps} {SPIN_METHOD}, median of {self.runs} runs; latency = time per copy",
            4,
            sec,
            0,
            p2p_enabled=enabled,
            latency_us=sec * 1e6,
            notes=notes,
        )

    def _peer_bandwidth(self, rt: CudaRt, kind: str, i: int, j: int, enabled: bool, key: str, how: str) -> None:
        size, dev_ref, dev_dst = self.size, self.dev_ref, self.dev_dst
        dev_dst[j].zero_()
        lanes = [self._peer_lane(rt, i, j, size, dev_ref[i], dev_dst[j])]
        if kind == "p2p_bidir":
            dev_dst[i].zero_()
            lanes.append(self._peer_lane(rt, j, i, size, dev_ref[j], dev_dst[i]))
        secs, notes = self.bench.measure(lanes, self.n)
        self.torch.cuda.synchronize()
        bad = _mismatches(dev_dst[j], dev_ref[j])
        if kind != "p2p_bidir":
            self.bench.emit(
                key, kind, [i, j], f"{how}; {self.common}", size, secs[0], bad, p2p_enabled=enabled, notes=notes
            )
            return
        bad += _mismatches(dev_dst[i], dev_ref[i])
        self.bench.emit(
            key,
            kind,
            [i, j],
            f"{how}; both directions at once, each queued on its source "
            f"GPU's stream; value = sum of the two directions; {self.common}",
            size,
            max(secs),
            bad,
            p2p_enabled=enabled,
            value_gbps=sum(size / s / 1e9 for s in secs),
            notes=[*notes, f"{i}->{j} {size / secs[0] / 1e9:.2f} GB/s, {j}->{i} {size / secs[1] / 1e9:.2f} GB/s"],
        )
