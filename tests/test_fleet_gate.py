"""The fleet gate: what fails by default, what the policy's [fleet] table promotes, the node's own findings with
their reason and GPU, and the host name override for simulated scans."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import fleet_gen as G
import pytest

from gpuadvisor.cli import main

OWN = [
    {
        "code": "GA306",
        "name": "row-remap-pending",
        "severity": "warn",
        "gpus": [3],
        "message": "GPU 3 has a row remap pending: reset the GPU to apply it",
    },
    {
        "code": "GA104",
        "name": "ecc-uncorrected",
        "severity": "fail",
        "gpus": [5],
        "message": "GPU 5 has 2 uncorrectable ECC errors since the driver loaded",
    },
]


@pytest.fixture(scope="module")
def scans(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("gate") / "scans"
    plants = {"n01": G.Plant(driver="535.104.05"), "n02": G.Plant(findings=OWN[:1]), "n03": G.Plant(findings=OWN[1:])}
    G.write_fleet(d, [f"n{i:02d}" for i in range(12)], seed=9, sigma=0.01, plants=plants)
    return d


def _run(capsys, *args: str) -> tuple[int, dict]:
    with pytest.raises(SystemExit) as e:
        main(["fleet", *args, "--format", "json"])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), json.loads(out) if out else {"err": err}


def test_defaults_fail_on_the_nodes_own_fail_finding_and_list_its_warn_one(capsys, scans):
    code, doc = _run(capsys, str(scans))
    assert code == 1 and doc["drain"] == ["n03"]
    f = {(x["node"], x["subject"]): x for n in doc["nodes"] for x in n["findings"]}
    assert f[("n03", "GA104")]["severity"] == "fail"
    assert f[("n03", "GA104")]["message"] == (
        "the node's own check: GA104 ecc-uncorrected (GPU 5): GPU 5 has 2 "
        "uncorrectable ECC errors since the driver loaded"
    )
    assert f[("n02", "GA306")]["severity"] == "warn" and "(GPU 3)" in f[("n02", "GA306")]["message"]
    assert f[("n01", "driver")]["severity"] == "warn"


def test_policy_promotes_drift_and_the_nodes_warnings(capsys, scans, tmp_path):
    pol = tmp_path / "fleet.toml"
    pol.write_text('fail_on = "fail"\n[fleet]\nfail = ["drift", "check-warn"]\n')
    code, doc = _run(capsys, str(scans), "--policy", str(pol))
    assert code == 1 and sorted(doc["drain"]) == ["n01", "n02", "n03"]
    msg = next(x["message"] for n in doc["nodes"] for x in n["findings"] if x["subject"] == "driver")
    assert msg.endswith(f"[fails by policy {pol}]")


def test_policy_straggler_threshold_promotes_a_ten_percent_slow_node(capsys, tmp_path):
    d = tmp_path / "scans"
    G.write_fleet(
        d, [f"n{i:02d}" for i in range(16)], seed=10, sigma=0.01, plants={"n04": G.Plant(factor={"all_reduce": 0.88})}
    )
    code, doc = _run(capsys, str(d))
    assert code == 0  # 12% slow: a warning by default (fails from 25%)
    pol = tmp_path / "p.toml"
    pol.write_text("[fleet]\nstraggler_fail = 0.10\n")
    code, doc = _run(capsys, str(d), "--policy", str(pol))
    assert code == 1 and doc["drain"] == ["n04"]
    pol.write_text('[fleet]\nfamilies = ["all_reduce busbw"]\n')
    code, doc = _run(capsys, str(d), "--policy", str(pol))
    assert code == 1 and doc["drain"] == ["n04"]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ('[fleet]\nfail = ["everything"]\n', "fleet.fail must be a list of"),
        ('[fleet]\nwarn = ["lots"]\n', "fleet.warn must be a list of"),
        ('[fleet]\nfail = ["drift"]\nwarn = ["drift"]\n', "'drift' is in both fleet.fail and fleet.warn"),
        ("[fleet]\nstraggler_fail = 5\n", "fleet.straggler_fail = 5"),
        ("[fleet]\nfrobnicate = 1\n", "unknown key fleet.frobnicate"),
        ("[thresholds]\nno_such = 1\n", "unknown threshold 'no_such'"),
    ],
)
def test_a_bad_policy_is_one_line_exit_2(capsys, scans, tmp_path, body, says):
    pol = tmp_path / "bad.toml"
    pol.write_text(body)
    with pytest.raises(SystemExit) as e:
        main(["fleet", str(scans), "--policy", str(pol)])
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == "" and err.count("\n") == 1 and says in err, err


def test_help_documents_the_exit_codes():
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "fleet", "--help"], capture_output=True, text=True, timeout=60
    )
    flat = " ".join(p.stdout.split())
    assert "0 nothing fails the gate" in flat and "2 bad input" in flat and "[fleet]" in flat


def test_simulated_scans_honour_the_host_name_override(tmp_path):
    env = {**os.environ, "GPUADVISOR_HOSTNAME": "rack7-n3"}
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "scan", "--simulate", "h100-pcie", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert json.loads(p.stdout)["host"]["hostname"] == "rack7-n3"


def test_one_policy_file_serves_check_and_fleet(tmp_path):
    pol = tmp_path / "node.toml"
    pol.write_text('fail_on = "fail"\n[fleet]\nfail = ["drift"]\n')
    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "check", "--simulate", "dgx-h100", "--policy", str(pol), "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode in (0, 1) and p.stderr == "", p.stderr


@pytest.mark.parametrize(
    ("names", "drain"),
    [
        ('fail = ["GA306"]', ["n02", "n03"]),  # a node rule code promotes that finding only
        ('fail = ["check-warn"]', ["n02", "n03"]),
        ('fail = ["drift"]', ["n01", "n03"]),
        ('warn = ["GA104"]', []),  # a fail demoted by its rule code
        ('warn = ["check-fail"]', []),
        ('fail = ["drift"]\nwarn = ["check-fail"]', ["n01"]),
    ],
)
def test_policy_names_kinds_and_rule_codes(capsys, scans, tmp_path, names, drain):
    pol = tmp_path / "p.toml"
    pol.write_text(f"[fleet]\n{names}\n")
    code, doc = _run(capsys, str(scans), "--policy", str(pol))
    assert sorted(doc["drain"]) == drain and code == (1 if drain else 0)


def test_stale_and_missing_fail_by_default_and_a_policy_demotes_them(capsys, scans, tmp_path):
    args = [str(scans), "--max-age", "24h", "--now", "2026-11-25T22:12:45Z", "--expect", "n[00-12]"]
    code, doc = _run(capsys, *args)
    f = {x["node"]: x for n in doc["nodes"] for x in n["findings"] if x["kind"] in ("stale", "missing")}
    assert code == 1 and len(doc["drain"]) == 13
    assert f["n05"]["severity"] == "fail" and f["n05"]["message"].startswith("scan 3 d 4 h old (")
    assert "over --max-age 24h; not compared" in f["n05"]["message"]
    assert f["n12"]["severity"] == "fail" and f["n12"]["kind"] == "missing"
    pol = tmp_path / "p.toml"
    pol.write_text('[fleet]\nwarn = ["stale", "missing"]\n')
    code, doc = _run(capsys, *args, "--policy", str(pol))
    assert code == 1 and doc["drain"] == ["n03"]  # the node's own fail finding still fails
    f = {x["node"]: x for n in doc["nodes"] for x in n["findings"] if x["kind"] in ("stale", "missing")}
    assert f["n05"]["severity"] == "warn" and f["n05"]["message"].endswith(f"[warns by policy {pol}]")


def test_every_warn_level_kind_can_be_promoted_on_its_own():
    from gpuadvisor.fleet import gate, kinds
    from gpuadvisor.fleet.model import FleetFinding

    cases = [
        FleetFinding(node="a", kind="slow-port", severity="warn", subject="RDMA ports"),
        FleetFinding(node="a", kind="outlier", severity="warn", subject="h2d pinned", code="straggler"),
        FleetFinding(node="a", kind="outlier", severity="warn", subject="p2p_latency", code="one-figure"),
        FleetFinding(node="a", kind="check", severity="warn", subject="GA812"),
        FleetFinding(node="a", kind="drift", severity="warn", subject="driver"),
        FleetFinding(node=None, kind="drift", severity="warn", subject="driver", code="version-split"),
        FleetFinding(node="a", kind="duplicate", severity="warn", subject="host name"),
        FleetFinding(node="a", kind="pair", severity="warn", subject="pair a + b"),
        FleetFinding(node="a", kind="changed", severity="warn", subject="h2d pinned"),
        FleetFinding(node="a", kind="unexpected", severity="info", subject="node"),
    ]
    for f in cases:
        name = f.code or (f.subject if f.kind == "check" else f.kind)
        assert kinds.valid(name)
        others = gate.Gate(fail=[k for k in kinds.NAMES if k not in kinds.names_of(f.kind, f.code, f.subject, "warn")])
        assert others.promote(dataclasses.replace(f)).severity == f.severity  # no other name promotes it
        assert gate.Gate(fail=[name]).promote(f).severity == "fail", name


def test_the_kinds_are_listed_in_help_and_readme_from_one_table():
    from gpuadvisor.fleet import kinds

    p = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "fleet", "--help"], capture_output=True, text=True, timeout=60
    )
    for k in kinds.KINDS:
        assert f"{k.name} " in p.stdout and k.default in p.stdout
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- fleet-kinds -->\n```text\n")[1].split("\n```\n<!-- /fleet-kinds -->")[0]
    assert block.splitlines() == kinds.help_lines()
