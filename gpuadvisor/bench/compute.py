"""Worker side of ``bench --compute``: dense matmul TFLOP/s and device memory bandwidth, per GPU or on the CPU.

One process (``python -m gpuadvisor.bench.worker``, role "compute") measures every visible GPU in turn, or the
CPU where torch sees no GPU, and writes one ``result`` event per figure. ``compute_results`` turns them into
Measurements. torch is imported only inside ``run``.

Matmul: C = A·B with A MxK and B KxN, filled with normally distributed values (cuBLAS runs measurably faster
on constant or zero data), C preallocated (``torch.mm(a, b, out=c)``); fp8 through ``torch._scaled_mm`` (e4m3
inputs, unit scales, bf16 output) on compute capability 8.9 and later. FLOPs are 2·M·N·K per product (one
multiply and one add per term of each of the M·N dot products of length K), as cuBLAS, nvidia's datasheets
and MFU accounting count them. Timing: warm-up, then runs of back-to-back products between two CUDA events
(perf_counter on the CPU), the run length chosen so that one run lasts at least ``MIN_RUN_S``; the figure is
the median over runs of run time / products. Memory bandwidth: a large ``dst.copy_(src)``; reported as bytes
read plus bytes written (2 × size) per second, which is how STREAM's copy and the datasheets' HBM bandwidth
count.
"""

from __future__ import annotations

import math
import time
from typing import Any

from gpuadvisor.bench.events import EventWriter
from gpuadvisor.bench.launcher import set_status
from gpuadvisor.bench.timing import cpu_loop_seconds, cuda_loop_seconds, median

# name -> (M, N, K) per device type; the transformer shape is an MLP up-projection, tokens x hidden . hidden x 4·hidden
GPU_SHAPES: tuple[tuple[str, tuple[int, int, int]], ...] = (
    ("square", (8192, 8192, 8192)),
    ("transformer (16384 tokens, hidden 4096, MLP up-projection 4096->16384)", (16384, 16384, 4096)),
)
CPU_SHAPES: tuple[tuple[str, tuple[int, int, int]], ...] = (
    ("square", (512, 512, 512)),
    ("transformer (1024 tokens, hidden 256, MLP up-projection 256->1024)", (1024, 1024, 256)),
)
GPU_DTYPES = ("bf16", "fp16", "tf32", "fp8")
CPU_DTYPES = ("fp32", "bf16")
FP8_MIN_CC = (8, 9)  # Ada and Hopper: the first GPUs with fp8 tensor cores
GPU_COPY_BYTES = 1 << 30
CPU_COPY_BYTES = 256 << 20
WARMUP = {"cuda": 3, "cpu": 1}
RUNS = {"cuda": 7, "cpu": 5}
MIN_RUN_S = {"cuda": 0.02, "cpu": 0.05}
MAX_ITERS = 200


def matmul_flops(m: int, n: int, k: int) -> int:
    """Floating-point operations of one MxK · KxN product: 2·M·N·K (M·N dot products of K multiply-adds)."""
    return 2 * m * n * k


def shape_text(m: int, n: int, k: int) -> str:
    return f"{m}x{n}x{k}"


def tflops(m: int, n: int, k: int, seconds: float) -> float:
    return matmul_flops(m, n, k) / seconds / 1e12


class _Clock:
    """Times a callable: CUDA events on a GPU (the stream's own time), perf_counter on the CPU."""

    def __init__(self, torch: Any, device: Any) -> None:
        self.torch = torch
        self.cuda = device.type == "cuda"
        self.device = device

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def per_op(self, op: Any, iters: int) -> float:
        """Seconds per call over ``iters`` back-to-back calls."""
        return cuda_loop_seconds(self.torch, op, iters) if self.cuda else cpu_loop_seconds(op, iters)


def time_op(torch: Any, device: Any, op: Any, *, warmup: int, runs: int, min_run_s: float) -> tuple[list[float], int]:
    """Per-run seconds per call, and the calls per run (chosen so one run lasts at least ``min_run_s``)."""
    clock = _Clock(torch, device)
    for _ in range(max(1, warmup)):
        op()
    clock.sync()
    one = clock.per_op(op, 1)
    iters = max(1, min(MAX_ITERS, math.ceil(min_run_s / max(one, 1e-9))))
    return [clock.per_op(op, iters) for _ in range(runs)], iters


