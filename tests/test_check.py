"""gpuadvisor check: the node gate's exit codes, and its JUnit XML and Prometheus textfile output."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gpuadvisor.cli import main
from gpuadvisor.errors import InputError
from gpuadvisor.render.machine.junit import render_junit
from gpuadvisor.render.machine.prometheus import escape_label_value, render_prometheus
from gpuadvisor.rules import Policy, all_rules, parse_policy
from gpuadvisor.rules.gate import gates, gating_severities, run_check

FIXTURES = Path(__file__).parent / "fixtures"
N_RULES = len(all_rules())
# The 4x RTX 4090 preset's rules that cannot run (facts missing): ECC and memory retirement (GeForce),
# the PSU (not given), torch (simulated), the six bandwidth rules and the compute rule (nothing measured).
SKIPPED_4090 = {
    "GA302",
    "GA303",
    "GA304",
    "GA305",
    "GA306",
    "GA307",
    "GA405",
    "GA502",
    "GA601",
    "GA602",
    "GA603",
    "GA604",
    "GA605",
    "GA606",
    "GA607",
}


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """The real entry point in this process (exit code via SystemExit), stdout, stderr."""
    with pytest.raises(SystemExit) as e:
        main(list(args))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, timeout=60)


def policy_file(tmp_path: Path, text: str) -> str:
    p = tmp_path / "node.toml"
    p.write_text(text)
    return str(p)


# -- the gate -----------------------------------------------------------------------------------------------


def test_gate_levels():
    assert gating_severities("fail") == ["fail"]
    assert gating_severities("warn") == ["fail", "error", "warn"]
    assert gating_severities("info") == ["fail", "error", "warn", "info"]
    assert not any(gates("not-checked", level) for level in ("info", "warn", "fail"))
    with pytest.raises(ValueError):
        gates("fail", "error")


def test_4x4090_fails_on_ga101_and_exits_1(capsys):
    rc, out, err = cli(capsys, "check", "--simulate", "4x4090-pcie")
    assert rc == 1, err
    assert "FAIL   GA101 pcie-link-downgraded  GPU 2 0000:41:00.0" in out
    assert out.rstrip().splitlines()[-1] == "Gate: FAIL (fail-on fail): GA101; exit 1"  # not "fails on fail"
    head = " ".join(ln.strip() for ln in out.split("\n\n")[0].splitlines())
    assert (
        head
        == f"gpuadvisor check: ws-4x4090-sim (simulated preset 4x4090-pcie), 4 GPUs, {N_RULES} rules, policy default"
    )


def test_dgx_h100_passes_at_fail_on_warn(capsys):
    rc, out, err = cli(capsys, "check", "--simulate", "dgx-h100", "--fail-on", "warn")
    assert rc == 0, err
    assert out.rstrip().splitlines()[-1] == ("Gate: pass (fail-on warn: fails on fail, error, warn); exit 0")


def test_4x4090_at_fail_on_warn_fails_on_the_warnings_too(capsys):
    rc, out, _ = cli(capsys, "check", "--simulate", "4x4090-pcie", "--fail-on", "warn", "--format", "json")
    doc = json.loads(out)
    assert rc == 1 and doc["exit_code"] == 1
    assert doc["failing"] == ["GA101", "GA203", "GA206"]  # GA202 is info: below the gate
    assert doc["counts"] == {"fail": 1, "error": 0, "warn": 2, "info": 1, "not-checked": 15}
    assert doc["verdict"] == "failing" and doc["fail_on"] == "warn"
    assert doc["gating_severities"] == ["fail", "error", "warn"]
    assert doc["summary"] == "GA101 pcie-link-downgraded: GPU 2 0000:41:00.0 (+2 more)"
    assert len(doc["findings"]) == 19 and doc["findings"][0]["code"] == "GA101"
    assert doc["findings"][0]["observed"] == {"current_link_width": 8}


def test_policy_ignoring_ga101_lets_4x4090_pass(capsys, tmp_path):
    pol = policy_file(tmp_path, 'ignore = ["GA101"]\n')
    rc, out, err = cli(capsys, "check", "--simulate", "4x4090-pcie", "--policy", pol, "--format", "json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["rules_selected"] == N_RULES - 1 and doc["policy"] == pol
    assert doc["summary"] == "ok at fail-on fail (2 warn, 1 info below the gate)"
    assert "GA101" not in {f["code"] for f in doc["findings"]}


def test_policy_fail_on_is_the_default_and_the_option_overrides_it(capsys, tmp_path):
    pol = policy_file(tmp_path, 'ignore = ["GA101"]\nfail_on = "warn"\n')
    rc, out, _ = cli(capsys, "check", "--simulate", "4x4090-pcie", "--policy", pol, "--format", "json")
    assert rc == 1 and json.loads(out)["failing"] == ["GA203", "GA206"]
    rc, out, _ = cli(
        capsys, "check", "--simulate", "4x4090-pcie", "--policy", pol, "--fail-on", "fail", "--format", "json"
    )
    assert rc == 0 and json.loads(out)["fail_on"] == "fail"


def test_policy_severity_override_makes_a_warning_fail(capsys, tmp_path):
    pol = policy_file(tmp_path, 'ignore = ["GA101"]\n[severity]\nGA206 = "fail"\n')
    rc, out, _ = cli(capsys, "check", "--simulate", "4x4090-pcie", "--policy", pol, "--format", "json")
    assert rc == 1 and json.loads(out)["failing"] == ["GA206"]


def _crashing_rig(preset):
    """dgx-h100 with GPU 0's link width as a string: GA101 compares it with an int and crashes."""
    rig = preset("dgx-h100")
    rig.gpus[0].pcie.current_width = "16"
    return rig


