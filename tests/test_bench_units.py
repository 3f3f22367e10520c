"""The benchmarker's pure parts: nccl-tests formulas, sizes, presets, expected figures, event assembly, rendering."""

from __future__ import annotations

import json

import pytest

from gpuadvisor.bench import faults
from gpuadvisor.bench.events import EventReader
from gpuadvisor.bench.formulas import algbw_gbps, busbw_factor, busbw_gbps, doubling_sizes, shape
from gpuadvisor.bench.presets import PRESETS, get_preset, parse_size
from gpuadvisor.bench.results import Collector
from gpuadvisor.bench.runner import parse_only
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Measurement, Rig, SweepRow
from gpuadvisor.physics.expected import expected_bandwidth
from gpuadvisor.render.text.bench import render_measurements

# -- nccl-tests doc/PERFORMANCE.md -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "n", "factor"),
    [
        ("all_reduce", 1, 0.0),
        ("all_reduce", 2, 1.0),
        ("all_reduce", 8, 1.75),
        ("all_reduce", 16, 1.875),
        ("all_gather", 2, 0.5),
        ("all_gather", 3, 2 / 3),
        ("all_gather", 8, 0.875),
        ("reduce_scatter", 4, 0.75),
        ("broadcast", 8, 1.0),
        ("broadcast", 1, 1.0),
    ],
)
def test_busbw_factor_is_nccl_tests(kind, n, factor):
    assert busbw_factor(kind, n) == pytest.approx(factor, abs=1e-12)


def test_busbw_from_a_published_nccl_tests_row():
    # shared/samples/nccl-allreduce_gcp-a3mega-2x8xh100: 16 ranks, 1073741824 B in 6759.0 us -> 158.86 / 297.86
    assert algbw_gbps(1073741824, 6759.0e-6) == pytest.approx(158.86, abs=0.005)
    assert busbw_gbps("all_reduce", 16, 1073741824, 6759.0e-6) == pytest.approx(297.86, abs=0.01)


def test_unknown_collective_and_bad_world_size():
    with pytest.raises(ValueError, match="unknown collective"):
        busbw_factor("all_to_all", 4)
    with pytest.raises(ValueError, match="at least 1"):
        busbw_factor("all_reduce", 0)


def test_shape_uses_the_total_array_for_gather_and_scatter():
    s = shape("all_gather", 3, 4096)
    assert (s.size_bytes, s.count, s.per_rank_count) == (4092, 1023, 341)
    s = shape("reduce_scatter", 8, 1 << 20)
    assert (s.size_bytes, s.count, s.per_rank_count) == (1 << 20, 1 << 18, 1 << 15)
    s = shape("all_reduce", 3, 4096)
    assert (s.size_bytes, s.count, s.per_rank_count) == (4096, 1024, 1024)
    assert shape("all_gather", 4, 8).size_bytes == 16  # at least one element per rank
    assert shape("broadcast", 2, 1).count == 1


def test_doubling_sizes():
    assert doubling_sizes(8, 64) == [8, 16, 32, 64]
    assert doubling_sizes(1 << 20, 3 << 20) == [1 << 20, 2 << 20]
    with pytest.raises(ValueError):
        doubling_sizes(64, 8)


def test_parse_size_and_presets():
    assert parse_size("8") == 8
    assert parse_size("64K") == 65536
    assert parse_size("256M") == 256 << 20
    assert parse_size("1GiB") == 1 << 30
    with pytest.raises(InputError, match="expected a byte count"):
        parse_size("lots")
    assert get_preset("quick").budget_s < 60
    quick = doubling_sizes(PRESETS["quick"].min_bytes, PRESETS["quick"].max_bytes)
    assert (quick[0], quick[-1], len(quick)) == (1 << 20, 1 << 30, 11)  # up to where NVLink busbw plateaus
    assert get_preset("default").with_overrides(iters=7, max_bytes=None).iters == 7
    with pytest.raises(InputError, match="min bytes"):
        get_preset("default").with_overrides(min_bytes=1 << 20, max_bytes=1024)
    with pytest.raises(InputError, match="unknown bench preset"):
        get_preset("fast")


