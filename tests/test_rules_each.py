"""Every rule: fired on a rig built to break it (exact code, GPUs and values), quiet on a healthy rig.

The healthy rig is the simulated dgx-h100 preset (the real probe code against a simulated NVML and sysfs),
completed with the facts a simulated scan cannot have: a PSU rating, torch, network interfaces and a set
of healthy measurements (figures of a healthy 8x H100 SXM node, see gpuadvisor.rules.references).
"""

from __future__ import annotations

import copy
import functools

import pytest

from gpuadvisor import facts
from gpuadvisor.facts import Measurement, Rig, SweepRow
from gpuadvisor.rules import all_rules, get_rule
from gpuadvisor.rules.engine import run_rule
from gpuadvisor.rules.thresholds import defaults

H2D_EXPECTED = 53.557  # PCIe 5.0 x16: 16 x 3.938 GB/s x 0.85 copy efficiency, rounded as the benchmarker records it


@functools.cache
def _sim(name: str) -> Rig:
    from gpuadvisor.collect import simulate

    return simulate(name)


def sim(name: str) -> Rig:
    return copy.deepcopy(_sim(name))


def _measurements() -> list[Measurement]:
    ms = []
    for i in range(8):
        for kind in ("h2d", "d2h"):
            ms.append(
                Measurement(
                    kind=kind,
                    backend="cuda",
                    method="cudaMemcpyAsync",
                    gpus=[i],
                    memory="pinned",
                    concurrent=False,
                    value_gbps=55.3,
                    expected_gbps=H2D_EXPECTED,
                    expected_source="PCIe Gen5 x16 x 0.85",
                    ratio=round(55.3 / H2D_EXPECTED, 4),
                    rows=[SweepRow(size_bytes=1 << 28, algbw_gbps=55.3, busbw_gbps=55.3, correct=True, errors=0)],
                )
            )
    ms.append(
        Measurement(
            kind="all_reduce",
            backend="nccl",
            world_size=8,
            gpus=list(range(8)),
            value_gbps=372.0,
            expected_gbps=450.0,
            expected_source="GPU 0: 18 active NVLink 4 links x 25 GB/s",
            rows=[
                SweepRow(size_bytes=1 << 32, busbw_gbps=372.0, correct=True, errors=0),
                SweepRow(size_bytes=1 << 33, busbw_gbps=372.0, correct=True, errors=0),
            ],
        )
    )
    ms.append(
        Measurement(
            kind="p2p_unidir",
            backend="cuda",
            gpus=[0, 1],
            p2p_enabled=True,
            value_gbps=389.0,
            expected_gbps=450.0,
            expected_source="NV18: 18 x 25 GB/s NVLink 4",
        )
    )
    for i in range(8):  # bench --compute on a healthy H100 SXM: 0.76 of the 989.4 dense bf16 peak
        ms.append(
            Measurement(
                kind="matmul",
                backend="cuda",
                gpus=[i],
                dtype="bf16",
                shape="8192x8192x8192",
                value_tflops=752.0,
                expected_tflops=989.4,
                ratio=round(752.0 / 989.4, 4),
                expected_source="H100 SXM5 datasheet dense bf16",
            )
        )
    ms.append(
        Measurement(
            kind="p2p_unidir",
            backend="cuda",
            gpus=[0, 1],
            p2p_enabled=False,
            value_gbps=40.0,
            expected_gbps=53.557,
            expected_source="staged through host memory",
        )
    )
    return ms


def healthy() -> Rig:
    rig = sim("dgx-h100")
    rig.host.psu_watts = 10200.0  # test value above 8 x 700 W + 200 W
    rig.host.net_interfaces = ["lo", "eth0", "ib0", "docker0"]
    sw = rig.software
    sw.torch_version, sw.torch_cuda_version = "2.13.0", "12.4"
    for k in ("torch_version", "torch_cuda_version"):
        sw.unavailable.pop(k, None)
    rig.measurements = _measurements()
    return rig


def run(code: str, rig: Rig, **thresholds: float) -> list[facts.Finding]:
    th = defaults()
    th.update(thresholds)
    rule = get_rule(code)
    assert rule is not None, code
    return run_rule(rule, rig, th)


def one(code: str, rig: Rig, **thresholds: float) -> facts.Finding:
    out = [f for f in run(code, rig, **thresholds) if f.severity != "not-checked"]
    assert len(out) == 1, [(f.severity, f.message) for f in out]
    return out[0]


# -- quiet on healthy rigs ------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [r.code for r in all_rules()])
def test_every_rule_is_quiet_on_the_healthy_rig(code: str) -> None:
    out = run(code, healthy())
    assert out == [], [(f.severity, f.message) for f in out]


def test_the_healthy_rig_is_realistic() -> None:
    rig = healthy()
    assert len(rig.gpus) == 8 and rig.gpus[0].name == "NVIDIA H100 80GB HBM3"
    assert rig.topology.matrix[0][1] == "NV18" and rig.topology.pcie_matrix[0][4] == "SYS"
    assert [h.port_type for h in rig.gpus[2].pcie.path] == ["endpoint", "downstream-port", "upstream-port", "root-port"]


# -- GA1xx PCIe -----------------------------------------------------------------------------------------


def _narrow_gpu_link(rig: Rig, idx: int, width: int) -> None:
    g = rig.gpus[idx]
    g.pcie.current_width = width
    g.pcie.path[0].current_width = width
    g.pcie.path[1].current_width = width  # the downstream port reports the same link


def test_ga101_fires_on_a_gpu_trained_at_x8():
    rig = healthy()
    _narrow_gpu_link(rig, 2, 8)
    f = one("GA101", rig)
    assert (f.code, f.name, f.severity, f.gpus) == ("GA101", "pcie-link-downgraded", "fail", [2])
    assert f.subject == "GPU 2 0000:3a:00.0"
    assert f.observed == {"current_link_width": 8} and f.expected == {"max_link_width": 16}
    assert "runs at x8 where its slot and card support x16 (current_link_width=8, max_link_width=16)" in f.message


def test_ga101_fires_on_a_narrow_switch_uplink_on_the_path():
    rig = healthy()
    up = rig.gpus[5].pcie.path[2]
    assert up.port_type == "upstream-port"
    up.current_width = 4
    f = one("GA101", rig)
    assert f.gpus == [5] and f.observed == {"current_link_width": 4} and f.expected == {"max_link_width": 16}
    assert up.bdf in f.subject and "switch uplink" in f.message


