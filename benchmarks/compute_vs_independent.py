"""Does ``bench --compute`` measure what an independent timing of the same product measures?

    python benchmarks/compute_vs_independent.py [--rounds 3]

On a GPU: for every GPU and for bf16, fp16 and tf32 on the square 8192³ product, bench --compute's TFLOP/s
(``run_benchmarks(only="matmul")``, in its own worker process) against an independent measurement made here,
in this process, in a separate function that shares no code with the harness: fresh operands, 10 warm-up
products, then 50 products between two torch.cuda.Events (CuPy's cupy.matmul in fp16 too when CuPy is
installed). The median over rounds of the ratio bench / independent must lie within 5% of 1; the script exits
1 otherwise.

On a CPU only: bench's fp32 512³ figure beside a numpy matmul of the same shape timed with perf_counter (and
a plain torch.mm loop when numpy is missing). Different BLAS libraries (numpy's OpenBLAS, torch's oneDNN/MKL)
need not agree, so both are printed and nothing is checked.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings

N = 8192
GPU_DTYPES = ("bf16", "fp16", "tf32")


def independent_cuda(ordinal: int, dtype: str, n: int = N, warmup: int = 10, iters: int = 50) -> float:
    """TFLOP/s of an n³ product timed with one pair of CUDA events around ``iters`` products."""
    import torch

    dev = torch.device("cuda", ordinal)
    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}[dtype]
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        a = torch.randn(n, n, device=dev, dtype=tdt)
        b = torch.randn(n, n, device=dev, dtype=tdt)
        for _ in range(warmup):
            a @ b
        torch.cuda.synchronize(dev)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            a @ b
        end.record()
        end.synchronize()
        seconds = start.elapsed_time(end) / 1e3
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    return 2 * n**3 * iters / seconds / 1e12


def independent_cupy(ordinal: int, n: int = N, warmup: int = 10, iters: int = 50) -> float | None:
    try:
        import cupy
    except ImportError:
        return None
    with cupy.cuda.Device(ordinal):
        a = cupy.random.standard_normal((n, n), dtype=cupy.float32).astype(cupy.float16)
        b = cupy.random.standard_normal((n, n), dtype=cupy.float32).astype(cupy.float16)
        for _ in range(warmup):
            cupy.matmul(a, b)
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(iters):
            cupy.matmul(a, b)
        end.record()
        end.synchronize()
        seconds = cupy.cuda.get_elapsed_time(start, end) / 1e3
    return 2 * n**3 * iters / seconds / 1e12


def independent_cpu(n: int, iters: int = 20) -> tuple[str, float]:
    try:
        import numpy as np

        a = np.random.standard_normal((n, n)).astype(np.float32)
        b = np.random.standard_normal((n, n)).astype(np.float32)
        a @ b
        t0 = time.perf_counter()
        for _ in range(iters):
            a @ b
        return f"numpy {np.__version__} matmul", 2 * n**3 * iters / (time.perf_counter() - t0) / 1e12
    except ImportError:
        import torch

        a, b = torch.randn(n, n), torch.randn(n, n)
        a @ b
        t0 = time.perf_counter()
        for _ in range(iters):
            a @ b
        return "torch.mm loop (numpy not installed)", 2 * n**3 * iters / (time.perf_counter() - t0) / 1e12


def main() -> int:
    warnings.filterwarnings("ignore")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    import torch

    from gpuadvisor.bench import run_benchmarks
    from gpuadvisor.facts import Rig

    if not torch.cuda.is_available():
        rows = []
        for _ in range(a.rounds):
            ms = run_benchmarks(Rig(), only="matmul")
            bench = next(m for m in ms if m.dtype == "fp32" and m.shape == "512x512x512")
            name, ind = independent_cpu(512)
            rows.append((bench.value_tflops, ind))
        print(
            f"CPU only (torch {torch.__version__}, {torch.get_num_threads()} threads): fp32 512x512x512, "
            f"TFLOP/s per round (bench --compute / {name})"
        )
        for i, (b, ind) in enumerate(rows):
            print(f"  round {i + 1}: {b:.4f} / {ind:.4f}  ratio {b / ind:.2f}")
        print("not checked: different BLAS libraries on a CPU")
        return 0

    ratios: dict[tuple[int, str], list[float]] = {}
    figures: dict[tuple[int, str], list[tuple[float, float]]] = {}
    cupy_rows: list[tuple[int, float, float]] = []
    for _ in range(a.rounds):
        ms = run_benchmarks(Rig(), only="matmul")
        for m in ms:
            if m.shape != f"{N}x{N}x{N}" or m.dtype not in GPU_DTYPES or m.status != "ok" or not m.gpus:
                continue
            ordinal = m.gpus[0]  # a Rig() without facts: the harness numbers GPUs by CUDA ordinal
            ind = independent_cuda(ordinal, m.dtype)
            ratios.setdefault((ordinal, m.dtype), []).append(m.value_tflops / ind)
            figures.setdefault((ordinal, m.dtype), []).append((m.value_tflops, ind))
            if m.dtype == "fp16" and (cp := independent_cupy(ordinal)) is not None:
                cupy_rows.append((ordinal, m.value_tflops, cp))
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, {N}x{N}x{N}, {a.rounds} rounds")
    print(f"{'GPU':>3} {'dtype':<5} {'bench TFLOP/s':>14} {'independent':>12} {'median ratio':>13} {'min-max':>13}")
    worst = 0.0
    for (g, dt), rs in sorted(ratios.items()):
        med = statistics.median(rs)
        worst = max(worst, abs(med - 1))
        b = statistics.median(x for x, _ in figures[(g, dt)])
        i = statistics.median(y for _, y in figures[(g, dt)])
        print(f"{g:>3} {dt:<5} {b:>14.1f} {i:>12.1f} {med:>13.3f} {min(rs):>6.3f}-{max(rs):<6.3f}")
    for g, b, cp in cupy_rows:
        print(f"{g:>3} fp16  bench {b:.1f} vs cupy.matmul {cp:.1f} TFLOP/s (ratio {b / cp:.3f})")
    ok = bool(ratios) and worst <= 0.05
    print(f"largest deviation of a median ratio: {worst * 100:.1f}% -> {'within' if ok else 'OUTSIDE'} 5%")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
