"""GA820: an RmInitAdapter failure after the driver's own install problem is that problem's consequence (one finding,
fix the driver, not the hardware); without such a cause it stays the drain/reboot/reseat/RMA advice.

Logs: tests/fixtures/lost-cause/SOURCES.md (public issue threads); single lines: the threads cited beside them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from gpuadvisor.probes.kmsg_signs import classify

from gpuadvisor.facts import KernelEvent, Rig
from gpuadvisor.rules import evaluate
from tests.corpus_cases import run_import

HERE = Path(__file__).parent / "fixtures" / "lost-cause"


def _ga820(name: str) -> list[dict]:
    rc, scan = run_import([HERE / name])
    assert rc == 0 and scan is not None
    return [f for f in scan["findings"] if f["code"] == "GA820"]


def test_rminitadapter_after_the_module_refused_the_gpu_is_one_fix_config_finding():
    # open-gpu-kernel-modules#1332: the proprietary module refuses a GB206M, then RmInitAdapter fails on it
    (f,) = _ga820("proprietary-module-refuses-gb206m-then-rminitadapter-cut_yuanyuyuan.txt")
    assert f["severity"] == "fail"
    assert f["subject"] == "GPU 0000:01:00.0"
    assert f["expected"] == {"action": "fix-config"}
    assert f["observed"]["sign"] == "gpu-unsupported"
    assert "open kernel modules" in f["observed"]["evidence"]
    assert "RmInitAdapter failed! (0x22:0x56:1050)" in f["message"] and "consequence" in f["message"]
    assert "not a hardware fault" in f["fix"] and "RMA" not in f["fix"].replace("no RMA", "")


def test_rminitadapter_with_no_cause_in_the_log_stays_reboot_reseat_rma():
    # system76/firmware-open#528: RmInitAdapter failed three times, the log names no driver problem
    (f,) = _ga820("dmesg-rminitadapter-0x25-after-bios-update-no-driver-cause-cut_alexispurslane.txt")
    assert (f["severity"], f["subject"], f["expected"]) == ("fail", "GPU 0000:01:00.0", {"action": "reboot"})
    assert f["observed"]["count"] == 3
    assert "reseat it and open an RMA" in f["fix"]


@pytest.mark.parametrize(
    ("line", "bus", "says"),
    [
        # open-gpu-kernel-modules#263 (515.43.04, the open module without its firmware file)
        (
            "[ 1637.847759] nvidia 0000:01:00.0: Direct firmware load for nvidia/515.43.04/gsp.bin failed with "
            "error -2",
            "0000:01:00.0",
            "GSP firmware file",
        ),
        # open-gpu-kernel-modules#639 (title: 550.76 on an RTX 4090)
        (
            "nvidia 0000:01:00.0: Direct firmware load for nvidia/550.76/gsp_ga10x.bin failed with error -2",
            "0000:01:00.0",
            "GSP firmware file",
        ),
        # stackhpc/ansible-slurm-appliance#287 (syslog joins the NVRM lines with #012)
        (
            "Jun 30 11:07:05 gpu-0 kernel: NVRM: API mismatch: the client has the version 535.54.03, but#012NVRM: "
            "this kernel module has the version 530.30.02.  Please#012NVRM: make sure that this kernel module",
            None,
            "API mismatch",
        ),
    ],
)
def test_the_drivers_install_problems_are_read_as_a_cause(line, bus, says):
    kind, got_bus, message = classify(line)
    assert (kind, got_bus) == ("driver-install", bus)
    assert says in message


def test_module_signature_taint_is_no_cause():
    # printed on every DKMS install (kernel/module/signing.c): the module still loads
    assert (
        classify(
            "[    3.1] nvidia: module verification failed: signature and/or required key missing - tainting kernel"
        )
        is None
    )


def test_a_cause_after_the_failure_does_not_explain_it():
    # the lines of open-gpu-kernel-modules#263 (cause) and #1332 (consequence), in both orders: the install problem
    # explains only the failures logged after it
    cause = KernelEvent(kind="driver-install", code=0, bus_id="0000:01:00.0", line=1, text="Direct firmware load ...")
    init = KernelEvent(kind="gpu-init-failed", code=0, bus_id="0000:01:00.0", line=2, text="RmInitAdapter failed!")
    for events, signs in (([cause, init], ["driver-install"]), ([replace(init, line=0), cause], None)):
        rig = Rig()
        rig.kernel.events = events
        found = [f for f in evaluate(rig) if f.code == "GA820"]
        if signs:
            assert [f.observed["sign"] for f in found] == signs
            assert found[0].severity == "fail" and found[0].expected == {"action": "fix-config"}
            assert "reinstall the driver" in found[0].fix and "not a hardware fault" in found[0].fix
        else:  # the failure came first: two findings, the failure keeps its reboot/RMA advice
            assert sorted(f.observed["sign"] for f in found) == ["driver-install", "gpu-init-failed"]
            assert next(f for f in found if f.observed["sign"] == "driver-install").severity == "warn"


CDGRAFF = (
    Path(__file__).parent / "corpus" / "s9-logs" / "dmesg-xid31-ce-then-xid62-halt-then-xid45-storm-cut_cdgraff.txt"
)


def _xid45_fix(path: Path) -> str:
    rc, scan = run_import([path])
    assert rc == 0 and scan is not None
    (f,) = [f for f in scan["findings"] if f["code"] == "GA801" and f["observed"]["xid"] == 45]
    assert f["severity"] == "info"
    return f["fix"]


def test_xid45_beside_other_xids_of_its_gpu_follows_them():
    # madMAx43v3r/chia-gigahorse#301: Xid 31, then 62 (halt), then a storm of 45 on 0000:0a:00
    assert "not solo (Xid 31, Xid 62 on this GPU too): follow that one" in _xid45_fix(CDGRAFF)


def test_xid45_alone_is_an_aborted_jobs_cleanup(tmp_path):
    # one line of the same log, alone (the catalog's "Solo"); NVIDIA's Xid guide: Ctrl-C, SIGKILL, a GPU reset
    alone = tmp_path / "dmesg.txt"
    alone.write_text(next(x for x in CDGRAFF.read_text().splitlines(keepends=True) if "): 45, " in x))
    fix = _xid45_fix(alone)
    assert "solo (no other Xid on this GPU in this log): the cleanup of an aborted job" in fix
    assert "restart the fabric manager" in fix


def test_a_gsp_boot_failure_without_a_bus_after_a_missing_firmware_file_is_its_consequence():
    # the firmware line of open-gpu-kernel-modules#263 (on 0000:01:00.0), then the driver's own lines without a bus
    # id (its "RmInitAdapter: Cannot initialize GSP firmware RM", as #116 quotes it) and the RmInitAdapter failure
    lines = [
        "[ 1637.847759] nvidia 0000:01:00.0: Direct firmware load for nvidia/515.43.04/gsp.bin failed with error -2",
        "[    3.596583] NVRM RmInitAdapter: Cannot initialize GSP firmware RM",
        "[    3.596745] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x63:0x56:1689)",
    ]
    rig = Rig()
    rig.kernel.events = [e for n, x in enumerate(lines, 1) if (e := _event(x, n))]
    (f,) = [f for f in evaluate(rig) if f.code == "GA820"]
    assert (f.observed["sign"], f.severity, f.expected) == ("driver-install", "fail", {"action": "fix-config"})
    assert f.subject == "GPU 0000:01:00.0" and f.observed["count"] == 1
    assert "then 2 GPU failure line(s), its consequence (line 2: RmInitAdapter: Cannot initialize GSP" in f.message


def _event(line: str, n: int) -> KernelEvent | None:
    got = classify(line)
    return None if got is None else KernelEvent(kind=got[0], code=0, bus_id=got[1], text=got[2], line=n)