def test_ga101_not_checked_when_the_width_is_missing():
    rig = healthy()
    g = rig.gpus[0]
    g.pcie.missing("current_width", facts.NO_PERMISSION)
    g.pcie.path = []
    out = run("GA101", rig)
    assert [(f.severity, f.gpus, f.message) for f in out] == [
        ("not-checked", [0], f"PCIe link width: {facts.NO_PERMISSION}")
    ]


def _slow_gen(rig: Rig, idx: int, gen: int) -> None:
    g = rig.gpus[idx]
    g.pcie.current_gen = gen
    g.pcie.path[0].current_gen = gen
    g.pcie.path[1].current_gen = gen


def test_ga102_idle_generation_drop_is_info():
    rig = healthy()
    rig.measurements = []
    _slow_gen(rig, 3, 1)
    f = one("GA102", rig)
    assert (f.severity, f.gpus) == ("info", [3])
    assert f.observed == {"current_link_gen": 1, "gpu_idle": True, "measured_gbps": None}
    assert f.expected == {"max_link_gen": 5}
    assert "while the GPU was idle" in f.message


def test_ga102_drop_on_a_busy_gpu_is_a_warning():
    rig = healthy()
    rig.measurements = []
    _slow_gen(rig, 3, 3)
    rig.gpus[3].clocks_event_reasons = []
    rig.gpus[3].performance_state = 0  # P0 and no idle reason: working
    f = one("GA102", rig)
    assert (f.severity, f.gpus, f.observed["gpu_idle"]) == ("warn", [3], False)
    assert "while the GPU was not idle (P0)" in f.message


def test_ga102_no_idle_reason_alone_does_not_make_a_gpu_busy():
    # NVML documents the GPU-idle reason as one that "may be removed in a later release", and idle A40s
    # report "SW Power Cap" instead of it (samples/smi-q_a40x10_thamada.txt, GPUs 0 and 3 at P8, 0 %).
    rig = healthy()
    rig.measurements = []
    _slow_gen(rig, 3, 1)
    rig.gpus[3].clocks_event_reasons = ["sw_power_cap"]
    rig.gpus[3].performance_state = None  # as an import from a -q without a Performance State line
    f = one("GA102", rig)
    assert (f.severity, f.observed["gpu_idle"]) == ("info", None)
    assert "GPU idle state unknown" in f.message
    rig.gpus[3].performance_state = 8
    f = one("GA102", rig)
    assert (f.severity, f.observed["gpu_idle"]) == ("info", True)
    assert "while the GPU was idle (P8)" in f.message


def test_ga102_drop_confirmed_under_benchmark_load_is_a_fault():
    rig = healthy()
    _slow_gen(rig, 3, 3)
    h2d = next(m for m in rig.measurements if m.kind == "h2d" and m.gpus == [3])
    h2d.value_gbps = 13.2  # what PCIe Gen3 x16 gives
    f = one("GA102", rig)
    assert (f.severity, f.gpus) == ("fail", [3])
    assert f.observed == {"current_link_gen": 3, "gpu_idle": True, "measured_gbps": 13.2}
    assert "stayed slow under load" in f.message


def test_ga102_healthy_copy_after_idle_drop_stays_info():
    rig = healthy()  # h2d at 55.3 GB/s: the link came back to Gen5 under load
    _slow_gen(rig, 3, 1)
    assert one("GA102", rig).severity == "info"


def test_ga103_slot_narrower_than_the_card():
    rig = healthy()
    g = rig.gpus[6]
    g.pcie.max_width = g.pcie.current_width = 8
    g.pcie.path[0].current_width = 8
    g.pcie.path[1].max_width = g.pcie.path[1].current_width = 8  # the slot's port is x8
    f = one("GA103", rig)
    assert (f.severity, f.gpus) == ("warn", [6])
    assert f.observed == {"slot_max_link_width": 8} and f.expected == {"gpu_max_link_width": 16}
    assert run("GA101", rig) == []  # not a downgrade: it trained at everything the slot offers


def test_ga103_platform_older_generation_is_info():
    rig = healthy()
    g = rig.gpus[1]
    g.pcie.max_gen = g.pcie.current_gen = 4
    g.pcie.path[0].current_gen = 4
    g.pcie.path[1].max_gen = g.pcie.path[1].current_gen = 4
    f = one("GA103", rig)
    assert (f.severity, f.gpus, f.observed, f.expected) == ("info", [1], {"max_link_gen": 4}, {"gpu_max_link_gen": 5})


def test_ga104_replays_above_the_dcgm_default():
    rig = healthy()
    rig.gpus[4].pcie.replay_counter = 80
    assert run("GA104", rig) == []
    rig.gpus[4].pcie.replay_counter = 81
    f = one("GA104", rig)
    assert (f.severity, f.gpus, f.observed, f.expected) == (
        "warn",
        [4],
        {"replay_counter": 81},
        {"replay_counter_max": 80},
    )


# -- GA2xx topology and NVLink ----------------------------------------------------------------------------


def _no_nvlink(rig: Rig) -> Rig:
    rig.topology.matrix = [row[:] for row in rig.topology.pcie_matrix]
    for g in rig.gpus:
        g.nvlinks = []
    return rig


def test_ga201_cross_socket_pairs():
    f = one("GA201", _no_nvlink(healthy()))
    assert (f.severity, f.gpus) == ("warn", list(range(8)))
    assert f.observed == {"SYS": [f"{a}-{b}" for a in range(4) for b in range(4, 8)]}


def test_ga202_host_bridge_pairs():
    f = one("GA202", _no_nvlink(healthy()))
    within = [f"{a}-{b}" for s in (0, 4) for a in range(s, s + 4) for b in range(a + 1, s + 4)]
    assert (f.severity, f.gpus, f.observed) == ("info", list(range(8)), {"NODE": within})


def test_ga203_no_nvlink_on_the_4x4090(preset):
    f = one("GA203", preset("4x4090-pcie"))
    assert (f.severity, f.gpus, f.observed) == ("warn", [0, 1, 2, 3], {"gpus": 4, "nvlink_pairs": 0})