def _operands(torch: Any, device: Any, dtype: str, m: int, n: int, k: int) -> Any:
    """The operation to time for one dtype: a closure computing one product into a preallocated C."""
    gen = torch.Generator(device=device).manual_seed(1234)
    if dtype == "fp8":
        f8 = torch.float8_e4m3fn
        a = torch.randn(m, k, device=device, generator=gen).to(f8)
        b = torch.randn(n, k, device=device, generator=gen).to(f8).t()  # column-major, as _scaled_mm wants
        one = torch.ones((), device=device, dtype=torch.float32)

        def op() -> None:
            torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        return op
    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "fp32": torch.float32}[dtype]
    a = torch.randn(m, k, device=device, generator=gen).to(tdt)
    b = torch.randn(k, n, device=device, generator=gen).to(tdt)
    c = torch.empty(m, n, device=device, dtype=tdt)

    def mm() -> None:
        torch.mm(a, b, out=c)

    return mm


def _fp8_support(torch: Any, device: Any) -> str | None:
    """None when fp8 matmul can run here, else why not."""
    if device.type != "cuda":
        return "fp8 matmul needs a GPU"
    if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        return f"this torch ({torch.__version__}) has no float8 matmul (torch._scaled_mm)"
    cc = torch.cuda.get_device_capability(device)
    if tuple(cc) < FP8_MIN_CC:
        return (
            f"compute capability {cc[0]}.{cc[1]} has no fp8 tensor cores (needs "
            f"{FP8_MIN_CC[0]}.{FP8_MIN_CC[1]}+: Ada, Hopper, Blackwell)"
        )
    return None


def _method(backend: str, dtype: str, runs: int, iters: int) -> str:
    timer = "CUDA events" if backend == "cuda" else "time.perf_counter"
    call = (
        "torch._scaled_mm (float8_e4m3fn inputs, unit scales, bf16 output)"
        if dtype == "fp8"
        else "torch.mm with TF32 tensor cores allowed (torch.backends.cuda.matmul.allow_tf32)"
        if dtype == "tf32"
        else f"torch.mm in {dtype}"
    )
    return (
        f"{call}, normally distributed operands, output preallocated; {timer}; warm-up, then {runs} runs of "
        f"{iters} back-to-back products; median over runs of run time / products; 2·M·N·K FLOPs per product"
    )


def _matmul(torch: Any, device: Any, backend: str, dtype: str, name: str, mnk: tuple[int, int, int]) -> dict[str, Any]:
    m, n, k = mnk
    res: dict[str, Any] = {"kind": "matmul", "dtype": dtype, "shape": shape_text(m, n, k), "shape_name": name}
    if dtype == "fp8" and (why := _fp8_support(torch, device)):
        return {**res, "status": "skipped", "error": why}
    old_tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        op = _operands(torch, device, dtype, m, n, k)
        per_run, iters = time_op(
            torch, device, op, warmup=WARMUP[backend], runs=RUNS[backend], min_run_s=MIN_RUN_S[backend]
        )
    except (RuntimeError, MemoryError, TypeError) as e:  # OOM, a dtype this build cannot multiply
        first = (str(e).strip().splitlines() or [e.__class__.__name__])[0][:200]
        status = "skipped" if "not implemented" in first.lower() or "not supported" in first.lower() else "failed"
        return {**res, "status": status, "error": f"{e.__class__.__name__}: {first}"}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_tf32
        if device.type == "cuda":
            torch.cuda.empty_cache()
    t = median(per_run)
    runs_tf = sorted(tflops(m, n, k, x) for x in per_run)
    return {
        **res,
        "status": "ok",
        "value_tflops": tflops(m, n, k, t),
        "seconds_per_op": t,
        "warmup_iters": WARMUP[backend],
        "iters": iters,
        "runs": len(per_run),
        "spread_tflops": [runs_tf[0], runs_tf[-1]],
        "method": _method(backend, dtype, len(per_run), iters),
    }


