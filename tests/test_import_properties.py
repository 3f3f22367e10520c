"""Properties of the reading over every real paste (tests/corpus_cases.real_pastes: the import fixtures and the
corpus): a cut, a missing first line or a paste's usual noise never makes the importer refuse what it read,
invent a value or a GPU, lose rows shown before the cut, or raise a finding the whole paste does not support.

Cuts: at line boundaries of the paste's last third (sampled), in the middle of its last line, and inside its last
number. Header: its first line removed. Noise: CRLF, tabs for runs of spaces, a shell prompt and command before
it, markdown fences, ``> ``/``% `` quote prefixes, the paste twice in one file. Parsed in this process (no
subprocess), so the whole file runs in seconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest

from gpuadvisor import rules
from gpuadvisor.errors import InputError
from gpuadvisor.importers import import_texts
from tests.corpus_cases import real_pastes

ALL_PASTES = real_pastes()
LINE_CUTS = 4  # line boundaries sampled in the last third (evenly), besides its last line


@dataclass
class Reading:
    gpus: int
    raised: set[str]  # finding codes at warn or worse
    facts: dict[int, dict[str, Any]]  # per GPU index: its scalar facts (and its PCIe link's)
    matrix: list[list[str]]


def read(text: str) -> Reading | str:
    """The reading of ``text`` as one pasted file, or the one-line refusal."""
    try:
        rig = import_texts([("paste.txt", text)])
    except InputError as e:
        assert "\n" not in str(e)
        return str(e)
    raised = {f.code for f in rules.evaluate(rig) if f.severity in ("warn", "fail")}
    facts = {}
    for g in rig.gpus:
        flat = {k: v for k, v in vars(g).items() if isinstance(v, (str, int, float, bool))}
        flat.update({f"pcie.{k}": v for k, v in vars(g.pcie).items() if isinstance(v, (str, int, float, bool))})
        # a number shown twice (srun tasks each see their GPU as GPU 0): the GPUs told apart by their UUID
        facts[g.index if sum(x.index == g.index for x in rig.gpus) == 1 else (g.index, g.uuid)] = flat
    return Reading(len(rig.gpus), raised, facts, rig.topology.matrix)


def cuts(text: str) -> list[tuple[str, str]]:
    """``(where, text cut there)``: sampled line boundaries of the last third, mid last line, inside a number."""
    lines = text.splitlines(keepends=True)
    n = len(lines)
    first = max(1, n - n // 3)
    step = max(1, (n - first) // LINE_CUTS)
    out = [(f"after line {k}", "".join(lines[:k])) for k in range(first, n, step)]
    last = lines[-1].rstrip("\n")
    if len(last) > 1:
        out.append(("mid last line", "".join(lines[:-1]) + last[: len(last) // 2]))
    start = len("".join(lines[:first]))
    numbers = [m for m in re.finditer(r"\d{2,}", text) if m.start() >= start]
    if numbers:
        m = numbers[-1]
        out.append((f"inside the number {m.group(0)!r}", text[: m.start() + 1]))
    return out


# the facts that are one instant's reading (power draw, temperature, memory in use) rather than the GPU's make-up
SAMPLED = {"power_draw_w", "temperature_c", "memory_used_bytes"}

# Cuts whose new finding the cut text itself supports (the whole paste holds a later line that excuses it).
MORE_SHOWN = {
    "fabric/fm-start-failed-with-smi-geforce_ericra95.txt": "GA809: a cut before the table's GPU row drops the "
    "GeForce card, the only sign the box has no NVSwitch; a failed fabric manager on a box of unknown GPUs rightly "
    "fails (the service is installed for NVSwitch systems)",
}

BASE: dict[str, Reading | str] = {pid: read(text) for pid, text in ALL_PASTES}
# the properties are about what a paste's reading keeps; a paste refused as a whole (a tool or vendor not read,
# or a known misread of the corpus) has no reading to keep, and is judged by its own case instead
PASTES = [(pid, text) for pid, text in ALL_PASTES if not isinstance(BASE[pid], str)]


def base(pid: str, text: str) -> Reading:
    got = BASE[pid]
    assert not isinstance(got, str)
    return got


IDS = [pid for pid, _ in PASTES]


@pytest.mark.parametrize(("pid", "text"), PASTES, ids=IDS)
def test_a_cut_reads_what_is_before_it_and_nothing_else(pid: str, text: str) -> None:
    whole = base(pid, text)
    seen = 0
    for where, cut in cuts(text):
        got = read(cut)
        if isinstance(got, str):  # refused: allowed only when nothing before the cut line is read either
            before = cut[: cut.rstrip("\n").rfind("\n") + 1]
            assert isinstance(read(before), str), f"cut {where}: refused although the lines before it read: {got}"
            continue
        assert got.gpus <= whole.gpus, f"cut {where}: {got.gpus} GPUs, the whole paste shows {whole.gpus}"
        if where.startswith("after line"):
            assert got.gpus >= seen, f"cut {where}: {got.gpus} GPUs, an earlier cut read {seen}"
            seen = got.gpus
        if pid not in MORE_SHOWN:
            assert got.raised <= whole.raised, f"cut {where}: {sorted(got.raised - whole.raised)} not raised uncut"
        for idx, facts in got.facts.items():
            full = whole.facts.get(idx, {})
            # at a line boundary no line is cut short: an instant's reading there is an earlier sample of a series
            # (nvidia-smi dmon prints one row per GPU per second), not a stub; cuts inside a line check them all
            series = SAMPLED if where.startswith("after line") else set()
            stub = {k: v for k, v in facts.items() if k in full and full[k] != v and k not in series}
            assert not stub, f"cut {where}: GPU {idx}: {stub} where the whole paste shows " + str(
                {k: full[k] for k in stub}
            )


@pytest.mark.parametrize(("pid", "text"), PASTES, ids=IDS)
def test_without_its_first_line_the_rows_are_still_read(pid: str, text: str) -> None:
    whole = base(pid, text)
    lines = text.splitlines(keepends=True)
    first = next(k for k, x in enumerate(lines) if x.strip())
    got = read("".join(lines[first + 1 :]))
    if isinstance(got, str):  # one clear refusal: a paste whose first line is its only key
        assert whole.gpus <= 1 or "not recognised" not in got, f"refused: {got}"
        return
    # the first line may be a GPU's own row; GPUs counted ('Attached GPUs : 8') but not shown hold no row to read
    shown = [sum(1 for f in r.facts.values() if set(f) - {"index"}) for r in (whole, got)]
    assert shown[0] - 1 <= shown[1] <= shown[0]
    assert got.raised <= whole.raised


def _quoted(text: str, mark: str) -> str:
    return "".join(mark + x if x.strip() else x for x in text.splitlines(keepends=True))


def _tabbed(text: str) -> str:
    """Runs of spaces between a line's words as one tab (as a terminal or an editor copies them); the indent kept."""
    out = []
    for line in text.splitlines(keepends=True):
        body = line.lstrip(" ")
        out.append(line[: len(line) - len(body)] + re.sub(r"(?<=\S) {2,}(?=\S)", "\t", body))
    return "".join(out)


