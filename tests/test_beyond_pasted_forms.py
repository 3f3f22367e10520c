"""Kernel-log and NCCL-log forms as posters paste them: a bare clock time before the kernel line, the poster's
abbreviated "Xid 31 PCI:..." line, syslogd's console broadcast, and mpirun's rank prefix before an NCCL line.
Each input is written by hand from the format (dmesg/syslog message text, NCCL's debug line as the NCCL User
Guide's Troubleshooting section shows it)."""

from __future__ import annotations

import pytest
from gpuadvisor.probes.kmsg import parse_line

from gpuadvisor.errors import InputError
from gpuadvisor.importers import import_files
from gpuadvisor.importers.nccl_log import starts
from gpuadvisor.rules import evaluate


def _imported(tmp_path, text: str):
    path = tmp_path / "paste.txt"
    path.write_text(text)
    return import_files([path])


def test_a_bare_clock_time_before_an_nvrm_line_is_a_kernel_log_with_its_time(tmp_path):
    rig = _imported(
        tmp_path,
        "10:02:03  NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
        "10:02:04  NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n",
    )
    (ev,) = [e for e in rig.kernel.events or [] if e.kind == "xid"]
    assert (ev.code, ev.bus_id, ev.time, ev.pid, ev.process) == (79, "0000:3b:00", "10:02:03", 1234, "python")


def test_an_abbreviated_xid_line_names_its_code_and_bus():
    ev = parse_line("10:02:05  Xid 31 PCI:0000:f0:00 pid=42 ... MMU Fault ...", 7)
    assert ev is not None
    assert (ev.kind, ev.code, ev.bus_id, ev.line, ev.time) == ("xid", 31, "0000:f0:00", 7, "10:02:05")


def test_a_clock_time_before_other_text_is_no_kernel_log(tmp_path):
    path = tmp_path / "paste.txt"
    path.write_text("10:02:03  backup started\n10:02:04  backup done\n")
    with pytest.raises(InputError, match="not recognised"):
        import_files([path])


def test_syslogds_console_broadcast_is_read_as_a_kernel_log(tmp_path):
    rig = _imported(
        tmp_path,
        "Message from syslogd@node1 at Mar  3 10:02:03 ...\n"
        " kernel:NVRM: Xid (PCI:0000:3b:00): 48, pid=1234, name=python, An uncorrectable double bit error\n"
        "\n"
        "Message from syslogd@node1 at Mar  3 10:02:03 ...\n"
        " kernel:[Hardware Error]: Corrected error, no action required.\n",
    )
    assert [(e.code, e.bus_id) for e in rig.kernel.events or [] if e.kind == "xid"] == [(48, "0000:3b:00")]


def test_an_nccl_line_behind_a_launchers_rank_prefix_of_any_width_is_an_nccl_line():
    assert starts("[56] node7:7240:7240 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.7<0>")
    assert starts("[1023] node7:7240:7240 [3] NCCL WARN Call to ibv_modify_qp failed with error Invalid argument")
    assert starts("[1,56]<stdout>:node7:7240:7240 [0] NCCL INFO Using network IB")
    assert not starts("[56] node7 started")


def _xid31(tmp_path, procs: list[str]):
    lines = [
        f"[Sat Jan 30 0{n}:05:20 2021] NVRM: Xid (PCI:0000:db:00): 31, {p}, Ch 00000008, intr 00000000. "
        "MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_10 faulted @ 0x7efe_ba290000. Fault is of type FAULT_PDE\n"
        for n, p in enumerate(procs)
    ]
    (f,) = [f for f in evaluate(_imported(tmp_path, "".join(lines))) if f.code == "GA801"]
    return f


def test_xid31_from_three_different_processes_on_one_gpu_warns_and_says_why(tmp_path):
    f = _xid31(tmp_path, ["pid=13641", "pid=14323", "pid=33275"])  # an older driver: pids, no names
    assert (f.severity, f.subject) == ("warn", "PCI 0000:db:00")
    assert "3 different processes" in f.message and "across different applications" in f.message
    assert "test the GPU" in f.fix


@pytest.mark.parametrize(
    "procs",
    [
        ["pid=101, name=python", "pid=102, name=python", "pid=103, name=python"],  # one application restarted
        ["pid=101, name=train", "pid=101, name=train", "pid=101, name=train"],
        ["pid=101", "pid=102"],
    ],
)
def test_xid31_from_one_application_or_two_processes_stays_an_application_fault(tmp_path, procs):
    f = _xid31(tmp_path, procs)
    assert f.severity == "info" and "an application fault" in f.fix