def test_ga203_quiet_below_the_gpu_count_and_not_checked_without_facts(preset):
    rig = preset("4x4090-pcie")
    assert run("GA203", rig, no_nvlink_min_gpus=5) == []
    rig.gpus[1].unavailable["nvlinks"] = facts.NO_PERMISSION
    assert one("GA203", rig).gpus == [0, 1, 2, 3]  # the complete topo -m matrix still says: no NV#
    rig.topology.matrix = []
    rig.topology.unavailable["matrix"] = facts.NOT_IN_SOURCE
    out = run("GA203", rig)
    assert [(f.severity, f.message) for f in out] == [("not-checked", f"NVLink state of GPU 1: {facts.NO_PERMISSION}")]


def test_ga204_one_link_down():
    rig = healthy()
    rig.gpus[5].nvlinks[3].active = False
    f = one("GA204", rig)
    assert (f.severity, f.gpus) == ("fail", [5])
    assert f.observed == {"active_links": 17, "inactive_links": [3]} and f.expected == {"active_links": 18}


def test_ga204_bridged_card_whose_bridge_is_off(preset):
    rig = preset("2x3090-nvlink")
    assert run("GA204", rig) == []
    for n in rig.gpus[1].nvlinks:
        n.active = False
    f = one("GA204", rig)
    assert (f.severity, f.gpus, f.observed["active_links"], f.expected) == ("warn", [1], 0, {"active_links": 4})
    rig.gpus[1].nvlinks[0].active = True  # one of four bridge links up: a link down, not a missing bridge
    f = one("GA204", rig)
    assert (f.severity, f.observed) == ("fail", {"active_links": 1, "inactive_links": [1, 2, 3]})


def test_ga204_card_whose_links_are_all_inactive_per_nvidia_smi(preset):
    # nvidia-smi nvlink -s prints no link lines for such a GPU, only "all links are inActive": the importer
    # leaves nvlinks empty with that reason; zero active links is a fact, not a gap.
    rig = preset("2x3090-nvlink")
    rig.gpus[1].nvlinks = []
    rig.gpus[1].unavailable["nvlinks"] = facts.NVLINKS_ALL_INACTIVE
    f = one("GA204", rig)
    assert (f.severity, f.gpus, f.observed, f.expected) == (
        "warn",
        [1],
        {"active_links": 0, "inactive_links": []},
        {"active_links": 4},
    )
    assert "its bridge is missing or unseated, or it has no partner card" in f.message


def test_ga203_all_links_inactive_everywhere_means_no_nvlink(preset):
    rig = preset("4x4090-pcie")
    rig.topology.matrix = []
    rig.topology.unavailable["matrix"] = facts.NOT_IN_SOURCE
    for g in rig.gpus:
        g.nvlinks = []
        g.unavailable["nvlinks"] = facts.NVLINKS_ALL_INACTIVE
    f = one("GA203", rig)
    assert (f.severity, f.gpus) == ("warn", [0, 1, 2, 3])


def test_ga205_nvlink_recovery_errors():
    rig = healthy()
    rig.gpus[1].nvlinks[0].errors["recovery"] = 2
    rig.gpus[1].nvlinks[7].errors["crc_flit"] = 5
    f = one("GA205", rig)
    assert (f.severity, f.gpus) == ("warn", [1])
    assert f.observed == {"0": {"recovery": 2}, "7": {"crc_flit": 5}}
    assert one("GA205", rig, nvlink_error_max=2).observed == {"7": {"crc_flit": 5}}
    assert run("GA205", rig, nvlink_error_max=5) == []


def test_ga206_p2p_not_supported_on_the_4x4090(preset):
    f = one("GA206", preset("4x4090-pcie"))
    assert (f.severity, f.gpus) == ("warn", [0, 1, 2, 3])
    assert f.observed == {"NS": ["0-1", "0-2", "0-3", "1-2", "1-3", "2-3"]}


def test_ga206_one_pair_chipset_not_supported():
    rig = healthy()
    rig.topology.p2p_read[2][6] = rig.topology.p2p_read[6][2] = "CNS"
    f = one("GA206", rig)
    assert (f.gpus, f.observed) == ([2, 6], {"CNS": ["2-6"]})


def test_ga206_not_checked_without_p2p_facts():
    rig = healthy()
    rig.topology.p2p_read = rig.topology.p2p_write = None
    rig.topology.unavailable["p2p_read"] = facts.NOT_IN_SOURCE
    assert [(f.severity, f.message) for f in run("GA206", rig)] == [
        ("not-checked", f"P2P capability matrix: {facts.NOT_IN_SOURCE}")
    ]


# -- GA3xx GPUs -------------------------------------------------------------------------------------------


def test_ga301_mixed_models():
    rig = healthy()
    rig.gpus[7].name = "NVIDIA H100 PCIe"
    f = one("GA301", rig)
    assert (f.severity, f.gpus) == ("warn", list(range(8)))
    assert f.observed == {"NVIDIA H100 80GB HBM3 80 GiB": [0, 1, 2, 3, 4, 5, 6], "NVIDIA H100 PCIe 80 GiB": [7]}


def test_ga302_uncorrectable_ecc():
    rig = healthy()
    rig.gpus[3].ecc_errors_uncorrected_volatile = 2
    f = one("GA302", rig)
    assert (f.severity, f.gpus, f.observed) == ("fail", [3], {"uncorrected_volatile": 2, "uncorrected_aggregate": 0})


def test_ga302_not_checked_on_geforce(preset):
    out = run("GA302", preset("4x4090-pcie"))
    assert [(f.severity, f.gpus, f.message) for f in out] == [
        ("not-checked", [0, 1, 2, 3], f"ECC error counters: {facts.NOT_SUPPORTED}")
    ]


def test_ga303_sram_corrected_ecc_above_threshold():
    # Azure NHC's check_gpu_ecc 20000000 10000: 10000 is its SRAM-correctable limit
    rig = healthy()
    g = rig.gpus[3]
    g.ecc_errors_corrected_sram_aggregate = g.ecc_errors_corrected_aggregate = 10000
    assert run("GA303", rig) == []
    g.ecc_errors_corrected_sram_volatile = g.ecc_errors_corrected_volatile = 10001
    g.ecc_errors_corrected_aggregate = 10001
    f = one("GA303", rig)
    assert (f.severity, f.gpus, f.observed, f.expected) == (
        "warn",
        [3],
        {"sram_corrected": 10001},
        {"sram_corrected_max": 10000},
    )
    assert "SRAM" in f.message