def test_a_crashed_rule_fails_at_warn_not_at_fail(preset):
    at_fail = run_check(_crashing_rig(preset), fail_on="fail")
    errors = [f for f in at_fail.findings if f.severity == "error"]
    assert [f.code for f in errors] == ["GA101"]
    assert at_fail.exit_code == 0 and at_fail.failing == []
    assert at_fail.summary() == "ok at fail-on fail (1 error below the gate)"
    at_warn = run_check(_crashing_rig(preset), fail_on="warn")
    assert at_warn.exit_code == 1 and [f.code for f in at_warn.failing] == ["GA101"]
    assert at_warn.summary() == "GA101 pcie-link-downgraded: rule crashed (a gpuadvisor bug)"


def test_a_crashed_rule_through_the_cli(capsys, monkeypatch, preset):
    monkeypatch.setattr("gpuadvisor.commands.check.get_rig", lambda *a, **k: _crashing_rig(preset))
    rc, out, _ = cli(capsys, "check", "--format", "junit")
    assert rc == 0
    suite = ET.fromstring(out)
    assert (suite.get("failures"), suite.get("errors")) == ("0", "1")
    case = suite.find("testcase[@name='GA101 pcie-link-downgraded']")
    (child,) = list(case)
    assert child.tag == "error" and child.get("type") == "rule-crashed"
    assert child.get("message").startswith("rule crashed: TypeError")
    assert "Traceback (most recent call last)" in child.text
    rc, out, _ = cli(capsys, "check", "--fail-on", "warn")
    assert rc == 1 and "ERROR  GA101 pcie-link-downgraded" in out


# -- JUnit --------------------------------------------------------------------------------------------------


def _junit(capsys, *args: str) -> ET.Element:
    _, out, _ = cli(capsys, "check", "--simulate", "4x4090-pcie", "--format", "junit", *args)
    assert out.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    return ET.fromstring(out)


