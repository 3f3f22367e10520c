"""The fleet's noise model under heavy-tailed noise (tests/fleet_gen: Student's t with 3, 5 and 10 degrees of
freedom, sized as benchmarks are: an nccl-tests row "sometimes ... 150GB/s, but ... much lower for majority of
runs" on 16 H100 nodes, https://github.com/NVIDIA/nccl/issues/1469).

What is asserted (the operator's bar): healthy nodes warned at most 5 % and drained at most 1 % at t3 (scale 1 %
and 2 %), t5 and t10 (scale 2 %); a node 5 % slow in all four collectives found at least 80 % of the time at
Gaussian 2 % noise where each collective is one figure (the headline size only); one P2P latency or pageable
copy far out is a warning that says to re-measure, never a drain; lost hardware still fails every time.
"""

from __future__ import annotations

import random
from pathlib import Path

import fleet_gen as G
import pytest

from gpuadvisor.fleet import tails
from gpuadvisor.fleet.analyse import Options, analyse
from gpuadvisor.fleet.load import node_from
from gpuadvisor.fleet.model import FleetReport

HEADLINE = [64 << 20]  # one figure per collective


def _run(n: int, sigma: float, seed: int, noise: str, plants=None, sizes=None) -> FleetReport:
    scans = G.fleet_scans(
        [f"n{i:03d}" for i in range(n)], seed=seed, sigma=sigma, plants=plants, noise=noise, sizes=sizes
    )
    return analyse({k: node_from(Path(f"{k}.json"), d) for k, d in scans.items()}, Options())


def test_t_quantiles_match_the_published_table():
    # two-sided 5 % and 1 % critical values of Student's t (any statistics table, e.g. NIST/SEMATECH e-Handbook
    # of Statistical Methods, 1.3.6.7.2): df 3: 3.182, df 5: 2.571, df 10: 3.169 (1 %)
    assert tails.t_ppf(0.975, 3.0) == pytest.approx(3.182, abs=5e-4)
    assert tails.t_ppf(0.975, 5.0) == pytest.approx(2.571, abs=5e-4)
    assert tails.t_ppf(0.995, 10.0) == pytest.approx(3.169, abs=5e-4)
    assert tails.t_sf(1.96, tails.NORMAL) == pytest.approx(0.025, abs=1e-4)
    # a reading 20 scales out: the normal tail says 1e-89, t3's 1.4e-4 (a normal score near 3.6, not 20)
    assert tails.t_sf(20.0, 3.0) == pytest.approx(1.36e-4, rel=0.02)
    assert 3.4 < tails.normal_score(20.0, 3.0) < 3.8


@pytest.mark.parametrize(
    ("dof", "allowed"), [(3, {2.5, 3.0, 4.0}), (5, {4.0, 5.0, 6.0}), (0, {30.0, 60.0, tails.NORMAL})]
)
def test_fit_finds_the_tail(dof, allowed):
    rng = random.Random(dof)
    values = [G.draw(rng, f"t{dof}" if dof else "gauss") * 0.02 for _ in range(3000)]
    assert tails.fit(values)[0] in allowed


@pytest.mark.parametrize(("noise", "sigma"), [("t3", 0.01), ("t3", 0.02), ("t5", 0.02), ("t10", 0.02)])
def test_heavy_tailed_healthy_fleet_is_rarely_warned_and_never_drained(noise, sigma):
    n, seeds = 96, 3
    warned = drained = 0
    for s in range(seeds):
        r = _run(n, sigma, 7000 + s, noise)
        warned += len({f.node for f in r.findings if f.node and f.severity in ("warn", "fail")})
        drained += len(r.drain())
    assert warned <= 0.05 * n * seeds, f"{warned} of {n * seeds} healthy nodes warned"
    assert drained <= 0.01 * n * seeds, f"{drained} of {n * seeds} healthy nodes drained"


def test_heavy_tails_are_measured_per_family():
    r = _run(96, 0.01, 11, "t3")
    assert {x.dof for x in r.noise} <= {2.5, 3.0, 4.0}
    r = _run(96, 0.02, 11, "gauss")
    assert min(x.dof or 1e9 for x in r.noise) >= 8  # Gaussian, less what dividing by a measured spread adds


def test_five_percent_straggler_in_all_four_collectives_is_found_from_one_figure_each():
    seeds = 20
    slow = {"n010": G.Plant(factor={c: 0.95 for c in G.COLL_BUSBW})}
    found = 0
    for s in range(seeds):
        r = _run(64, 0.02, 2000 + s, "gauss", slow, HEADLINE)
        hits = [f for f in r.findings if f.node == "n010" and f.kind == "outlier"]
        found += bool(hits)
        assert all(f.severity == "warn" and "busbw" in f.subject for f in hits)
        assert not {f.node for f in r.findings if f.severity != "info"} - {"n010"}
    assert found >= 0.8 * seeds, f"found in {found} of {seeds}"


@pytest.mark.parametrize(("noise", "sigma"), [("gauss", 0.01), ("t3", 0.01)])
def test_one_reading_in_a_noisy_family_warns_to_remeasure_and_never_drains(noise, sigma):
    odd = {"n005": G.Plant(one={"p2p_latency": 1.36}), "n006": G.Plant(one={"h2d pageable": 0.5})}
    for s in range(3):
        r = _run(64, sigma, 8000 + s, noise, odd)
        assert not r.drain()
        on = [f for f in r.findings if f.node in odd]
        assert all(f.severity == "warn" and "re-measure" in f.message for f in on)
        if noise == "gauss":  # 36 % at 3 % noise: found, as one reading
            assert any(f.node == "n005" and f.figure == "p2p_latency · GPU 0→1" for f in on)


@pytest.mark.parametrize(("noise", "sigma"), [("t3", 0.01), ("t5", 0.02)])
def test_lost_hardware_still_fails_under_heavy_tails(noise, sigma):
    plants = {"n001": G.Plant(lost_gpu=True), "n003": G.Plant(lost_nic=True), "n004": G.Plant(lost_nvlink=5)}
    for s in range(2):
        r = _run(32, sigma, 3000 + s, noise, plants)
        assert {n.name for n, _ in r.drain()} == set(plants)
