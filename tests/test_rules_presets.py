"""The rules on whole rigs: the simulated presets and the real H100 scan committed as a fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor import facts
from gpuadvisor.rules import evaluate, verdict

HEALTHY = ["dgx-h100", "dgx-a100", "h100-pcie", "dgx2-v100"]


def _serious(findings) -> set[tuple[str, tuple[int, ...]]]:
    return {(f.code, tuple(f.gpus)) for f in findings if f.severity in ("warn", "fail", "error")}


def test_4x4090_yields_exactly_the_expected_findings(preset):
    rig = preset("4x4090-pcie")
    findings = evaluate(rig)
    assert _serious(findings) == {
        ("GA101", (2,)),  # GPU 2 trained at x8 where card and slot support x16
        ("GA203", (0, 1, 2, 3)),  # four GPUs, no NVLink
        ("GA206", (0, 1, 2, 3)),  # GeForce: P2P not supported between any pair
    }
    by_code = {f.code: f for f in findings}
    assert by_code["GA101"].severity == "fail"
    assert by_code["GA101"].message.startswith("GPU 2 0000:41:00.0 runs at x8 where its slot and card support x16")
    assert by_code["GA203"].severity == by_code["GA206"].severity == "warn"
    assert by_code["GA202"].severity == "info"  # each GPU on its own root port: NODE between all pairs
    assert findings[0].code == "GA101"  # worst first
    assert verdict(findings) == ("failing", {"fail": 1, "error": 0, "warn": 2, "info": 1, "not-checked": 15})
    assert rig.findings == findings


def test_healthy_dgx_h100_has_no_warning_or_failure(preset):
    rig = preset("dgx-h100")
    findings = evaluate(rig)
    assert _serious(findings) == set()
    assert {f.severity for f in findings} == {"not-checked"}
    assert {f.code for f in findings} == {
        "GA405",
        "GA502",
        "GA601",
        "GA602",
        "GA603",
        "GA604",
        "GA605",
        "GA606",
        "GA607",
    }
    assert verdict(findings)[0] == "healthy"


def test_2x3090_on_a_5950x_runs_both_cards_at_x8(preset):
    """AM4 gives the graphics slots 16 CPU lanes: two cards run x8/x8. Not a fault (GA101 stays quiet: x8 is the
    slot's maximum), but half the host bandwidth of an x16 card: GA103 says so for each."""
    rig = preset("2x3090-nvlink")
    findings = evaluate(rig)
    assert _serious(findings) == {("GA103", (0,)), ("GA103", (1,))}
    assert [(g.pcie.current_width, g.pcie.max_width) for g in rig.gpus] == [(8, 16), (8, 16)]
    assert [g.pcie.path[-1].max_width for g in rig.gpus] == [8, 8]  # the root ports: x8 each


@pytest.mark.parametrize("name", HEALTHY)
def test_healthy_presets_have_no_warning_or_failure(preset, name):
    assert _serious(evaluate(preset(name))) == set()


def test_real_h100_scan_fixture(fixtures_dir):
    rig = facts.load(fixtures_dir / "h100-vm" / "scan-live.json")
    findings = evaluate(rig)
    assert _serious(findings) == set()
    info = [(f.code, f.gpus, f.observed) for f in findings if f.severity == "info"]
    # 135.1 GB of RAM (the VM's 125.9 GiB) for one 80 GB H100: below the 2x-GPU-memory guideline only
    assert info == [("GA402", [0], {"memory_total_gb": 135.1, "gpu_memory_total_gb": 85.5})]


def test_findings_survive_the_json_round_trip(preset):
    rig = preset("4x4090-pcie")
    findings = evaluate(rig)
    back = facts.from_dict(__import__("json").loads(rig.to_json()))
    assert [(f.code, f.severity, f.gpus, f.message) for f in back.findings] == [
        (f.code, f.severity, f.gpus, f.message) for f in findings
    ]
    assert back.findings[0].observed == {"current_link_width": 8}


# -- real outputs of real machines (shared/samples, copied to tests/fixtures/import/samples) ---------------

SAMPLES = Path(__file__).parent / "fixtures" / "import" / "samples"


def _imported(*names: str):
    from gpuadvisor.importers import import_files

    return import_files([SAMPLES / n for n in names])


def test_real_a100_node_with_a_pending_row_remap():
    rig = _imported("smi-q_a100sxmx4_thamada.txt")  # nvidia-smi -q of 4x A100 SXM; GPU 1 shows "Pending: Yes"
    findings = evaluate(rig)
    assert _serious(findings) == {("GA306", (1,))}
    f = next(f for f in findings if f.code == "GA306")
    assert (f.severity, f.subject) == ("warn", "GPU 1 0000:9e:00.0")


def test_real_8x4090_two_socket_topology():
    rig = _imported("topo-m_8x4090-pcie-2socket_lukolszewski.txt")
    by_code = {f.code: f for f in evaluate(rig) if f.severity in ("warn", "fail", "info")}
    assert sorted(by_code) == ["GA201", "GA202", "GA203"]
    assert by_code["GA201"].observed == {
        "SYS": ["0-6", "0-7", "1-6", "1-7", "2-6", "2-7", "3-6", "3-7", "4-6", "4-7", "5-6", "5-7"]
    }
    assert by_code["GA203"].observed == {"gpus": 8, "nvlink_pairs": 0}


def test_real_gpu_trained_at_gen1_is_info_without_load_evidence():
    rig = _imported("lspci-vvv_rtx6000ada-downgraded-2.5gts_stelline-asus.txt")  # LnkSta 2.5GT/s, LnkCap 16GT/s
    findings = [f for f in evaluate(rig) if f.severity != "not-checked"]
    assert [(f.code, f.severity, f.observed["current_link_gen"], f.expected) for f in findings] == [
        ("GA102", "info", 1, {"max_link_gen": 4})
    ]