def test_an_nccl_tests_device_line_above_an_nccl_debug_log_names_the_gpus_of_its_first_host(tmp_path):
    rig = _imported(
        tmp_path,
        "#  Rank  0 Group  0 Pid   2832 on      node1 device  0 [0x03] NVIDIA A100-SXM4-80GB\n"
        "#  Rank  1 Group  0 Pid   2833 on      node1 device  1 [0x04] NVIDIA A100-SXM4-80GB\n"
        "#  Rank  2 Group  0 Pid   3255 on      node2 device  0 [0x03] NVIDIA A100-SXM4-80GB\n"
        "node1:2832:2832 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>\n"
        "node1:2832:2832 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n",
    )
    assert [(g.index, g.name) for g in rig.gpus] == [(0, "NVIDIA A100-SXM4-80GB"), (1, "NVIDIA A100-SXM4-80GB")]
    assert rig.host.hostname == "node1" and rig.network.nccl_nics == ["mlx5_0:1/IB"]


def _xid31_on(tmp_path, buses: list[str]):
    lines = [
        f"[Sat Jan 30 10:05:2{n} 2021] NVRM: Xid (PCI:0000:{b}:00): 31, pid={100 + n}, name=python3, Ch 00000008, "
        "intr 00000000. MMU Fault: ENGINE GRAPHICS GPC0 UNRECOGNIZED_CLIENT faulted @ 0x182400_0030198d.\n"
        for n, b in enumerate(buses)
    ]
    return [f for f in evaluate(_imported(tmp_path, "".join(lines))) if f.code == "GA801"]


def test_xid31_once_on_each_of_eight_gpus_warns_for_each_and_asks_for_the_node_to_be_checked(tmp_path):
    found = _xid31_on(tmp_path, ["1a", "40", "62", "73", "9a", "bd", "df", "f0"])
    assert [(f.severity, f.subject) for f in found][:2] == [("warn", "PCI 0000:1a:00"), ("warn", "PCI 0000:40:00")]
    assert len(found) == 8 and all(f.severity == "warn" for f in found)
    assert "the same fault on 8 GPUs of this node" in found[0].message and "reboot the node" in found[0].fix


def test_xid31_once_on_two_gpus_stays_an_application_fault(tmp_path):
    assert [f.severity for f in _xid31_on(tmp_path, ["1a", "40"])] == ["info", "info"]


def test_journalctl_short_precise_lines_are_a_kernel_log(tmp_path):
    # journalctl(1), -o short-precise: "like short, but ... timestamps with full microsecond precision"
    rig = _imported(
        tmp_path,
        "Nov 28 10:02:03.123456 node1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has "
        "fallen off the bus.\n"
        "Nov 28 10:02:04.000001 node1 kernel: NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n",
    )
    (ev,) = [e for e in rig.kernel.events or [] if e.kind == "xid"]
    assert (ev.code, ev.bus_id, ev.time) == (79, "0000:3b:00", "Nov 28 10:02:03.123456")
    (f,) = [f for f in evaluate(rig) if f.code == "GA801"]
    assert f.severity == "fail"


def test_journalctl_json_entries_are_a_kernel_log_with_their_time(tmp_path):
    # journalctl(1) -o json: one JSON object per entry, fields of systemd.journal-fields(7); written by hand
    entry = (
        '{"__REALTIME_TIMESTAMP":"1764324123123456","_HOSTNAME":"node1","_TRANSPORT":"kernel",'
        '"SYSLOG_IDENTIFIER":"kernel","PRIORITY":"4","MESSAGE":"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, '
        'name=python, GPU has fallen off the bus."}\n'
    )
    quiet = '{"__REALTIME_TIMESTAMP":"99999999999999999999","_TRANSPORT":"kernel","MESSAGE":"nvidia-modeset: x"}\n'
    rig = _imported(tmp_path, entry + quiet)
    (ev,) = [e for e in rig.kernel.events or [] if e.kind == "xid"]
    assert (ev.code, ev.bus_id, ev.time, ev.line) == (79, "0000:3b:00", "2025-11-28T10:02:03.123456+00:00", 1)
    assert rig.kernel.lines_read == 2
