"""Strings from scans and imported text never drive the terminal: control characters (C0 but newline and tab,
DEL, C1, ESC sequences, BEL, CR, OSC, bidirectional overrides, lone surrogates) are printed visibly, by one
sanitiser at the output edge (gpuadvisor.streams); JSON stays faithful."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpuadvisor.streams import sanitise

EVIL_HOST = "node\x1b]0;pwned\x07\rFAKE: healthy\x1b[2K\x9b31m"
EVIL_GPU = "NVIDIA H100\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\\u202egnp.exe\x08\x7f"
# Anything a terminal would obey: C0 but \n and \t, DEL, C1, bidi overrides.
OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpuadvisor", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        encoding="utf-8",
        errors="surrogateescape",
    )


@pytest.fixture(scope="module")
def evil_scan(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("evil")
    r = run("scan", "--simulate", "h100-pcie", "--format", "json")
    doc = json.loads(r.stdout)
    doc["host"]["hostname"] = EVIL_HOST
    doc["gpus"][0]["name"] = EVIL_GPU
    p = d / "evil.json"
    p.write_text(json.dumps(doc))  # ensure_ascii: the file itself holds only escapes
    return p


@pytest.mark.parametrize(
    "args",
    [
        ("scan", "--from", "{f}"),
        ("scan", "--from", "{f}", "--model", "gpt2"),
        ("report", "{f}"),
        ("check", "--from", "{f}"),
        ("check", "--from", "{f}", "--format", "prom"),
        ("advise", "--from", "{f}", "--model", "gpt2"),
    ],
)
def test_hostile_names_are_printed_visibly_never_obeyed(evil_scan, args):
    r = run(*(a.replace("{f}", str(evil_scan)) for a in args))
    assert r.returncode in (0, 1), r.stderr
    assert not OBEYED.search(r.stdout), repr(OBEYED.search(r.stdout))
    assert not OBEYED.search(r.stderr)
    if args[0] in ("scan", "report", "check") and "prom" not in args:
        assert "node\\x1b]0;pwned\\x07\\rFAKE: healthy" in r.stdout


def test_json_output_stays_faithful(evil_scan):
    r = run("scan", "--from", evil_scan, "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["host"]["hostname"] == EVIL_HOST and doc["gpus"][0]["name"] == EVIL_GPU
    r = run("check", "--from", evil_scan, "--format", "json")
    assert json.loads(r.stdout)["source"]["hostname"] == EVIL_HOST


def test_imported_text_with_escapes_is_printed_visibly(tmp_path):
    """An nccl-tests log whose rank lines name a hostile host: the hostname reaches the text visibly escaped."""
    log = Path(__file__).parent / "fixtures" / "import" / "own" / "nccl-allgather_8xh100-new-header.txt"
    evil = tmp_path / "nccl.txt"
    evil.write_text(log.read_text().replace("dgx-h100-07", "dgx\x1b]0;owned\x07\x9b-07"))
    r = run("import", evil)
    assert r.returncode == 0, r.stderr
    assert not OBEYED.search(r.stdout) and not OBEYED.search(r.stderr)
    assert "dgx\\x1b]0;owned\\x07\\x9b-07" in r.stdout
    r = run("import", evil, "--format", "json")
    assert json.loads(r.stdout)["host"]["hostname"] == "dgx\x1b]0;owned\x07\x9b-07"


def test_error_messages_naming_hostile_paths_are_sanitised(tmp_path):
    r = run("scan", "--from", tmp_path / "x\x1b]0;t\x07.json")
    assert r.returncode == 2 and not OBEYED.search(r.stderr)
    assert "x\\x1b]0;t\\x07.json: no such file" in r.stderr
    r = run("explain", "GA1\x1b[31m\r")
    assert r.returncode == 2 and not OBEYED.search(r.stderr) and "GA1\\x1b[31m\\r" in r.stderr


def test_a_lone_surrogate_reaching_the_terminal_is_escaped_not_a_crash():
    assert sanitise("a\udc80b") == "a\\udc80b"


def test_sanitise_keeps_our_colours_on_a_terminal_only():
    ours = "\x1b[1;31mFAIL\x1b[0m \x1b[2mdim\x1b[0m \x1b[33mwarn\x1b[0m"
    assert sanitise(ours, allow_colour=True) == ours
    assert sanitise(ours) == ours.replace("\x1b", "\\x1b")
    # Not ours: conceal (8), cursor movement, erase line, OSC, 8-bit CSI.
    for evil in ("\x1b[8m", "\x1b[2K", "\x1b[1A", "\x1b]0;t\x07", "\x9b31m", "\x1b[38;5;1m"):
        out = sanitise(f"a{evil}b", allow_colour=True)
        assert not OBEYED.search(out) or out.count("\x1b") == 0, (evil, out)
        assert "\x1b" not in out and "\x9b" not in out
    assert sanitise("tab\tand\nnewline") == "tab\tand\nnewline"
    assert sanitise("bell\x07 cr\r del\x7f nel\x85 rlo\u202e") == "bell\\x07 cr\\r del\\x7f nel\\x85 rlo\\u202e"
