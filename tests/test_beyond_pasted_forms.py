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
