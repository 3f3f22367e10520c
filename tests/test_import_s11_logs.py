"""Held-out set 11's classes of kernel and RDMA outputs, each from a real paste (its source URL beside it; the
pastes themselves are in tests/corpus/s11-*): an NVRM Xid line behind a platform's tags."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_files
from gpuadvisor.rules import evaluate


def _judged(tmp_path: Path, text: str, *codes: str):
    f = tmp_path / "paste.txt"
    f.write_text(text)
    return sorted((x.code, x.severity, x.subject) for x in evaluate(import_files([f])) if x.code in codes)


# https://modal.com/docs/guide/gpu-health: Modal's gpu-health log line wrapping the kernel's NVRM line
_MODAL = (
    "[gpu-health] [CRITICAL] GPU-1234: XID: NVRM: Xid (PCI:0000:c6:00): 79, pid=1101234, name=nvc:[driver], "
    "GPU has fallen off the bus.\n"
)


def test_an_xid_line_behind_a_platforms_tags_is_read(tmp_path):
    assert _judged(tmp_path, _MODAL, "GA801") == [("GA801", "fail", "PCI 0000:c6:00")]
    other = _MODAL.replace("[gpu-health] [CRITICAL] GPU-1234: XID: ", "[node-check] [ERROR] gpu7: ")
    assert _judged(tmp_path, other, "GA801") == [("GA801", "fail", "PCI 0000:c6:00")]