NOISE = {
    "CRLF": lambda t: t.replace("\n", "\r\n"),
    "tabs for spaces": _tabbed,
    "prompt and command": lambda t: "user@node01:~$ sudo nvidia-smi -q\n" + t,
    "markdown fence": lambda t: "```\n" + t + ("" if t.endswith("\n") else "\n") + "```\n",
    "> quote": lambda t: _quoted(t, "> "),
    "% quote": lambda t: _quoted(t, "% "),
    "twice": lambda t: t + ("" if t.endswith("\n") else "\n") + "\n" + t,
    # two outputs each in its own fence (the common forum form): the fences between them are noise
    "twice, each fenced": lambda t: 2 * ("```\n" + t + ("" if t.endswith("\n") else "\n") + "```\n\n"),
}


# Pastes cut inside their last line where what is left still reads as a whole value: a fence closed under it, or
# the paste again after it, makes that line a whole one (the writer's, read as such), so the GPU it names is read.
CUT_LOOKS_WHOLE = {
    "s34-collect-env/xformers-info-0-0-22-kaggle-tesla-p100-unavailable-cut-in-name_probit2011.txt": "'gpu.name: "
    "Tesla P100-PCIE', cut in 'Tesla P100-PCIE-16GB'",
}


@pytest.mark.parametrize("noise", sorted(NOISE))
@pytest.mark.parametrize(("pid", "text"), PASTES, ids=IDS)
def test_noise_changes_nothing(pid: str, text: str, noise: str) -> None:
    whole = base(pid, text)
    got = read(NOISE[noise](text))
    assert not isinstance(got, str), f"refused: {got}"
    if pid in CUT_LOOKS_WHOLE and noise in ("markdown fence", "twice", "twice, each fenced"):
        assert got.gpus == whole.gpus + 1  # the cut line, made whole by the noise, names one more GPU
        return
    assert (got.gpus, got.raised, got.matrix) == (whole.gpus, whole.raised, whole.matrix)


def test_only_known_misreads_are_left_out() -> None:
    """The pastes the properties skip are exactly the corpus cases known to be refused today (each with its cause)."""
    from tests.corpus_cases import cases

    known = {c.id for c in cases() if c.known or c.refused}
    left_out = {pid for pid, _ in ALL_PASTES if isinstance(BASE[pid], str)}
    assert left_out <= known and len(PASTES) >= 170