def test_junit_counts_names_and_children(capsys):
    suite = _junit(capsys)
    assert suite.tag == "testsuite" and suite.get("name") == "gpuadvisor"
    assert {k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": str(N_RULES),
        "failures": "1",
        "errors": "0",
        "skipped": "15",
    }
    assert float(suite.get("time")) >= 0
    cases = suite.findall("testcase")
    names = [c.get("name") for c in cases]
    assert len(cases) == N_RULES and len(set(names)) == N_RULES
    assert names == [f"{r.code} {r.name}" for r in all_rules()]
    assert [c.get("classname") for c in cases] == [r.area for r in all_rules()]
    for c in cases:
        assert len([e for e in c if e.tag in ("failure", "error", "skipped")]) <= 1
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    skipped = {c.get("name").split()[0] for c in cases if c.find("skipped") is not None}
    assert failed == ["GA101 pcie-link-downgraded"] and skipped == SKIPPED_4090
    f = suite.find("testcase[@name='GA101 pcie-link-downgraded']/failure")
    assert f.get("type") == "fail"
    assert f.get("message") == (
        "GPU 2 0000:41:00.0 runs at x8 where its slot and card support x16 (current_link_width=8, max_link_width=16)"
    )
    assert "observed: current_link_width=8" in f.text and "expected: max_link_width=16" in f.text
    assert "fix: reseat the card or move it to an x16 slot" in f.text
    # A warning below the gate: a passing testcase that says what it saw.
    warn = suite.find("testcase[@name='GA203 no-nvlink']")
    assert [e.tag for e in warn] == ["system-out"] and warn.find("system-out").text.startswith("WARN GA203 no-nvlink")
    sk = suite.find("testcase[@name='GA405 psu-undersized']/skipped")
    assert sk.text == "not checked: PSU rating not given (set it in a rig spec or pass --psu-watts)"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["source"] == "simulated" and props["preset"] == "4x4090-pcie"
    assert props["hostname"] == "ws-4x4090-sim" and props["fail_on"] == "fail" and props["gpus"] == "4"


def test_junit_at_fail_on_warn_and_with_a_policy(capsys, tmp_path):
    suite = _junit(capsys, "--fail-on", "warn")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (str(N_RULES), "3", "15")
    failed = [c.get("name") for c in suite.findall("testcase") if c.find("failure") is not None]
    assert failed == ["GA101 pcie-link-downgraded", "GA203 no-nvlink", "GA206 p2p-not-supported"]
    assert suite.find("testcase[@name='GA203 no-nvlink']/failure").get("type") == "warn"
    pol = policy_file(tmp_path, 'ignore = ["GA101", "GA6"]\n')
    suite = _junit(capsys, "--policy", pol)
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (
        str(N_RULES - 8),
        "0",
        "8",
    )  # GA101 and GA601-GA607
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["policy"] == pol


def test_junit_survives_characters_xml_cannot_hold(preset):
    rig = preset("4x4090-pcie")
    rig.host.hostname = 'bad"host<&>\x01\x1b'
    res = run_check(rig)
    text = render_junit(rig, res.findings, res.rules, failing=lambda f: gates(f.severity, "fail"), fail_on="fail")
    props = {p.get("name"): p.get("value") for p in ET.fromstring(text).iter("property")}
    assert props["hostname"] == 'bad"host<&>\ufffd\ufffd'


# -- Prometheus ---------------------------------------------------------------------------------------------

METRIC = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$")


def parse_labels(text: str) -> dict[str, str]:
    """Strict parser for {a="x",b="y"}: only \\\\, \\" and \\n escapes are allowed."""
    assert text[0] == "{" and text[-1] == "}", text
    out: dict[str, str] = {}
    i, body = 0, text[1:-1]
    while i < len(body):
        m = re.match(r'([a-zA-Z_][a-zA-Z0-9_]*)="', body[i:])
        assert m, body[i:]
        name, i = m.group(1), i + m.end()
        value = []
        while body[i] != '"':
            if body[i] == "\\":
                value.append({"\\": "\\", '"': '"', "n": "\n"}[body[i + 1]])
                i += 2
            else:
                assert body[i] != "\n"
                value.append(body[i])
                i += 1
        assert name not in out
        out[name] = "".join(value)
        i += 1
        if i < len(body):
            assert body[i] == ",", body[i:]
            i += 1
    return out


