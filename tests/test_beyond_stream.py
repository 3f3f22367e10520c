"""A kernel log of any length: its events kept bounded (the first and last few of each kind and device, the
others counted), a big file read as a stream, and the findings the same as when the log is read whole.

The logs are real public ones of the corpus, repeated (tests/corpus/kernel-log/INDEX.toml gives each source):
the dmesg of wilicc/gpu-burn#1 (PCIe AER errors, then Xid 79), gpud's Xid 119 test data (dmesg -T), the
multi-line "fallen off the bus" message without an Xid of NVIDIA/NVSentinel#155, and the journal of Xid 45
caused by 149/145 on four GPUs. The nvidia-smi paste put after a log is bottlerocket-core-kit#834's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gpuadvisor.probes import kmsg, kmsg_unjudged
from gpuadvisor.probes.kmsg_keep import KEEP_FIRST, KEEP_LAST
from gpuadvisor.probes.kmsg_unjudged import unjudged

from gpuadvisor.importers import import_files, stream
from gpuadvisor.importers.merge import parse_text
from gpuadvisor.rules import evaluate

CORPUS = Path(__file__).resolve().parent / "corpus"
LOGS = [
    CORPUS / "kernel-log" / name
    for name in (
        "dmesg_aer-surprise-down-then-xid79_priyankasingh.txt",
        "dmesg-T_xid119-gsp-rpc-timeout-xe9680_gpud.txt",
        "dmesg_fallen-off-bus-no-xid_lalitadithya.txt",
        "journal_xid45-caused-by-149-145-four-gpus_jedhacker.txt",
    )
]
SMI = CORPUS / "smi" / "smi_2xa100-40gb-cut_bottlerocket.txt"


def _log(name: Path, times: int) -> str:
    body = name.read_text()
    return (body if body.endswith("\n") else body + "\n") * times


def _signature(events: list) -> list[tuple]:
    return [(e.kind, e.code, e.bus_id, e.line, e.text, e.uptime_s, e.time, e.more) for e in events]


@pytest.mark.parametrize("name", LOGS, ids=lambda p: p.name)
@pytest.mark.parametrize("block_lines", [1, 2, 3, 7, 1000])
def test_a_log_fed_in_blocks_gives_the_events_of_the_whole(name: Path, block_lines: int) -> None:
    text = _log(name, 3)
    lines = text.splitlines(keepends=True)
    reader = kmsg.LogReader(first_line=5)
    for k in range(0, len(lines), block_lines):
        reader.feed("".join(lines[k : k + block_lines]), last=k + block_lines >= len(lines))
    assert _signature(reader.finish()[0]) == _signature(kmsg.parse_log(text, first_line=5)[0])
    assert reader.lines == len(lines)


def test_the_events_kept_are_bounded_and_stand_for_every_line() -> None:
    base = LOGS[0]  # gpu-burn#1: AER lines of 0000:00:02.0, and Xid 79 of 0000:02:00 (once each round)
    one, _ = kmsg.parse_log(_log(base, 1))
    events, n = kmsg.parse_log(_log(base, 2000))
    assert n == 2000 * len(base.read_text().splitlines())
    xid79 = [e for e in events if e.kind == "xid" and e.code == 79]
    assert len(xid79) == KEEP_FIRST + KEEP_LAST  # kept: the first and last few
    assert sum(1 + e.more for e in xid79) == 2000 * sum(1 for e in one if e.code == 79)
    assert xid79[0].line == next(e.line for e in one if e.code == 79)  # the first is the log's first
    per_round = len(base.read_text().splitlines())
    assert xid79[-1].line == xid79[0].line + 1999 * per_round  # and the last its last
    groups = {(e.kind, e.code, e.bus_id) for e in events}
    assert len(events) <= len(groups) * (KEEP_FIRST + KEEP_LAST)
    assert len(events) < 60  # 2000 rounds of the log: the same few events as evidence


def _findings(rig) -> list[tuple[str, str, str]]:
    return sorted((f.code, f.severity, f.message) for f in evaluate(rig) if f.severity != "not-checked")


@pytest.mark.parametrize("name", LOGS, ids=lambda p: p.name)
def test_a_big_log_read_as_a_stream_gives_the_findings_of_the_whole(
    name: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kern.log"
    path.write_text(_log(name, 41))  # (an even number would be "pasted twice")
    # a log too big to read whole for its unjudged lines is read for the driver's (whole or streamed): that size too
    monkeypatch.setattr(kmsg_unjudged, "WHOLE_UP_TO", 1)
    read = import_files([path])  # under STREAM_BYTES: read whole
    whole = _findings(read)
    monkeypatch.setattr(stream, "STREAM_BYTES", 1)
    monkeypatch.setattr(stream, "HEAD_BYTES", 4096)
    monkeypatch.setattr(stream, "BLOCK_BYTES", 3000)
    parts = stream.parse_big_log(path)
    assert parts is not None and [p.kind for p in parts] == ["kernel-log"]
    rig = import_files([path])
    assert _findings(rig) == whole and whole
    assert rig.kernel.lines_read == read.kernel.lines_read  # the log's lines, from its first (the head is a note)
    assert rig.kernel.lines_read is not None and rig.kernel.lines_read >= 40 * len(name.read_text().splitlines())


def test_a_big_log_with_another_output_in_it_is_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "dump.txt"
    path.write_text(_log(LOGS[0], 30) + SMI.read_text())
    monkeypatch.setattr(stream, "STREAM_BYTES", 1)
    monkeypatch.setattr(stream, "HEAD_BYTES", 2048)
    monkeypatch.setattr(stream, "BLOCK_BYTES", 2048)
    assert stream.parse_big_log(path) is None  # nvidia-smi's table starts in it: not one log
    rig = import_files([path])
    assert len(rig.gpus) == 2 and {e.code for e in rig.kernel.events or []} >= {79}
    assert [p.kind for p in parse_text(path.read_text())] == ["kernel-log", "smi-summary"]


@pytest.mark.parametrize("block", [7, 64, 4096])
def test_a_saved_log_read_live_in_blocks_gives_the_events_of_the_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    text = _log(LOGS[2], 3) + _log(LOGS[0], 2).rstrip("\n")  # NVSentinel#155 then gpu-burn#1, no last newline
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "kmsg").write_text(text)
    monkeypatch.setattr(kmsg, "BLOCK_BYTES", block)
    log = kmsg.read_kernel_log(tmp_path)
    events, n = kmsg.parse_log(text)
    signs = [e for e in log.events or [] if e.kind != "unjudged"]  # the live probe adds the driver's unjudged lines
    assert (log.lines_read, _signature(signs)) == (n, _signature(events))
    driver = unjudged(text, 1, {e.line for e in events if e.line is not None}, driver_only=True)
    assert _signature([e for e in log.events or [] if e.kind == "unjudged"]) == _signature(driver)
