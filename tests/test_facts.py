"""The facts model: exact JSON round trip, nulls with reasons, one-line errors naming the field."""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

import fleet_gen as G
import pytest

from gpuadvisor import facts
from gpuadvisor.facts import FactsError, Gpu, Rig, scanfile
from gpuadvisor.facts import lean as _lean  # noqa: F401  (facts.lean below)


def test_round_trip_is_exact(preset, tmp_path):
    rig = preset("dgx-h100")
    path = tmp_path / "s.json"
    rig.save(path)
    text = path.read_text()
    back = facts.load(path)
    assert back == rig
    assert back.to_json() == text


def test_null_field_keeps_its_reason():
    g = Gpu(index=0)
    g.missing("power_limit_w", facts.NOT_SUPPORTED)
    d = facts.to_dict(g)
    assert d["power_limit_w"] is None
    assert d["unavailable"] == {"power_limit_w": "not supported by this GPU or driver"}


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(kind="something-else"), "not a gpuadvisor scan (field 'kind' is \"something-else\""),
        (lambda d: d.update(schema_version=99), "field 'schema_version' is 99; this gpuadvisor reads version 1"),
        (
            lambda d: d["gpus"][1].update(memory_total_bytes="lots"),
            'field gpus[1].memory_total_bytes: expected integer, got "lots"',
        ),
        (
            lambda d: d["gpus"][0]["pcie"]["path"][0].update(current_width=[16]),
            "field gpus[0].pcie.path[0].current_width: expected integer, got a list",
        ),
        (lambda d: d["host"].update(ram=1), "field host.ram: unknown field"),
        (lambda d: d.update(gpus={}), "field gpus: expected a list, got an object"),
    ],
)
def test_malformed_scans_name_the_field(preset, tmp_path, mutate, message):
    d = preset("2x3090-nvlink").to_dict()
    mutate(d)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    with pytest.raises(FactsError) as e:
        facts.load(path)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_not_json_and_missing_file(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(FactsError, match=r"x.json: not JSON \(line 1, column 2"):
        facts.load(p)
    with pytest.raises(FactsError, match="no such file"):
        facts.load(tmp_path / "missing.json")
    p.write_text("[1, 2]")
    with pytest.raises(FactsError, match="top level is a list, expected an object"):
        facts.load(p)


def test_ints_stay_ints_in_float_fields():
    rig = Rig(gpus=[Gpu(index=0, power_limit_w=700)])
    assert facts.from_dict(json.loads(rig.to_json())).to_json() == rig.to_json()


def test_a_field_missing_from_an_older_scan_is_null_with_a_reason(preset, tmp_path):
    d = preset("h100-pcie").to_dict()
    del d["gpus"][0]["performance_state"]
    del d["gpus"][0]["pcie"]["path"][0]["aer_correctable"]
    p = tmp_path / "old.json"
    p.write_text(json.dumps(d))
    g = facts.load(p).gpus[0]
    assert g.performance_state is None and g.unavailable["performance_state"] == facts.NOT_RECORDED
    assert g.pcie.path[0].unavailable["aer_correctable"] == facts.NOT_RECORDED
    assert "memory_total_bytes" not in g.unavailable  # present fields are untouched


@dataclasses.dataclass
class _Hooked:
    """A dataclass with its own JSON form: a pair written as "a/b"."""

    a: int = 0
    b: int = 0

    def to_json_dict(self) -> dict[str, Any]:
        return {"pair": f"{self.a}/{self.b}"}

    @classmethod
    def from_json_dict(cls, data: Any, where: str) -> _Hooked:
        if not isinstance(data, dict) or not isinstance(data.get("pair"), str) or data["pair"].count("/") != 1:
            raise FactsError(f"{where}: expected an object with a pair")
        a, b = data["pair"].split("/")
        return cls(int(a), int(b))


@dataclasses.dataclass
class _Holder:
    hooked: _Hooked | None = None
    many: list[_Hooked] = dataclasses.field(default_factory=list)


def test_a_dataclass_with_json_hooks_is_written_and_read_through_them():
    obj = _Holder(hooked=_Hooked(1, 2), many=[_Hooked(3, 4)])
    data = facts.to_dict(obj)
    assert data == {"hooked": {"pair": "1/2"}, "many": [{"pair": "3/4"}]}
    assert isinstance(_Hooked(), facts.JsonHook)
    assert scanfile._from_dict(_Holder, json.loads(json.dumps(data)), "") == obj
    with pytest.raises(FactsError, match=r"^many\[0\]: expected an object with a pair"):
        scanfile._from_dict(_Holder, {"many": [{"pair": 5}]}, "")


LEAN_MEASUREMENT_FIELDS = (
    "kind",
    "status",
    "backend",
    "memory",
    "dtype",
    "world_size",
    "value_gbps",
    "expected_gbps",
    "latency_us",
    "value_tflops",
    "concurrent",
    "p2p_enabled",
    "gpus",
    "hosts",
    "notes",
)


def test_lean_load_reads_the_fleets_fields_as_they_are_and_drops_wrong_types():
    data = json.loads(json.dumps(G.node_scan("n1", random.Random(3), 0.01)))
    lean = facts.lean.lean_rig(data)
    assert (lean.host.hostname, lean.host.cpu_model, lean.software.driver_version) == (
        data["host"]["hostname"],
        data["host"]["cpu_model"],
        data["software"]["driver_version"],
    )
    assert len(lean.measurements) == len(data["measurements"]) > 100
    for raw, m in zip(data["measurements"], lean.measurements, strict=True):
        fields = [k for k in LEAN_MEASUREMENT_FIELDS if getattr(m, k) != getattr(facts.Measurement(), k)]
        assert {k: raw[k] for k in fields} == {k: getattr(m, k) for k in fields}  # what is read is as written
        assert (m.kind, m.status, m.gpus, m.value_gbps or m.latency_us) == (
            raw["kind"],
            raw["status"],
            raw["gpus"],
            raw["value_gbps"] or raw["latency_us"],
        )
        assert [(r["size_bytes"], r["busbw_gbps"]) for r in raw["rows"]] == [
            (r.size_bytes, r.busbw_gbps) for r in m.rows
        ]
        assert m.method is None and m.warmup_iters is None and m.unavailable == {}  # not read: the default
    assert [
        (len(g["nvlinks"]), sum(n["active"] for n in g["nvlinks"]), g["pcie"]["max_width"]) for g in data["gpus"]
    ] == [(len(g.nvlinks), len(g.active_nvlinks()), g.pcie.max_width) for g in lean.gpus]
    data["gpus"][0]["power_limit_w"] = "700 W"
    data["measurements"][0]["gpus"] = [0, "1"]
    data["host"]["sockets"] = True
    lean = facts.lean.lean_rig(data)
    assert lean.gpus[0].power_limit_w is None and lean.measurements[0].gpus == [0] and lean.host.sockets is None