def parse_exposition(text: str) -> dict[str, dict]:
    """name -> {help, type, samples: [(labels, value)]}; asserts the textfile rules on the way."""
    assert text.endswith("\n")
    fams: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            kind, name, rest = line[2:6], *line[7:].split(" ", 1)
            assert name.startswith("gpuadvisor_")
            if kind == "HELP":
                assert name not in fams, f"second HELP for {name}"
                fams[name] = {"help": rest, "type": None, "samples": []}
                current = name
            else:
                assert current == name and fams[name]["type"] is None and not fams[name]["samples"], f"TYPE for {name}"
                assert rest in ("gauge", "counter")
                fams[name]["type"] = rest
            continue
        assert not line.startswith("#") and line.strip(), line
        m = METRIC.match(line)
        assert m, line
        name, labels, value = m.groups()
        assert name == current and fams[name]["type"], f"sample of {name} outside its HELP/TYPE block"
        float(value)  # no timestamp: exactly one token after the labels
        fams[name]["samples"].append((parse_labels(labels) if labels else {}, value))
    for name, fam in fams.items():
        keys = [tuple(sorted(lb.items())) for lb, _ in fam["samples"]]
        assert len(keys) == len(set(keys)), f"duplicate series in {name}"
        if name.endswith("_info"):
            assert {v for _, v in fam["samples"]} == {"1"}
    return fams


def _value(fams: dict, name: str, **labels: str) -> str:
    (v,) = [v for lb, v in fams[name]["samples"] if all(lb.get(k) == x for k, x in labels.items())]
    return v


def test_prometheus_4x4090(capsys):
    rc, out, _ = cli(capsys, "check", "--simulate", "4x4090-pcie", "--format", "prom")
    assert rc == 1
    fams = parse_exposition(out)
    assert [ln for ln in out.splitlines() if ln.startswith("# HELP")] == [
        f"# HELP {n} {f['help']}" for n, f in fams.items()
    ]
    assert _value(fams, "gpuadvisor_check_status") == "1"
    assert _value(fams, "gpuadvisor_gpu_pcie_link_width", index="2", kind="current") == "8"
    assert _value(fams, "gpuadvisor_gpu_pcie_link_width", index="2", kind="max") == "16"
    assert _value(fams, "gpuadvisor_gpu_pcie_link_width", index="1", kind="current") == "16"
    assert _value(fams, "gpuadvisor_gpu_pcie_link_generation", index="2", kind="current") == "4"
    assert _value(fams, "gpuadvisor_gpu_memory_total_bytes", index="0") == "25757220864"
    assert {lb["severity"]: v for lb, v in fams["gpuadvisor_findings"]["samples"]} == {
        "fail": "1",
        "error": "0",
        "warn": "2",
        "info": "1",
        "not-checked": "15",
    }
    ga101 = [lb for lb, _ in fams["gpuadvisor_finding"]["samples"] if lb["code"] == "GA101"]
    assert ga101 == [{"code": "GA101", "name": "pcie-link-downgraded", "severity": "fail", "gpu": "2"}]
    assert len(fams["gpuadvisor_finding"]["samples"]) == 1 + 4 + 4 + 4  # GA101; GA203, GA206, GA202 on 4 GPUs
    assert _value(fams, "gpuadvisor_gpu_info", index="2") == "1"
    assert fams["gpuadvisor_gpu_info"]["samples"][2][0] == {
        "index": "2",
        "name": "NVIDIA GeForce RTX 4090",
        "bus_id": "0000:41:00.0",
        "uuid": "GPU-482312f8-5e1a-4000-8000-000000000002",
    }
    assert fams["gpuadvisor_gpu_pcie_replays_total"]["type"] == "counter"
    assert "gpuadvisor_measurement_bandwidth_bytes_per_second" not in fams  # nothing measured
    assert float(_value(fams, "gpuadvisor_scan_timestamp_seconds")) > 1.7e9


def test_prometheus_label_escaping(preset):
    assert escape_label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    rig = preset("2x3090-nvlink")
    rig.host.hostname = 'rack "7"\\node\n01'
    rig.gpus[1].name = 'RTX "3090" \\ Ti'
    res = run_check(rig)
    text = render_prometheus(rig, res.findings, failing=False, fail_on="fail")
    assert 'hostname="rack \\"7\\"\\\\node\\n01"' in text
    fams = parse_exposition(text)
    assert fams["gpuadvisor_info"]["samples"][0][0]["hostname"] == 'rack "7"\\node\n01'
    assert fams["gpuadvisor_gpu_info"]["samples"][1][0]["name"] == 'RTX "3090" \\ Ti'
    assert _value(fams, "gpuadvisor_gpu_nvlink_active_links", index="0") == "4"