def test_parse_only():
    assert parse_only("h2d, all_reduce") == ["all_reduce", "h2d"]
    assert parse_only("p2p") == ["p2p_unidir", "p2p_bidir", "p2p_latency"]
    assert parse_only(["collectives"]) == ["all_reduce", "all_gather", "reduce_scatter", "broadcast"]
    assert parse_only("all-reduce") == ["all_reduce"]
    assert len(parse_only(None)) == 10
    with pytest.raises(InputError, match="unknown benchmark 'alltoall'"):
        parse_only("all_reduce,alltoall")


def test_faults_parse():
    assert faults.parse("corrupt:1:all_gather, hang:0:broadcast") == [
        faults.Fault("corrupt", 1, "all_gather"),
        faults.Fault("hang", 0, "broadcast"),
    ]
    with pytest.raises(ValueError, match="bad item"):
        faults.parse("explode:1:x")


# -- expected figures ------------------------------------------------------------------------------------


def test_expected_nvlink_all_pairs(preset):
    rig = preset("dgx-h100")
    e = expected_bandwidth(rig, "all_reduce", list(range(8)), backend="nccl", world_size=8)
    assert e.gbps == pytest.approx(450.0)  # 18 NVLink 4 links × 25 GB/s
    assert "18 active NVLink 4 links" in e.source
    e = expected_bandwidth(preset("dgx-a100"), "reduce_scatter", [0, 1, 2, 3], backend="nccl", world_size=4)
    assert e.gbps == pytest.approx(300.0)


def test_expected_pcie_and_none_cases(preset):
    rig = preset("4x4090-pcie")
    e = expected_bandwidth(rig, "all_reduce", [0, 1, 2, 3], backend="nccl", world_size=4)
    # Gen4 x16 at max, the narrowest path, as a line rate: collectives are scaled by NCCL's efficiency in the
    # rules and the advisor (links.NCCL_*), not by the copy efficiency.
    assert e.gbps == pytest.approx(31.504, rel=1e-3)
    assert "PCIe Gen4 x16" in e.source
    assert expected_bandwidth(rig, "all_reduce", [], backend="gloo", world_size=2).gbps is None
    assert expected_bandwidth(rig, "all_reduce", [0], backend="nccl", world_size=1).source.startswith("world size 1")
    assert (
        "network"
        in expected_bandwidth(rig, "all_reduce", [0, 1], backend="nccl", world_size=16, spans_nodes=True).source
    )
    assert expected_bandwidth(rig, "all_reduce", [0, 9], backend="nccl", world_size=2).gbps is None
    assert expected_bandwidth(rig, "h2d", [2], backend="cuda", memory="pageable").gbps is None
    assert expected_bandwidth(rig, "d2d", [2], backend="cuda").gbps is None
    assert expected_bandwidth(rig, "p2p_latency", [0, 1], backend="cuda", p2p_enabled=True).gbps is None


def test_expected_copies_and_peers(preset):
    rig = preset("dgx-a100")
    h2d = expected_bandwidth(rig, "h2d", [3], backend="cuda", memory="pinned")
    assert h2d.gbps == pytest.approx(31.504 * 0.85, rel=1e-3)
    on = expected_bandwidth(rig, "p2p_unidir", [0, 1], backend="cuda", p2p_enabled=True)
    assert on.gbps == pytest.approx(300.0)  # NV12 × 25
    assert expected_bandwidth(rig, "p2p_bidir", [0, 1], backend="cuda", p2p_enabled=True).gbps == pytest.approx(600.0)
    off = expected_bandwidth(rig, "p2p_unidir", [0, 1], backend="cuda", p2p_enabled=False)
    assert off.gbps == pytest.approx(h2d.gbps)
    assert off.source.startswith("staged through host memory")