def _copy_bytes(torch: Any, device: Any) -> int:
    if device.type == "cuda":
        free = torch.cuda.mem_get_info(device)[0]
        size = min(GPU_COPY_BYTES, free // 4)
    else:
        import psutil

        size = min(CPU_COPY_BYTES, psutil.virtual_memory().available // 8)
    return max(1 << 20, size // (1 << 20) * (1 << 20))


def _memory_bandwidth(torch: Any, device: Any, backend: str) -> dict[str, Any]:
    res: dict[str, Any] = {"kind": "memory_bandwidth"}
    try:
        size = _copy_bytes(torch, device)
        src = torch.empty(size, dtype=torch.uint8, device=device).fill_(7)
        dst = torch.empty_like(src)
        per_run, iters = time_op(
            torch,
            device,
            lambda: dst.copy_(src),
            warmup=WARMUP[backend],
            runs=RUNS[backend],
            min_run_s=MIN_RUN_S[backend],
        )
        ok = bool((dst[: 1 << 20] == 7).all().item()) and bool((dst[-(1 << 20) :] == 7).all().item())
    except (RuntimeError, MemoryError) as e:
        return {**res, "status": "failed", "error": f"{e.__class__.__name__}: {str(e).splitlines()[0][:200]}"}
    finally:
        if device.type == "cuda":
            torch.cuda.empty_cache()
    t = median(per_run)
    timer = "CUDA events" if backend == "cuda" else "time.perf_counter"
    return {
        **res,
        "status": "ok" if ok else "failed",
        "error": None if ok else "copied data differs from the source",
        "value_gbps": 2 * size / t / 1e9,
        "size_bytes": size,
        "seconds_per_op": t,
        "warmup_iters": WARMUP[backend],
        "iters": iters,
        "runs": len(per_run),
        "spread_gbps": [2 * size / max(per_run) / 1e9, 2 * size / min(per_run) / 1e9],
        "method": (
            f"dst.copy_(src) of {size} B ({'device memory' if backend == 'cuda' else 'host memory'}); "
            f"bandwidth = bytes read + bytes written (2 × {size} B) / time, as STREAM copy counts; "
            f"{timer}; warm-up, then {len(per_run)} runs of {iters} copies; median over runs"
        ),
    }


def plan(backend: str) -> list[tuple[str, str | None, str | None, tuple[int, int, int] | None]]:
    """(kind, dtype, shape name, (M, N, K)) in the order measured on one device."""
    shapes = GPU_SHAPES if backend == "cuda" else CPU_SHAPES
    dtypes = GPU_DTYPES if backend == "cuda" else CPU_DTYPES
    out: list[tuple[str, str | None, str | None, tuple[int, int, int] | None]] = []
    for dtype in dtypes:
        for name, mnk in shapes:
            out.append(("matmul", dtype, name, mnk))
    out.append(("memory_bandwidth", None, None, None))
    return out


def run(cfg: dict[str, Any]) -> int:
    import warnings

    warnings.filterwarnings("ignore", message=".*NumPy.*")
    import torch

    events = EventWriter(cfg["events"])
    kinds = set(cfg.get("kinds") or ("matmul", "memory_bandwidth"))
    soft_deadline = float(cfg["soft_deadline"])
    if cfg.get("backend") == "cuda" and torch.cuda.is_available():
        backend = "cuda"
        devices = [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
        from gpuadvisor.bench.collectives import _pci_bus_id

        events.emit(
            "devices",
            devices=[
                {"ordinal": d.index, "bus_id": _pci_bus_id(torch, d.index), "name": torch.cuda.get_device_name(d.index)}
                for d in devices
            ],
        )
    else:
        backend = "cpu"
        devices = [torch.device("cpu")]
        if cfg.get("threads"):
            torch.set_num_threads(int(cfg["threads"]))
    steps = [s for s in plan(backend) if s[0] in kinds]
    events.emit("plan", steps=len(steps) * len(devices))
    for dev in devices:
        where = f"GPU {dev.index}" if backend == "cuda" else "CPU"
        if backend == "cuda":
            torch.cuda.set_device(dev)
        for kind, dtype, name, mnk in steps:
            base = {
                "backend": backend,
                "ordinal": dev.index if backend == "cuda" else None,
                "threads": torch.get_num_threads() if backend == "cpu" else None,
            }
            if time.time() > soft_deadline:
                res: dict[str, Any] = {
                    "kind": kind,
                    "dtype": dtype,
                    "status": "skipped",
                    "shape": shape_text(*mnk) if mnk else None,
                    "error": "not measured: time budget",
                }
            elif kind == "matmul":
                assert dtype is not None and name is not None and mnk is not None
                set_status(f"{where}: matmul {dtype} {shape_text(*mnk)}")
                res = _matmul(torch, dev, backend, dtype, name, mnk)
            else:
                set_status(f"{where}: memory bandwidth")
                res = _memory_bandwidth(torch, dev, backend)
            events.emit("result", **base, **res)
        set_status(f"{where}: done")
    events.close()
    return 0
