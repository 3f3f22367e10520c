"""Every real paste of the corpus (tests/corpus/*/INDEX.toml) reads as an engineer reads it, by hand."""

from __future__ import annotations

import pytest

from tests.corpus_cases import Case, cases, reading_diffs, run_import, subset_diffs

CASES = cases()


def test_the_corpus_is_indexed_both_ways() -> None:
    from tests.corpus_cases import CORPUS

    indexed = {c.id for c in CASES}
    on_disk = {f"{p.parent.name}/{p.name}" for p in CORPUS.glob("*/*") if p.name not in ("INDEX.toml", "README.md")}
    assert on_disk == indexed
    assert all(c.source.startswith("http") for c in CASES)


def test_the_comparison_sees_a_difference() -> None:
    assert subset_diffs({"a": [{"b": 1}]}, {"a": [{"b": 1, "c": 2}]}) == []
    assert subset_diffs({"a": [{"b": 1}]}, {"a": [{"b": 2}]}) == [".a[0].b: 2 != 1"]
    assert subset_diffs({"a": [1]}, {"a": [1, 2]}) == [".a: expected 1 items, got 2"]
    case = Case(folder="x", file="y", source="http://z", kind="k", gpus=2, codes=["GA201"], worst="warn")
    scan = {"gpus": [{}], "findings": [{"code": "GA101", "severity": "fail"}]}
    assert reading_diffs(case, 0, scan) == [
        "GPUs read: 1, expected 2",
        "GA201 did not fire",
        "worst severity fail, expected warn",
    ]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_reads_as_written_by_hand(case: Case) -> None:
    rc, scan = run_import([case.path])
    diffs = reading_diffs(case, rc, scan)
    if case.known:
        assert diffs, f"listed as a known misread ({case.known}) but it now reads as written: drop 'known'"
        pytest.xfail(f"known misread: {case.known}: {'; '.join(diffs)[:300]}")
    assert diffs == []


def test_no_reading_rests_on_the_name_the_gatherer_gave_the_file(tmp_path) -> None:
    """The corpus files are named by whoever gathered them, with what the paste shows ("alltoall-perf-64-ranks...");
    a name is context the tool may read (a user's ``all_reduce_perf.txt``), so a case that reads right only under its
    descriptive name would be read from our own words, not from the paste. Each case that reads as written must read
    the same as ``paste.txt``."""
    moved = []
    for case in CASES:
        if case.known:
            continue
        neutral = tmp_path / "paste.txt"
        neutral.write_bytes(case.path.read_bytes())
        rc, scan = run_import([neutral])
        if reading_diffs(case, rc, scan):
            moved.append(case.id)
    assert moved == []
