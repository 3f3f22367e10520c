"""A lost or wedged GPU without an Xid line, PCIe AER errors in the kernel log, and the gate on them: each real
public log (tests/fixtures/beyond/SOURCES.md) with the conclusion an engineer draws from it, written by hand:
severity, device and the class of action."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor.importers import import_files
from gpuadvisor.rules import evaluate

BEYOND = Path(__file__).resolve().parent / "fixtures" / "beyond"


def _judged(name: str):
    rig = import_files([BEYOND / name])
    return [f for f in evaluate(rig) if f.severity not in ("not-checked",)]


@pytest.mark.parametrize(
    ("name", "code", "severity", "subject", "action"),
    [
        ("syslog-rminitadapter-failed-0a00.txt", "GA820", "fail", "GPU 0000:0a:00.0", "reboot"),
        ("dmesg-rminitadapter-gsp-3090.txt", "GA820", "fail", "GPU 0000:98:00.0", "reboot"),
        ("journal-gsp-heartbeat-no-xid.txt", "GA820", "fail", "GPU0 (the driver's numbering; no bus id on the line)",
         "reset"),
    ],
)  # fmt: skip
def test_a_gpu_lost_without_an_xid_fails_with_its_device_and_action(name, code, severity, subject, action):
    (f,) = _judged(name)
    assert (f.code, f.severity, f.subject, f.expected["action"]) == (code, severity, subject, action)
    assert f.observed["first_line"] in (1, 2, 3)


def test_the_init_failure_counts_each_retry_and_keeps_its_line_as_evidence():
    (f,) = _judged("syslog-rminitadapter-failed-0a00.txt")
    assert f.observed["count"] == 6  # the six "RmInitAdapter failed!" lines; "rm_init_adapter failed" repeats them
    assert f.observed["evidence"] == "GPU 0000:0a:00.0: RmInitAdapter failed! (0x24:0x72:1568)"
    assert f.observed["last_time"] == "Dec  2 11:54:56" and f.observed["last_uptime_s"] == 1188.283575


def test_a_fatal_aer_on_the_gpus_port_fails_the_gpu_and_the_port():
    found = {(f.code, f.severity, f.subject, f.observed["aer"], f.observed["count"]) for f in _judged(
        "dmesg-H-aer-fatal-gpu-rootport.txt")}  # fmt: skip
    assert found == {
        ("GA821", "fail", "GPU 0000:03:00.0", "aer-unrecovered", 2),
        ("GA821", "fail", "PCIe pcieport 0000:00:03.0", "aer-fatal", 1),
    }  # the audio function's "can't recover" (snd_hda_intel 03:00.1) is not the GPU's


def test_one_correctable_aer_on_a_root_port_in_a_localised_syslog_is_info():
    (f,) = _judged("syslog-aer-corrected-locale-month.txt")
    assert (f.code, f.severity, f.subject, f.observed["count"]) == (
        "GA821",
        "info",
        "PCIe pcieport 0000:00:1c.5",
        1,
    )


def test_nvidia_smi_unable_to_determine_the_device_handle_is_a_lost_gpu():
    (f,) = _judged("smi-no-device-handle.txt")
    assert (f.code, f.severity, f.subject) == ("GA315", "fail", "GPU 0 0000:0b:00.0")  # read as a lost GPU


def test_only_the_data_line_of_sxid_12028_warns_its_fatality_being_disputed():
    rig = import_files([BEYOND / "dmesg-x-iso-sxid12028-data-only.txt"])
    (ev,) = rig.kernel.events or []
    assert (ev.kind, ev.code, ev.bus_id, ev.time) == ("sxid", 12028, "0000:84:00.0", "2025-01-25T10:34:54,859532+00:00")
    (f,) = [f for f in evaluate(rig) if f.code == "GA802"]
    # the guide lists 12028 as fatal, a running fabric manager logs it as non-fatal (gpud's recorded log):
    # a Data line alone does not drain the node
    assert (f.severity, f.subject, f.observed["fatal"]) == ("warn", "NVSwitch 0000:84:00.0", None)
    assert "fabric manager itself logs it as non-fatal" in f.message


def test_a_data_line_beside_its_sxid_line_is_not_counted_twice():
    from gpuadvisor.probes.kmsg import parse_log

    events, _ = parse_log((BEYOND / "dmesg-sxid22013-nonfatal-cut.txt").read_text())
    assert [e.kind for e in events] == ["sxid"] * 3


def test_one_nonfatal_sxid_is_info_and_an_unknown_one_with_only_its_data_line_warns():
    from gpuadvisor.facts import KernelEvent, Rig

    rig = Rig()
    rig.kernel.events = [
        KernelEvent(kind="sxid", code=20012, bus_id="0000:05:00.0", text="Non-fatal, Link 32 ..."),
        KernelEvent(kind="sxid", code=19084, bus_id="0000:06:00.0", text="only its detail line is shown: Data {0x1}"),
    ]
    got = {f.observed["sxid"]: f.severity for f in evaluate(rig) if f.code == "GA802"}
    assert got == {20012: "info", 19084: "warn"}


def test_xid_38_a_firmware_watchdog_is_not_called_an_application_fault():
    from gpuadvisor.facts import KernelEvent, Rig

    rig = Rig()
    rig.kernel.events = [KernelEvent(kind="xid", code=38, bus_id="0000:3b:00", text="0000 0000 00000000")]
    (f,) = [f for f in evaluate(rig) if f.code == "GA801"]
    assert f.severity == "info" and "debug the job" not in (f.fix or "")
    assert "a driver firmware error (often at driver load), not the application's" in (f.fix or "")


def test_a_gpu_lspci_lists_and_nvidia_smi_does_not_fails_by_its_bus_id():
    (f,) = _judged("lspci-4-l40s-smi-csv-3.txt")
    assert (f.code, f.severity, f.subject) == ("GA810", "fail", "PCI 0000:82:00.0")
    assert "lspci lists it, nvidia-smi does not" in f.message and "reseat" in f.fix and "reset" in f.fix
    assert f.observed == {"pci_function": "0000:82:00.0", "nvml_gpus": 3, "xid79": False}


def test_without_bus_ids_in_the_drivers_list_the_counts_are_compared(tmp_path):
    lspci = (BEYOND / "lspci-4-l40s-smi-csv-3.txt").read_text().split("# nvidia-smi")[0]
    uuid = "GPU-{0}a{0}b{0}c{0}d-0000-0000-0000-00000000000{0}"
    listed = "".join(f"GPU {k}: NVIDIA L40S (UUID: {uuid.format(k)})\n" for k in range(3))
    paste = tmp_path / "paste.txt"
    paste.write_text(lspci + "$ nvidia-smi -L\n" + listed)  # nvidia-smi -L as NVIDIA documents it: no bus ids
    (f,) = [x for x in evaluate(import_files([paste])) if x.code == "GA810"]
    assert (f.severity, f.subject, f.observed) == ("fail", "host", {"pci_functions": 4, "nvml_gpus": 3})


def test_lspci_alone_is_not_held_against_itself(tmp_path):
    lspci = tmp_path / "lspci.txt"
    lspci.write_text((BEYOND / "lspci-4-l40s-smi-csv-3.txt").read_text().split("# nvidia-smi")[0])
    rig = import_files([lspci])
    assert rig.node.nvidia_pci_functions is None
    assert rig.node.unavailable["nvidia_pci_functions"].startswith("lspci lists 4 NVIDIA GPUs")
    (f,) = [x for x in evaluate(rig) if x.code == "GA810"]
    assert f.severity == "not-checked"


def test_ibqueryerrors_counters_over_the_thresholds_warn_on_that_port():
    rig = import_files([BEYOND / "ibqueryerrors-link-downed-rcv-errors.txt"])
    (p,) = rig.network.rdma_ports or []
    assert (p.device, p.counters) == (
        "GUID 0x1070fd0300370ea2 (all ports)",
        {"link_downed": 25, "port_rcv_errors": 26, "port_xmit_discards": 2846, "port_xmit_wait": 14681376621},
    )
    (f,) = _judged("ibqueryerrors-link-downed-rcv-errors.txt")
    assert (f.code, f.severity, f.subject) == ("GA823", "warn", "GUID 0x1070fd0300370ea2 (all ports)")
    assert f.observed == {"link_downed": 25, "port_rcv_errors": 26} and "cable" in f.fix


def test_perfquery_x_of_two_clean_ports_reads_every_counter_and_finds_nothing():
    rig = import_files([BEYOND / "perfquery-x-two-ports-clean.txt"])
    assert [(p.device, p.port) for p in rig.network.rdma_ports or []] == [("LID 1719", 1), ("LID 1719", 2)]
    assert all(p.counters and set(p.counters.values()) == {0} and len(p.counters) == 8 for p in rig.network.rdma_ports)
    assert _judged("perfquery-x-two-ports-clean.txt") == []


CORPUS = Path(__file__).resolve().parent / "corpus"


def test_a_quoting_word_before_dmesg_x_columns_keeps_the_sxid_and_its_time():
    rig = import_files([CORPUS / "fabric" / "dmesg-iso-level_sxid12028-data-line-only_gyuho.txt"])  # gpud PR 338
    (ev,) = rig.kernel.events or []
    assert (ev.kind, ev.code, ev.bus_id, ev.time) == ("sxid", 12028, "0000:84:00.0", "2025-01-25T10:34:54,859532+00:00")


def test_a_dmesg_r_log_without_a_gpu_event_is_read_as_a_log_with_no_fault():
    rig = import_files([CORPUS / "kernel-log" / "dmesg-raw-prio_sysrq-crash-coreos_gpud.txt"])  # gpud's pstore data
    assert (rig.kernel.events, rig.kernel.lines_read) == ([], 39)  # its 39 lines, the last without a newline
    assert [f for f in evaluate(rig) if f.severity in ("warn", "fail")] == []


def test_systemd_networkd_ipoib_carrier_lines_are_link_flaps():
    rig = import_files([CORPUS / "rdma" / "syslog_ib6-six-carrier-flaps_aznhc.txt"])  # AzNHC's 1dev_6flap_syslog
    kinds = [(e.kind, e.text) for e in rig.kernel.events or []]
    assert kinds.count(("link-down", "ib6: Lost carrier")) == 6 and kinds.count(("link-up", "ib6: Gained carrier")) == 6
    (f,) = [x for x in evaluate(rig) if x.code == "GA822"]
    assert (f.severity, f.subject, f.observed["flaps"]) == ("warn", "RDMA ib6", 6)


def test_lspci_is_not_held_against_nvidia_smi_asked_for_one_gpu(tmp_path):
    smi = (CORPUS / "smi" / "smi-q-i0-windows-wddm-cut_llamafilm.txt").read_text()  # anderskm/gputil#38: -i 0
    lspci = "".join(f"{b}:00.0 VGA compatible controller: NVIDIA Corporation GA102 (rev a1)\n" for b in ("18", "3b"))
    paste = tmp_path / "paste.txt"
    paste.write_text(smi + "\n$ lspci | grep NVIDIA\n" + lspci)  # lspci's device line as lspci(8) prints it
    rig = import_files([paste])
    assert rig.node.nvidia_pci_functions is None
    assert "only some of its GPUs" in rig.node.unavailable["nvidia_pci_functions"]
    assert [f.severity for f in evaluate(rig) if f.code == "GA810"] == ["not-checked"]
