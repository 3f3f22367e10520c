"""Drift inside a group: a rolling upgrade (two driver versions, each on a good share of the group) is one line
for the group with each side's nodes, the same on either side of 50 %; a node on neither side is named alone;
one node off the group's version is named as before."""

from __future__ import annotations

from pathlib import Path

import fleet_gen as G
import pytest

from gpuadvisor.fleet.analyse import Options, analyse
from gpuadvisor.fleet.load import node_from

NEW = "570.124.06"
OLD = "580.159.04"  # the template scan's driver


def _drift(n: int, plants: dict[str, G.Plant]):
    scans = G.fleet_scans([f"n{i:02d}" for i in range(n)], seed=21, sigma=0.01, plants=plants)
    r = analyse({k: node_from(Path(f"{k}.json"), d) for k, d in scans.items()}, Options())
    return [f for f in r.findings if f.kind == "drift"]


@pytest.mark.parametrize("upgraded", [8, 12])  # 40 % and 60 % of 20 nodes
def test_a_rolling_upgrade_is_one_line_on_either_side_of_half(upgraded):
    plants = {f"n{i:02d}": G.Plant(driver=NEW) for i in range(upgraded)}
    found = _drift(20, plants)
    assert [(f.node, f.subject, f.code) for f in found] == [(None, "driver", "version-split")]
    msg = found[0].message
    new = f"{upgraded * 5}% ({upgraded} of 20) on {NEW}: n00, n01"
    old = f"{100 - upgraded * 5}% ({20 - upgraded} of 20) on {OLD}: n{upgraded:02d}"
    assert new in msg and old in msg
    assert found[0].observed == {NEW: upgraded, OLD: 20 - upgraded}


def test_a_node_on_neither_side_of_a_split_is_named_alone():
    plants = {f"n{i:02d}": G.Plant(driver=NEW) for i in range(8)} | {"n19": G.Plant(driver="535.104.05")}
    found = _drift(20, plants)
    alone = [f for f in found if f.node]
    assert [(f.node, f.message) for f in alone] == [
        ("n19", f"driver 535.104.05 where its group is split between {OLD} (11) and {NEW} (8)")
    ]
    assert sum(1 for f in found if f.node is None) == 1


def test_one_node_off_the_version_is_named_as_before():
    found = _drift(20, {"n03": G.Plant(driver=NEW)})
    assert [(f.node, f.message) for f in found] == [
        ("n03", f"driver {NEW} where 19 of 20 nodes in its group have {OLD}")
    ]