# -- events to measurements ------------------------------------------------------------------------------


def _row(size: int, t_us: float, n: int = 2, kind: str = "all_reduce", errors: int = 0) -> dict:
    alg = size / (t_us * 1e-6) / 1e9
    return {
        "size_bytes": size,
        "count": size // 4,
        "dtype": "float32",
        "time_us": t_us,
        "algbw_gbps": alg,
        "busbw_gbps": alg * busbw_factor(kind, n),
        "correct": errors == 0,
        "errors": errors,
    }


def test_collector_maps_bus_ids_and_judges(preset):
    rig = preset("dgx-h100")
    ranks = [{"host": "h", "ordinal": i, "bus_id": rig.gpus[i].bus_id, "name": "x"} for i in (3, 5)]
    seen = []
    c = Collector(rig, progress=lambda d, t, label: seen.append((d, t)))
    c.plan_collectives(["all_reduce"], 3)
    c.feed(
        [
            {"ev": "ranks", "ranks": ranks},
            {
                "ev": "begin",
                "key": "all_reduce",
                "kind": "all_reduce",
                "backend": "nccl",
                "world_size": 2,
                "ranks": ranks,
                "method": "m",
                "warmup_iters": 1,
                "iters": 3,
            },
            {"ev": "row", "key": "all_reduce", "row": _row(1 << 20, 10.0)},
            {"ev": "row", "key": "all_reduce", "row": _row(1 << 21, 10.0)},
            {"ev": "end", "key": "all_reduce", "status": "partial", "error": None, "notes": ["stopped"]},
        ]
    )
    m = c.measurement("all_reduce", "ok", None)
    assert m.gpus == [3, 5]
    assert m.status == "partial"
    assert m.value_gbps == pytest.approx((1 << 21) / 10e-6 / 1e9)
    assert m.expected_gbps == pytest.approx(450.0)
    assert m.ratio == pytest.approx(m.value_gbps / 450.0, rel=1e-3)
    assert seen[-1] == (3, 3)  # the size the budget skipped still counts as done


def test_collector_keeps_rows_of_a_killed_run_and_fails_wrong_results():
    rig = Rig()
    c = Collector(rig)
    ranks = [{"host": "h", "ordinal": None, "bus_id": None}] * 2
    c.feed(
        [
            {
                "ev": "begin",
                "key": "all_gather",
                "kind": "all_gather",
                "backend": "gloo",
                "world_size": 2,
                "ranks": ranks,
            },
            {"ev": "row", "key": "all_gather", "row": _row(4096, 50.0, kind="all_gather")},
            {
                "ev": "begin",
                "key": "broadcast",
                "kind": "broadcast",
                "backend": "gloo",
                "world_size": 2,
                "ranks": ranks,
            },
            {"ev": "row", "key": "broadcast", "row": _row(4096, 50.0, kind="broadcast", errors=1)},
            {"ev": "end", "key": "broadcast", "status": "failed", "error": "correctness check: 1 wrong", "notes": []},
        ]
    )
    hung = c.measurement("all_gather", "timeout", "time budget ran out after 6.5 s; killed rank 1")
    assert hung.status == "timeout"
    assert len(hung.rows) == 1 and "1 size(s) measured before it" in hung.error
    assert hung.value_gbps == pytest.approx(4096 / 50e-6 / 1e9 * 0.5)
    assert hung.expected_gbps is None and "gloo" in hung.unavailable["expected_gbps"]
    bad = c.measurement("broadcast", "ok", None)
    assert bad.status == "failed" and bad.value_gbps is None and bad.rows[0].errors == 1