def test_prometheus_measurements_in_base_units():
    from gpuadvisor.facts import load

    rig = load(FIXTURES / "h100-vm" / "scan-bench.json")  # real H100 PCIe 5.0 run: h2d pinned 55.0 GB/s
    text = render_prometheus(rig, rig.findings, failing=False, fail_on="fail")
    fams = parse_exposition(text)
    bw = fams["gpuadvisor_measurement_bandwidth_bytes_per_second"]
    h2d = [(lb, v) for lb, v in bw["samples"] if lb["kind"] == "h2d" and lb["memory"] == "pinned"]
    assert h2d[0][0] == {"kind": "h2d", "gpus": "0", "backend": "cuda", "memory": "pinned", "concurrent": "false"}
    assert float(h2d[0][1]) == pytest.approx(55.0033e9, rel=1e-5)
    assert float(_value(fams, "gpuadvisor_measurement_expected_bandwidth_bytes_per_second", kind="h2d")) == 53.557e9
    assert _value(fams, "gpuadvisor_measurement_ratio", kind="d2h") == "1.0267"
    # 5 of its 10 measurements have a value: h2d/d2h pinned and pageable, d2d (one-rank collectives and the
    # skipped p2p have none).
    assert len(bw["samples"]) == 5
    assert _value(fams, "gpuadvisor_scan_timestamp_seconds") == "1795371165"  # 2026-11-22T18:12:45Z


