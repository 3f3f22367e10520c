"""examples/ci/slurm-healthcheck.sh and node-exporter-textfile.sh, run for real with stubbed commands.

``gpuadvisor``, ``sinfo``, ``scontrol``, ``logger`` (and ``mv`` for the textfile script) are small scripts on
PATH that record their arguments to a file and answer as told. The check reports they print are real
``gpuadvisor check`` outputs (made once per module from simulated rigs), so the wrapper parses what the tool
really prints. The rule under test: a node is drained only on gpuadvisor's own verdict; a crash, a bad exit,
garbage, a missing binary, a hang or a signal is "could not check": logged, never a drain, never a resume.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    shutil.which("bash") is None or shutil.which("flock") is None or shutil.which("timeout") is None,
    reason="needs bash, flock and timeout",
)

CI = Path(__file__).resolve().parent.parent / "examples" / "ci"
WRAPPER = CI / "slurm-healthcheck.sh"
TEXTFILE = CI / "node-exporter-textfile.sh"
NODE = "node-a01"

STUB = r"""#!/bin/bash
{ printf '%s' "$(basename "$0")"; printf ' %q' "$@"; echo; } >> "$STUB_LOG"
"""
STUBS = {
    "gpuadvisor": STUB
    + r"""
[ -n "${STUB_IGNORE_TERM:-}" ] && trap '' TERM
[ -n "${STUB_CHILD:-}" ] && { setsid sleep "$STUB_CHILD" & }  # a child outside the process group, stdout kept
[ -n "${STUB_SLEEP:-}" ] && sleep "$STUB_SLEEP"
[ -n "${STUB_SIGNAL:-}" ] && kill -s "$STUB_SIGNAL" $$
out_path=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out_path=$a; prev=$a; done
[ -n "${STUB_PARTIAL:-}" ] && head -c "$STUB_PARTIAL" "$STUB_OUT"  # part of a report on stdout, then fail
if [ -n "${STUB_OUT:-}" ] && [ -z "${STUB_PARTIAL:-}" ]; then
    if [ -n "$out_path" ]; then cat "$STUB_OUT" > "$out_path"; else cat "$STUB_OUT"; fi
fi
[ -n "${STUB_ERR:-}" ] && cat "$STUB_ERR" >&2
exit "${STUB_RC:-0}"
""",
    "sinfo": STUB
    + r"""
[ -n "${SINFO_SLEEP:-}" ] && sleep "$SINFO_SLEEP"
[ -n "${SINFO_LINE:-}" ] && printf '%s\n' "$SINFO_LINE"
exit "${SINFO_RC:-0}"
""",
    "scontrol": STUB
    + r"""
[ -n "${SCONTROL_SLEEP:-}" ] && sleep "$SCONTROL_SLEEP"
exit 0
""",
    "logger": STUB + "exit 0\n",
    "mv": STUB + 'exec /bin/mv "$@"\n',
}

IMPORT_CRASH = """Traceback (most recent call last):
  File "/opt/gpuadvisor/bin/gpuadvisor", line 5, in <module>
    from gpuadvisor.cli import main