def test_collector_unknown_bus_id_falls_back_to_ordinal(preset):
    c = Collector(preset("dgx-h100"))
    c.feed(
        [
            {"ev": "devices", "devices": [{"ordinal": 0, "bus_id": "0000:ff:1f.0", "name": "x"}]},
            {"ev": "begin", "key": "d2d:0", "kind": "d2d", "backend": "cuda", "world_size": 1, "devices": [0]},
            {"ev": "end", "key": "d2d:0", "status": "ok", "value_gbps": 1400.0, "notes": []},
        ]
    )
    m = c.measurement("d2d:0", "ok", None)
    assert m.gpus == [0] and m.value_gbps == 1400.0
    assert any("CUDA ordinals" in n for n in m.notes)


def test_world_size_one_has_no_bus_bandwidth():
    c = Collector(Rig())
    c.feed(
        [
            {
                "ev": "begin",
                "key": "broadcast",
                "kind": "broadcast",
                "backend": "nccl",
                "world_size": 1,
                "ranks": [{"host": "h", "ordinal": 0, "bus_id": None}],
            },
            {"ev": "row", "key": "broadcast", "row": _row(1 << 30, 32.1, n=1, kind="broadcast")},
            {"ev": "end", "key": "broadcast", "status": "ok", "notes": []},
        ]
    )
    m = c.measurement("broadcast", "ok", None)
    assert m.value_gbps is None and any("world size 1" in n for n in m.notes)


def test_event_reader_waits_for_whole_lines(tmp_path):
    p = tmp_path / "ev.jsonl"
    r = EventReader(p)
    assert r.read_new() == []
    with open(p, "w") as f:
        f.write(json.dumps({"ev": "a"}) + "\n" + '{"ev": "b"')
    assert r.read_new() == [{"ev": "a"}]
    with open(p, "a") as f:
        f.write("}\n")
    assert r.read_new() == [{"ev": "b"}]


# -- rendering -------------------------------------------------------------------------------------------


def test_render_sweep_copies_and_matrix():
    ms = [
        Measurement(
            kind="all_reduce",
            backend="nccl",
            world_size=2,
            gpus=[0, 1],
            warmup_iters=5,
            iters=20,
            rows=[SweepRow(1 << 20, 1 << 18, "float32", 25.0, 41.94, 41.94, True, 0)],
            value_gbps=41.94,
            expected_gbps=50.0,
            ratio=0.8388,
            expected_source="PCIe",
        ),
        Measurement(
            kind="h2d",
            backend="cuda",
            gpus=[0],
            memory="pinned",
            concurrent=False,
            value_gbps=55.23,
            expected_gbps=53.56,
            ratio=1.03,
            rows=[SweepRow(268435456, 268435456, "uint8", 4860.0, 55.23, 55.23, True, 0)],
        ),
        Measurement(kind="p2p_unidir", backend="cuda", gpus=[0, 1], p2p_enabled=False, value_gbps=11.5),
        Measurement(
            kind="p2p_unidir", backend="cuda", gpus=[1, 0], p2p_enabled=False, status="timeout", error="killed"
        ),
    ]
    text = render_measurements(ms)
    assert "#       size         count      type       time     algbw     busbw  #wrong" in text
    assert (
        "     1048576        262144     float      25.00     41.94     41.94       0" in text
    )  # nccl-tests: %.2f < 100 us
    assert "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 41.94 GB/s (mean busbw of 1 size," in text
    assert "(ratio 0.84)" in text
    assert "  0      55.23" in text
    assert "P2P unidirectional, GB/s, P2P disabled" in text
    assert "     0         X    11.50" in text
    assert "     1   timeout        X" in text
    assert render_measurements([]) == "No measurements."


# -- the scan measured on the H100 machine (benchmarks/device/gpu_bench.sh) -------------------------------


