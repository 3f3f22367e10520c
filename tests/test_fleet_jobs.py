"""`fleet --jobs N` reads the scans in N processes and gives the report --jobs 1 gives, byte for byte: the same
nodes in the same order (which of two files for one host wins), figures, findings and failed files."""

from __future__ import annotations

import json
import os

import fleet_gen as G
import pytest

from gpuadvisor.cli import main
from gpuadvisor.fleet import load


def _json(capsys, *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        main(list(args))
    return int(e.value.code or 0), capsys.readouterr().out


def test_jobs_give_the_same_report(capsys, tmp_path, monkeypatch):
    d = tmp_path / "scans"
    plants = {"n03": G.Plant(factor={"all_reduce": 0.7}), "n07": G.Plant(lost_gpu=True)}
    G.write_fleet(d, [f"n{i:02d}" for i in range(12)], seed=6, sigma=0.01, plants=plants)
    (d / "sub").mkdir()
    (d / "sub" / "again.json").write_text((d / "n05.json").read_text())  # a second file for host n05
    os.mkfifo(d / "pipe.json")
    (d / "bad.json").write_text("{")
    monkeypatch.setattr(load, "CHUNK", 2)  # several tasks per worker on a small fleet
    now = "2026-11-23T00:00:00Z"
    one = _json(capsys, "fleet", str(d), "--format", "json", "--now", now)
    three = _json(capsys, "fleet", str(d), "--format", "json", "--now", now, "--jobs", "3")
    assert one == three
    code, out = one
    nodes = {n["name"]: n for n in json.loads(out)["nodes"]}
    assert code == 1 and nodes["pipe"]["status"] == "failed" and nodes["bad"]["status"] == "failed"
    assert nodes["n03"]["status"] == "ok" and len(nodes) == 15


def test_jobs_is_bounded(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["fleet", str(tmp_path), "--jobs", "0"])
    assert e.value.code == 2 and "--jobs" in capsys.readouterr().err
