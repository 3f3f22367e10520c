"""The advice as types (gpuadvisor.advice_model): a scan's saved advice loads into them and is written back byte for
byte; a malformed one is refused in one line naming the field."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest

from gpuadvisor import facts
from gpuadvisor.advice_model import (
    Advice,
    Band,
    ForeignAdvice,
    ServingCandidate,
    ServingResult,
    TrainCandidate,
    TrainingSnippet,
)
from gpuadvisor.advisor import Workload, advise
from gpuadvisor.collect import simulate

FIXTURES = Path(__file__).parent / "fixtures" / "h100-vm"


def _advised(preset: str, **workload: object) -> facts.Rig:
    rig = simulate(preset)
    advise(rig, Workload.from_options(**workload))
    return rig


@pytest.mark.parametrize(
    ("preset", "workload"),
    [
        ("dgx-h100", {"model": "llama-3-70b"}),
        ("4x4090-pcie", {"model": "llama-3-70b"}),  # nothing fits: the smallest rig
        ("dgx-h100", {"model": "llama-3-8b", "task": "inference"}),
    ],
)
def test_a_saved_scan_loads_typed_and_writes_back_byte_for_byte(tmp_path: Path, preset: str, workload: dict) -> None:
    rig = _advised(preset, **workload)
    path = tmp_path / "scan.json"
    rig.save(path)
    again = facts.load(path)
    assert isinstance(again.advice, Advice)
    assert again.to_json() == path.read_text()
    assert again.advice == rig.advice
    a = again.advice
    if a.task == "train":
        assert all(isinstance(c, TrainCandidate) for c in a.candidates)
        if a.pick is not None:
            assert isinstance(a.pick, TrainCandidate) and a.pick.name == a.pick_name
            assert isinstance(a.snippet, TrainingSnippet) and a.snippet.torchrun
            assert isinstance(a.pick.tokens_band, Band) and a.pick.tokens_band.low < a.pick.tokens_band.high
        else:
            assert a.smallest_rig is not None and a.smallest_rig.smallest.description in a.reason
    else:
        assert all(isinstance(c, ServingCandidate) for c in a.candidates)
        assert isinstance(a.pick, ServingCandidate) and isinstance(a.pick.serving, ServingResult)


@pytest.mark.parametrize("name", ["scan-bench.json", "scan-v2-bench.json", "scan-v4-storage.json"])
def test_advice_saved_by_older_versions_is_written_back_as_it_was(name: str) -> None:
    """Keys an older gpuadvisor wrote (scaling_efficiency) or did not write yet (marketed_gb, the context-parallel
    figures) stay as they were, in their order."""
    text = (FIXTURES / name).read_text()
    saved = json.loads(text)["advice"]
    rig = facts.from_dict(json.loads(text))
    assert isinstance(rig.advice, Advice)
    assert json.dumps(rig.to_dict()["advice"], indent=2) == json.dumps(saved, indent=2)


def _scan(rig: facts.Rig) -> dict:
    return json.loads(rig.to_json())


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("candidates", 0, "fits"), 5, "advice.candidates[0].fits: expected boolean, got 5"),
        (
            ("pick_detail", "memory", "total_bytes"),
            "x",
            'advice.pick_detail.memory.total_bytes: expected number, got "x"',
        ),
        (("rig", "nodes"), 1.5, "advice.rig.nodes: expected integer, got 1.5"),
        (("candidates", 1, "band"), [], "advice.candidates[1].band: expected object or null, got a list"),
        (("notes",), {}, "advice.notes: expected list, got an object"),
    ],
)
def test_a_malformed_advice_is_one_line_naming_the_field(
    tmp_path: Path, path: tuple, value: object, message: str
) -> None:
    doc = _scan(_advised("dgx-h100", model="llama-3-8b"))
    node = doc["advice"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(facts.FactsError) as e:
        facts.load(f)
    assert str(e.value) == f"{f}: field {message}"
    assert "\n" not in str(e.value)


def test_advice_another_tool_wrote_is_kept_as_it_is() -> None:
    doc = _scan(simulate("h100-pcie"))
    doc["advice"] = {"pick": {"name": "ZeRO-2", "launch": "torchrun train.py"}, "mfu_assumed": 0.4}
    rig = facts.from_dict(copy.deepcopy(doc))
    assert isinstance(rig.advice, ForeignAdvice) and rig.advice["mfu_assumed"] == 0.4
    assert json.loads(rig.to_json())["advice"] == doc["advice"]


def _records(value: object) -> list[object]:
    """Every Record inside ``value`` (an advice), itself included."""
    from gpuadvisor.advice_model.record import Record

    found: list[object] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Record):
            found.append(v)
            stack += [getattr(v, f.name) for f in dataclasses.fields(v)]
        elif isinstance(v, list | tuple):
            stack += list(v)
        elif isinstance(v, dict):
            stack += list(v.values())
    return found


def test_a_record_is_true_when_its_json_has_a_key() -> None:
    """bool(record) is answered without writing its JSON; it must say what len() says, for records the advisor
    builds, records read back (older files included), and records whose every field is left out while None."""
    from gpuadvisor.advice_model.record import Record, _fields

    records = _records(_advised("dgx-h100", model="llama-3-70b").advice)
    records += _records(_advised("dgx-h100", model="llama-3-8b", task="inference").advice)
    for name in ["scan-bench.json", "scan-v2-bench.json", "scan-v4-storage.json"]:
        records += _records(facts.load(FIXTURES / name).advice)
    subclasses, blank = [Record], []
    while subclasses:
        cls = subclasses.pop()
        subclasses += cls.__subclasses__()
        if cls.to_json_dict is not Record.to_json_dict:  # its own JSON (ForeignAdvice): bool() asks len()
            continue
        for keep in (None, *sorted(cls.OPTIONAL)):  # every field None, or all but one optional field None
            r = object.__new__(cls)
            for f in dataclasses.fields(cls):
                object.__setattr__(r, f.name, None)
            if keep is not None:
                name = next(n for n, key, _ in _fields(cls) if key == keep)
                object.__setattr__(r, name, 1.0)
            blank.append(r)
            read = copy.copy(r)
            object.__setattr__(read, "saved", ((), {}))  # read from a file that had no key
            blank.append(read)
    assert len(records) > 100 and not all(blank) and any(blank)
    records += blank
    for r in records:
        assert bool(r) == (len(r) > 0), type(r).__name__