def test_h100_fixture_loads_with_measured_copies(fixtures_dir):
    from gpuadvisor.facts import load

    rig = load(fixtures_dir / "h100-vm" / "bench-measurements.json")
    assert rig.provenance["measurements"] == "measured"
    by = {(m.kind, m.memory): m for m in rig.measurements}
    h2d = by[("h2d", "pinned")]
    assert (h2d.backend, h2d.gpus, h2d.status) == ("cuda", [0], "ok")
    assert h2d.value_gbps == pytest.approx(55.03, abs=0.01)
    assert h2d.expected_gbps == pytest.approx(63.008 * 0.85, abs=0.01)  # PCIe Gen5 x16 × copy efficiency
    assert h2d.rows[0].size_bytes == 256 << 20 and h2d.rows[0].errors == 0
    assert "bytes counted once" in by[("d2d", None)].method
    ar = by[("all_reduce", None)]
    assert ar.world_size == 1 and len(ar.rows) == 28 and ar.value_gbps is None  # 8 B .. 1 GiB
    assert all(r.correct and r.busbw_gbps == 0.0 for r in ar.rows)  # factor 2(n-1)/n = 0 at n = 1
    assert by[("p2p_unidir", None)].status == "skipped"


def test_progress_bar_on_a_terminal_and_plain_lines_otherwise():
    import io

    from gpuadvisor.commands.bench import _progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty, log = Tty(), io.StringIO()
    for stream in (tty, log):
        show = _progress(stream)
        show(1, 2, "all_reduce 8 B: busbw 0.00 GB/s")
        show(2, 2, "all_reduce done")
    assert tty.getvalue().startswith("\r[############............] 1/2")
    assert tty.getvalue().endswith("\n") and tty.getvalue().count("\n") == 1
    lines = log.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("bench: [1/2]") and lines[1].endswith("all_reduce done")


def test_multi_host_job_lists_this_hosts_gpus_only(preset):
    import socket

    rig = preset("dgx-h100")
    here = socket.gethostname()
    ranks = [{"host": h, "ordinal": i, "bus_id": rig.gpus[i].bus_id} for h in (here, "other-node") for i in (0, 1)]
    c = Collector(rig)
    c.feed(
        [
            {
                "ev": "begin",
                "key": "all_reduce",
                "kind": "all_reduce",
                "backend": "nccl",
                "world_size": 4,
                "ranks": ranks,
            },
            {"ev": "row", "key": "all_reduce", "row": _row(1 << 20, 10.0, n=4)},
            {"ev": "end", "key": "all_reduce", "status": "ok", "notes": []},
        ]
    )
    m = c.measurement("all_reduce", "ok", None)
    assert m.gpus == [0, 1]
    assert m.expected_gbps is None and "network" in m.expected_source
    assert any("ranks on 2 hosts" in n for n in m.notes)


def test_expected_ga102_bridge_links_run_at_their_own_rate(preset):
    """RTX 3090 NVLink bridge: 4 links × 14.0625 GB/s (112.5 GB/s both ways), not 4 × 25 of SXM NVLink 3."""
    rig = preset("2x3090-nvlink")
    e = expected_bandwidth(rig, "all_reduce", [0, 1], backend="nccl", world_size=2)
    assert e.gbps == pytest.approx(56.25)
    assert "14.0625 GB/s" in e.source and "RTX A6000 datasheet" in e.source
    assert expected_bandwidth(rig, "p2p_unidir", [0, 1], backend="cuda", p2p_enabled=True).gbps == pytest.approx(56.25)
    assert expected_bandwidth(rig, "p2p_bidir", [0, 1], backend="cuda", p2p_enabled=True).gbps == pytest.approx(112.5)


def test_expected_nvlink_counts_only_links_to_the_participants(preset):
    """A direct NVLink mesh (HGX A100 4-GPU: NV4 to each of 3 peers): 2 of the GPUs share 4 links, not 12."""
    rig = preset("dgx-a100")
    for a in range(4):
        for b in range(4):
            if a != b:
                rig.topology.matrix[a][b] = "NV4"
    pair = expected_bandwidth(rig, "all_reduce", [0, 1], backend="nccl", world_size=2)
    assert pair.gbps == pytest.approx(100.0)
    assert "4 NVLink 3 links to the other 1 GPU(s) (of its 12 active)" in pair.source
    assert expected_bandwidth(rig, "all_gather", [0, 1, 2, 3], backend="nccl", world_size=4).gbps == pytest.approx(
        300.0
    )
    # NVSwitch (NV12 to every peer): each GPU's 12 links count once however many peers
    assert expected_bandwidth(
        preset("dgx-a100"), "all_reduce", [0, 1], backend="nccl", world_size=2
    ).gbps == pytest.approx(300.0)