def test_ga303_dram_corrected_errors_use_the_dram_limit():
    # The 10x A40 sample's GPU 6: 10289 aggregate DRAM-correctable errors, 0 SRAM, one remapped row. Azure NHC
    # passes it (its DRAM limit is 20,000,000); the SRAM limit does not apply to DRAM errors.
    rig = healthy()
    g = rig.gpus[6]
    g.ecc_errors_corrected_aggregate, g.ecc_errors_corrected_sram_aggregate = 10289, 0
    assert run("GA303", rig) == []
    g.ecc_errors_corrected_sram_aggregate = None  # NVML's total alone (the live probe): judged by the DRAM limit
    assert run("GA303", rig) == []
    g.ecc_errors_corrected_aggregate = 20_000_001
    f = one("GA303", rig)
    assert (f.observed, f.expected) == ({"corrected": 20_000_001}, {"corrected_max": 20_000_000})


def test_ga304_and_ga305_page_retirement_on_v100(preset):
    rig = preset("dgx2-v100")
    assert run("GA304", rig) == [] and run("GA305", rig) == [] and run("GA306", rig) == []
    rig.gpus[9].retired_pages_pending = True
    f = one("GA304", rig)
    assert (f.severity, f.gpus, f.observed) == ("warn", [9], {"retired_pages_pending": True})
    rig.gpus[11].retired_pages_single_bit, rig.gpus[11].retired_pages_double_bit = 40, 20
    f = one("GA305", rig)
    assert (f.severity, f.gpus) == ("fail", [11])
    assert f.observed == {"retired_pages": 60, "single_bit": 40, "double_bit": 20}


def test_ga304_does_not_apply_to_gpus_with_row_remapping():
    rig = healthy()  # H100: retired pages "not supported", row remapping instead
    assert run("GA304", rig) == [] and run("GA305", rig) == []


def test_ga306_row_remap_pending():
    rig = healthy()
    rig.gpus[0].remapped_rows_pending = True
    f = one("GA306", rig)
    assert (f.severity, f.gpus, f.observed) == ("warn", [0], {"remapped_rows_pending": True})
    assert f.fix.startswith("drain the GPU and reset it (nvidia-smi -r -i 0)")


def test_ga307_row_remap_failure_and_exhaustion():
    rig = healthy()
    rig.gpus[2].remapped_rows_failure = True
    f = one("GA307", rig)
    assert (f.severity, f.gpus, f.observed) == (
        "fail",
        [2],
        {"remapped_rows_failure": True, "remapped_rows_uncorrectable": 0},
    )
    rig = healthy()
    rig.gpus[4].remapped_rows_uncorrectable = 511
    assert run("GA307", rig) == []
    rig.gpus[4].remapped_rows_uncorrectable = 512
    assert one("GA307", rig).gpus == [4]


@pytest.mark.parametrize(
    ("reasons", "code", "severity"),
    [
        (["hw_slowdown", "hw_thermal_slowdown"], "GA308", "fail"),
        (["sw_thermal_slowdown"], "GA309", "warn"),
        (["hw_slowdown", "hw_power_brake_slowdown"], "GA310", "fail"),
        (["hw_slowdown"], "GA311", "fail"),
    ],
)
def test_ga308_to_ga311_clock_slowdowns(reasons, code, severity):
    rig = healthy()
    rig.gpus[6].clocks_event_reasons = list(reasons)
    fired = {c: run(c, rig) for c in ("GA308", "GA309", "GA310", "GA311")}
    assert {c for c, out in fired.items() if out} == {code}  # only the most specific rule speaks
    f = one(code, rig)
    assert (f.severity, f.gpus, f.observed) == (severity, [6], {"clocks_event_reasons": reasons})


def test_sw_power_cap_and_idle_are_not_slowdowns():
    rig = healthy()
    rig.gpus[0].clocks_event_reasons = ["gpu_idle", "sw_power_cap", "sync_boost"]
    assert all(run(c, rig) == [] for c in ("GA308", "GA309", "GA310", "GA311"))


def _lose(rig: Rig, idx: int, reason: str = facts.GPU_LOST) -> None:
    """GPU idx as the NVML probe records a GPU whose every query returns NVML_ERROR_GPU_IS_LOST."""
    g = rig.gpus[idx]
    lost = facts.Gpu(index=g.index, bus_id=g.bus_id)
    for f in ("name", "uuid", "memory_total_bytes", "power_limit_w", "clocks_event_reasons", "persistence_mode"):
        lost.missing(f, reason)
    lost.pcie.missing("current_width", reason)
    rig.gpus[idx] = lost


def test_ga315_gpu_lost_from_nvml():
    rig = healthy()
    _lose(rig, 5)
    f = one("GA315", rig)
    assert (f.code, f.name, f.severity, f.gpus, f.subject) == ("GA315", "gpu-lost", "fail", [5], "GPU 5 0000:ab:00.0")
    assert f.observed == {"reason": facts.GPU_LOST}
    assert f.message.startswith("GPU 5 0000:ab:00.0 cannot be read: GPU fell off the bus or was lost")


def test_ga315_gpu_without_an_nvml_handle():
    rig = healthy()
    rig.gpus[2] = facts.Gpu(index=2, unavailable={"*": "NVML error: Unknown Error"})
    f = one("GA315", rig)
    assert (f.severity, f.gpus, f.observed) == ("fail", [2], {"reason": "NVML error: Unknown Error"})


def test_ga315_quiet_when_only_some_facts_are_unsupported(preset):
    assert run("GA315", preset("4x4090-pcie")) == []  # ECC not supported is not a lost GPU


def test_ga312_power_limit_below_default():
    rig = healthy()
    rig.gpus[5].power_limit_w = 500.0
    f = one("GA312", rig)
    assert (f.severity, f.gpus, f.observed, f.expected) == (
        "warn",
        [5],
        {"power_limit_w": 500.0},
        {"power_default_limit_w": 700.0},
    )


def test_ga313_persistence_off_is_one_finding():
    rig = healthy()
    rig.gpus[0].persistence_mode = rig.gpus[4].persistence_mode = False
    f = one("GA313", rig)
    assert (f.severity, f.gpus, f.subject) == ("warn", [0, 4], "GPUs 0, 4")


