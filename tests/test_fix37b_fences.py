"""Fences between the runs of one output are noise: a paste of ``nvidia-smi nvlink --status -i 2`` and ``-i 3``, each
in its own markdown fence (the common forum form), reads as the two runs unfenced do.

The property runs over every real paste (tests/corpus_cases.real_pastes): where a paste's output can be cut in two
at a line the second part starts as its own output of the same kind (one GPU's block of ``nvlink -s``, a second
table), the two parts each fenced and joined read as the paste does.
"""

from __future__ import annotations

import pytest

from gpuadvisor.importers.sections import split_sections
from tests.test_import_properties import BASE, PASTES, SAMPLED, Reading, base, read

# https://github.com/NVIDIA/apex/issues/282 (set 37's paste): GPUs 2 and 3, each run fenced
NVLINK_TWO_RUNS = """```
nvidia-smi nvlink --status -i 2
GPU 2: GeForce RTX 2080 Ti (UUID: GPU-6c41afdf-d8aa-ed9b-24a2-fa90c471fda0)
\t Link 0: 25.781 GB/s
\t Link 1: 25.781 GB/s
```

```
nvidia-smi nvlink --status -i 3
GPU 3: GeForce RTX 2080 Ti (UUID: GPU-a78f4e04-05cc-74fe-5d3a-c2ad0f069e05)
\t Link 0: 25.781 GB/s
\t Link 1: 25.781 GB/s
```
"""


def test_two_fenced_nvlink_runs_read_as_one_machine() -> None:
    got = read(NVLINK_TWO_RUNS)
    assert isinstance(got, Reading), got
    assert got.gpus == 2
    assert [got.facts[i]["uuid"] for i in (2, 3)] == [
        "GPU-6c41afdf-d8aa-ed9b-24a2-fa90c471fda0",
        "GPU-a78f4e04-05cc-74fe-5d3a-c2ad0f069e05",
    ]


def test_prose_between_the_fences_still_ends_the_first_output() -> None:
    """Only glue (blank lines, prompts, fences) between the blocks joins them: a line of prose is the writer's."""
    with_prose = NVLINK_TWO_RUNS.replace("```\n\n```", "```\nand the other card, which I think is in another box:\n```")
    assert [len(s.lines) for s in split_sections(with_prose) if s.kind == "nvlink"] == [3, 3]


def split_point(pid: str, text: str) -> int | None:
    """A line index where the paste's output can be cut in two runs: the part after it starts an output of the same
    kind on its first line, and each part read alone shows its own GPUs, together the paste's; None when none (the
    first such line of its first output tried; pastes of up to 60 lines, for time)."""
    lines = text.splitlines()
    whole = BASE[pid]
    sections = split_sections(text) if len(lines) <= 60 else []
    s = sections[0] if sections else None
    for j in range(s.start, s.start - 1 + len(s.lines)) if s else ():
        rest = split_sections("\n".join(lines[j:]) + "\n")
        if rest and rest[0].start == 1 and rest[0].kind == s.kind and lines[j].strip():
            a, b = read("\n".join(lines[:j]) + "\n"), read("\n".join(lines[j:]) + "\n")
            two = isinstance(a, Reading) and isinstance(b, Reading) and isinstance(whole, Reading)
            return j if two and a.gpus and b.gpus and a.gpus + b.gpus == whole.gpus else None  # type: ignore[union-attr]
    return None


SPLITS = [(pid, text, k) for pid, text in PASTES if "```" not in text and (k := split_point(pid, text)) is not None]


def fenced(part: list[str]) -> str:
    return "```\n" + "\n".join(part) + "\n```\n\n"


def test_the_property_covers_many_formats() -> None:
    assert len(SPLITS) >= 5 and len(BASE) > len(SPLITS)


@pytest.mark.parametrize(("pid", "text", "k"), SPLITS, ids=[pid for pid, _, _ in SPLITS])
def test_two_runs_each_fenced_read_as_the_paste(pid: str, text: str, k: int) -> None:
    whole = base(pid, text)
    lines = text.splitlines()
    got = read(fenced(lines[:k]) + fenced(lines[k:]))
    assert isinstance(got, Reading), f"refused: {got}"
    assert (got.gpus, got.raised, got.matrix) == (whole.gpus, whole.raised, whole.matrix)


# A paste whose last line is cut mid-name and whose fence never closes: the newline after it is the writer's, the line
# looks whole. Known: nvidia-smi --query-gpu's last CSV row cut so keeps the stub where -L above names the GPU whole.
CUT_IN_OPEN_FENCE_KNOWN = {
    "smi/smi-L-and-query-name_jchodera.txt": "'NVIDIA GeForc' from a CSV row cut in an open fence"
}


def test_a_last_line_cut_inside_an_open_fence_gives_no_stub() -> None:
    """Each paste cut in the middle of its last line, inside a fence that never closes (the line ends in a newline):
    no GPU fact the cut line holds differs from the whole paste's (a stub stored as a value)."""
    stubs = []
    for pid, text in PASTES:
        lines = text.splitlines(keepends=True)
        last = lines[-1].rstrip("\n")
        if len(last) < 2 or pid in CUT_IN_OPEN_FENCE_KNOWN:
            continue
        got = read("```\n" + "".join(lines[:-1]) + last[: len(last) // 2] + "\n")
        if isinstance(got, str):
            continue
        whole = base(pid, text)
        for idx, facts in got.facts.items():
            full = whole.facts.get(idx, {})
            if any(k in full and full[k] != v and k not in SAMPLED for k, v in facts.items()):
                stubs.append((pid, idx))
    assert stubs == []