def test_expected_copies_all_at_once_share_a_switch_uplink(preset):
    """DGX A100: GPUs 0 and 1 sit behind one PCIe switch whose Gen4 x16 uplink (0000:01:00.0) they share."""
    rig = preset("dgx-a100")
    alone = expected_bandwidth(rig, "h2d", [0], backend="cuda", memory="pinned")
    together = expected_bandwidth(rig, "h2d", [0], backend="cuda", memory="pinned", together=list(range(8)))
    assert alone.gbps == pytest.approx(31.504 * 0.85, rel=1e-4)
    assert together.gbps == pytest.approx(31.504 / 2 * 0.85, rel=1e-4)
    assert "shared by the 2 GPUs copying at once behind it (GPU 0, GPU 1)" in together.source
    assert "0000:01:00.0" in together.source
    one = expected_bandwidth(rig, "d2h", [0], backend="cuda", memory="pinned", together=[0, 2])
    assert one.gbps == pytest.approx(alone.gbps)  # GPU 2 is behind another switch


def test_expected_p2p_over_pcie_stays_below_the_shared_switch(preset):
    rig = preset("dgx-a100")
    rig.topology.matrix[0][1] = rig.topology.matrix[1][0] = "PXB"
    for gpu in rig.gpus[:2]:
        for hop in gpu.pcie.path:
            if hop.bdf == "0000:01:00.0":  # the uplink both GPUs share, narrowed to x4
                hop.max_width = 4
    on = expected_bandwidth(rig, "p2p_unidir", [0, 1], backend="cuda", p2p_enabled=True)
    off = expected_bandwidth(rig, "p2p_unidir", [0, 1], backend="cuda", p2p_enabled=False)
    assert on.gbps == pytest.approx(31.504 * 0.85, rel=1e-4)  # peer traffic turns in the switch below the uplink
    assert off.gbps == pytest.approx(7.876 * 0.85, rel=1e-4)  # staged through host memory: crosses the x4 uplink
    assert "x4 at 0000:01:00.0" in off.source


def test_expected_pcie_collective_says_when_p2p_is_off(preset):
    e = expected_bandwidth(preset("4x4090-pcie"), "all_reduce", [0, 1, 2, 3], backend="nccl", world_size=4)
    assert "P2P reads NS between some of these GPUs" in e.source
    assert "P2P" not in expected_bandwidth(preset("dgx-h100"), "h2d", [0], backend="cuda", memory="pinned").source


def test_collector_judges_concurrent_copies_against_their_share(preset):
    rig = preset("dgx-a100")
    devices = [{"ordinal": i, "bus_id": rig.gpus[i].bus_id, "name": "x"} for i in range(8)]
    events = [{"ev": "devices", "devices": devices}]
    for i in range(8):
        key = f"h2d:pinned:all:{i}"
        events += [
            {
                "ev": "begin",
                "key": key,
                "kind": "h2d",
                "backend": "cuda",
                "world_size": 1,
                "devices": [i],
                "memory": "pinned",
                "concurrent": True,
            },
            {"ev": "end", "key": key, "status": "ok", "value_gbps": 12.5, "notes": []},
        ]
    events += [
        {
            "ev": "begin",
            "key": "h2d:pinned:alone:0",
            "kind": "h2d",
            "backend": "cuda",
            "world_size": 1,
            "devices": [0],
            "memory": "pinned",
            "concurrent": False,
        },
        {"ev": "end", "key": "h2d:pinned:alone:0", "status": "ok", "value_gbps": 25.0, "notes": []},
    ]
    c = Collector(rig)
    c.feed(events)
    m = c.measurement("h2d:pinned:all:0", "ok", None)
    assert m.expected_gbps == pytest.approx(13.389, abs=1e-3)
    assert m.ratio == pytest.approx(12.5 / (31.504 / 2 * 0.85), rel=1e-3)
    assert c.measurement("h2d:pinned:alone:0", "ok", None).expected_gbps == pytest.approx(26.778, abs=1e-3)


