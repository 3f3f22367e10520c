"""GPU generations (generations.toml): NVML's architecture code, the parts' compute capability, the HGX baseboard's
NVSwitches, and the fractions of the datasheet peak the generation's matmul and attention kernels sustain, each
figure with its source."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from gpuadvisor.catalog import _read, gpus

UNKNOWN = "unknown"


@dataclass(frozen=True)
class Fraction:
    """A sustained rate as a fraction of the datasheet peak, and where it comes from."""

    value: float
    source: str

    @classmethod
    def from_row(cls, row: dict[str, Any] | None) -> Fraction | None:
        """``{tflops, of, source}`` (measured of a datasheet peak) or ``{fraction, source}`` (assumed)."""
        if row is None:
            return None
        value = row["tflops"] / row["of"] if "tflops" in row else row["fraction"]
        return cls(float(value), str(row["source"]))


@dataclass(frozen=True)
class PublishedMfu:
    low: float
    high: float
    source: str


@dataclass(frozen=True)
class Generation:
    """One GPU generation (an NVML architecture family)."""

    id: str
    source: str
    nvml_architecture: int | None = None
    compute_capability: str | None = None
    nvswitches: int | None = None
    gemm: Fraction | None = None
    fp8_gemm: Fraction | None = None
    attention: Fraction | None = None
    published_mfu: PublishedMfu | None = None


@functools.cache
def generations() -> tuple[Generation, ...]:
    """Every generation of the table, in file order ("unknown", the fallback, last)."""
    out = []
    for row in _read("generations.toml")["generation"]:
        row = dict(row)
        for key in ("gemm", "fp8_gemm", "attention"):
            row[key] = Fraction.from_row(row.get(key))
        if "published_mfu" in row:
            row["published_mfu"] = PublishedMfu(**row["published_mfu"])
        out.append(Generation(**row))
    return tuple(out)


@functools.cache
def _by_id() -> dict[str, Generation]:
    return {g.id: g for g in generations()}


def get(arch: str | None) -> Generation | None:
    """The generation named ``arch`` (gpus.toml's architecture, NVML's name), or None."""
    return _by_id().get(arch or "")


def known(arch: str | None) -> Generation:
    """The generation named ``arch``, else the "unknown" row (the fallback figures)."""
    return get(arch) or _by_id()[UNKNOWN]


def by_nvml_architecture(code: int) -> Generation | None:
    """The generation of an nvmlDeviceArchitecture_t value."""
    return next((g for g in generations() if g.nvml_architecture == code), None)


def gemm_efficiency(arch: str | None) -> Fraction:
    """The generation's sustained dense matmul fraction of peak (the unknown row's where it has none)."""
    frac = known(arch).gemm or _by_id()[UNKNOWN].gemm
    assert frac is not None  # the unknown row has every fallback
    return frac


def attention_efficiency(arch: str | None) -> Fraction:
    """The generation's fused attention kernels' fraction of peak (the unknown row's where it has none)."""
    frac = known(arch).attention or _by_id()[UNKNOWN].attention
    assert frac is not None
    return frac


@functools.cache
def top_board_power(arch: str) -> float | None:
    """The highest datasheet board power of the generation's cards in the GPU catalog (the H100 SXM's 700 W)."""
    watts = [g.tdp_w for g in gpus() if g.architecture == arch and g.tdp_w]
    return max(watts) if watts else None
