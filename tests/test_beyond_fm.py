"""The fabric manager judged by what the box is: NV_WARN_NOTHING_TO_DO on a box without NVSwitch is info, a
failed fabric manager on an NVSwitch box fails, an Unhealthy fabric health fails. Real logs with an engineer's
conclusion written by hand (tests/fixtures/beyond/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor.importers import import_files
from gpuadvisor.importers.beyond import smi_fabric
from gpuadvisor.rules import evaluate

BEYOND = Path(__file__).resolve().parent / "fixtures" / "beyond"


def _ga809(*names: str):
    rig = import_files([BEYOND / n for n in names])
    return rig, [f for f in evaluate(rig) if f.code == "GA809" and f.severity != "not-checked"]


@pytest.mark.parametrize("name", ["fm-nothing-to-do-2xa40-zh-month.txt", "fm-nothing-to-do-2x4090-start-sh.txt"])
def test_nothing_to_do_on_a_box_without_nvswitch_is_info_not_a_failure(name):
    rig, (f,) = _ga809(name)
    assert rig.fabric.manager_state == "failed" and rig.fabric.nvswitches is False
    assert (f.severity, f.subject) == ("info", "host")
    assert "NV_WARN_NOTHING_TO_DO" in f.message


def test_a_failed_restart_on_an_nvswitch_box_fails():
    rig, (f,) = _ga809("fm-restart-failed-8xh20.txt")
    assert (rig.fabric.manager_state, rig.fabric.nvswitches) == ("failed", True)
    assert (f.severity, f.message) == ("fail", "nvidia-fabricmanager is failed on an NVSwitch system")


def test_an_unhealthy_fabric_health_summary_is_read_and_fails():
    # the Health sub-block's layout as nvidia-smi 570+ prints it (tests/fixtures/beyond/smi-fabric-h100-na.txt),
    # with the Summary value nvidia-smi's documentation lists for a fabric fault
    text = (BEYOND / "smi-fabric-h100-na.txt").read_text()
    text = text.replace("State                                          : N/A", "State : Completed", 1)
    text = text.replace("Summary                                    : N/A", "Summary : Unhealthy", 1)
    (g,) = smi_fabric(text, bare=True)
    assert (g.state, g.health_summary) == ("completed", "Unhealthy")


def test_ga809_fails_a_gpu_whose_fabric_health_is_unhealthy(preset):
    from gpuadvisor.facts import GpuFabric

    rig = preset("dgx-h100")
    rig.fabric.gpus = [GpuFabric(gpu_index=i, state="completed", status="success") for i in range(8)]
    rig.fabric.gpus[6].health_summary = "Unhealthy"
    (f,) = [f for f in evaluate(rig) if f.code == "GA809"]
    assert (f.severity, f.gpus, f.observed["fabric_health_summary"]) == ("fail", [6], "Unhealthy")


@pytest.mark.parametrize(("name", "severity"), [("4x4090-pcie", "info"), ("h100-pcie", "info"), ("dgx-h100", "fail")])
def test_a_failed_fabric_manager_is_judged_by_the_gpus_when_their_nvlinks_are_not_read(preset, name, severity):
    # the fabric manager guide: NVSwitch systems (HGX/DGX) carry SXM modules; PCIe cards never sit on an NVSwitch
    rig = preset(name)
    for g in rig.gpus:
        g.nvlinks = []  # a paste of nvidia-smi alone: the links are not shown
    rig.fabric.manager_state, rig.fabric.nvswitches, rig.fabric.gpus = "failed", None, None
    (f,) = [f for f in evaluate(rig) if f.code == "GA809"]
    assert f.severity == severity


def test_a_cut_geforce_name_or_a_small_memory_is_no_nvswitch_module(preset):
    rig = preset("dgx-h100")
    for g in rig.gpus:
        g.nvlinks, g.name, g.memory_total_bytes = [], None, 4096 * 2**20  # "NVIDIA GeForce ..." with 4096MiB
    rig.fabric.manager_state, rig.fabric.nvswitches, rig.fabric.gpus = "failed", None, None
    (f,) = [f for f in evaluate(rig) if f.code == "GA809"]
    assert f.severity == "info"


def test_an_nvswitch_error_in_the_fabric_manager_log_is_an_sxid_graded_by_its_fatality(tmp_path):
    # the line's form as the fabric manager logs it (the gpud project's recorded fabricmanager.log, in
    # tests/corpus/fabric); the fatal one written by hand in that form, with an SXid the guide lists as fatal
    line = (
        "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch {} error {} on fid 0 on NVSwitch pci bus id "
        "00000000:86:00.0 physical id 3 port 61\n"
    )
    for fatality, code, severity in (("non-fatal", 12028, "info"), ("fatal", 20034, "fail")):
        path = tmp_path / "fabricmanager.log"
        path.write_text(line.format(fatality, code))
        rig = import_files([path])
        (ev,) = rig.kernel.events or []
        assert (ev.kind, ev.code, ev.bus_id, ev.time) == ("sxid", code, "0000:86:00.0", "Feb 27 2025 15:10:02")
        (f,) = [f for f in evaluate(rig) if f.code == "GA802"]
        assert (f.severity, f.subject) == (severity, "NVSwitch 0000:86:00.0") and "link 61" in f.message