def test_sweep_prints_time_and_average_as_nccl_tests():
    rows = [
        SweepRow(8, 2, "float32", 18.094, 0.0, 0.0, True, 0),
        SweepRow(1 << 20, 1 << 18, "float32", 123.44, 8.49, 14.86, True, 0),
        SweepRow(1 << 30, 1 << 28, "float32", 27211.04, 39.46, 69.06, False, 3),
    ]
    text = render_measurements(
        [
            Measurement(
                kind="all_reduce",
                backend="nccl",
                world_size=8,
                gpus=list(range(8)),
                warmup_iters=5,
                iters=20,
                rows=rows,
                status="failed",
            )
        ]
    )
    assert "           8             2     float      18.09      0.00      0.00       0" in text
    assert "     1048576        262144     float      123.4      8.49     14.86       0" in text
    assert "  1073741824     268435456     float      27211     39.46     69.06       3" in text
    assert "# Out of bounds values : 3 FAILED" in text
    assert "# Avg bus bandwidth    : 27.97 GB/s (mean busbw of 3 sizes, as nccl-tests)" in text


def test_headline_below_the_plateau_says_so(preset):
    """A sweep whose last doubling still raised busbw by > 10% has not reached what the links give."""
    rig = preset("dgx-h100")
    ranks = [{"host": "h", "ordinal": i, "bus_id": rig.gpus[i].bus_id} for i in range(8)]

    def run(times_us: list[float]) -> Measurement:
        c = Collector(rig)
        rows = [_row(s, t, n=8) for s, t in zip((32 << 20, 64 << 20), times_us, strict=True)]
        c.feed(
            [
                {
                    "ev": "begin",
                    "key": "all_reduce",
                    "kind": "all_reduce",
                    "backend": "nccl",
                    "world_size": 8,
                    "ranks": ranks,
                },
                *({"ev": "row", "key": "all_reduce", "row": r} for r in rows),
                {"ev": "end", "key": "all_reduce", "status": "ok", "notes": []},
            ]
        )
        return c.measurement("all_reduce", "ok", None)

    rising = run([250.0, 400.0])  # busbw 234.9 -> 293.6 GB/s
    assert rising.value_gbps == pytest.approx(293.6, abs=0.1)
    assert any(n.startswith("busbw still rising at the largest size (234.88 -> 293.60 GB/s") for n in rising.notes)
    flat = run([250.0, 480.0])  # 234.9 -> 244.7: within 10%
    assert not any("still rising" in n for n in flat.notes)
    c = Collector(Rig())  # gloo on CPUs: no link figure to understate, loopback figures scatter
    c.feed(
        [
            {
                "ev": "begin",
                "key": "all_reduce",
                "kind": "all_reduce",
                "backend": "gloo",
                "world_size": 2,
                "ranks": [{"host": "h", "ordinal": None}] * 2,
            },
            {"ev": "row", "key": "all_reduce", "row": _row(1 << 20, 1000.0)},
            {"ev": "row", "key": "all_reduce", "row": _row(2 << 20, 1000.0)},
            {"ev": "end", "key": "all_reduce", "status": "ok", "notes": []},
        ]
    )
    assert c.measurement("all_reduce", "ok", None).notes == []


