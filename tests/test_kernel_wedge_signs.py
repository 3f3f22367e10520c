"""Kernel-log signs of a GPU or driver that no Xid reports: GSP firmware that never started, an NVLink discovery
failure with a peer, a task hung inside the NVIDIA driver. The real pastes are held-out corpus files (their sources
in tests/corpus/s10-logs/INDEX.toml); the other lines are written by hand from the messages as the driver and the
kernel print them (NVIDIA open-gpu-kernel-modules: kernel_gsp.c, osinit.c, kernel_nvlink; Linux kernel/hung_task.c:
"INFO: task %s:%d blocked for more than %ld seconds.")."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.probes.kmsg import parse_log

from gpuadvisor.importers import import_files
from gpuadvisor.rules import evaluate

LOGS = Path(__file__).resolve().parent / "corpus" / "s10-logs"


def _judged_file(path: Path):
    return [f for f in evaluate(import_files([path])) if f.severity not in ("not-checked", "ok")]


def _judged_text(tmp_path: Path, text: str):
    path = tmp_path / "dmesg.txt"
    path.write_text(text)
    return _judged_file(path)


def _one(pattern: str):
    (path,) = LOGS.glob(pattern)
    return path


def test_gsp_that_cannot_bootstrap_fails_without_a_bus_id_in_two_fragments():
    (f,) = _judged_file(_one("kernel-gsp-booter-fail-two-fragments-*.txt"))
    assert (f.code, f.severity, f.subject, f.expected["action"]) == (
        "GA820",
        "fail",
        "a GPU (no bus id logged)",
        "reboot",
    )
    assert (f.observed["sign"], f.observed["evidence"], f.observed["first_line"]) == (
        "gsp-boot-failed",
        "kgspInitRm_IMPL: cannot bootstrap",  # "NVRM kgspInitRm_IMPL" (no colon after NVRM), dmesg-stamped
        7,
    )


def test_gsp_not_started_before_rminitadapter_failed_is_one_finding_on_the_named_gpu():
    (f,) = _judged_file(_one("dmesg-gsp-fwsec-prepare-fail-rminitadapter-*.txt"))
    assert (f.code, f.severity, f.subject, f.observed["sign"]) == (
        "GA820",
        "fail",
        "GPU 0000:01:00.0",
        "gpu-init-failed",
    )


def test_gsp_not_started_alone_fails_with_the_drivers_gpu_number(tmp_path):
    (f,) = _judged_text(
        tmp_path,
        "[  921.622001] NVRM: GPU0 _kgspBootGspRm: unexpected WPR2 already up, cannot proceed with booting GSP\n"
        "[  921.622002] NVRM: GPU0 _kgspBootGspRm: (the GPU is likely in a bad state and may need to be reset)\n",
    )
    assert (f.code, f.severity, f.observed["sign"], f.observed["count"]) == ("GA820", "fail", "gsp-boot-failed", 1)
    assert f.subject == "GPU0 (the driver's numbering; no bus id on the line)"


def test_an_nvlink_discovery_failure_with_a_peer_warns_even_quoted_in_markdown():
    (f,) = _judged_file(_one("journal-k-grep-postrxdetlinkmask-*.txt"))
    assert (f.code, f.severity, f.expected["action"], f.observed["sign"]) == (
        "GA820",
        "warn",
        "reset",
        "nvlink-discovery-failed",
    )
    assert f.observed["last_time"] == "Jul 09 10:42:47"


def test_the_rx_detect_link_mask_update_failure_is_the_same_sign(tmp_path):
    found = _judged_text(
        tmp_path,
        "[ 5723.100001] NVRM: knvlinkUpdatePostRxDetectLinkMask_IMPL: Failed to update Rx Detect Link mask!\n"
        "[ 5723.100002] NVRM: knvlinkDiscoverPostRxDetLinks_GB100: Getting peer17 postRxDetLinkMask failed!\n",
    )
    assert [(f.code, f.severity, f.observed["count"]) for f in found] == [("GA820", "warn", 2)]


def test_a_task_hung_in_nvidia_uvm_warns_reboot_the_node():
    (f,) = _judged_file(_one("dmesg-hung-task-nvc-blocked-in-nvidia-uvm-*.txt"))
    assert (f.code, f.severity, f.subject, f.expected["action"]) == (
        "GA820",
        "warn",
        "the NVIDIA driver (no GPU named)",
        "reboot",
    )
    assert f.observed["evidence"] == "task nvc:[driver] (pid 5403) blocked for more than 120 seconds in nvidia_uvm"
    assert f.observed["last_uptime_s"] == 721.02817


HUNG_DISK = """\
[ 1210.412345] INFO: task jbd2/sda1-8:312 blocked for more than 120 seconds.
[ 1210.412350]       Not tainted 5.15.0-91-generic #101-Ubuntu
[ 1210.412352] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.
[ 1210.412355] task:jbd2/sda1-8     state:D stack:    0 pid:  312 ppid:     2 flags:0x00004000
[ 1210.412360] Call Trace:
[ 1210.412362]  <TASK>
[ 1210.412365]  __schedule+0x2cd/0x8a0
[ 1210.412370]  io_schedule+0x46/0x80
[ 1210.412375]  jbd2_journal_commit_transaction+0x2ff/0x1a30 [jbd2]
[ 1210.412380]  </TASK>
"""


def test_a_hung_task_outside_the_driver_is_not_the_gpus(tmp_path):
    events, _ = parse_log(HUNG_DISK)
    assert events == []


def test_each_hung_task_is_judged_by_its_own_trace():
    text = HUNG_DISK + (
        "[ 1330.500001] INFO: task python:4242 blocked for more than 241 seconds.\n"
        "[ 1330.500010]  uvm_va_space_destroy+0x3c1/0x4a0 [nvidia_uvm]\n"
    )
    events, _ = parse_log(text)
    assert [(e.kind, e.text, e.line) for e in events] == [
        ("driver-hung", "task python (pid 4242) blocked for more than 241 seconds in nvidia_uvm", 11)
    ]


def test_a_hung_nvidia_smi_without_its_trace_is_the_driver_hung():
    events, _ = parse_log("Mar 03 04:05:06 gpu7 kernel: INFO: task nvidia-smi:9876 blocked for more than 122 seconds.")
    assert [(e.kind, e.text, e.time) for e in events] == [
        ("driver-hung", "task nvidia-smi (pid 9876) blocked for more than 122 seconds (its call trace not shown)",
         "Mar 03 04:05:06")
    ]  # fmt: skip


def test_a_quoted_log_is_read_behind_a_fence_a_prompt_above_it_and_a_second_quote(tmp_path):
    from gpuadvisor.importers.section import clean_lines

    text = _one("journal-k-grep-postrxdetlinkmask-*.txt").read_text()
    quoted = "".join("> " + x if x.strip() else x for x in text.splitlines(keepends=True))
    for pasted in ("```\n" + text + "```\n", "user@node01:~$ sudo dmesg\n" + text, quoted):
        (f,) = _judged_text(tmp_path, pasted)
        assert (f.code, f.severity, f.observed["sign"]) == ("GA820", "warn", "nvlink-discovery-failed")
    assert clean_lines("$ cat notes\n> a\n>\n> b\n") == ["$ cat notes", "a", "", "b"]
    assert clean_lines("> a\nb\n") == ["> a", "b"]  # not every line quoted: no quote


PROBE_FAILED = """\
[    5.100001] NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:
[    5.100002] nvidia: probe of 0000:01:00.0 failed with error -1
[    5.100003] NVRM: The NVIDIA probe routine failed for 1 device(s).
[    5.100004] NVRM: None of the NVIDIA devices were initialized.
"""


def test_a_failed_probe_fails_the_gpu_it_names_once(tmp_path):
    (f,) = _judged_text(tmp_path, PROBE_FAILED)  # the count line without a bus id is the named GPU's
    assert (f.code, f.severity, f.subject, f.expected["action"]) == ("GA820", "fail", "GPU 0000:01:00.0", "reboot")
    events, _ = parse_log("[ 9.5] nvidia 0000:02:00.0: probe with driver nvidia failed with error -1\n")
    assert [(e.kind, e.bus_id) for e in events] == [("gpu-probe-failed", "0000:02:00.0")]  # newer kernels' form


def test_the_probe_count_beside_a_gpu_fallen_off_the_bus_adds_no_finding():
    (path,) = (Path(__file__).resolve().parent / "corpus" / "kernel-log").glob("dmesg_fallen-off-bus-no-xid_*.txt")
    assert [f.code for f in _judged_file(path) if f.code == "GA820"] == []


def test_a_soft_lockup_in_the_driver_is_the_driver_hung():
    text = (
        "[   88.100001] watchdog: BUG: soft lockup - CPU#12 stuck for 22s! [nvidia-smi:4242]\n"
        "[   88.100002] Modules linked in: nvidia_uvm(POE) nvidia(POE) ext4 mlx5_core\n"
        "[   88.100003] RIP: 0010:_nv012345rm+0x1d/0x30 [nvidia]\n"
        "[   99.200001] watchdog: BUG: soft lockup - CPU#3 stuck for 23s! [kworker/3:1:311]\n"
        "[   99.200002] Modules linked in: nvidia_uvm(POE) nvidia(POE) ext4 mlx5_core\n"
        "[   99.200003] RIP: 0010:native_queued_spin_lock_slowpath+0x1b/0x40\n"
    )
    events, _ = parse_log(text)  # the module list names nvidia on any box: only a frame in it counts
    assert [(e.kind, e.text) for e in events] == [
        ("driver-hung", "soft lockup: task nvidia-smi (pid 4242) stuck on CPU#12 for 22 s in nvidia")
    ]


def test_a_gpu_lost_from_the_bus_without_an_xid_fails_and_beside_its_xid_79_adds_nothing(tmp_path):
    # NV_ERR_GPU_IS_LOST's text is "GPU lost from the bus" (the driver's nvstatuscodes.h)
    lost = (
        "[ 3141.592653] NVRM: GPU1 nvAssertOkFailedNoLog: Assertion failed: GPU lost from the bus "
        "[NV_ERR_GPU_IS_LOST] (0x0000000F) returned from pRmApi->Control(pRmApi, ...) @ kern_bus_gm107.c:1234\n"
    )
    (f,) = _judged_text(tmp_path, lost)
    assert (f.code, f.severity, f.observed["sign"], f.expected["action"]) == ("GA820", "fail", "gpu-is-lost", "reboot")
    assert f.subject == "GPU1 (the driver's numbering; no bus id on the line)"
    xid = "[ 3141.500000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
    events, _ = parse_log(xid + lost)
    assert [(e.kind, e.code) for e in events] == [("xid", 79)]


def test_a_hung_tasks_trace_ends_at_its_task_end_mark():
    text = HUNG_DISK + "[ 1211.000001] WARNING: CPU: 3 PID: 77 at nv.c:1 _nv000123rm+0x10/0x20 [nvidia]\n"
    events, _ = parse_log(text)  # an nvidia frame after the disk task's "</TASK>" is another report's
    assert events == []
