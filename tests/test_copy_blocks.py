"""A block under a caption in `advise` (a file, a script's lines, a command) is copied by what a reader sees:
the lines under the caption, indented deeper than it, up to the next blank line. Each such block loads in its
own parser (yaml.safe_load, json, Python's ast, bash -n), with nothing of the caption or of the next block in it."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import textwrap

import pytest
import yaml
from click.testing import CliRunner

from gpuadvisor.cli import cli as main
from tests.test_snippets_verbatim import CASES


def captioned_blocks(text: str) -> list[tuple[str, str]]:
    """(caption, block) under 'Launch:': a caption is an indented line ending with ':'; its block the following
    lines indented deeper, up to a blank line. A line at the caption's indent before the blank line is copied
    with the block (a reader selecting down to the blank line takes it), so it is kept in the block."""
    lines = text.splitlines()
    if "Launch:" not in lines:
        return []
    lines = lines[lines.index("Launch:") + 1 :]
    out = []
    for i, line in enumerate(lines):
        if not line.startswith(" ") and line:
            break
        indent = len(line) - len(line.lstrip(" "))
        if not (line.rstrip().endswith(":") and i + 1 < len(lines)):
            continue
        nxt = lines[i + 1]
        if not nxt.strip() or len(nxt) - len(nxt.lstrip(" ")) <= indent:
            continue
        block = []
        for ln in lines[i + 1 :]:
            if not ln.strip() or (ln and not ln.startswith(" ")):
                break
            block.append(ln)
        out.append((line.strip(), textwrap.dedent("\n".join(block)) + "\n"))
    return out


def check(caption: str, block: str) -> None:
    if caption.endswith((".yaml:", ".yml:")):
        assert isinstance(yaml.safe_load(block), dict), block
    elif caption.endswith(".json:"):
        json.loads(block)
    elif caption.startswith(("train.py", "train_")) or caption.endswith(".py:"):
        ast.parse(block)
    elif caption == "launched with:" and shutil.which("bash"):
        r = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, (block, r.stderr)


@pytest.mark.parametrize("args", CASES, ids=lambda a: "-".join(x for x in a if not x.startswith("--"))[:60])
def test_every_captioned_block_copies_alone(args: list[str]) -> None:
    r = CliRunner().invoke(main, ["advise", *args, "--explain"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    blocks = captioned_blocks(r.output)
    launch = r.output[r.output.index("Launch:") :]
    files = [ln.strip() for ln in launch.splitlines() if re.fullmatch(r"  \S+\.(yaml|json|py)( \(.*\))?:", ln)]
    assert [c for c, _ in blocks if c in files] == files  # every file shown has its block indented under it
    for caption, block in blocks:
        check(caption, block)


def test_the_accelerate_yaml_is_followed_by_a_blank_line() -> None:
    args = ["--simulate", "dgx-h100", "--model", "llama-3-70b", "--explain"]
    r = CliRunner().invoke(main, ["advise", *args], env={"COLUMNS": "80"})
    blocks = dict(captioned_blocks(r.output))
    assert yaml.safe_load(blocks["accelerate.yaml:"])["num_processes"] == 8
    assert "launched with" not in blocks["accelerate.yaml:"]
    assert blocks["launched with:"] == "accelerate launch --config_file accelerate.yaml train.py\n"