def test_prometheus_atomic_write_leaves_no_temp_file(capsys, tmp_path):
    d = tmp_path / "textfile"
    d.mkdir()
    target = d / "gpuadvisor.prom"
    target.write_text("old\n")
    old_umask = os.umask(0o022)
    try:
        rc, out, err = cli(capsys, "check", "--simulate", "4x4090-pcie", "--format", "prom", "-o", str(target), "-q")
    finally:
        os.umask(old_umask)
    assert rc == 1 and out == ""
    assert err == ""  # -q: only errors reach stderr
    assert os.listdir(d) == ["gpuadvisor.prom"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    fams = parse_exposition(target.read_text())
    assert _value(fams, "gpuadvisor_check_status") == "1"


def test_textfile_write_failure_removes_the_temp_file(tmp_path, monkeypatch):
    from gpuadvisor.output import write_atomic

    def boom(*args, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "rename", boom)  # gpuadvisor.output.write_atomic renames within the directory fd
    with pytest.raises(InputError, match="No space left on device"):
        write_atomic(tmp_path / "x.prom", "gpuadvisor_check_status 0\n", what="textfile")
    assert os.listdir(tmp_path) == []


def test_output_file_then_text_on_stdout(capsys, tmp_path):
    target = tmp_path / "report.xml"
    rc, out, _ = cli(capsys, "check", "--simulate", "4x4090-pcie", "--format", "junit", "-o", str(target))
    assert rc == 1
    assert ET.parse(target).getroot().get("failures") == "1"
    assert "Gate: FAIL (fail-on fail" in out  # the CI log still shows the findings


def test_json_option_saves_the_scan_with_findings(capsys, tmp_path):
    from gpuadvisor.facts import load

    s = tmp_path / "s.json"
    rc, _, _ = cli(capsys, "check", "--simulate", "4x4090-pcie", "-q", "--json", str(s))
    assert rc == 1
    assert [f.code for f in load(s).findings if f.severity == "fail"] == ["GA101"]


# -- bad input: one line, exit 2 ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, needle",
    [
        (
            ("--simulate", "4x4090-pcie", "--policy", "/nonexistent/node.toml"),
            "gpuadvisor: error: /nonexistent/node.toml: no such policy file",
        ),
        (("--simulate", "4x4090-pcie", "--bench"), "gpuadvisor: error: --bench measures this machine"),
        (("--simulate", "4x4090-pcie", "--quick"), "gpuadvisor: error: --quick only applies with --bench"),
        (
            ("--simulate", "4x4090-pcie", "-o", "/nonexistent/dir/x.prom", "--format", "prom"),
            "gpuadvisor: error: /nonexistent/dir/x.prom: cannot write the output of -o: the directory /nonexistent/dir "
            "does not exist",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, args, needle):
    rc, out, err = cli(capsys, "check", *args)
    assert rc == 2 and out == ""
    assert err.startswith(needle) and err.count("\n") == 1


def test_bad_policy_and_no_gpu_exit_2_in_a_real_process(tmp_path):
    bad = policy_file(tmp_path, 'ignore = ["GA999"]\n')
    out = run("check", "--simulate", "dgx-h100", "--policy", bad)
    assert out.returncode == 2 and out.stdout == ""
    assert (
        out.stderr
        == f"gpuadvisor: error: {bad}: ignore: unknown rule code or prefix 'GA999' (list them with 'gpuadvisor "
        "rules')\n"
    )
    from gpuadvisor.facts import Rig

    empty = tmp_path / "empty.json"
    Rig().save(empty)
    out = run("check", "--from", str(empty))
    assert (out.returncode, out.stderr) == (
        2,
        "gpuadvisor: error: no GPU to check on this host: the scan lists no GPU\n",
    )


def test_fail_exit_code_in_a_real_process():
    out = run("check", "--simulate", "4x4090-pcie", "-q")
    assert (out.returncode, out.stdout, out.stderr) == (1, "", "")


def test_policy_parse_and_run_check_api():
    pol = parse_policy({"select": ["GA1"], "fail_on": "warn"}, origin="inline")
    from gpuadvisor.collect import simulate

    res = run_check(simulate("4x4090-pcie"), pol)
    assert [r.code for r in res.rules] == ["GA101", "GA102", "GA103", "GA104", "GA105"]
    assert res.fail_on == "warn" and res.policy == "inline" and res.exit_code == 1
    assert run_check(simulate("dgx-h100"), Policy()).exit_code == 0


# -- examples/ci/slurm-healthcheck.sh with stub sinfo / scontrol / logger -----------------------------------

SLURM_WRAPPER = Path(__file__).resolve().parents[1] / "examples" / "ci" / "slurm-healthcheck.sh"
GA101_REASON = "gpuadvisor: GA101 pcie-link-downgraded: GPU 2 0000:41:00.0"


def _slurm(tmp_path: Path, args: str, sinfo_line: str, **env: str) -> tuple[list[str], str]:
    """Run the wrapper; returns the scontrol calls (one argv per line, args joined by |) and the log."""
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    stubs = {
        "sinfo": f"#!/bin/sh\necho '{sinfo_line}'\n",
        "scontrol": f'#!/bin/sh\n(IFS="|"; echo "$*") >> {tmp_path}/scontrol.log\n',
        "logger": f'#!/bin/sh\necho "$*" >> {tmp_path}/syslog\n',
    }
    for name, body in stubs.items():
        (bin_ / name).write_text(body)
        (bin_ / name).chmod(0o755)
    full_env = {
        "PATH": f"{bin_}:{os.environ['PATH']}",
        "GPUADVISOR_PYTHON": sys.executable,
        "GPUADVISOR_NODENAME": "gpu01",
        "GPUADVISOR_POLICY": str(tmp_path / "none.toml"),
        "GPUADVISOR_ARGS": args,
        **env,
    }
    out = subprocess.run(["bash", str(SLURM_WRAPPER)], env=full_env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    calls = (tmp_path / "scontrol.log").read_text().splitlines() if (tmp_path / "scontrol.log").exists() else []
    log = (tmp_path / "syslog").read_text() if (tmp_path / "syslog").exists() else ""
    return calls, log


@pytest.mark.parametrize(
    "args, sinfo_line, env, calls",
    [
        # a failing node with no reason: drained with the first failing finding
        (
            "--simulate 4x4090-pcie",
            "idle none",
            {"GPUADVISOR_DRAIN": "1"},
            [f"update|NodeName=gpu01|State=DRAIN|Reason={GA101_REASON}"],
        ),
        # draining is opt-in
        ("--simulate 4x4090-pcie", "idle none", {}, []),
        # an admin's reason is kept
        ("--simulate 4x4090-pcie", "drain bad DIMM, ticket 42", {"GPUADVISOR_DRAIN": "1"}, []),
        # already drained for the same finding: nothing to do
        ("--simulate 4x4090-pcie", f"drain {GA101_REASON}", {"GPUADVISOR_DRAIN": "1"}, []),
        # a passing node drained by gpuadvisor is resumed; one drained by an admin is not; nor one awaiting reboot
        (
            "--simulate dgx-h100",
            f"drain {GA101_REASON}",
            {"GPUADVISOR_DRAIN": "1"},
            ["update|NodeName=gpu01|State=RESUME"],
        ),
        ("--simulate dgx-h100", "drng admin: firmware update", {"GPUADVISOR_DRAIN": "1"}, []),
        ("--simulate dgx-h100", f"drain@ {GA101_REASON}", {"GPUADVISOR_DRAIN": "1"}, []),
        # the check cannot run (exit 2): never a drain, even with the old GPUADVISOR_DRAIN_ON_ERROR=1 (now ignored)
        ("--simulate dgx-h900", "idle none", {"GPUADVISOR_DRAIN": "1"}, []),
        ("--simulate dgx-h900", "idle none", {"GPUADVISOR_DRAIN": "1", "GPUADVISOR_DRAIN_ON_ERROR": "1"}, []),
    ],
)
def test_slurm_wrapper(tmp_path, args, sinfo_line, env, calls):
    got, log = _slurm(tmp_path, args, sinfo_line, **env)
    assert got == calls
    assert log.startswith("-t gpuadvisor -- gpu01: ")
    for call in got:  # Slurm's reason: the prefix and at most 80 characters
        assert "Reason=" not in call or len(call.split("Reason=gpuadvisor: ")[1]) <= 80


def test_bench_runs_before_the_rules_and_its_measurements_are_judged(capsys, monkeypatch, preset):
    """--bench wiring, without a GPU: a live-looking rig and a stand-in benchmarker that records a slow copy."""
    from gpuadvisor.facts import Measurement

    rig = preset("dgx-h100")
    rig.source.kind = "live"
    calls = []

    def fake_run_benchmarks(r, **kw):
        calls.append(kw)
        m = Measurement(
            kind="h2d",
            backend="cuda",
            gpus=[0],
            memory="pinned",
            concurrent=False,
            world_size=1,
            value_gbps=20.0,
            expected_gbps=53.557,
            expected_source="PCIe 5.0 x16 (test)",
            ratio=0.373,
        )
        r.measurements.append(m)
        return [m]

    monkeypatch.setattr("gpuadvisor.commands.check.get_rig", lambda *a, **k: rig)
    monkeypatch.setattr("gpuadvisor.bench.run_benchmarks", fake_run_benchmarks)
    rc, out, _ = cli(capsys, "check", "--bench", "--quick", "--format", "prom")
    assert calls == [{"preset": "quick"}]
    assert rc == 1
    fams = parse_exposition(out)
    assert [lb["code"] for lb, _ in fams["gpuadvisor_finding"]["samples"]] == ["GA601"]
    assert _value(fams, "gpuadvisor_measurement_bandwidth_bytes_per_second", kind="h2d") == "20000000000"
    assert _value(fams, "gpuadvisor_measurement_ratio", kind="h2d") == "0.373"


@pytest.mark.parametrize("name", ["dgx-h100", "dgx-a100", "4x4090-pcie", "2x3090-nvlink", "h100-pcie", "dgx2-v100"])
@pytest.mark.parametrize("fail_on", ["warn", "fail"])
def test_every_preset_renders_valid_reports(preset, name, fail_on):
    rig = preset(name)
    res = run_check(rig, fail_on=fail_on)
    fams = parse_exposition(render_prometheus(rig, res.findings, failing=bool(res.failing), fail_on=fail_on))
    assert _value(fams, "gpuadvisor_check_status") == str(res.exit_code)
    assert len(fams["gpuadvisor_gpu_info"]["samples"]) == len(rig.gpus)
    suite = ET.fromstring(
        render_junit(rig, res.findings, res.rules, failing=lambda f: gates(f.severity, fail_on), fail_on=fail_on)
    )
    cases = suite.findall("testcase")
    assert int(suite.get("tests")) == len(cases) == N_RULES
    for tag, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        assert int(suite.get(attr)) == sum(c.find(tag) is not None for c in cases)
    assert (int(suite.get("failures")) > 0) == (res.exit_code == 1)
    assert len(res.summary()) <= 80
