"""What a user copies from the text output works: every launch command, training-script block and config file
printed by `advise` (each framework, short and --explain) is read back from the printed text at COLUMNS 60, 80
and 200 and parsed by its own parser: bash -n and shlex for commands, Python's ast for code, json for
ds_config.json, PyYAML for accelerate.yaml. The reading of the text is this test's own (headers and indents as a
user sees them), not the renderer's."""

from __future__ import annotations

import ast
import json
import shlex
import shutil
import subprocess
import textwrap

import pytest
import yaml
from click.testing import CliRunner

from gpuadvisor.cli import cli as main

CASES = [
    ["--simulate", "4x4090-pcie", "--model", "llama-3-8b", "--framework", "deepspeed"],
    ["--simulate", "4x4090-pcie", "--model", "llama-3-8b", "--finetune", "lora", "--framework", "torch"],
    ["--simulate", "4x4090-pcie", "--model", "llama-3-8b", "--finetune", "qlora", "--framework", "accelerate"],
    ["--simulate", "dgx-h100", "--model", "llama-3-70b"],
    ["--simulate", "dgx-h100", "--model", "llama-3-70b", "--nodes", "2", "--framework", "accelerate"],
    ["--simulate", "dgx-h100", "--model", "llama-3-70b", "--nodes", "2", "--framework", "deepspeed"],
    ["--simulate", "dgx-h100", "--model", "llama-3-70b", "--framework", "megatron"],
    ["--simulate", "dgx-h100", "--model", "llama-3-8b", "--framework", "jax"],
    ["--simulate", "dgx-h100", "--model", "llama-3-8b", "--framework", "torch"],
    ["--simulate", "dgx-h100", "--model", "llama-3-8b", "--nodes", "2", "--framework", "accelerate"],
    ["--simulate", "dgx-h100", "--model", "llama-3-8b", "--nodes", "2", "--framework", "deepspeed"],
    ["--simulate", "dgx-a100", "--model", "mistral-7b", "--nodes", "4"],
    *[
        [
            "--simulate",
            "dgx-h100",
            "--model",
            "llama-3-70b",
            "--task",
            "inference",
            "--context",
            "8192",
            "--concurrency",
            "32",
            "--framework",
            fw,
        ]
        for fw in ("vllm", "sglang", "trtllm", "llamacpp", "ollama")
    ],
]
HEADERS = ("train.py (the lines to add):", "ds_config.json", "accelerate.yaml:", "launched with:")


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """(kind, lines) for every block under 'Launch:' as a reader sees it: the command lines right after the
    heading (and after 'launched with:'), the training-script lines after 'train.py ...', the files after their
    name; a block ends at a blank line or the next heading; prose between blocks is not read."""
    lines = text.splitlines()
    try:
        i = lines.index("Launch:") + 1
    except ValueError:
        return []
    blocks: list[tuple[str, list[str]]] = []
    kind, cur = "shell", []  # kind "": prose, not read

    def close() -> None:
        nonlocal cur
        if cur:
            blocks.append((kind, cur))
        cur = []

    for line in lines[i:]:
        if line and not line.startswith(" "):
            break
        body = line[2:]
        if not line.strip():
            close()
            kind = ""
            continue
        if any(body.startswith(h) for h in HEADERS):
            close()
            kind = {"t": "python", "d": "json", "a": "yaml", "l": "shell"}[body[0]]
            continue
        if kind:
            cur.append(body)
    close()
    return blocks


def _check(kind: str, block: list[str]) -> None:
    text = "\n".join(block).rstrip() + "\n"
    if kind == "shell":
        words = shlex.split(text.replace("\\\n", " "), comments=True)
        assert words or all(ln.lstrip().startswith("#") for ln in block), text  # a note in place of a command
        if shutil.which("bash"):
            r = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, timeout=30)
            assert r.returncode == 0, (text, r.stderr)
    elif kind == "python":
        ast.parse(textwrap.dedent(text))
    elif kind == "json":
        json.loads(text)
    elif kind == "yaml":
        assert isinstance(yaml.safe_load(text), dict), text


@pytest.mark.parametrize("args", CASES, ids=lambda a: "-".join(x for x in a if not x.startswith("--"))[:60])
def test_every_printed_block_parses_at_any_width(args):
    seen: dict[int, list[tuple[str, list[str]]]] = {}
    for columns in (60, 80, 200):
        for extra in ([], ["--explain"]):
            r = CliRunner().invoke(main, ["advise", *args, *extra], env={"COLUMNS": str(columns)})
            assert r.exit_code == 0, r.output
            blocks = _blocks(r.output)
            assert blocks, r.output
            for kind, block in blocks:
                _check(kind, block)
                if kind == "shell":
                    assert all(len(ln) + 2 <= columns for ln in block), block
            if extra:
                seen[columns] = blocks

    # The same words at every width: a continued command reads as the unbroken one.
    def words(blocks):
        return [shlex.split("\n".join(b).replace("\\\n", " "), comments=True) for k, b in blocks if k == "shell"]

    assert words(seen[60]) == words(seen[200])


def test_explain_prints_the_configs_a_user_writes_to_files():
    args = ["--simulate", "dgx-h100", "--model", "llama-3-8b", "--nodes", "2", "--framework", "accelerate"]
    r = CliRunner().invoke(main, ["advise", *args, "--explain"], env={"COLUMNS": "60"})
    kinds = [k for k, _ in _blocks(r.output)]
    assert "yaml" in kinds, r.output
    yaml_block = next(b for k, b in _blocks(r.output) if k == "yaml")
    cfg = yaml.safe_load("\n".join(yaml_block))
    assert cfg["num_machines"] == 2