def test_ga313_persistence_off_on_geforce_cards_is_info():
    """A desktop's GeForce cards (no ECC to scrub; the display server holds the driver): a note, not a warning;
    one data-centre GPU among them keeps it a warning."""
    rig = healthy()
    for g in rig.gpus:
        g.name, g.persistence_mode = "NVIDIA GeForce RTX 3090", False
    assert one("GA313", rig).severity == "info"
    rig.gpus[3].name = "NVIDIA A100-SXM4-80GB"
    assert one("GA313", rig).severity == "warn"


def test_ga314_mig_enabled():
    rig = healthy()
    rig.gpus[6].mig_mode = True
    f = one("GA314", rig)
    assert (f.severity, f.gpus, f.observed) == ("warn", [6], {"mig_mode": True})


def test_ga314_quiet_on_gpus_without_mig(preset):
    assert run("GA314", preset("2x3090-nvlink")) == []


# -- GA4xx host -------------------------------------------------------------------------------------------


def test_ga401_ram_per_gpu():
    rig = healthy()
    rig.host.memory_total_bytes = 100_000_000_000
    f = one("GA401", rig)
    assert (f.severity, f.gpus) == ("warn", list(range(8)))
    assert f.observed == {"memory_total_gb": 100.0, "per_gpu_gb": 12.5} and f.expected == {"memory_total_gb": 128.0}
    assert run("GA402", rig) == []  # the weaker guideline stays quiet when GA401 fires


def test_ga402_ram_per_gpu_memory():
    rig = healthy()
    rig.host.memory_total_bytes = 1_000_000_000_000
    f = one("GA402", rig)
    assert (f.severity, f.observed) == ("info", {"memory_total_gb": 1000.0, "gpu_memory_total_gb": 684.2})
    assert f.expected == {"memory_total_gb": 1368.3}


def test_ga403_cores_per_gpu():
    rig = healthy()
    rig.host.cores_physical = 14
    f = one("GA403", rig)
    assert (f.severity, f.observed, f.expected) == (
        "warn",
        {"cores_physical": 14, "per_gpu": 1.75},
        {"per_gpu_min": 2.0},
    )


def test_ga404_affinity_outside_the_numa_node():
    rig = healthy()
    assert rig.gpus[4].numa_node == 1
    rig.gpus[4].cpu_affinity = "0-55,112-167"
    f = one("GA404", rig)
    assert (f.severity, f.gpus) == ("warn", [4])
    assert f.observed == {"numa_node": 1, "cpu_affinity": "0-55,112-167"} and f.expected == {
        "cpu_affinity": "56-111,168-223"
    }


def test_ga404_unknown_numa_node_is_info_and_single_node_is_quiet(preset):
    rig = healthy()
    rig.gpus[7].numa_node = -1
    f = one("GA404", rig)
    assert (f.severity, f.gpus) == ("info", [7])
    rig4 = preset("4x4090-pcie")
    rig4.gpus[0].cpu_affinity = "0-3"
    assert run("GA404", rig4) == []


def test_ga405_psu_undersized():
    rig = healthy()
    rig.host.psu_watts = 5000.0
    f = one("GA405", rig)
    # 8 x 700 W + 2 x 350 W (Xeon Platinum 8480C TDP) + 150 W for the platform = 6,450 W
    assert (f.severity, f.observed) == ("fail", {"psu_watts": 5000.0})
    assert (f.expected["psu_watts_min"], f.expected["cpu_tdp_w"]) == (6450.0, 700.0)
    assert "second PSU of at least 1450 W" in f.fix
    rig.host.psu_watts = 6450.0
    assert run("GA405", rig) == []


def test_ga405_not_checked_without_a_psu_rating(preset):
    out = run("GA405", preset("dgx-h100"))
    assert [(f.severity, f.message) for f in out] == [
        ("not-checked", "PSU rating not given (set it in a rig spec or pass --psu-watts)")
    ]


# -- GA5xx software -------------------------------------------------------------------------------------


def test_ga501_hides_gpus():
    rig = healthy()
    rig.software.env["CUDA_VISIBLE_DEVICES"] = "0,1"
    f = one("GA501", rig)
    assert (f.severity, f.gpus) == ("warn", [2, 3, 4, 5, 6, 7])
    assert f.observed == {"CUDA_VISIBLE_DEVICES": "0,1", "visible": [0, 1], "nvml_gpus": 8}


def test_ga501_invalid_entry_and_empty_value_fail():
    rig = healthy()
    rig.software.env["CUDA_VISIBLE_DEVICES"] = "0,9,1"
    f = one("GA501", rig)
    assert (f.severity, f.observed["visible"]) == ("fail", [0])
    assert "entry '9' matches no GPU" in f.message
    rig.software.env["CUDA_VISIBLE_DEVICES"] = ""
    f = one("GA501", rig)
    assert (f.severity, f.gpus) == ("fail", list(range(8)))


def test_ga501_uuid_entries_and_all_gpus_visible():
    rig = healthy()
    rig.software.env["CUDA_VISIBLE_DEVICES"] = ",".join(g.uuid[:12] for g in rig.gpus[::-1])
    assert len({g.uuid[:12] for g in rig.gpus}) == 1  # simulated UUIDs share a prefix: ambiguous
    assert one("GA501", rig).severity == "fail"
    rig.software.env["CUDA_VISIBLE_DEVICES"] = ",".join(g.uuid for g in rig.gpus[::-1])
    assert run("GA501", rig) == []


def test_ga502_torch_newer_than_driver():
    rig = healthy()  # driver supports CUDA 12.7
    rig.software.torch_cuda_version = "12.8"
    f = one("GA502", rig)
    assert (f.severity, f.observed) == ("warn", {"torch_cuda_version": "12.8"})
    rig.software.torch_cuda_version = "13.0"
    f = one("GA502", rig)
    assert f.severity == "fail" and "torch cannot use the GPUs" in f.message
    rig.software.torch_cuda_version = "12.7"
    assert run("GA502", rig) == []


def test_ga502_not_checked_without_torch(preset):
    out = run("GA502", preset("dgx-h100"))
    assert [(f.severity, f.message) for f in out] == [
        ("not-checked", "torch version: not present in the source this scan was made from (simulated rig)")
    ]


