"""The copy benchmark's phases run end to end on the CPU: torch's CUDA calls are mapped onto CPU tensors and
the timer is replaced (no GPU here), so every copy really moves its bytes and the data check compares them. What
this proves: every phase queues the copies it names, in both peer-access modes, and verifies the data; what it
cannot prove: the GPU timings (benchmarks/device/ records those on a real GPU)."""

from __future__ import annotations

import ctypes
import types
from typing import Any

import pytest

torch = pytest.importorskip("torch")  # the bench extra

from gpuadvisor.bench import copies  # noqa: E402


class _FakeCuda:
    def __init__(self, n: int) -> None:
        self.n = n

    def device_count(self) -> int:
        return self.n

    def get_device_properties(self, d: int) -> Any:
        return types.SimpleNamespace(name=f"fake GPU {d}", pci_bus_id=d + 1, pci_domain_id=0, pci_device_id=0)

    def mem_get_info(self, d: int) -> tuple[int, int]:
        return (1 << 30, 1 << 30)

    def synchronize(self, d: int | None = None) -> None:
        return None


class _FakeTorch:
    """torch with device('cuda', d) on the CPU."""

    def __init__(self, n: int) -> None:
        self.cuda = _FakeCuda(n)
        self.uint8, self.int32 = torch.uint8, torch.int32

    def device(self, kind: str, index: int | None = None) -> Any:
        return torch.device("cpu")

    def __getattr__(self, name: str) -> Any:
        return getattr(torch, name)

    def empty(self, *a: Any, pin_memory: bool = False, **kw: Any) -> Any:
        return torch.empty(*a, **kw)


class _FakeBench:
    def __init__(self, n: int) -> None:
        self.devices = list(range(n))
        self.n, self.runs = 3, 1
        self.streams = {d: types.SimpleNamespace(cuda_stream=0) for d in self.devices}
        self.events = types.SimpleNamespace(emit=lambda *a, **k: None)
        self.emitted: list[tuple[str, str, list[int], int]] = []
        self.skipped: list[tuple[str, str]] = []

    def time_left(self, key: str) -> bool:
        return True

    def measure(self, lanes: list[Any], n: int, spin: bool = True) -> tuple[list[float], list[str]]:
        for lane in lanes:
            lane.copy()
        return [1e-3] * len(lanes), []

    def emit(self, key: str, kind: str, devices: list[int], how: str, size: int, sec: float, bad: int, **kw: Any):
        self.emitted.append((key, kind, devices, bad))

    def skip(self, key: str, kind: str, devices: list[int], reason: str, **kw: Any) -> None:
        self.skipped.append((key, reason))


class _FakeRt:
    def can_access_peer(self, a: int, b: int) -> bool:
        return True

    def enable_peer_access(self, a: int, b: int) -> None:
        return None

    def memcpy_peer_async(self, dst: int, dst_dev: int, src: int, src_dev: int, nbytes: int, stream: int) -> None:
        ctypes.memmove(dst, src, nbytes)


def test_every_phase_copies_and_verifies(monkeypatch):
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self: self.clone())
    monkeypatch.setattr(copies, "CudaRt", _FakeRt)
    bench = _FakeBench(2)
    c = copies._Copies(_FakeTorch(2), {"copy_bytes": 1 << 16, "latency_reps": 5}, bench)  # type: ignore[arg-type]
    c.host_device_alone()
    c.host_device_all()
    c.device_to_device()
    c.peer_to_peer()
    keys = [k for k, *_ in bench.emitted]
    assert len(keys) == len(set(keys)) == 8 + 4 + 2 + 2 * (2 + 1 + 2)
    assert {k for k, kind, *_ in bench.emitted if kind == "p2p_bidir"} == {"p2p_bidir:off:0-1", "p2p_bidir:on:0-1"}
    assert all(bad == 0 for *_, bad in bench.emitted), bench.emitted
    assert bench.skipped == []


def test_one_gpu_says_there_is_no_pair(monkeypatch):
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self: self.clone())
    bench = _FakeBench(1)
    c = copies._Copies(_FakeTorch(1), {"copy_bytes": 1 << 16, "latency_reps": 5}, bench)  # type: ignore[arg-type]
    c.host_device_all()
    c.peer_to_peer()
    assert bench.emitted == [] and bench.skipped == [("p2p:none", "1 GPU visible: no pair to measure peer to peer")]
