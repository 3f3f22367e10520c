"""Policy files: select / ignore / severity / thresholds / fail_on, and one-line errors (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuadvisor.cli import cli
from gpuadvisor.errors import InputError
from gpuadvisor.rules import Policy, PolicyError, evaluate, load_policy, parse_policy

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "policies"


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "node.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_example_policies_load():
    p = load_policy(EXAMPLES / "node.toml")
    assert p.ignore == ["GA202", "GA405"]
    assert p.severity == {"GA313": "fail", "GA306": "fail"}
    assert p.thresholds == {"bandwidth_warn_ratio": 0.92, "pcie_replay_max": 40.0}
    assert p.fail_on == "fail"
    w = load_policy(EXAMPLES / "training-workstation.toml")
    assert w.ignore == ["GA203", "GA206"] and w.thresholds == {"ram_per_gpu_gb": 32.0}


def test_workstation_policy_accepts_the_4x4090s_known_limits(preset):
    findings = evaluate(preset("4x4090-pcie"), EXAMPLES / "training-workstation.toml")
    assert {(f.code, f.severity) for f in findings if f.severity in ("warn", "fail")} == {("GA101", "fail")}


def test_select_prefix_and_ignore_wins(preset):
    rig = preset("4x4090-pcie")
    only_pcie = evaluate(rig, parse_policy({"select": ["GA1"]}))
    assert {f.code[:3] for f in only_pcie} == {"GA1"}
    out = evaluate(rig, parse_policy({"select": ["GA2"], "ignore": ["GA206"]}))
    assert {f.code for f in out} == {"GA202", "GA203"}


def test_severity_override_longest_key_wins(preset):
    rig = preset("4x4090-pcie")
    policy = parse_policy({"severity": {"GA2": "fail", "GA202": "warn"}})
    by_code = {f.code: f.severity for f in evaluate(rig, policy)}
    assert (by_code["GA203"], by_code["GA206"], by_code["GA202"]) == ("fail", "fail", "warn")
    assert by_code["GA302"] == "not-checked"  # not-checked and error are never re-graded


def test_threshold_override_changes_the_verdict(preset):
    rig = preset("dgx-h100")  # 2 TiB RAM for 8 GPUs: 275 GB per GPU
    assert not [f for f in evaluate(rig) if f.code == "GA401"]
    out = [f for f in evaluate(rig, parse_policy({"thresholds": {"ram_per_gpu_gb": 300}})) if f.code == "GA401"]
    assert [(f.severity, f.expected) for f in out] == [("warn", {"memory_total_gb": 2400.0})]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"selct": ["GA1"]}, "policy: unknown key 'selct' (allowed: select, ignore, severity, thresholds, fail_on)"),
        (
            {"select": ["GA999"]},
            "policy: select: unknown rule code or prefix 'GA999' (list them with 'gpuadvisor rules')",
        ),
        ({"ignore": ["GA7"]}, "policy: ignore: unknown rule code or prefix 'GA7' (list them with 'gpuadvisor rules')"),
        ({"select": "GA101"}, None),
        ({"select": [1]}, 'policy: \'select\' must be a list of rule codes or prefixes (e.g. ["GA1", "GA302"])'),
        (
            {"severity": {"GA999": "warn"}},
            "policy: severity: unknown rule code or prefix 'GA999' (list them with 'gpuadvisor rules')",
        ),
        ({"severity": {"GA101": "fatal"}}, "policy: severity.GA101 = 'fatal'; expected one of info, warn, fail"),
        (
            {"thresholds": {"ram_per_gpu": 8}},
            "policy: unknown threshold 'ram_per_gpu' (list them with 'gpuadvisor rules --json')",
        ),
        (
            {"thresholds": {"bandwidth_warn_ratio": 1.5}},
            "policy: thresholds.bandwidth_warn_ratio: 1.5 is above the allowed maximum 1",
        ),
        (
            {"thresholds": {"pcie_replay_max": "many"}},
            "policy: thresholds.pcie_replay_max: expected a number, got 'many'",
        ),
        (
            {"thresholds": {"pcie_replay_max": 2.5}},
            "policy: thresholds.pcie_replay_max: expected a whole number, got 2.5",
        ),
        (
            {"thresholds": {"bandwidth_fail_ratio": 0.95}},
            "policy: thresholds.bandwidth_fail_ratio (0.95) is above bandwidth_warn_ratio (0.9); the failure bound "
            "must be the lower one",
        ),
        ({"fail_on": "error"}, "policy: fail_on = 'error'; expected one of info, warn, fail"),
    ],
)
def test_bad_policies_are_one_line_naming_the_culprit(data, message):
    if message is None:
        assert parse_policy(data).select == ["GA101"]
        return
    with pytest.raises(PolicyError) as e:
        parse_policy(data)
    assert str(e.value) == message
    assert isinstance(e.value, InputError) and e.value.exit_code == 2


def test_file_errors(tmp_path):
    with pytest.raises(PolicyError, match="no such policy file"):
        load_policy(tmp_path / "missing.toml")
    bad = write(tmp_path, "select = [GA1\n")
    with pytest.raises(PolicyError) as e:
        load_policy(bad)
    assert str(e.value).startswith(f"{bad}: not valid TOML (") and "\n" not in str(e.value)


def test_defaults():
    p = Policy()
    assert p.is_selected("GA101") and p.severity_for("GA101") is None and p.fail_on == "fail"
    assert p.resolved_thresholds()["bandwidth_fail_ratio"] == 0.75


def _gpuadvisor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, timeout=60)


def test_cli_policy_with_unknown_key_is_one_line_exit_2(tmp_path):
    p = write(tmp_path, 'select = ["ALL"]\ncolour = "red"\n')
    r = _gpuadvisor("rules", "--policy", str(p))
    assert r.returncode == 2 and r.stdout == ""
    assert (
        r.stderr
        == f"gpuadvisor: error: {p}: unknown key 'colour' (allowed: select, ignore, severity, thresholds, fail_on)\n"
    )


def test_cli_policy_with_unknown_code_is_one_line_exit_2(tmp_path):
    p = write(tmp_path, 'ignore = ["GA1O1"]\n')
    r = _gpuadvisor("rules", "--policy", str(p))
    assert r.returncode == 2
    assert (
        r.stderr
        == f"gpuadvisor: error: {p}: ignore: unknown rule code or prefix 'GA1O1' (list them with 'gpuadvisor rules')\n"
    )


def test_cli_rules_shows_the_policys_effect():
    res = CliRunner().invoke(cli, ["rules", "--policy", str(EXAMPLES / "node.toml")], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    rows: dict[str, str] = {}
    for ln in res.output.splitlines():  # the first table (code, name, area, severity) holds the severities
        if ln.startswith("GA"):
            rows.setdefault(ln.split()[0], ln)
    assert rows["GA202"].split()[-1] == "off" and "fail (default warn)" in rows["GA313"]
    assert "bandwidth_warn_ratio = 0.92 measured / expected (default 0.9)" in res.output
