"""examples/k8s/fleet-report.sh, the Kubernetes report CronJob's script, run against a shared volume laid out as
the DaemonSet and the benchmark CronJob write it, with the real `gpuadvisor fleet` and a stub `curl` standing for
the Pushgateway: a drain fails the Job, a node whose check stopped writing is stale and fails, a node busy during
the benchmark round is not measured (not missing), a round still running is not read, and what is pushed is a
valid Prometheus exposition that carries the report's exit code."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import fleet_gen as G
import pytest
from test_fleet_examples import stubs  # noqa: F401  (a fixture)

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "examples/k8s/fleet-report.sh"
CURL = """#!/bin/sh
# records what would be pushed: PUT --data-binary @FILE URL
for a in "$@"; do case $a in @*) body=${a#@} ;; esac; url=$a; done
cp "$body" "$PUSHED/$(basename "$url").prom"
exit "${CURL_RC:-0}"
"""


def _iso(t: dt.datetime) -> str:
    return t.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


@pytest.fixture()
def volume(tmp_path) -> Path:
    """/scans as the DaemonSet and the benchmark CronJob leave it, and the ConfigMap's two files."""
    now = dt.datetime.now(dt.UTC)
    scans = tmp_path / "scans"
    fresh, old = _iso(now - dt.timedelta(hours=1)), _iso(now - dt.timedelta(hours=20))
    names = ["n1", "n2", "n4", "n5", "n6"]
    G.write_fleet(scans / "nodes", names, seed=11, sigma=0.01, plants={"n2": G.Plant(lost_gpu=True)}, created_at=fresh)
    G.write_fleet(scans / "nodes", ["n3"], seed=12, sigma=0.01, created_at=old)  # its check hangs: no new scan
    bench = scans / "bench"
    rounds = {"zz-by-hand": 3 * 86400, "gpuadvisor-node-bench-200": 7200}  # the newest by time, not by name
    for name, age in rounds.items():
        made = _iso(now - dt.timedelta(seconds=age))
        busy = ["n3"] if name.endswith("200") else []  # its GPUs held by a job: its pod stayed Pending
        measured = [n for n in [*names, "n3"] if n not in busy]
        slow = {"n2": G.Plant(factor=dict.fromkeys(G.COLL_BUSBW, 0.6))}  # a straggler in every collective
        G.write_fleet(bench / name, measured, seed=13, sigma=0.01, plants=slow, created_at=made)
        _age(bench / name, age)
    G.write_fleet(bench / "gpuadvisor-node-bench-300", ["n1"], seed=14, sigma=0.01, created_at=fresh)  # running
    config = tmp_path / "config"
    config.mkdir()
    (config / "nodes.txt").write_text("n[1-7]\n")  # n7 never wrote a scan
    (config / "policy.toml").write_text('[fleet]\nfail = ["stale"]\n')
    return tmp_path


def _run(stubs, volume: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], Path]:  # noqa: F811
    bin_ = Path(stubs["PATH"].split(os.pathsep)[0])
    (bin_ / "curl").write_text(CURL)
    (bin_ / "curl").chmod(0o755)
    pushed = volume / "pushed"
    pushed.mkdir(exist_ok=True)
    run = subprocess.run(
        ["sh", str(SCRIPT)],
        env={
            **stubs,
            "SCANS": str(volume / "scans"),
            "NODES_FILE": str(volume / "config/nodes.txt"),
            "POLICY_FILE": str(volume / "config/policy.toml"),
            "PUSHGATEWAY": "http://pushgateway.monitoring:9091",
            "PUSHED": str(pushed),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    return run, pushed


def _gauges(text: str, name: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, value = line.rsplit(" ", 1)
            node = labels.split('node="', 1)[1].split('"', 1)[0] if 'node="' in labels else labels
            out[node] = float(value)
    return out


def test_the_report_fails_the_job_on_a_drain_and_pushes_why(stubs, volume):  # noqa: F811
    run, pushed = _run(stubs, volume)
    assert run.returncode == 1, run.stderr
    passive, bench = (pushed / "passive.prom").read_text(), (pushed / "bench.prom").read_text()
    drain = _gauges(passive, "gpuadvisor_fleet_node_drain")
    assert drain == {"n1": 0, "n2": 1, "n3": 1, "n4": 0, "n5": 0, "n6": 0, "n7": 1}  # lost GPU, stale, missing
    assert 'gpuadvisor_fleet_report_exit_code{report="passive"} 1' in passive
    # the bench report: the newest finished round; n3 was busy (not measured): absent, not missing, not drained
    up = _gauges(bench, "gpuadvisor_fleet_node_up")
    assert set(up) == {"n1", "n2", "n4", "n5", "n6"}
    assert _gauges(bench, "gpuadvisor_fleet_node_drain") == {"n1": 0, "n2": 1, "n4": 0, "n5": 0, "n6": 0}
    assert 'gpuadvisor_fleet_report_exit_code{report="bench"} 1' in bench
    assert "gpuadvisor-node-bench-200" in run.stderr and "bench-300" not in run.stderr
    reports = volume / "scans" / "reports"
    assert sorted(p.name for p in reports.iterdir()) == ["bench.html", "bench.prom", "passive.html", "passive.prom"]
    promtool = shutil.which("promtool")
    for body in (passive, bench):
        if promtool:
            check = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True)
            assert check.returncode == 0, check.stdout + check.stderr


def test_a_healthy_fleet_exits_0_and_a_report_that_cannot_run_exits_2(stubs, volume):  # noqa: F811
    scans = volume / "scans"
    for n in ("n2", "n3"):
        (scans / "nodes" / f"{n}.json").unlink()
    (volume / "config/nodes.txt").write_text("n1\nn4\nn5\nn6\n")
    shutil.rmtree(scans / "bench")
    run, pushed = _run(stubs, volume)
    assert run.returncode == 0, run.stderr
    assert "no finished benchmark round" in run.stderr
    assert 'gpuadvisor_fleet_report_exit_code{report="passive"} 0' in (pushed / "passive.prom").read_text()
    (volume / "config/policy.toml").write_text("[fleet]\nfail = ['no-such-kind']\n")  # bad input: exit 2
    run, pushed = _run(stubs, volume)
    assert run.returncode == 2
    body = (pushed / "passive.prom").read_text()
    assert 'gpuadvisor_fleet_report_exit_code{report="passive"} 2' in body
    assert "gpuadvisor_fleet_node_drain" not in body  # not the last run's metrics


def test_metrics_that_cannot_be_delivered_fail_the_job(stubs, volume):  # noqa: F811
    run, _ = _run(stubs, volume, CURL_RC="7")
    assert run.returncode == 2 and "cannot push the passive metrics" in run.stderr


def test_the_textfile_collector_gets_whole_files(stubs, volume, tmp_path):  # noqa: F811
    textfiles = tmp_path / "textfile_collector"
    textfiles.mkdir()
    run, _ = _run(stubs, volume, PUSHGATEWAY="", TEXTFILE_DIR=str(textfiles))
    assert run.returncode == 1
    assert sorted(p.name for p in textfiles.iterdir()) == [
        "gpuadvisor_fleet_bench.prom",
        "gpuadvisor_fleet_passive.prom",
    ]


def test_the_alerting_rules_pass_promtool():
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (apt-get install prometheus)")
    check = subprocess.run(
        [promtool, "check", "rules", str(ROOT / "examples/k8s/prometheus-rules.yaml")], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    text = (ROOT / "examples/k8s/prometheus-rules.yaml").read_text()
    assert "gpuadvisor_fleet_node_drain == 1" in text and "gpuadvisor_fleet_report_exit_code" in text


if sys.platform == "win32":  # pragma: no cover
    pytestmark = pytest.mark.skip("POSIX shell scripts")