ModuleNotFoundError: No module named 'click'
"""


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    """Real check outputs: a passing node (dgx-h100) and a failing one (4x4090-pcie at fail-on warn)."""
    d = tmp_path_factory.mktemp("reports")
    out = {}
    for name, args, rc in (
        ("pass", ["--simulate", "dgx-h100"], 0),
        ("fail", ["--simulate", "4x4090-pcie", "--fail-on", "warn"], 1),
    ):
        for fmt in ("json", "prom"):
            p = _cli("check", *args, "--format", fmt)
            assert p.returncode == rc, p.stderr
            out[f"{name}.{fmt}"] = d / f"{name}.{fmt}"
            out[f"{name}.{fmt}"].write_text(p.stdout)
    return out


class Rig:
    """A stub bin directory, a call log and the environment to run a script with."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.bin = tmp / "bin"
        self.bin.mkdir()
        for name, body in STUBS.items():
            p = self.bin / name
            p.write_text(body)
            p.chmod(0o755)
        self.log = tmp / "calls.log"
        self.log.touch()
        self.textdir = tmp / "textfile"
        self.textdir.mkdir()
        self.env = {
            "PATH": f"{self.bin}:/usr/local/bin:/usr/bin:/bin",
            "STUB_LOG": str(self.log),
            "GPUADVISOR_NODENAME": NODE,
            "GPUADVISOR_DRAIN": "1",
            "GPUADVISOR_LOCK": str(tmp / "run.lock"),
            "GPUADVISOR_DEFAULTS": str(tmp / "no-defaults"),
            "GPUADVISOR_POLICY": str(tmp / "no-policy.toml"),
            "TEXTFILE_DIR": str(self.textdir),
            "SINFO_LINE": "idle none",
            "LC_ALL": "C",
        }

    def answer(self, out: str | Path | None = None, rc: int = 0, err: str | None = None, **env: str) -> None:
        """What the gpuadvisor stub prints and how it exits."""
        if out is not None:
            p = out if isinstance(out, Path) else self.tmp / "stub.out"
            if not isinstance(out, Path):
                p.write_text(out)
            self.env["STUB_OUT"] = str(p)
        if err is not None:
            (self.tmp / "stub.err").write_text(err)
            self.env["STUB_ERR"] = str(self.tmp / "stub.err")
        self.env["STUB_RC"] = str(rc)
        self.env.update(env)

    def run(self, script: Path, timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
        t0 = time.monotonic()
        p = subprocess.run(["bash", str(script)], env=self.env, capture_output=True, text=True, timeout=timeout)
        return p, time.monotonic() - t0

    def calls(self, name: str) -> list[list[str]]:
        """The argument lists the stub ``name`` was called with, in order."""
        rows = [shlex.split(line) for line in self.log.read_text().splitlines() if line.strip()]
        return [r[1:] for r in rows if r[0] == name]

    def logged(self) -> str:
        return "\n".join(" ".join(c) for c in self.calls("logger"))


@pytest.fixture
def rig(tmp_path) -> Rig:
    return Rig(tmp_path)


def _drains(rig: Rig) -> list[list[str]]:
    return [c for c in rig.calls("scontrol") if any(a.startswith("State=DRAIN") for a in c)]


# -- the Slurm wrapper ---------------------------------------------------------------------------------


def test_pass_logs_ok_and_touches_nothing(rig, reports):
    rig.answer(reports["pass.json"], 0)
    p, _ = rig.run(WRAPPER)
    assert p.returncode == 0
    assert rig.calls("gpuadvisor") == [["check", "--format", "json"]]
    assert rig.calls("scontrol") == []
    assert f"{NODE}: ok (ok at fail-on fail" in rig.logged()


def test_fail_drains_with_the_first_failing_finding_as_reason(rig, reports):
    summary = json.loads(reports["fail.json"].read_text())["summary"]
    assert summary == "GA101 pcie-link-downgraded: GPU 2 0000:41:00.0 (+2 more)"
    rig.answer(reports["fail.json"], 1)
    p, _ = rig.run(WRAPPER)
    assert p.returncode == 0
    assert rig.calls("scontrol") == [
        [
            "update",
            f"NodeName={NODE}",
            "State=DRAIN",
            "Reason=gpuadvisor: GA101 pcie-link-downgraded: GPU 2 0000:41:00.0 (+2 more)",
        ]
    ]
    assert rig.calls("sinfo") == [["-h", "-N", "-n", NODE, "-o", "%t %E"]]


def test_fail_without_drain_opt_in_only_logs(rig, reports):
    rig.answer(reports["fail.json"], 1)
    rig.env["GPUADVISOR_DRAIN"] = "0"
    rig.run(WRAPPER)
    assert rig.calls("scontrol") == [] and rig.calls("sinfo") == []
    assert "node fails: GA101 pcie-link-downgraded" in rig.logged()


def test_same_reason_already_set_is_not_rewritten(rig, reports):
    rig.answer(reports["fail.json"], 1)
    rig.env["SINFO_LINE"] = "drain gpuadvisor: GA101 pcie-link-downgraded: GPU 2 0000:41:00.0 (+2 more)"
    rig.run(WRAPPER)
    assert rig.calls("scontrol") == []


@pytest.mark.parametrize(
    "case",
    [
        "import-crash",
        "exit-2",
        "garbage",
        "not-a-report",
        "disagrees",
        "pass-json-exit-1",
        "empty-exit-1",
        "segfault",
        "sigkill",
    ],
)
def test_anything_but_the_tools_own_verdict_never_drains(rig, reports, case):
    fail = json.loads(reports["fail.json"].read_text())
    if case == "import-crash":  # a broken venv: python exits 1 with a traceback and no report
        rig.answer("", 1, IMPORT_CRASH)
        why = "ModuleNotFoundError: No module named 'click'"
    elif case == "exit-2":
        rig.answer("", 2, "gpuadvisor: error: no GPU to check on node-a01: no NVIDIA driver loaded\n")
        why = "gpuadvisor exit 2: gpuadvisor: error: no GPU to check on node-a01: no NVIDIA driver loaded"
    elif case == "garbage":
        rig.answer('{"exit_code": 1, "failing": ["GA101"', 1)
        why = "stdout is not a JSON document: JSONDecodeError"
    elif case == "not-a-report":
        rig.answer('{"exit_code": 1}', 1)
        why = "stdout is JSON but not a gpuadvisor check report"
    elif case == "disagrees":  # a failing report, but the process exited 0
        rig.answer(reports["fail.json"], 0)
        why = f"the report (exit_code 1, {len(fail['failing'])} failing) disagrees with exit 0"
    elif case == "pass-json-exit-1":  # a passing report followed by a crash at exit
        rig.answer(reports["pass.json"], 1, "Exception ignored in: <_io.TextIOWrapper>\nBrokenPipeError\n")
        why = "the report (exit_code 0, 0 failing) disagrees with exit 1"
    elif case == "empty-exit-1":
        rig.answer("", 1)
        why = "stdout is not a JSON document"
    elif case == "sigkill":  # the out-of-memory killer, well before the deadline: exit 137, not a time-out
        rig.answer(reports["fail.json"], 0, STUB_SIGNAL="KILL")
        why = "gpuadvisor was killed (SIGKILL) after "
    else:
        rig.answer(reports["fail.json"], 0, STUB_SIGNAL="SEGV")
        why = "gpuadvisor killed by signal 11"
    rig.env["SINFO_LINE"] = "drain gpuadvisor: GA101 earlier failure"  # ours: not resumed either
    p, _ = rig.run(WRAPPER)
    assert p.returncode == 0
    assert rig.calls("scontrol") == [] and rig.calls("sinfo") == []
    assert "could not check (nothing drained or resumed)" in rig.logged()
    assert why in rig.logged()
    assert "could not check" in p.stderr and why in p.stderr


def test_missing_gpuadvisor_never_drains(rig):
    rig.env["GPUADVISOR"] = str(rig.tmp / "no-such-gpuadvisor")
    p, _ = rig.run(WRAPPER)
    assert p.returncode == 0 and rig.calls("scontrol") == []
    assert "no-such-gpuadvisor not found or not executable (exit 127)" in rig.logged()


@pytest.mark.parametrize("ignore_term", [False, True])
def test_hung_check_is_killed_within_the_deadline_and_never_drains(rig, reports, ignore_term):
    rig.answer(reports["fail.json"], 1, STUB_SLEEP="600", GPUADVISOR_DEADLINE="5")
    if ignore_term:
        rig.env["STUB_IGNORE_TERM"] = "1"
    p, took = rig.run(WRAPPER, timeout=30)
    assert p.returncode == 0
    assert took < 20, took  # the check sleeps 600 s: a wide margin, so the machine's load cannot flip the verdict
    assert rig.calls("scontrol") == []
    assert "gpuadvisor timed out (killed at the 5 s deadline)" in rig.logged()


def test_deadline_holds_when_a_child_keeps_stdout_open(rig, reports):
    # the check hangs; a child it started left the process group (setsid) and keeps stdout open for 20 s
    rig.answer(reports["fail.json"], 1, STUB_SLEEP="600", STUB_CHILD="30", GPUADVISOR_DEADLINE="5")
    p, took = rig.run(WRAPPER, timeout=60)
    assert p.returncode == 0
    assert took < 20, took  # the deadline (5 s), not the child's 30 s, with room for a loaded machine
    assert rig.calls("scontrol") == []
    assert "gpuadvisor timed out (killed at the 5 s deadline)" in rig.logged()


def test_default_deadline_is_inside_slurms_60_seconds():
    text = WRAPPER.read_text()
    assert 'DEADLINE="${GPUADVISOR_DEADLINE:-50}"' in text
    assert 'DEADLINE="${GPUADVISOR_DEADLINE:-50}"' in TEXTFILE.read_text()


def test_slow_scontrol_is_bounded(rig, reports):
    rig.answer(reports["fail.json"], 1, SCONTROL_SLEEP="600", GPUADVISOR_DEADLINE="6")
    p, took = rig.run(WRAPPER, timeout=30)
    assert p.returncode == 0 and took < 20, took  # scontrol sleeps 600 s; the deadline is 6 s
    assert len(_drains(rig)) == 1  # it was asked, and given up on
    assert "scontrol drain failed or timed out (exit 124)" in p.stderr


def test_slow_sinfo_is_bounded_and_nothing_is_done(rig, reports):
    rig.answer(reports["fail.json"], 1, SINFO_SLEEP="600", GPUADVISOR_DEADLINE="6")
    p, took = rig.run(WRAPPER, timeout=30)
    assert took < 20, took  # sinfo sleeps 600 s; the deadline is 6 s
    assert rig.calls("scontrol") == []
    assert f"sinfo gave no state for node {NODE} (exit 124): not draining or resuming" in rig.logged()


def test_sinfo_failure_never_drains_over_an_unknown_reason(rig, reports):
    rig.answer(reports["fail.json"], 1, SINFO_RC="1", SINFO_LINE="")
    rig.run(WRAPPER)
    assert rig.calls("scontrol") == []


def test_runs_do_not_overlap(rig, reports):
    rig.answer(reports["pass.json"], 0, STUB_SLEEP="3")
    first = subprocess.Popen(["bash", str(WRAPPER)], env=rig.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while not rig.calls("gpuadvisor"):  # the first run holds the lock once it has started the check
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        p, _ = rig.run(WRAPPER)
        assert p.returncode == 0  # it did not wait for the lock: the check ran once, and the skip is logged
        assert p.stderr == ""  # quiet: only syslog hears about it
        assert "a previous health check is still running" in rig.logged()
        assert len(rig.calls("gpuadvisor")) == 1
    finally:
        first.wait(timeout=30)
    assert first.returncode == 0
    p, _ = rig.run(WRAPPER)  # the lock is free again
    assert len(rig.calls("gpuadvisor")) == 2


def test_resumes_only_a_node_it_drained(rig, reports):
    rig.answer(reports["pass.json"], 0)
    rig.env["SINFO_LINE"] = "drain gpuadvisor: GA101 pcie-link-downgraded: GPU 2 0000:41:00.0"
    rig.run(WRAPPER)
    assert rig.calls("scontrol") == [["update", f"NodeName={NODE}", "State=RESUME"]]


@pytest.mark.parametrize("verdict", ["pass", "fail"])
def test_node_drained_by_an_admin_is_untouched(rig, reports, verdict):
    rig.answer(reports[f"{verdict}.json"], 0 if verdict == "pass" else 1)
    rig.env["SINFO_LINE"] = "drain Maintenance by bob: PSU swap"
    rig.run(WRAPPER)
    assert rig.calls("scontrol") == []
    if verdict == "fail":
        assert (
            "not draining: the node already has a reason set by someone else (Maintenance by bob: PSU swap)"
            in rig.logged()
        )


def test_reboot_pending_is_not_resumed(rig, reports):
    rig.answer(reports["pass.json"], 0)
    rig.env["SINFO_LINE"] = "drain@ gpuadvisor: GA101 earlier"
    rig.run(WRAPPER)
    assert rig.calls("scontrol") == []


def test_reason_is_one_clean_line_scontrol_accepts(rig, reports):
    doc = json.loads(reports["fail.json"].read_text())
    doc["summary"] = "GA101 \"quoted\" 'x'\n$(reboot) `id` \x1b]0;title\x07 " + "y" * 300
    rig.answer(json.dumps(doc), 1)
    rig.run(WRAPPER)
    (call,) = _drains(rig)
    reason = call[3].removeprefix("Reason=")
    assert len(reason) <= 120
    assert reason.startswith("gpuadvisor: GA101 quoted x (reboot) id 0;title yyy") and reason.endswith("...")
    assert not set(reason) & set("\"'`$\n\r\x1b\x07\\")


# -- the node_exporter textfile script -------------------------------------------------------------------

OLD = "# an earlier report\ngpuadvisor_check_status 0\n"


def _up(rig: Rig) -> str:
    return (rig.textdir / "gpuadvisor_check_up.prom").read_text()


def _leftovers(rig: Rig) -> list[str]:
    keep = ("gpuadvisor.prom", "gpuadvisor_check_up.prom")
    return sorted(p.name for p in rig.textdir.iterdir() if p.name not in keep)


@pytest.mark.parametrize("verdict", ["pass", "fail"])
def test_textfile_written_atomically_in_the_same_directory(rig, reports, verdict):
    (rig.textdir / "gpuadvisor.prom").write_text(OLD)
    rig.answer(reports[f"{verdict}.prom"], 0 if verdict == "pass" else 1)
    p, _ = rig.run(TEXTFILE)
    assert p.returncode == 0, p.stderr
    report = rig.textdir / "gpuadvisor.prom"
    assert report.read_bytes() == reports[f"{verdict}.prom"].read_bytes()
    assert oct(report.stat().st_mode & 0o777) == "0o644"
    assert "\ngpuadvisor_check_up 1\n" in _up(rig)
    moves = rig.calls("mv")
    assert [m[-1] for m in moves] == [str(report), str(rig.textdir / "gpuadvisor_check_up.prom")]
    assert all(Path(m[-2]).parent == rig.textdir and Path(m[-2]).name.startswith(".") for m in moves)
    assert _leftovers(rig) == []
    (call,) = rig.calls("gpuadvisor")
    assert call[:4] == ["check", "--format", "prom", "-o"] and Path(call[4]).parent == rig.textdir


@pytest.mark.parametrize(
    "case",
    ["import-crash", "exit-2", "garbage", "status-disagrees", "hang", "missing", "partial-then-exit-1", "sigkill"],
)
def test_textfile_keeps_the_old_report_when_it_could_not_check(rig, reports, case):
    (rig.textdir / "gpuadvisor.prom").write_text(OLD)
    if case == "import-crash":
        rig.answer("", 1, IMPORT_CRASH)
        why = "gpuadvisor exit 1 without a complete report (stderr: ModuleNotFoundError"
    elif case == "exit-2":
        rig.answer("", 2, "gpuadvisor: error: no GPU to check\n")
        why = "gpuadvisor exit 2: gpuadvisor: error: no GPU to check"
    elif case == "garbage":
        rig.answer("gpuadvisor_check_sta", 0)
        why = "gpuadvisor exit 0 without a complete report"
    elif case == "status-disagrees":
        rig.answer(reports["pass.prom"], 1)
        why = "gpuadvisor exit 1 without a matching gpuadvisor_check_status line"
    elif case == "hang":
        rig.answer(reports["pass.prom"], 0, STUB_SLEEP="600", GPUADVISOR_DEADLINE="5")
        why = "gpuadvisor timed out (killed at the 5 s deadline)"
    elif case == "sigkill":  # killed at once (the out-of-memory killer): exit 137 but no time-out
        rig.answer(reports["pass.prom"], 0, STUB_SIGNAL="KILL")
        why = "gpuadvisor was killed (SIGKILL) after "
    elif case == "partial-then-exit-1":  # a report cut short after its status line, then a crash
        text = reports["fail.prom"].read_text()
        cut = text.index("\n", text.index("gpuadvisor_check_status 1")) + 1
        rig.answer(reports["fail.prom"], 1, STUB_PARTIAL=str(cut))
        why = "gpuadvisor exit 1 without a complete report"
    else:
        rig.env["GPUADVISOR"] = str(rig.tmp / "nope")
        why = f"{rig.tmp / 'nope'} not found or not executable (exit 127)"
    p, took = rig.run(TEXTFILE, timeout=30)
    assert p.returncode == 0 and took < 6.5
    assert (rig.textdir / "gpuadvisor.prom").read_text() == OLD
    assert "\ngpuadvisor_check_up 0\n" in _up(rig)
    assert "could not check: " + why in rig.logged()
    assert _leftovers(rig) == []


def test_textfile_replaces_a_symlink_not_its_target(rig, reports, tmp_path):
    target = tmp_path / "victim"
    target.write_text("precious\n")
    (rig.textdir / "gpuadvisor.prom").symlink_to(target)
    rig.answer(reports["pass.prom"], 0)
    rig.run(TEXTFILE)
    assert target.read_text() == "precious\n"
    assert not (rig.textdir / "gpuadvisor.prom").is_symlink()


def test_textfile_runs_do_not_overlap(rig, reports):
    rig.answer(reports["pass.prom"], 0, STUB_SLEEP="3")
    first = subprocess.Popen(["bash", str(TEXTFILE)], env=rig.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while not rig.calls("gpuadvisor"):
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        p, took = rig.run(TEXTFILE)
        assert p.returncode == 0 and took < 2 and p.stderr == ""
        assert "a previous run is still going" in rig.logged()
    finally:
        first.wait(timeout=30)
    assert len(rig.calls("gpuadvisor")) == 1
    assert (rig.textdir / "gpuadvisor.prom").read_bytes() == reports["pass.prom"].read_bytes()


def test_scripts_pass_shellcheck():
    if shutil.which("shellcheck") is None:
        if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
            pytest.fail("shellcheck is required under CI (make test installs the Debian package shellcheck)")
        pytest.skip("shellcheck not installed (make test installs it; apt-get install shellcheck)")
    p = subprocess.run(["shellcheck", str(WRAPPER), str(TEXTFILE)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout
