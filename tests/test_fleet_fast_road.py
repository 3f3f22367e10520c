"""The fleet's fast road (facts.lean_fast: msgspec decodes only the sections the fleet reads) gives the same lean
Rig as the standard road (parse the whole file, then take it apart), and leaves every file it would read
differently to the standard road.

The scans are real: recorded on an H100 VM (tests/fixtures/h100-vm), and the fleet generator's node written from
one of them. The malformed variants are edits a corrupt disk or a hand edit makes."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from gpuadvisor.facts import lean
from gpuadvisor.facts.rig import Rig

VM = Path(__file__).parent / "fixtures" / "h100-vm"
SCANS = [p for p in sorted(VM.glob("*.json")) if json.loads(p.read_bytes()).get("kind") == "gpuadvisor-scan"]


def _standard(raw: bytes, path: Path) -> Rig | lean.NodeRecord:
    return lean.from_json(lean.parse_bytes(raw, path), path)


@pytest.mark.parametrize("path", SCANS, ids=lambda p: p.name)
def test_the_fast_road_gives_the_standard_roads_rig_on_real_scans(path):
    raw = path.read_bytes()
    fast = lean.fast_rig(raw)
    assert fast is not None, "a scan this gpuadvisor wrote takes the fast road"
    assert fast == _standard(raw, path)
    assert len(fast.measurements) == len(json.loads(raw).get("measurements") or [])


def test_the_fast_road_gives_the_standard_roads_rig_on_a_generated_fleet_node():
    import fleet_gen

    scan = fleet_gen.node_scan("node00007", random.Random(7), 0.02)
    raw = json.dumps(scan).encode()
    fast = lean.fast_rig(raw)
    assert fast is not None and fast == _standard(raw, Path("node00007.json"))
    assert len(fast.measurements) == len(scan["measurements"]) > 100


def _edited(edit) -> bytes:
    data = json.loads((VM / "scan-bench.json").read_bytes())
    edit(data)
    return json.dumps(data).encode()


def _set(path: tuple, value):
    def edit(data):
        *head, last = path
        for k in head:
            data = data[k]
        data[last] = value

    return edit


@pytest.mark.parametrize(
    "edit",
    [
        _set(("measurements", 0, "value_gbps"), "55.7"),  # a value of another type: left unset there
        _set(("measurements", 0, "gpus"), [0, True]),
        _set(("measurements", 0, "kind"), None),
        _set(("measurements", 0, "value_gbps"), -1.0),  # a negative amount: refused there, with its wording
        _set(("measurements", 0), 7),  # an entry that is not an object: refused there
        _set(("gpus",), {}),
        _set(("host",), []),
        _set(("schema_version",), 99),
        _set(("schema_version",), 1.0),
        _set(("kind",), "gpuadvisor-node-error"),
        _set(("advice", "x"), 18446744073709551616),  # an integer beyond 64 bits, even where the fleet never reads
        _set(("gpus", 0, "memory_total_bytes"), -1),
    ],
    ids=lambda e: "edit",
)
def test_anything_the_standard_road_reads_differently_takes_it(edit):
    raw = _edited(edit)
    assert lean.fast_rig(raw) is None


@pytest.mark.parametrize(
    "raw",
    [
        b'{"kind": "gpuadvisor-scan", "schema_version": 1, "measurements": [{"value_gbps": NaN}]}',
        b"\xef\xbb\xbf{}",
        b"",
    ],
)
def test_json_the_standard_road_refuses_takes_it(raw):
    assert lean.fast_rig(raw) is None


def test_a_float_beyond_the_double_range_where_the_fleet_reads_takes_the_standard_road():
    raw = _edited(_set(("measurements", 0, "value_gbps"), 1.0)).replace(b'"value_gbps": 1.0', b'"value_gbps": 1e400', 1)
    assert b"1e400" in raw and lean.fast_rig(raw) is None
