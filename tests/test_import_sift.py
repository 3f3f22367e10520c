"""The section splitter's pre-filter changes no split: on every real paste of the corpus and every shared sample,
the outputs found are those found by trying every row's detector on every line; and a line of an ibstat paste
(the ibstat of tests/corpus/rdma, from a public issue) that starts nothing is tried by no detector."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor.importers import sections
from gpuadvisor.importers.registry import FORMATS
from gpuadvisor.importers.sift import NEEDS, Sift, sift

ROOT = Path(__file__).resolve().parent
PASTES = sorted(p for p in (ROOT / "corpus").rglob("*.txt") if p.is_file())


class _EveryRow(Sift):
    def rows(self, line: str) -> tuple:
        return FORMATS


def _split(text: str) -> list[tuple[str, int, list[str], bool, list[str]]]:
    return [(s.kind, s.start, s.lines, s.cut, s.context) for s in sections.split_sections(text)]


def test_the_pastes_are_there():
    assert len(PASTES) >= 200


@pytest.mark.parametrize("path", PASTES, ids=lambda p: p.name)
def test_the_sifted_split_is_the_split_by_every_detector(path, monkeypatch):
    text = path.read_text(errors="replace")
    sifted = _split(text)
    monkeypatch.setattr(sections, "sift", lambda _text: _EveryRow(()))
    assert _split(text) == sifted


def test_every_row_with_a_detector_says_what_its_first_line_holds():
    assert {f.kind for f in FORMATS if f.starts is not None} == set(NEEDS)


def test_an_ibstat_field_line_is_tried_by_no_detector_and_its_ca_line_by_its_own():
    rows = sift("CA 'mlx5_0'\n")
    assert rows.rows("\t\tPhysical state: LinkUp") == ()
    assert rows.rows("\tFirmware version: 20.31.1014") == ()
    assert [f.kind for f in rows.rows("CA 'mlx5_1'")] == ["ibstat"]
    xid = "[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=0"
    # a CSV row holds a comma; another tool's relayed Xid is tried after the kernel log's own reader
    assert [f.kind for f in rows.rows(xid)] == ["smi-csv", "kernel-log", "xid-relay"]


def test_a_query_gpu_command_makes_its_one_field_header_a_start():
    cmd = "$ nvidia-smi --query-gpu=name --format=csv\nname\nNVIDIA A100-SXM4-80GB\n"
    assert [f.kind for f in sift(cmd).always] == ["smi-csv"]
    assert sift(cmd).rows("name") == sift(cmd).always


# one line per sign the kernel-log reader knows without an NVRM/Xid word, in the forms of NVIDIA's and the kernel's
# messages (RmInitAdapter, GSP heartbeat and RPC timeouts, PCIe AER, an mlx5 link flap, an IPoIB carrier change)
SIGN_LINES = [
    "[   9.1] RmInitAdapter failed! (0x25:0x65:1457)",
    "[   9.1] NV_ERR_RESET_REQUIRED",
    "[   9.1] GPU 0000:0a:00.0 Reset Required",
    "[   9.1] GSP heartbeat timed out",
    "[   9.1] rpcSendMessage failed with status 0x0000000f",
    "[   9.1] Timeout waiting for RPC from GSP! Expected function 76",
    "[   9.1] pcieport 0000:00:01.0: PCIe Bus Error: severity=Corrected, type=Physical Layer",
    "[   9.1] pcieport 0000:00:01.0: AER: can't recover (no error_detected callback)",
    "[   9.1] mlx5_core 0000:17:00.0 ens1f0np0: Link down",
    "[   9.1] ib0: Lost carrier",
    "[   9.1] The NVIDIA probe routine was not called for 1 device(s).",
]


@pytest.mark.parametrize("line", SIGN_LINES)
def test_a_kernel_sign_line_is_tried_by_the_kernel_log_row(line):
    from gpuadvisor.probes.kmsg_signs import SIGN_RE

    assert SIGN_RE.search(line)
    assert "kernel-log" in [f.kind for f in sift("").rows(line)]
