"""The command line as a user meets it: exit codes, one-line errors, the no-GPU line, start-up cost."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_simulated_scan_saved_and_read_back_prints_the_same(tmp_path):
    s = tmp_path / "s.json"
    a = run("scan", "--simulate", "dgx-h100", "--json", str(s))
    assert a.returncode == 0, a.stderr
    b = run("scan", "--from", str(s))
    assert b.returncode == 0, b.stderr
    # The same rig: the simulated scan and its saved copy render identically.
    assert a.stdout == b.stdout
    assert "SIMULATED rig — preset dgx-h100" in a.stdout
    assert json.loads(s.read_text())["source"]["kind"] == "simulated"
    assert "  GPU7  NV18  NV18  NV18  NV18  NV18  NV18  NV18  X     SYS" in a.stdout


def test_scan_format_json_is_the_saved_json(tmp_path):
    s = tmp_path / "s.json"
    out = run("scan", "--simulate", "2x3090-nvlink", "--json", str(s), "--format", "json")
    assert out.returncode == 0
    assert json.loads(out.stdout) == json.loads(s.read_text())


def test_no_gpu_machine_exits_zero_with_host_facts_and_one_line():
    out = run("scan")
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stdout.splitlines() if "no NVIDIA GPU or driver found" in ln]
    assert len(lines) == 1 and "gpuadvisor scan --simulate dgx-h100" in " ".join(out.stdout.split())
    assert "Verdict: NO GPUS FOUND (" in out.stdout and "Verdict: healthy" not in out.stdout
    assert "Host" in out.stdout and "CPU:" in out.stdout and "RAM:" in out.stdout


@pytest.mark.parametrize(
    "args, needle",
    [
        (("scan", "--from", "/nonexistent/s.json"), "gpuadvisor: error: /nonexistent/s.json: no such file"),
        (("scan", "--simulate", "dgx-h900"), "gpuadvisor: error: unknown preset 'dgx-h900': choose one of"),
        (("scan", "--simulate", "dgx-h100", "--from", "x.json"), "gpuadvisor: error: --from and --simulate both given"),
        (("frobnicate",), "No such command 'frobnicate'"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, needle):
    out = run(*args)
    assert out.returncode == 2
    assert needle in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize(
    "content, needle",
    [
        ("{not json", "not JSON (line 1, column 2"),
        ('{"kind": "gpuadvisor-scan", "schema_version": 7}', "field 'schema_version' is 7"),
        ('{"hello": 1}', "not a gpuadvisor scan"),
    ],
)
def test_bad_scan_files(tmp_path, content, needle):
    p = tmp_path / "bad.json"
    p.write_text(content)
    out = run("scan", "--from", str(p))
    assert out.returncode == 2 and needle in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    verbose = run("-v", "scan", "--from", str(p))
    assert verbose.returncode == 2 and "Traceback" in verbose.stderr


def test_help_imports_nothing_heavy():
    code = (
        "import sys; from gpuadvisor.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    "
        "pass\nprint(sorted(m for m in ('torch', 'jinja2', 'pynvml', 'psutil', 'tabulate') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert "scan" in out.stdout and "presets" in out.stdout


def test_presets_command_lists_them():
    out = run("presets")
    assert out.returncode == 0
    for name in ("dgx-h100", "dgx-a100", "4x4090-pcie", "2x3090-nvlink", "h100-pcie", "dgx2-v100"):
        assert name in out.stdout
    data = json.loads(run("presets", "--json").stdout)
    assert {d["name"]: d["gpus"] for d in data}["dgx2-v100"] == 16


def test_version():
    out = run("--version")
    assert out.returncode == 0 and out.stdout.startswith("gpuadvisor, version ")


def test_broken_pipe_is_quiet():
    p = subprocess.run(
        f"{sys.executable} -m gpuadvisor scan --simulate dgx2-v100 | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.stdout.startswith("gpuadvisor scan")
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr


def test_redact_drops_identifiers(tmp_path):
    s = tmp_path / "s.json"
    out = run("scan", "--simulate", "dgx-h100", "--redact", "--json", str(s))
    assert out.returncode == 0
    d = json.loads(s.read_text())
    assert d["host"]["hostname"] is None and d["host"]["unavailable"]["hostname"] == "redacted"
    assert all(g["uuid"] is None and g["serial"] is None for g in d["gpus"])
    assert "dgx-h100-sim" not in out.stdout and "GPU-" not in s.read_text()


def test_click_usage_errors_are_one_line_too():
    out = run("scan", "--format", "xml")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "gpuadvisor: error: Invalid value for '--format': 'xml' is not one of 'text', 'json'. (see 'gpuadvisor scan "
        "--help')"
    ]
