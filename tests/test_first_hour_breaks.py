"""Small breaks a new user hits in the first hour, each tried as the user typed it."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from gpuadvisor.cli import cli


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, timeout=120)


def test_rules_format_json_prints_json():
    r = CliRunner().invoke(cli, ["rules", "--format", "json"])
    assert r.exit_code == 0
    codes = [x["code"] for x in json.loads(r.output)["rules"]]
    assert codes[0] == "GA101" and len(codes) > 30


def test_advise_takes_task_qlora_as_plan_does():
    as_task = CliRunner().invoke(
        cli, ["advise", "--simulate", "4x4090-pcie", "--model", "llama-3-8b", "--task", "qlora", "--format", "json"]
    )
    as_finetune = CliRunner().invoke(
        cli, ["advise", "--simulate", "4x4090-pcie", "--model", "llama-3-8b", "--finetune", "qlora", "--format", "json"]
    )
    assert as_task.exit_code == 0, as_task.output
    a, b = json.loads(as_task.output), json.loads(as_finetune.output)
    assert a["workload"]["finetune"] == "qlora" and a["task"] == "train"
    assert a["pick"] == b["pick"] and a["candidates"] == b["candidates"]
    clash = _run(
        "advise", "--simulate", "4x4090-pcie", "--model", "llama-3-8b", "--task", "qlora", "--finetune", "lora"
    )
    assert clash.returncode == 2 and clash.stderr.count("\n") == 1 and "disagree" in clash.stderr


def test_counts_with_suffixes():
    r = CliRunner().invoke(cli, ["advise", "--simulate", "dgx-h100", "--params", "7B", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert 6.5e9 < json.loads(r.output)["workload"]["params"] < 7.5e9
    plan = _run("plan", "--model", "llama-3-8b", "--tokens", "1B", "--format", "json")
    assert plan.returncode == 0, plan.stderr
    bad = _run("plan", "--model", "llama-3-8b", "--tokens", "1Q")
    assert bad.returncode == 2 and "is not a number" in bad.stderr


def test_check_quiet_prints_nothing(tmp_path):
    out = tmp_path / "n.prom"
    r = _run("check", "--simulate", "4x4090-pcie", "-q", "--format", "prom", "-o", str(out))
    assert r.returncode == 1 and r.stdout == "" and r.stderr == ""
    assert out.read_text().startswith("# HELP")


def test_plurals_agree():
    r = CliRunner().invoke(cli, ["check", "--simulate", "h100-pcie"], env={"COLUMNS": "200"})
    assert "1 GPU," in r.output and "GPU(s)" not in r.output
    r = CliRunner().invoke(cli, ["check", "--simulate", "dgx-h100"], env={"COLUMNS": "200"})
    assert "8 GPUs," in r.output


def test_check_text_file_carries_no_control_characters(tmp_path):
    from gpuadvisor.collect import simulate

    rig = simulate("4x4090-pcie")
    rig.host.hostname = "evil\x1b]0;pwned\x07\rhost"
    scan = tmp_path / "s.json"
    rig.save(scan)
    out = tmp_path / "r.txt"
    r = _run("check", "--from", str(scan), "-o", str(out), "-q")
    assert r.returncode == 1, r.stderr
    text = out.read_text()
    assert not any(c in text for c in "\x1b\x07\r"), text[:200]
    assert "evil\\x1b" in text


def _complete(words: str, cword: int) -> list[str]:
    env = {"COMP_WORDS": words, "COMP_CWORD": str(cword), "_GPUADVISOR_COMPLETE": "bash_complete", "PATH": ""}
    r = subprocess.run([sys.executable, "-m", "gpuadvisor"], env=env, capture_output=True, text=True, timeout=60)
    return [ln.split(",", 1)[1] for ln in r.stdout.splitlines() if "," in ln]


def test_shell_completion_of_presets_models_and_rule_codes():
    assert _complete("gpuadvisor scan --simulate dgx", 3) == ["dgx-a100", "dgx-h100", "dgx2-v100"]
    assert "llama-3-70b" in _complete("gpuadvisor advise --model llama-3", 3)
    assert _complete("gpuadvisor explain GA10", 2) == ["GA101", "GA102", "GA103", "GA104", "GA105"]