@pytest.mark.parametrize(
    ("preset_name", "backend", "max_bytes"),
    [("quick", "gloo", 64 << 20), ("default", "gloo", 64 << 20), ("full", "gloo", 8 << 30)],
)
def test_local_gloo_sweeps_stop_at_64_mib(monkeypatch, preset_name, backend, max_bytes):
    """quick and default end at 1 GiB for GPUs; gloo processes on this machine's CPUs stop at 64 MiB."""
    from gpuadvisor.bench import runner
    from gpuadvisor.bench.launcher import Outcome

    for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR"):
        monkeypatch.delenv(v, raising=False)
    seen = []
    monkeypatch.setattr(runner, "supervise", lambda role, cfg, *a, **k: seen.append(cfg) or Outcome("ok"))
    ms = runner.run_benchmarks(Rig(), preset=preset_name, backend=backend, nproc=2, only="all_reduce")
    assert seen[0]["max_bytes"] == max_bytes
    capped = "gloo on local CPUs: sweep capped at 64 MiB (use -e SIZE or --full for more)"
    assert (capped in ms[0].notes) == (preset_name != "full")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("raise ImportError('No module named torch')", "the benchmarks need torch: install it"),
        (
            "raise OSError('libcudart.so.12: cannot open shared object file')",
            "torch is installed but fails to import (OSError: libcudart.so.12: cannot open shared object file)",
        ),
    ],
)
def test_missing_or_broken_torch_is_one_clear_line(tmp_path, monkeypatch, body, message):
    import sys

    from gpuadvisor.bench import runner

    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(body + "\n")
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InputError) as e:
        runner.run_benchmarks(Rig(), backend="gloo", only="all_reduce")
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_a_cpu_sweep_reads_as_one_fits_80_columns_and_is_not_held_to_nvlink(preset):
    """gloo on the CPU (issue: 'GPUs cpu', an unformatted average, 208-column method lines, 'the NVLink figure
    applies'): every line within 80 columns, the place named, the average in GB/s, no NVLink reasoning."""
    from gpuadvisor import rules

    method = (
        "torch.distributed all_reduce (float32, sum, in place), perf_counter after a barrier, total time of n "
        "back-to-back operations / n (nccl-tests' definition), slowest rank"
    )
    m = Measurement(
        kind="all_reduce",
        backend="gloo",
        world_size=2,
        gpus=[],
        warmup_iters=2,
        iters=5,
        method=method,
        rows=[SweepRow(1 << 20, 1 << 18, "float32", 3355.2, 0.3125, 0.3125, True, 0)],
        value_gbps=0.3125,
        expected_source="gloo on CPUs: loopback and shared-memory bandwidth are not in the link facts",
        notes=["gloo on local CPUs: sweep capped at 64 MiB (use -e SIZE or --full for more)"],
    )
    text = render_measurements([m])
    assert all(len(line) <= 80 for line in text.splitlines()), [x for x in text.splitlines() if len(x) > 80]
    assert text.startswith("# all_reduce · gloo · 2 rank(s) · on the CPU · warm-up 2, 5 timed iterations\n")
    assert "GPUs cpu" not in text
    assert "# Avg bus bandwidth    : 0.31 GB/s (mean busbw of 1 size, as nccl-tests)" in text
    assert " ".join(x.lstrip("# ") for x in text.splitlines()[1:4]).startswith("method: " + method)
    rig = preset("4x4090-pcie")
    rig.measurements = [m]
    said = [f.message for f in rules.evaluate(rig) if "all_reduce" in f.message or "all-reduce" in f.message]
    assert said and not any("NVLink" in s for s in said), said


def test_a_sweep_whose_rank_count_is_unknown_says_so():
    """Rows pasted without nccl-tests' "#  Rank" lines leave the world size unknown: the header says so, it does
    not print "None"."""
    from gpuadvisor.facts import Measurement, SweepRow
    from gpuadvisor.render.text.bench import render_sweep

    m = Measurement(kind="all_reduce", backend=None, rows=[SweepRow(size_bytes=8, busbw_gbps=0.0)])
    head = render_sweep(m).splitlines()[0]
    assert "None" not in head
    assert head.startswith("# all_reduce · backend not shown · ranks not shown · ")