def test_ga506_cpu_only_torch():
    rig = healthy()
    rig.software.torch_cuda_version = None
    f = one("GA506", rig)
    assert (f.severity, f.gpus, f.observed) == (
        "fail",
        list(range(8)),
        {"torch_version": "2.13.0", "torch_cuda_version": None},
    )
    assert run("GA502", rig) == []


def test_ga507_driver_unreachable_from_nvml_and_from_nvidia_smi():
    """NVML's NVML_ERROR_LIB_RM_VERSION_MISMATCH (18, nvml.h) on a live scan, and nvidia-smi's message as pasted
    in a public CI log (https://github.com/intel/llvm/issues/17614), both fail the node with the reload fix."""
    import pynvml

    from gpuadvisor import facts
    from gpuadvisor.importers import import_texts
    from probes.nvml import Nvml

    class Lib:
        def nvmlInit(self):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH)

    nv = Nvml(Lib())
    assert nv.init() == facts.DRIVER_MISMATCH
    rig = healthy()
    rig.software.driver_version = None
    rig.software.missing("driver_version", nv.init_error)
    f = one("GA507", rig)
    assert (f.severity, f.subject) == ("fail", "software") and "reload the nvidia kernel modules" in f.fix
    pasted = import_texts(
        [("ci.log", "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.144\n")]
    )
    f = one("GA507", pasted)
    assert f.observed == {"nvml_version": "550.144", "driver_version": None}
    assert f.expected == {"driver_version": "550.144"}
    gone = import_texts(
        [
            (
                "smi.txt",
                "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
                "latest NVIDIA driver is installed and running.\n",
            )
        ]
    )
    assert one("GA507", gone).message.startswith(facts.DRIVER_UNREACHABLE)
    assert run("GA507", healthy()) == []


def test_ga503_p2p_disabled_on_nvlink_is_a_fault():
    rig = healthy()
    rig.software.env["NCCL_P2P_DISABLE"] = "1"
    f = one("GA503", rig)
    assert (f.severity, len(f.observed["nvlink_pairs"]), f.observed["env"]) == ("fail", 28, "NCCL_P2P_DISABLE=1")


def test_ga503_p2p_level_loc_on_pcie_p2p_is_a_warning():
    rig = _no_nvlink(healthy())
    rig.software.env["NCCL_P2P_LEVEL"] = "LOC"
    f = one("GA503", rig)
    assert (f.severity, len(f.observed["p2p_pairs"]), f.observed["nvlink_pairs"]) == ("warn", 28, [])


def test_ga503_sxm_modules_without_a_topology_count_as_nvlinked():
    """A debug log of four A100-SXM4-40GB with NCCL_P2P_LEVEL=LOC and no topology shown: SXM modules mount only on
    NVLink baseboards (HGX), so every pair has NVLink; PCIe cards with no topology stay not checked."""
    from gpuadvisor.facts import Gpu, Rig

    rig = Rig(gpus=[Gpu(index=i, name="A100-SXM4-40GB") for i in range(4)])
    rig.software.env["NCCL_P2P_LEVEL"] = "LOC"
    f = one("GA503", rig)
    assert (f.severity, len(f.observed["nvlink_pairs"])) == ("fail", 6)
    for g in rig.gpus:
        g.name = "NVIDIA A100 80GB PCIe"
    assert [x.severity for x in run("GA503", rig)] == ["not-checked"]


def test_ga503_quiet_where_p2p_is_not_supported(preset):
    rig = preset("4x4090-pcie")
    rig.software.env["NCCL_P2P_DISABLE"] = "1"
    assert run("GA503", rig) == []


def test_ga504_ib_disabled_with_adapters(preset):
    rig = healthy()
    rig.software.env["NCCL_IB_DISABLE"] = "1"
    f = one("GA504", rig)
    assert f.severity == "warn" and f.observed["nics"] == [f"mlx5_{i}" for i in range(8)]
    rig4 = preset("4x4090-pcie")
    rig4.software.env["NCCL_IB_DISABLE"] = "1"
    assert run("GA504", rig4) == []


@pytest.mark.parametrize(
    ("value", "severity"),
    [
        ("eth1", "fail"),
        ("=eth", "fail"),
        ("=lo", "warn"),
        ("^eth,ib", "warn"),
        ("eth", None),
        ("^docker,lo", None),
        ("=ib0", None),
    ],
)
def test_ga505_socket_ifname(value, severity):
    rig = healthy()  # interfaces: lo, eth0, ib0, docker0
    rig.software.env["NCCL_SOCKET_IFNAME"] = value
    out = run("GA505", rig)
    assert [f.severity for f in out] == ([severity] if severity else [])


def test_ga505_not_checked_without_interfaces():
    rig = healthy()
    rig.host.net_interfaces = None
    rig.software.env["NCCL_SOCKET_IFNAME"] = "eth0"
    assert [(f.severity, f.message) for f in run("GA505", rig)] == [
        ("not-checked", "host network interfaces not recorded in this scan")
    ]


# -- GA6xx bandwidth ---------------------------------------------------------------------------------------


def _m(rig: Rig, kind: str, gpus: list[int]) -> Measurement:
    return next(m for m in rig.measurements if m.kind == kind and m.gpus == gpus and m.p2p_enabled is not False)


def _busbw(m: Measurement, gbps: float) -> None:
    """A collective whose whole plateau (every row of its sweep) measured ``gbps``: GA602 judges the plateau."""
    m.value_gbps = gbps
    for r in m.rows:
        r.busbw_gbps = gbps


def test_ga601_h2d_far_below_the_link_fails():
    rig = healthy()
    _m(rig, "h2d", [3]).value_gbps = 30.0
    f = one("GA601", rig)
    assert (f.severity, f.gpus) == ("fail", [3])
    assert f.observed == {"kind": "h2d", "value_gbps": 30.0, "memory": "pinned", "world_size": None}
    assert f.expected == {"links_gbps": 53.56, "ratio_to_links": 0.56, "reference_floor_gbps": 52.0}
    assert "Azure" in f.expected_source


def test_ga601_below_the_published_floor_warns_even_when_the_link_ratio_is_fine():
    rig = healthy()
    _m(rig, "d2h", [1]).value_gbps = 50.0  # 93% of the link figure, below Azure's 52 GB/s floor
    f = one("GA601", rig)
    assert (f.severity, f.gpus, f.expected["ratio_to_links"]) == ("warn", [1], 0.934)
    assert "below the 52 GB/s a production health check requires" in f.message


