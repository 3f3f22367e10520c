"""Other health checkers' verdicts (GA827): LBNL NHC's failure lines and dcgmi diag's failed tests, read from real
public outputs, and judged by what the checker itself says: a DCGM test of the GPU that failed fails the node unless
DCGM's own next step says the test could not run; NHC's site-configured checks warn."""

from __future__ import annotations

import pytest

from gpuadvisor import rules
from gpuadvisor.errors import InputError
from gpuadvisor.importers import import_texts
from gpuadvisor.importers.nhc import parse_nhc


def _ga827(text: str) -> list[tuple[str, str, str]]:
    rig = import_texts([("paste.txt", text)])
    return [(f.severity, f.subject or "", f.message) for f in rules.evaluate(rig) if f.code == "GA827"]


# NVIDIA/deepops PR #660 (2020-09-23): NHC with the wrong GPU count in nhc.conf
DEEPOPS = """root@virtual-gpu01:~# nhc -v
ERROR:  nhc:  Health check failed:  Check check_nv_gpu_count 2 returned 1
"""
# mej/nhc issue #161 (2025-06-12): NHC's syslog lines when the script itself timed out
SYSLOG = """2025-06-11T19:12:23.050922+00:00 cpu001 nhc[1013622]: Health check failed:  Script timed out.
2025-06-11T19:12:24.052725+00:00 cpu001 nhc[1013628]: Health check failed:  Terminated by signal SIGTERM.
"""
# mej/nhc issue #134 (2023-05-01): the watchdog could not stop a hung NHC, then the helper marked the node offline
WATCHDOG = """NHC watchdog timer 16264 terminating NHC with extreme prejudice:  kill -s KILL -- -16263
ERROR:  nhc:  Health check failed:  Watchdog timer unable to terminate hung NHC process 16263.
20230429 16:16:31 /usr/libexec/nhc/node-mark-offline wn-1-30.local Watchdog timer unable to terminate hung \
NHC process 16263.
"""


def test_nhc_names_the_failed_check_with_its_arguments():
    checks = parse_nhc(DEEPOPS, "p.txt").node.health_checks
    assert [(c.tool, c.check, c.verdict, c.detail, c.evidence) for c in checks or []] == [
        ("NHC", "check_nv_gpu_count", "fail", "2 returned 1", "p.txt:2")
    ]
    assert _ga827(DEEPOPS) == [
        ("fail", "NHC check_nv_gpu_count", "NHC: check_nv_gpu_count FAIL: 2 returned 1 (paste.txt:2)")
    ]


def test_nhc_syslog_lines_and_a_failure_without_a_check_name():
    got = [(c.check, c.detail) for c in parse_nhc(SYSLOG, "s").node.health_checks or []]
    assert got == [("", "Script timed out."), ("", "Terminated by signal SIGTERM.")]
    got = [(c.check, c.detail) for c in parse_nhc(WATCHDOG, "w").node.health_checks or []]
    assert got == [("", "Watchdog timer unable to terminate hung NHC process 16263.")]


def test_other_daemons_health_checks_are_not_nhc():
    # "Health check failed:" from anything but NHC (its name, its ERROR form or a check_ name) is not NHC's: a bare
    # line is not recognised at all; Consul's agent line is a Go service's log line, read as such, with no NHC verdict
    with pytest.raises(InputError):
        import_texts([("paste.txt", "Health check failed: timeout after 30s\n")])
    consul = (
        "2024/01/01 12:00:00 [WARN] agent: Check 'service:web' is critical: Health check failed: connection refused"
    )
    rig = import_texts([("paste.txt", consul + "\n")])
    assert not rig.node.health_checks and not rig.gpus


# go-dcgm issue #52 (2023-12-26, BetaZYN): dcgmi diag -r 2, GPU 0 busy; its Hardware section
BUSY = """+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Pass - GPU: 1                                  |
|                           | Fail - GPU: 0                                  |
| Warning                   | GPU 0 Error using CUDA API cuCtxCreate Check   |
|                           | DCGM and system logs for errors. Reset GPU. R  |
|                           | estart DCGM. Rerun diagnostics. Unable to cre  |
|                           | ate CUDA context: 'CUDA-capable device(s) is/  |
|                           | are busy or unavailable'.                      |
"""


def test_a_dcgm_test_that_could_not_run_warns_with_dcgms_whole_message():
    (got,) = _ga827(BUSY)
    severity, subject, message = got
    assert (severity, subject) == ("warn", "dcgmi diag GPU Memory")
    # the wrapped cell read back whole: "R" + "estart", "cre" + "ate", "is/" + "are"
    assert "Reset GPU. Restart DCGM. Rerun diagnostics. Unable to create CUDA context: 'CUDA-capable device(s) " \
        "is/are busy or unavailable'." in message  # fmt: skip
    assert message.startswith("dcgmi diag: GPU Memory (Hardware) FAIL on GPU 0: GPU 0 Error using CUDA API")


def test_a_dcgm_hardware_fault_fails_and_a_deployment_check_warns():
    """DCGM's next step for a fault of the GPU is "Run a field diagnostic on the GPU." (dcgm_errors.h,
    TRIAGE_RUN_FIELD_DIAG_MSG, after DCGM_FR_FAULTY_MEMORY's message "Found %d faulty memory elements on GPU %u");
    a Deployment check (Persistence Mode) is the environment, not the GPU."""
    fault = BUSY.split("| Warning")[0] + (
        "| Warning                   | Found 4 faulty memory elements on GPU 0 Run a |\n"
        "|                           |  field diagnostic on the GPU.                  |\n"
    )
    ((severity, _, message),) = _ga827(fault)
    assert severity == "fail" and "on GPU 0 Run a field diagnostic on the GPU." in message  # a row short of margin
    deployment = (
        "|-----  Deployment  --------+------------------------------------------------|\n"
        "| Persistence Mode          | Fail - GPU: 0                                  |\n"
    )
    assert [g[:2] for g in _ga827(deployment)] == [("warn", "dcgmi diag Persistence Mode")]


def test_a_passing_diag_raises_nothing():
    """DCGM issue #55 (bmerry, 2022-11-23): a dcgmi diag -r 3 whose Deployment checks all pass."""
    passing = """$ dcgmi diag -r 3
Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Deployment  --------+------------------------------------------------|
| Denylist                  | Pass                                           |
| NVML Library              | Pass                                           |
| Persistence Mode          | Pass                                           |
"""
    rig = import_texts([("paste.txt", passing)])
    assert rig.node.health_checks is None
    assert [f for f in rules.evaluate(rig) if f.code == "GA827"] == []


def test_dcgm_nvlink_down_fails_only_where_the_scan_shows_nvlink_in_use():
    """DCGM 2.4's PCIe test failed every GPU without an NVLink bridge with "GPU 0's NvLink link 0 is currently
    down Run a field diagnostic on the GPU." (NVIDIA/DCGM issue 49): warn unless the scan shows NVLink in use."""
    from gpuadvisor import facts

    detail = "GPU 0GPU 0's NvLink link 0 is currently down Run a field diagnostic on the GPU."
    rig = facts.Rig(gpus=[facts.Gpu(index=0)])
    rig.node.health_checks = [facts.HealthCheck("dcgmi diag", "PCIe", "fail", detail, [], "Integration", "d:2")]
    assert [f.severity for f in rules.evaluate(rig) if f.code == "GA827"] == ["warn"]
    rig.gpus[0].nvlinks = [facts.NvLink(link=1, active=True)]
    assert [f.severity for f in rules.evaluate(rig) if f.code == "GA827"] == ["fail"]
