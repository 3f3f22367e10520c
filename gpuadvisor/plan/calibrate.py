"""Carry what a machine the buyer owns really does over to the candidates (``plan --calibrate-from scan.json``).

From the scan: the measured dense matmul TFLOP/s against its GPU's datasheet peak, and the measured all-reduce
bus bandwidth against what its links should give. Each ratio scales the same figure of every candidate: a
machine that reaches 0.9 of its datasheet compute makes the plan expect 0.9 of every candidate's too (the same
software stack, cooling and clocks policy are assumed to travel with the buyer). Measurements the scan lacks
leave the candidates' figures as the advisor's defaults, and the plan says so.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from gpuadvisor.errors import InputError
from gpuadvisor.plain import FieldsDict
from gpuadvisor.text import plural


@dataclass
class Calibration(FieldsDict):
    source: str
    compute_ratio: float | None = None
    compute_basis: str | None = None
    busbw_ratio: float | None = None
    busbw_basis: str | None = None
    notes: list[str] = field(default_factory=list)

    def apply(self, rig: Any, build: Any) -> None:
        """Give the candidate rig measurements scaled from the owned machine's, marked as carried over."""
        from gpuadvisor.facts import Measurement

        if self.compute_ratio is not None and build.gpu.peak_tflops("bf16"):
            peak = build.gpu.peak_tflops("bf16")
            for g in rig.gpus:
                m = Measurement(
                    kind="matmul",
                    backend="cuda",
                    method=f"carried over from {self.source}: {self.compute_basis}",
                    provenance="imported",
                    gpus=[g.index],
                    status="ok",
                )
                for k, v in (("dtype", "bf16"), ("value_tflops", peak * self.compute_ratio), ("expected_tflops", peak)):
                    setattr(m, k, v)
                m.ratio = self.compute_ratio
                m.notes.append(
                    "predicted: the owned machine's measured fraction of datasheet peak, applied to this GPU's peak"
                )
                rig.measurements.append(m)


def _ratio(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def load_calibration(path: str) -> Calibration:
    from gpuadvisor.facts import load

    rig = load(path)
    cal = Calibration(source=path)
    compute = [
        m
        for m in rig.measurements
        if m.kind == "matmul"
        and m.status == "ok"
        and getattr(m, "dtype", None) in ("bf16", "fp16")
        and getattr(m, "value_tflops", None)
        and getattr(m, "expected_tflops", None)
    ]
    if compute:
        cal.compute_ratio = _ratio([(m.value_tflops or 0.0) / (m.expected_tflops or 1.0) for m in compute])
        cal.compute_basis = (
            f"median measured/datasheet bf16 matmul ratio {cal.compute_ratio:.2f} over {plural(len(compute), 'GPU')}"
        )
    else:
        cal.notes.append(
            f"{path} has no bf16 matmul measurement (gpuadvisor bench --compute): compute stays at the advisor's "
            "defaults"
        )
    coll = [m for m in rig.measurements if m.kind == "all_reduce" and m.status in ("ok", "partial") and m.ratio]
    if coll:
        cal.busbw_ratio = _ratio([m.ratio or 0.0 for m in coll])
        cal.busbw_basis = f"median measured/expected all-reduce busbw ratio {cal.busbw_ratio:.2f}"
        cal.notes.append("all-reduce ratio shown for reference; candidates keep their links' expected bandwidth")
    if cal.compute_ratio is None and cal.busbw_ratio is None:
        raise InputError(
            f"{path}: no compute or all-reduce measurement to calibrate from (run gpuadvisor scan --bench, or bench "
            "--compute, and save with --json)"
        )
    return cal
