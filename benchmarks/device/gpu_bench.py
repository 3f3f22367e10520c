"""Run gpuadvisor's real NCCL/CUDA benchmark path on a GPU machine and check its copy figures against an
independent measurement taken in the same run.

Usage (from the repository root, the package installed or not):
    PYTHONPATH=. python3 benchmarks/device/gpu_bench.py OUTDIR [BUDGET_S]

Writes OUTDIR/bench-measurements.json (this machine's scan + the measurements; read it with
gpuadvisor.facts.load), OUTDIR/bench-terminal.txt (what `gpuadvisor bench` prints) and OUTDIR/bench-compare.txt
(gpuadvisor vs CuPy for h2d, d2h, d2d).

The independent figure: CuPy's ``cudaMemcpyAsync`` (cupy.cuda.runtime.memcpyAsync) on a stream of its own,
N copies of the same buffer size between a start and a stop CUDA event, no spin kernel, median of the same
number of runs, the data compared afterwards. Bytes counted once for device-to-device, as gpuadvisor does.
"""

from __future__ import annotations

import importlib
import statistics
import sys
import time
from pathlib import Path


def _rig():
    """This machine's facts through gpuadvisor.collect; maps gpuadvisor.probes to ./probes when not installed."""
    try:
        importlib.import_module("gpuadvisor.probes")
    except ModuleNotFoundError:
        import probes  # the top-level folder the wheel installs as gpuadvisor.probes

        sys.modules["gpuadvisor.probes"] = probes
    from gpuadvisor.collect import collect_live

    return collect_live(import_torch=True)


def cupy_copies(size: int, n: int, runs: int) -> dict[str, float]:
    import cupy as cp
    import numpy as np

    rt = cp.cuda.runtime
    stream = cp.cuda.Stream(non_blocking=True)
    ref = (cp.arange(size, dtype=cp.int64) % 251).astype(cp.uint8)
    ref_host = cp.asnumpy(ref)
    dst_dev = cp.zeros(size, dtype=cp.uint8)
    pin_mem = cp.cuda.alloc_pinned_memory(size)
    pinned = np.frombuffer(pin_mem, dtype=np.uint8, count=size)
    pinned[:] = ref_host
    pin_dst_mem = cp.cuda.alloc_pinned_memory(size)
    pinned_dst = np.frombuffer(pin_dst_mem, dtype=np.uint8, count=size)
    pageable = ref_host.copy()
    pageable_dst = np.zeros(size, dtype=np.uint8)
    H2D, D2H, D2D = 1, 2, 3
    cases = {
        "h2d pinned": (dst_dev.data.ptr, pinned.ctypes.data, H2D, lambda: bool((dst_dev == ref).all())),
        "d2h pinned": (pinned_dst.ctypes.data, ref.data.ptr, D2H, lambda: bool((pinned_dst == ref_host).all())),
        "h2d pageable": (dst_dev.data.ptr, pageable.ctypes.data, H2D, lambda: bool((dst_dev == ref).all())),
        "d2h pageable": (pageable_dst.ctypes.data, ref.data.ptr, D2H, lambda: bool((pageable_dst == ref_host).all())),
        "d2d": (dst_dev.data.ptr, ref.data.ptr, D2D, lambda: bool((dst_dev == ref).all())),
    }
    out = {}
    for name, (dst, src, kind, verify) in cases.items():
        dst_dev.fill(0)
        pinned_dst[:] = 0
        pageable_dst[:] = 0
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        rates = []
        for r in range(runs + 1):  # the first run warms up
            start.record(stream)
            for _ in range(n):
                rt.memcpyAsync(dst, src, size, kind, stream.ptr)
            stop.record(stream)
            stop.synchronize()
            if r:
                rates.append(size * n / (cp.cuda.get_elapsed_time(start, stop) / 1e3) / 1e9)
        if not verify():
            raise SystemExit(f"CuPy {name}: copied data differs from the source")
        out[name] = statistics.median(rates)
    return out


def cudart_selfcheck() -> str:
    """cudaMemcpyPeerAsync through gpuadvisor's ctypes binding, GPU 0 to itself, verified (no second GPU here)."""
    import torch

    from gpuadvisor.bench.cudart import CudaRt

    src = torch.arange(1 << 20, dtype=torch.int32, device="cuda:0")
    dst = torch.zeros_like(src)
    rt = CudaRt()
    s = torch.cuda.current_stream()
    rt.memcpy_peer_async(dst.data_ptr(), 0, src.data_ptr(), 0, src.numel() * 4, s.cuda_stream)
    torch.cuda.synchronize()
    ok = torch.equal(src, dst)
    return (
        f"cudart {rt.path}: cudaMemcpyPeerAsync 0->0 of 4 MiB {'verified' if ok else 'WRONG DATA'}; "
        f"cudaDeviceCanAccessPeer(0,0)={rt.can_access_peer(0, 0) if torch.cuda.device_count() > 1 else 'n/a'}"
    )


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "out")
    budget = float(sys.argv[2]) if len(sys.argv) > 2 else 200.0
    out.mkdir(parents=True, exist_ok=True)
    from gpuadvisor.bench import run_benchmarks
    from gpuadvisor.bench.presets import get_preset
    from gpuadvisor.render.text.bench import render_measurements

    rig = _rig()
    preset = get_preset("default")
    t0 = time.time()
    ms = run_benchmarks(
        rig,
        preset=preset,
        backend="nccl",
        budget_s=budget,
        progress=lambda d, t, label: print(f"[{d}/{t}] {label}", flush=True) if label else None,
    )
    wall = time.time() - t0
    rig.save(out / "bench-measurements.json")
    text = render_measurements(ms)
    (out / "bench-terminal.txt").write_text(text)
    print(text)
    print(f"gpuadvisor run: {wall:.1f} s")

    ours = {}
    for m in ms:
        if m.kind in ("h2d", "d2h") and not m.concurrent and m.gpus == [0]:
            ours[f"{m.kind} {m.memory}"] = m
        elif m.kind == "d2d" and m.gpus == [0]:
            ours["d2d"] = m
    theirs = cupy_copies(preset.copy_bytes, preset.copies_per_run, preset.copy_runs)
    lines = [
        f"GPU 0 copies, {preset.copy_bytes} B buffers, {preset.copies_per_run} copies per run, median of "
        f"{preset.copy_runs} runs, GB/s = 1e9 B/s; d2d counts each byte once",
        "gpuadvisor: torch copy_ behind a torch.cuda._sleep spin, CUDA events (gpuadvisor.bench.copies)",
        "independent: CuPy cudaMemcpyAsync, CUDA events, no spin kernel (benchmarks/device/gpu_bench.py)",
        f"{'copy':<14}{'gpuadvisor':>12}{'CuPy':>12}{'ratio':>8}  status",
    ]
    for name, bw in theirs.items():
        m = ours.get(name)
        mine = m.value_gbps if m is not None else None
        ratio = f"{mine / bw:8.3f}" if mine else f"{'-':>8}"
        lines.append(
            f"{name:<14}{(f'{mine:.2f}' if mine else '-'):>12}{bw:>12.2f}{ratio}  "
            f"{m.status if m is not None else 'not measured'}"
        )
    lines.append("")
    lines.append(cudart_selfcheck())
    cmp_text = "\n".join(lines) + "\n"
    (out / "bench-compare.txt").write_text(cmp_text)
    print(cmp_text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
