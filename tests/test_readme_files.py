"""Every command line in the README's code blocks that names an input file works as typed, from a clone's root:
the file ships in the repository (or an earlier line writes it), and the command does not refuse it."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTPUT_OPTIONS = {"--json", "--html", "-o", "--output"}
FILE = re.compile(r"\.(toml|json|txt|yaml|yml|csv|log)$")
# the reader's own files, named as examples of what to give (not shipped): a glob of their build files
THEIRS = {"builds/*.toml"}


def readme_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    out = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = line.strip().removeprefix("$ ")
            if not re.match(r"(\S*/)?gpuadvisor\s", line):
                continue
            words = shlex.split(line.split(" | ")[0], comments=True)
            out.append(["gpuadvisor", *words[1:]])
    return out


def inputs_and_outputs(argv: list[str]) -> tuple[list[str], list[str]]:
    ins, outs = [], []
    for prev, word in zip(argv, argv[1:], strict=False):
        if not FILE.search(word) or "$" in word:
            continue
        (outs if prev in OUTPUT_OPTIONS else ins).append(word)
    return ins, outs


def test_the_readme_names_files_its_reader_has() -> None:
    commands = readme_commands()
    assert any("examples/planted-dgx-h100.toml" in c for c in commands)
    written: set[str] = set()
    for argv in commands:
        ins, outs = inputs_and_outputs(argv)
        for name in ins:
            assert name in written or name in THEIRS or (ROOT / name).is_file(), f"{shlex.join(argv)}: no {name}"
        written.update(outs)


def test_the_readme_commands_that_name_files_run(tmp_path: Path) -> None:
    """Run in order (a later line reads what an earlier one wrote), in a directory holding the repository's files."""
    for entry in ("examples", "probes"):
        (tmp_path / entry).symlink_to(ROOT / entry)
    ran = 0
    for argv in readme_commands():
        ins, outs = inputs_and_outputs(argv)
        if not ins and not outs or any(n in THEIRS for n in ins) or "--bench" in argv:
            continue
        p = subprocess.run(
            [sys.executable, "-m", "gpuadvisor", *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert p.returncode in (0, 1), f"{shlex.join(argv)}: exit {p.returncode}: {p.stderr}"
        ran += 1
    assert ran >= 4
