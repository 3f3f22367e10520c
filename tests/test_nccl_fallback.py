"""An nccl-tests paste cut after NCCL's warning of a fallback (no verbs library, no IB device, no network plugin) is
cut, not failed: NCCL goes on over sockets or its built-in transports, and the whole paste shows the rows."""

from __future__ import annotations

import pytest

from gpuadvisor.importers.nccl_launch import failed
from tests.corpus_cases import corpus_file, run_import

# https://github.com/NVIDIA/nccl-tests/issues/82 (set 25): two V100 hosts over TCP, both warn that libibverbs is absent
PASTE = "s25-nccl-tests/broadcast-perf-mpirun-2x-v100-pcie-sockets-ib-disabled-ibverbs-warn-first-row_*.txt"


def test_a_paste_cut_after_a_fallback_warning_is_not_a_failed_run(tmp_path):
    lines = corpus_file(PASTE).read_text(encoding="utf-8").splitlines(keepends=True)
    cut = tmp_path / "paste.txt"
    cut.write_text("".join(lines[:12]), encoding="utf-8")  # the two WARN lines, NCCL's version; no row yet
    rc, scan = run_import([cut])
    assert rc == 0 and scan is not None
    (m,) = scan["measurements"]
    assert m["status"] == "skipped" and "not a failed run" in m["error"]
    assert "GA606" not in {f["code"] for f in scan["findings"] if f["severity"] in ("warn", "fail")}


@pytest.mark.parametrize(
    ("line", "fails"),
    [
        ("v100-gpu-1:14926:14926 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]", False),
        ("node1:1234:1234 [0] NCCL INFO NET/IB : No device found.", False),
        ("node1:1234:1270 [0] NCCL WARN NET/IB : No device found.", False),
        ("n1:1:1 [0] NCCL WARN NET/Plugin : No plugin found (libnccl-net.so), using internal implementation", False),
        ("node1:1234:1234 [0] NCCL WARN Cuda failure 'out of memory'", True),
        ("node1: Test NCCL failure common.cu:1005 'unhandled system error'", True),
        ("mpirun noticed that process rank 1 with PID 0 on node node2 exited on signal 11 (Segmentation fault).", True),
    ],
)
def test_which_lines_tell_of_a_failed_run(line, fails):
    assert failed(line) is fails
