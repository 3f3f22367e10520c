"""Model names as buyers type them, and commands as they mistype them: the catalog's aliases, "did you mean",
and the usage for a bare `gpuadvisor`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gpuadvisor import catalog


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpuadvisor", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("typed", "model", "context"),
    [
        # context lengths: max_position_embeddings of each model's Hugging Face config.json (the catalog's source)
        ("llama-3.3-70b", "llama-3.3-70b", 131072),
        ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.3-70b", 131072),
        ("Meta-Llama-3-70B", "llama-3-70b", 8192),
        ("meta-llama/Meta-Llama-3-70B-Instruct", "llama-3-70b", 8192),
        ("llama-3-8B-instruct", "llama-3-8b", 8192),
        ("LLAMA3-8B", "llama-3-8b", 8192),
        ("Llama-3.1-8B", "llama-3.1-8b", 131072),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b", 131072),
        ("llama-3.1-70b-instruct", "llama-3.1-70b", 131072),
        ("Llama-3.2-1B-Instruct", "llama-3.2-1b", 131072),
        ("Llama-2-7b-chat-hf", "llama-2-7b", 4096),
    ],
)
def test_names_buyers_type_find_the_architecture(typed: str, model: str, context: int) -> None:
    spec = catalog.find_model(typed)
    assert spec is not None and (spec.id, spec.max_position_embeddings) == (model, context)


def test_llama_3_1_is_llama_3_with_a_128k_context() -> None:
    a, b = catalog.find_model("llama-3-70b"), catalog.find_model("llama-3.1-70b")
    assert a is not None and b is not None and a is not b
    shape = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "intermediate_size")
    assert [getattr(a, f) for f in shape] == [getattr(b, f) for f in shape] == [8192, 80, 64, 8, 28672]
    assert (a.max_position_embeddings, b.max_position_embeddings) == (8192, 131072)


def test_every_name_in_the_catalog_finds_its_own_model() -> None:
    for m in catalog.models():
        for name in (m.id, *m.aliases, m.hf_id or m.id):
            assert catalog.find_model(name) is m, name


def test_an_unknown_model_gets_did_you_mean() -> None:
    p = run("advise", "--simulate", "dgx-h100", "--model", "lama-3.3-70b")
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    assert "--model lama-3.3-70b: not a preset; did you mean llama-3.3-70b" in p.stderr
    assert catalog.model_suggestion("gpt-5-xl-turbo-ultra") == ""


def test_a_mistyped_command_gets_did_you_mean() -> None:
    p = run("scna")
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == "gpuadvisor: error: No such command 'scna'; did you mean scan? (see 'gpuadvisor --help')\n"
    p = run("xyzzy")
    assert p.returncode == 2 and "did you mean" not in p.stderr


def test_bare_gpuadvisor_prints_the_usage_and_exits_0() -> None:
    p = run()
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout.startswith("Usage: gpuadvisor [OPTIONS] COMMAND [ARGS]...") and "Commands:" in p.stdout


def test_an_option_without_its_value_points_to_its_commands_help() -> None:
    p = run("scan", "--json")
    assert p.returncode == 2
    assert p.stderr == "gpuadvisor: error: Option '--json' requires an argument. (see 'gpuadvisor scan --help')\n"