def test_ga601_pageable_copies_are_not_judged():
    rig = healthy()
    m = _m(rig, "h2d", [3])
    m.memory, m.value_gbps = "pageable", 9.0
    assert run("GA601", rig) == []


def test_ga602_all_reduce_against_links_and_reference():
    rig = healthy()
    ar = _m(rig, "all_reduce", list(range(8)))
    _busbw(ar, 340.0)  # 92% of 450 x 0.82, 92% of the 370 GB/s reference
    assert run("GA602", rig) == []
    _busbw(ar, 320.0)
    f = one("GA602", rig)
    assert (f.severity, f.gpus) == ("warn", list(range(8)))
    assert f.expected == {"links_gbps": 369.0, "ratio_to_links": 0.867, "reference_typical_gbps": 370.0}
    _busbw(ar, 250.0)
    assert one("GA602", rig).severity == "fail"


def test_ga602_not_checked_without_expectation_or_reference():
    rig = healthy()
    ar = _m(rig, "all_reduce", list(range(8)))
    ar.expected_gbps, ar.gpus, ar.world_size, ar.backend = None, [0, 1], 2, "gloo"
    ar.unavailable["expected_gbps"] = "gloo on CPUs: loopback and shared-memory bandwidth are not in the link facts"
    out = run("GA602", rig)
    assert [f.severity for f in out] == ["not-checked"] and "gloo on CPUs" in out[0].message


def test_imported_measurements_without_expected_figure_use_the_link_facts():
    rig = healthy()
    ar = _m(rig, "all_reduce", list(range(8)))
    ar.expected_gbps, ar.expected_source, ar.provenance = None, None, "imported"
    _busbw(ar, 250.0)
    f = one("GA602", rig)
    assert (f.severity, f.expected) == (
        "fail",
        {"links_gbps": 369.0, "ratio_to_links": 0.678, "reference_typical_gbps": 370.0},
    )
    # the fallback is the benchmarker's own expected_bandwidth(), so it words the figure as a measurement would
    assert f.expected_source.startswith("GPU 0: 18 active NVLink 4 links × 25 GB/s per direction")
    h2d = _m(rig, "h2d", [2])
    h2d.expected_gbps, h2d.value_gbps = None, 40.0
    f = one("GA601", rig)
    assert (f.gpus, f.expected["links_gbps"], f.expected["ratio_to_links"]) == ([2], 53.56, 0.747)


def test_ga603_p2p_pair_slow():
    rig = healthy()
    _m(rig, "p2p_unidir", [0, 1]).value_gbps = 200.0
    f = one("GA603", rig)
    assert (f.severity, f.gpus, f.expected["ratio_to_links"]) == ("fail", [0, 1], 0.542)


def test_ga604_straggler():
    rig = healthy()
    _m(rig, "h2d", [5]).value_gbps = 45.0
    f = one("GA604", rig)
    assert (f.severity, f.gpus) == ("warn", [5])
    assert f.observed == {"kind": "h2d", "value_gbps": 45.0} and f.expected == {
        "peer_median_gbps": 55.3,
        "ratio_min": 0.9,
    }


def test_ga605_wrong_result():
    rig = healthy()
    _m(rig, "all_reduce", list(range(8))).rows[0].correct = False
    _m(rig, "all_reduce", list(range(8))).rows[0].errors = 12
    f = one("GA605", rig)
    assert (f.severity, f.observed) == ("fail", {"kind": "all_reduce", "wrong_sizes": [1 << 32], "wrong_elements": 12})


def test_ga606_failed_benchmark():
    rig = healthy()
    rig.measurements.append(
        Measurement(
            kind="all_gather",
            backend="nccl",
            gpus=list(range(8)),
            status="timeout",
            error="worker 3 hung past the 120 s budget",
        )
    )
    f = one("GA606", rig)
    assert (f.severity, f.observed) == (
        "warn",
        {"kind": "all_gather", "status": "timeout", "error": "worker 3 hung past the 120 s budget"},
    )


def test_ga607_compute_below_peak():
    rig = healthy()
    m = next(m for m in rig.measurements if m.kind == "matmul" and m.gpus == [5])
    m.value_tflops, m.ratio = 395.0, round(395.0 / 989.4, 4)
    rig.gpus[5].clocks_event_reasons = ["hw_thermal_slowdown"]
    f = one("GA607", rig)
    assert (f.severity, f.gpus) == ("warn", [5])
    assert f.message.startswith(
        "GPU 5 runs far below its datasheet peak: bf16 matmul 8192x8192x8192 395.0 TFLOP/s = "
        "40% of the 989.4 dense peak. Cause: clocks held down by "
        "hw_thermal_slowdown (read at scan time)"
    )


@pytest.mark.parametrize("code", ["GA601", "GA602", "GA603", "GA604", "GA605", "GA606"])
def test_bandwidth_rules_not_checked_without_measurements(code, preset):
    out = run(code, preset("dgx-h100"))
    assert [(f.severity, f.message) for f in out] == [
        ("not-checked", "no bandwidth measurements in this scan (run gpuadvisor bench, or gpuadvisor scan --bench)")
    ]


def test_every_rule_has_a_firing_test_here():
    import re
    from pathlib import Path

    text = Path(__file__).read_text() + (Path(__file__).parent / "test_beyond_rules.py").read_text()
    tested = set(re.findall(r'"(GA\d{3})"', text))
    assert {r.code for r in all_rules()} <= tested


def test_rules_whose_kind_was_not_measured_say_so():
    rig = healthy()
    rig.measurements = [m for m in rig.measurements if m.kind == "all_reduce"]
    msgs = {c: [(f.severity, f.message) for f in run(c, rig)] for c in ("GA601", "GA603", "GA604")}
    assert msgs == {
        "GA601": [
            (
                "not-checked",
                "no pinned host<->device copy measured in this scan (gpuadvisor bench on a GPU measures them)",
            )
        ],
        "GA603": [("not-checked", "no peer-to-peer copy with P2P enabled measured in this scan (needs 2+ GPUs)")],
        "GA604": [
            (
                "not-checked",
                "no per-GPU measurement on two or more GPUs to compare (gpuadvisor bench on a multi-GPU rig)",
            )
        ],
    }


