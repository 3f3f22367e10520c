"""Calibration as data: the per-generation table (catalog/generations.toml) and the fitted parameters (one FitParams,
read from advisor/fitted.toml), and how a caller evaluates the time model with other parameters."""

from __future__ import annotations

import dataclasses

import pytest

from gpuadvisor import catalog
from gpuadvisor.advisor import fitted
from gpuadvisor.advisor import timing as T
from gpuadvisor.advisor.workload import Workload
from gpuadvisor.catalog import generations


def test_every_generation_row_is_sourced_and_named_once() -> None:
    rows = generations.generations()
    ids = [g.id for g in rows]
    assert len(ids) == len(set(ids)) and ids[-1] == generations.UNKNOWN
    codes = [g.nvml_architecture for g in rows if g.nvml_architecture is not None]
    assert len(codes) == len(set(codes))
    for g in rows:
        assert g.source, g.id
        for frac in (g.gemm, g.fp8_gemm, g.attention):
            assert frac is None or (0 < frac.value <= 1 and frac.source), g.id
        assert g.published_mfu is None or (g.published_mfu.low < g.published_mfu.high and g.published_mfu.source)


def test_every_catalog_gpu_has_its_generation_and_nvml_code() -> None:
    for gpu in catalog.gpus():
        gen = generations.get(gpu.architecture)
        assert gen is not None and gen.nvml_architecture is not None, gpu.id
        assert generations.by_nvml_architecture(gen.nvml_architecture) == gen


def test_generation_fractions_fall_back_to_the_unknown_row() -> None:
    unknown = generations.known("no-such-generation")
    assert unknown.id == generations.UNKNOWN
    assert generations.gemm_efficiency("turing") == unknown.gemm  # a listed generation without a figure
    assert generations.gemm_efficiency("hopper").value == pytest.approx(794.5 / 989)
    assert generations.attention_efficiency(None) == unknown.attention
    assert (generations.get("hopper").published_mfu.low, generations.get("hopper").published_mfu.high) == (0.33, 0.46)
    assert generations.top_board_power("hopper") == 700


def test_fit_params_round_trip_by_key() -> None:
    shipped = fitted.shipped()
    values = dict(shipped.items())
    assert "tflops_per_watt.hopper" in values and "power_cap_min_watts.ada" in values
    assert fitted.FitParams.from_values(values) == shipped
    assert shipped.value("tflops_per_watt.hopper") == shipped.tflops_per_watt["hopper"]
    moved = shipped.replace({"sharded_overlap": 0.5, "tflops_per_watt.ada": 1.0})
    assert moved.sharded_overlap == 0.5 and moved.tflops_per_watt["ada"] == 1.0
    assert moved.tflops_per_watt["hopper"] == shipped.tflops_per_watt["hopper"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        shipped.sharded_overlap = 0.1  # type: ignore[misc]


def test_parameters_are_passed_or_put_in_force_never_patched() -> None:
    """An explicit fit= and fitted.using(params) both move the prediction; outside the block the shipped ones hold
    again and nothing in the modules changed."""
    w = Workload.from_options(model="llama-3-8b", compile=True)
    shipped = fitted.shipped()
    other = shipped.replace({"compile_memory_bound_factor": 0.25})
    assert T.memory_bound_factor(w)[0] == shipped.compile_memory_bound_factor
    assert T.memory_bound_factor(w, other)[0] == 0.25
    with fitted.using(other):
        assert T.memory_bound_factor(w)[0] == 0.25
        assert fitted.current() is other
    assert T.memory_bound_factor(w)[0] == shipped.compile_memory_bound_factor
    assert fitted.current() is shipped
