"""A closed stdout (`gpuadvisor ... | head`) never changes the exit status, and a stdout that cannot be written
(a full disk) is one line on stderr and exit 2 (gpuadvisor.streams)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CMD = [sys.executable, "-m", "gpuadvisor"]


def _closed_reader(args: list[str]) -> subprocess.CompletedProcess:
    """Run with stdout on a pipe whose read end is closed before the command writes a byte: every write
    gets EPIPE, deterministically (no race with `head`)."""
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run(CMD + args, stdout=w, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)
    return p


@pytest.mark.parametrize(
    "args, rc",
    [
        (["scan", "--simulate", "dgx2-v100"], 0),
        (["scan", "--simulate", "dgx2-v100", "--format", "json"], 0),
        (["report", "--simulate", "dgx-h100", "--format", "html"], 0),
        (["rules"], 0),
        (["explain", "GA101"], 0),
        (["--help"], 0),
        (["check", "--simulate", "dgx-h100"], 0),
        (["check", "--simulate", "4x4090-pcie"], 1),  # a failing node stays failing: the verdict, not the pipe
    ],
)
def test_a_closed_stdout_keeps_the_commands_own_exit_status(args, rc):
    p = _closed_reader(args)
    assert p.returncode == rc, p.stderr
    assert p.stderr == ""  # no traceback, no "Exception ignored", no BrokenPipeError


def test_the_saved_file_is_written_even_when_stdout_closed(tmp_path):
    out = tmp_path / "s.json"
    p = _closed_reader(["scan", "--simulate", "dgx2-v100", "--json", str(out)])
    assert p.returncode == 0 and out.stat().st_size > 10_000
    assert p.stderr == f"scan written to {out}\n"


def test_head_under_pipefail_exits_0_every_time():
    """The real thing: `set -o pipefail; gpuadvisor ... | head -n N` with the pipe closed at different points."""
    script = (
        "set -o pipefail; fails=0; "
        "for n in 1 2 3 5 8 13 21 34 55 89 144 200; do "
        f"  {sys.executable} -m gpuadvisor scan --simulate dgx2-v100 | head -n $n > /dev/null || fails=$((fails+1)); "
        "done; echo fails=$fails"
    )
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300)
    assert p.stdout.strip() == "fails=0", p.stderr
    assert "Traceback" not in p.stderr and "Broken" not in p.stderr and "Exception ignored" not in p.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args",
    [
        ["scan", "--simulate", "dgx-h100"],
        ["scan", "--simulate", "dgx-h100", "--format", "json"],
        ["check", "--simulate", "dgx-h100", "--format", "junit"],
        ["presets"],
    ],
)
def test_stdout_on_a_full_disk_is_one_line_and_exit_2(args):
    with open("/dev/full", "w") as full:
        p = subprocess.run(CMD + args, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert p.returncode == 2
    assert p.stderr == "gpuadvisor: error: cannot write to stdout (No space left on device)\n"


def test_a_closed_stderr_is_not_fatal_either(tmp_path):
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run(
            CMD + ["scan", "--simulate", "h100-pcie", "--json", str(tmp_path / "s.json")],
            stdout=subprocess.PIPE,
            stderr=w,
            text=True,
            timeout=120,
        )
    finally:
        os.close(w)
    assert p.returncode == 0 and "gpuadvisor scan" in p.stdout and (tmp_path / "s.json").exists()