def test_ga205_not_checked_without_counters():
    rig = healthy()
    for n in rig.gpus[3].nvlinks:
        n.errors = {}
    assert [(f.severity, f.gpus, f.message) for f in run("GA205", rig)] == [
        ("not-checked", [3], "NVLink error counters not recorded in this scan")
    ]


def test_ga602_pcie_without_p2p_is_judged_against_what_nccl_reaches_there(preset):
    """4x RTX 4090, no P2P: the line rate (31.5 GB/s, Gen4 x16 at max) x 0.78 NCCL on PCIe x 0.5 staged through
    host memory = 12.3 GB/s: a plausible 11.5 GB/s passes, 6 GB/s fails (the advisor predicts with the same figures)."""
    from gpuadvisor.advisor import Workload, advise
    from gpuadvisor.facts import Measurement, SweepRow
    from gpuadvisor.physics.expected import expected_bandwidth

    rig = preset("4x4090-pcie")
    e = expected_bandwidth(rig, "all_reduce", [0, 1, 2, 3], backend="nccl", world_size=4)
    m = Measurement(
        kind="all_reduce",
        backend="nccl",
        world_size=4,
        gpus=[0, 1, 2, 3],
        value_gbps=11.5,
        expected_gbps=e.gbps,
        expected_source=e.source,
        rows=[SweepRow(size_bytes=2**29, busbw_gbps=11.5), SweepRow(size_bytes=2**30, busbw_gbps=11.5)],
    )
    rig.measurements = [m]
    assert [f for f in run("GA602", rig) if f.severity in ("warn", "fail")] == []
    _busbw(m, 6.0)
    f = one("GA602", rig)
    assert f.severity == "fail" and f.expected["links_gbps"] == pytest.approx(31.504 * 0.78 * 0.5, abs=0.01)
    assert "without peer-to-peer" in f.expected_source
    # The advisor's prediction for the same rig, from the same constants, on its narrowest (x8) link:
    rig.measurements = []
    advice = advise(rig, Workload.from_options(model="gpt2")).to_dict()
    assert advice["rig"]["busbw_gbps"] == pytest.approx(1.969 * 8 * 0.78 * 0.5, rel=1e-3)


def test_ga105_aer_errors_on_the_gpu_and_on_a_switch_uplink():
    rig = healthy()
    assert run("GA105", rig) == []  # the simulator's AER totals are 0 on every hop
    switch_uplink = rig.gpus[3].pcie.path[2]
    assert switch_uplink.port_type == "upstream-port"
    switch_uplink.aer_correctable = 81
    f = one("GA105", rig)
    assert (f.severity, f.gpus, f.observed["bdf"], f.observed["aer_correctable"]) == (
        "warn",
        [3],
        switch_uplink.bdf,
        81,
    )
    assert f.expected == {"aer_correctable_max": 80}
    assert run("GA105", rig, pcie_aer_correctable_max=100) == []
    rig.gpus[6].pcie.path[0].aer_nonfatal = 2
    out = sorted(run("GA105", rig), key=lambda f: f.gpus)
    assert [(f.severity, f.gpus) for f in out] == [("warn", [3]), ("fail", [6])]
    assert "2 non-fatal and 0 fatal uncorrectable" in out[1].message


def test_ga105_not_checked_without_aer_counters(fixtures_dir):
    rig = facts.load(fixtures_dir / "h100-vm" / "scan-v2-bench.json")  # that VM's kernel exposes no AER files
    (f,) = run("GA105", rig)
    assert f.severity == "not-checked" and "no AER counters in sysfs" in f.message


# -- GA9xx: the data path (more cases in test_storage_rules.py) -------------------------------------------


def test_storage_rules_fire(tmp_path):
    from gpuadvisor.probes.storage import probe_storage

    from gpuadvisor.advisor.checkpoint import plan_checkpoint
    from tests.test_storage_probe import build_tree, fake_statvfs

    rig = healthy()
    rig.storage = probe_storage(
        [("/", "working"), ("/mnt/nfs/x", "data"), ("/ckpt", "checkpoint")],
        root=build_tree(tmp_path),
        statvfs=fake_statvfs,
    )
    rig.storage.memory_available_bytes = 10**12  # below 2 x 8 x 80 GiB
    rig.storage.paths[1].bench = facts.StorageBench(seq_read_gbps=0.0001, method="fio-3.33")
    rig.storage.paths[2].bench = facts.StorageBench(seq_write_gbps=0.5, method="fio-3.33")
    rig.advice = {
        "task": "train",
        "workload": {"params": 7 * 10**9, "nodes": 1, "seq_len": 4096},
        "pick_detail": {"framework": "PyTorch FSDP", "zero_stage": 3, "tokens_per_second": 50_000.0},
    }
    rig.advice["checkpoint"] = plan_checkpoint(rig, rig.advice, "30m").to_dict()
    assert one("GA901", rig).subject == "nvme0n1 0000:01:00.0"
    assert one("GA902", rig).subject == "data dir /mnt/nfs/x"
    assert one("GA903", rig).observed == {"read_gbps": 0.0001}
    assert one("GA904", rig).expected == {"free_bytes": 2 * 7 * 10**9 * 12}
    assert one("GA905", rig).severity == "info"
    assert one("GA906", rig).observed == {"stall_fraction": round(168 / 1968, 4)}  # 84e9 B at 0.5 GB/s


def test_ga907_nvme_behind_a_gpu_switch(tmp_path):
    from gpuadvisor.probes.storage import probe_storage

    from tests.test_storage_probe import build_tree, fake_statvfs

    rig = healthy()
    root = build_tree(tmp_path)
    rig.storage = probe_storage([("/", "working")], root=root, statvfs=fake_statvfs)
    drive = rig.storage.paths[0].devices[0]
    assert run("GA907", rig) == []  # nvme0 hangs off its own root port
    # Put the drive behind GPU 0's switch: its path = drive, the switch's downstream and upstream ports, root port.
    gpu_path = rig.gpus[0].pcie.path
    usp = next(i for i, h in enumerate(gpu_path) if h.port_type == "upstream-port")
    drive.pcie_path = [drive.pcie_path[0], *gpu_path[usp - 1 :]]
    f = one("GA907", rig)
    assert f.observed["switch"] == gpu_path[usp].bdf and 0 in f.gpus
