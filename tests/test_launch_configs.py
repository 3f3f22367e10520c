"""Every launch snippet the advisor prints, checked by the library that will read it: DeepSpeed's own config
models (DeepSpeedConfig, pydantic DeepSpeedZeroConfig), accelerate's config loader and launcher checks (the path
`accelerate launch --config_file` takes, up to the DeepSpeed/FSDP plugin), torch's torchrun parser, DeepSpeed's
launcher parser, torch's FSDP signature, and JAX's Mesh/PartitionSpec on fake CPU devices. The memory model
counts what the printed DeepSpeed config allocates.

accelerate, deepspeed and jax come with the test extras (pip install -e '.[test]', CPU-only, no DeepSpeed ops
built); where one is missing its tests skip and say so.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import logging
import os
import shlex
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from gpuadvisor.advisor import Workload, advise
from gpuadvisor.advisor.config_memory import bucket_sizes, deepspeed_buffer_bytes
from gpuadvisor.advisor.frameworks import FRAMEWORKS, SERVE_FRAMEWORKS, TRAIN_FRAMEWORKS, launch
from gpuadvisor.collect import simulate

# (preset, workload options): one of each snippet kind the advisor prints.
TRAIN_CASES = {
    "zero1": ("dgx-h100", {"model": "mistral-7b"}),
    "zero1-2nodes": ("dgx-h100", {"model": "mistral-7b", "nodes": 2}),
    "zero3-offload": ("dgx-h100", {"model": "llama-3-70b"}),
    "zero2-offload-fp16": ("4x4090-pcie", {"model": "mistral-7b", "precision": "fp16"}),
    "fsdp-full-shard": ("dgx-h100", {"model": "llama-3-70b", "finetune": "lora", "lora_rank": 64}),
    "fsdp-shard-grad-op": ("dgx-h100", {"model": "llama-3-8b"}),
    "hsdp-2nodes": ("dgx-h100", {"model": "llama-3-70b", "finetune": "lora", "nodes": 2}),
    "ddp-qlora": ("4x4090-pcie", {"model": "mistral-7b", "finetune": "qlora"}),
    "ddp-fp32-16gpus": ("dgx2-v100", {"model": "gpt2", "precision": "fp32"}),
    "single-qlora": ("h100-pcie", {"model": "llama-3-8b", "finetune": "qlora"}),
    "megatron-tp4": ("dgx2-v100", {"model": "llama-3-8b"}),
    "megatron-pp-2nodes": ("dgx-h100", {"model": "llama-3-70b", "nodes": 2}),
}
DS_CASES = ["zero1", "zero1-2nodes", "zero3-offload", "zero2-offload-fp16", "fsdp-full-shard", "fsdp-shard-grad-op"]
ACCELERATE_CASES = [c for c in TRAIN_CASES if not c.startswith(("single", "megatron"))]
EXPECTED_KIND = {
    "zero1": "deepspeed",
    "zero1-2nodes": "deepspeed",
    "zero3-offload": "deepspeed",
    "zero2-offload-fp16": "deepspeed",
    "fsdp-full-shard": "fsdp",
    "fsdp-shard-grad-op": "fsdp",
    "hsdp-2nodes": "fsdp",
    "ddp-qlora": "ddp",
    "ddp-fp32-16gpus": "ddp",
    "single-qlora": "single",
    "megatron-tp4": "megatron",
    "megatron-pp-2nodes": "megatron",
}
SERVE_CASES = {
    "tp4": ("dgx-h100", {"model": "llama-3-70b", "task": "inference", "concurrency": 32}),
    "tp1-fp8-kv": (
        "h100-pcie",
        {"model": "llama-3-8b", "task": "inference", "precision": "fp8", "kv_cache_dtype": "fp8"},
    ),
    "pp-2nodes": (
        "dgx-a100",
        {"model": "llama-3-70b", "task": "inference", "nodes": 2, "context": 32768, "concurrency": 96},
    ),
}
# What a shell would put for the variables the multi-node lines leave to it.
SHELL = {"$MASTER_ADDR": "10.0.0.1", "$NODE_RANK": "1"}


def _shell(line: str) -> list[str]:
    for k, v in SHELL.items():
        line = line.replace(k, v)
    return shlex.split(line)


@functools.cache
def _advice(case: str) -> dict[str, Any]:
    rig, kw = TRAIN_CASES.get(case) or SERVE_CASES[case]
    return advise(simulate(rig), Workload.from_options(**kw)).to_dict()


def _ds_cases() -> list[str]:
    return [c for c in TRAIN_CASES if _advice(c)["snippet"]["deepspeed_config"]]


def test_cases_cover_every_snippet_kind() -> None:
    assert {c: _advice(c)["snippet"]["kind"] for c in TRAIN_CASES} == EXPECTED_KIND
    assert [c for c in TRAIN_CASES if _advice(c)["snippet"]["deepspeed_config"]] == DS_CASES
    assert [c for c in TRAIN_CASES if _advice(c)["snippet"]["accelerate_config"]] == ACCELERATE_CASES
    assert _advice("pp-2nodes")["pick_detail"]["pipeline_parallel_size"] == 2


# -- DeepSpeed --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", DS_CASES)
def test_deepspeed_config_parses_in_deepspeed(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """DeepSpeedConfig builds its pydantic models (DeepSpeedZeroConfig forbids unknown keys) and checks
    train_batch_size = micro × accumulation × data-parallel world size, at the world size the launch has."""
    pytest.importorskip("deepspeed", reason="deepspeed not installed: pip install -e '.[test]'")
    import deepspeed.runtime.config as dsc
    from deepspeed.runtime import constants as ds_constants
    from deepspeed.runtime.activation_checkpointing import config as ac_config
    from deepspeed.runtime.zero.config import ZERO_OPTIMIZATION

    d = _advice(case)
    cfg = d["snippet"]["deepspeed_config"]
    world = d["rig"]["gpus_per_node"] * d["rig"]["nodes"]
    monkeypatch.setattr(dsc.dist, "get_world_size", lambda *a, **k: world)
    monkeypatch.setattr(dsc.dist, "get_rank", lambda *a, **k: 0)
    parsed = dsc.DeepSpeedConfig(json.loads(json.dumps(cfg)))
    assert parsed.world_size == world
    assert parsed.train_batch_size == d["batch"]["global_batch"] == cfg["train_batch_size"]
    z = parsed.zero_config
    printed = cfg["zero_optimization"]
    assert int(z.stage) == printed["stage"] == d["pick_detail"]["zero_stage"]
    assert z.reduce_bucket_size == printed["reduce_bucket_size"] and z.overlap_comm is True
    if "stage3_prefetch_bucket_size" in printed:
        assert z.prefetch_bucket_size == printed["stage3_prefetch_bucket_size"]
    if "allgather_bucket_size" in printed:
        assert z.allgather_bucket_size == printed["allgather_bucket_size"] and z.allgather_bucket_size % 2 == 0
    assert (z.offload_optimizer is not None) == (d["pick_detail"]["cpu_offload"] != "none")
    assert (z.offload_param is not None) == (d["pick_detail"]["cpu_offload"] == "optimizer+params")
    assert parsed.bfloat16_config.enabled == (d["workload"]["precision"] in ("bf16", "fp8"))
    assert parsed.float16_config.enabled == (d["workload"]["precision"] == "fp16")
    # DeepSpeedConfig reads the top level by name and ignores the rest: every key must be one it reads.
    known = {v for v in vars(ds_constants).values() if isinstance(v, str)} | {ac_config.ACT_CHKPT, ZERO_OPTIMIZATION}
    assert set(cfg) <= known, set(cfg) - known
    if "activation_checkpointing" in cfg:
        ac_keys = {v for k, v in vars(ac_config).items() if k.startswith("ACT_CHKPT_") and isinstance(v, str)}
        assert set(cfg["activation_checkpointing"]) <= ac_keys


def test_deepspeed_config_rejects_a_wrong_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: DeepSpeed's zero config refuses a misspelt key, and a batch size that does not
    multiply out."""
    pytest.importorskip("deepspeed", reason="deepspeed not installed: pip install -e '.[test]'")
    import deepspeed.runtime.config as dsc

    cfg = json.loads(json.dumps(_advice("zero1")["snippet"]["deepspeed_config"]))
    monkeypatch.setattr(dsc.dist, "get_world_size", lambda *a, **k: 8)
    monkeypatch.setattr(dsc.dist, "get_rank", lambda *a, **k: 0)
    bad = {**cfg, "zero_optimization": {**cfg["zero_optimization"], "reduce_bucket_sise": 1}}
    with pytest.raises(Exception, match="reduce_bucket_sise"):
        dsc.DeepSpeedConfig(bad)
    with pytest.raises(AssertionError):
        dsc.DeepSpeedConfig({**cfg, "train_batch_size": cfg["train_batch_size"] + 1})


def test_memory_counts_the_deepspeed_buckets_the_config_allocates() -> None:
    """The printed buckets are sized for the model (hidden², Transformers' 'auto' values, not DeepSpeed's 5e8
    default) and the breakdown of a DeepSpeed launch counts them: stages 1-2 with overlap_comm
    4.5 × (allgather + reduce) × 2 bytes (Transformers DeepSpeed docs: 5e8 buckets are a 9 GB footprint),
    stage 3 one reduce bucket. An FSDP launch prints DeepSpeed's config as an alternative and says what its
    buckets would add."""
    z1 = _advice("zero1")
    h = z1["workload"]["architecture"]["hidden"]
    zero = z1["snippet"]["deepspeed_config"]["zero_optimization"]
    assert zero["reduce_bucket_size"] == zero["allgather_bucket_size"] == h * h == 16_777_216
    assert zero["overlap_comm"] is True
    m = z1["pick_detail"]["memory"]
    assert m["buffers_bytes"] == round(4.5 * 2 * h * h * 2) == 301_989_888
    assert m["torch_peak_allocated_bytes"] == pytest.approx(
        sum(
            m[k]
            for k in (
                "params_bytes",
                "grads_bytes",
                "optimizer_bytes",
                "activations_bytes",
                "gathered_bytes",
                "buffers_bytes",
            )
        ),
        abs=8,
    )
    assert m["total_bytes"] == pytest.approx(m["torch_peak_allocated_bytes"] + m["overhead_bytes"], abs=2)
    z3 = _advice("zero3-offload")
    h3 = z3["workload"]["architecture"]["hidden"]
    zero3 = z3["snippet"]["deepspeed_config"]["zero_optimization"]
    assert (
        zero3["reduce_bucket_size"] == h3 * h3 and zero3["stage3_prefetch_bucket_size"] == int(0.9 * h3 * h3) // 8 * 8
    )
    assert zero3["stage3_param_persistence_threshold"] == 10 * h3 and "allgather_bucket_size" not in zero3
    assert z3["pick_detail"]["memory"]["buffers_bytes"] == h3 * h3 * 2
    fp16 = _advice("zero2-offload-fp16")["pick_detail"]["memory"]["buffers_bytes"]
    assert fp16 == round(4.5 * 2 * 4096 * 4096 * 2)
    # Layouts not launched with DeepSpeed allocate none of these; an FSDP pick's DeepSpeed alternative says what they
    # add.
    for case in ("ddp-qlora", "hsdp-2nodes", "megatron-tp4", "single-qlora", "fsdp-shard-grad-op"):
        assert _advice(case)["pick_detail"]["memory"]["buffers_bytes"] == 0
    g = _advice("fsdp-shard-grad-op")
    hg = g["workload"]["architecture"]["hidden"]
    assert f"add {4.5 * 2 * hg * hg * 2 / 2**30:.2f} GiB per GPU" in g["snippet"]["deepspeed_config_note"]
    # Every candidate launched with DeepSpeed counts its buckets, pick or not.
    for c in _advice("zero1")["candidates"]:
        deepspeed = c["framework"].startswith("DeepSpeed") and c["tensor_parallel"] == c["pipeline_parallel"] == 1
        assert (c["memory"]["buffers_bytes"] > 0) == deepspeed, c["name"]


def test_buffer_bytes_match_the_printed_config() -> None:
    from gpuadvisor.advisor.memory import Layout

    w = Workload.from_options(model="llama-3-70b")
    for stage in (1, 2, 3):
        lay = Layout("z", "z", "DeepSpeed ZeRO", stage, dp=8, zero_stage=stage, shard_group=8)
        z = bucket_sizes(w, lay)
        expect = (
            4.5 * 2 * (z["reduce_bucket_size"] + z["allgather_bucket_size"])
            if stage < 3
            else 2 * z["reduce_bucket_size"]
        )
        assert deepspeed_buffer_bytes(w, lay) == expect
    # The old config's 5e8 buckets would have been 9 GB at stage 1-2 (the documented footprint) on GPUs the
    # pick left with a few GB to spare; the model-sized buckets are 1.2 GB for a 8192-wide model.
    assert (
        deepspeed_buffer_bytes(w, Layout("z", "z", "DeepSpeed ZeRO", 1, dp=8, zero_stage=1, shard_group=8))
        == 4.5 * 2 * 2 * 8192**2
    )
    # A layout launched another way (FSDP, or a published run the calibration replays) counts none.
    assert deepspeed_buffer_bytes(w, Layout("z", "z", "FSDP", 2, dp=8, zero_stage=2, shard_group=8)) == 0


def test_deepspeed_launcher_line_parses_in_deepspeed() -> None:
    pytest.importorskip("deepspeed", reason="deepspeed not installed: pip install -e '.[test]'")
    from deepspeed.launcher.runner import parse_args

    for case in _ds_cases():
        d = _advice(case)
        f = launch(d, "deepspeed")
        assert f["maps"], case
        argv = _shell(f["commands"][0])
        assert argv[0] == "deepspeed"
        args = parse_args(argv[1:])
        assert args.num_gpus == d["rig"]["gpus_per_node"] and args.user_script == "train.py"
        assert args.user_args == ["--deepspeed", "ds_config.json"]  # as the torchrun line passes them
        if d["rig"]["nodes"] > 1:
            assert (
                args.num_nodes == d["rig"]["nodes"] and args.hostfile == "hostfile" and args.master_addr == "10.0.0.1"
            )
        assert json.loads(f["files"]["ds_config.json"]) == d["snippet"]["deepspeed_config"]


# -- accelerate --------------------------------------------------------------------------------------------


def _accelerate_launch(d: dict[str, Any], tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """What `accelerate launch` does with the printed files, up to building the DeepSpeed/FSDP plugin the
    training script's Accelerator would build from the environment the launcher hands it."""
    import accelerate.utils.dataclasses as acc_dc
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_deepspeed_cmd_env, prepare_multi_gpu_env

    s = d["snippet"]
    (tmp_path / "accelerate.yaml").write_text(s["accelerate_config"])
    if s["deepspeed_config"]:
        (tmp_path / "ds_config.json").write_text(json.dumps(s["deepspeed_config"]))
    monkeypatch.chdir(tmp_path)
    argv = _shell(s["accelerate_launch"])
    assert argv[:2] == ["accelerate", "launch"]
    args = launch_command_parser().parse_args(argv[2:])
    args, defaults, mp_from_config = _validate_launch_command(args)
    assert defaults.num_processes == d["rig"]["gpus_per_node"] * d["rig"]["nodes"]
    assert defaults.num_machines == d["rig"]["nodes"]
    if args.use_deepspeed:  # accelerate.commands.launch.launch_command
        fields = list(defaults.deepspeed_config.keys()) + (["mixed_precision"] if mp_from_config else [])
        args.deepspeed_fields_from_accelerate_config = ",".join(fields)
        cmd, env = prepare_deepspeed_cmd_env(args)
        assert cmd is None  # one torchrun per node ('standard'), as the torchrun line does: no pdsh hostfile
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        return acc_dc.DeepSpeedPlugin()
    env = prepare_multi_gpu_env(args)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    if args.use_fsdp:
        # The plugin asks for the current CUDA device to place sync_module_states' init: none on a CPU runner.
        import torch

        monkeypatch.setattr(acc_dc, "is_cuda_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        return acc_dc.FullyShardedDataParallelPlugin()
    assert args.multi_gpu
    return None


@pytest.mark.parametrize("case", ACCELERATE_CASES)
def test_accelerate_loads_the_config_without_complaint(
    case: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The old YAML set mixed_precision beside deepspeed_config_file, which accelerate refuses ("the following
    accelerate config variables will be ignored"); no warning either (captured logs and warnings)."""
    pytest.importorskip("accelerate", reason="accelerate not installed: pip install -e '.[test]'")
    d = _advice(case)
    with caplog.at_level(logging.WARNING), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plugin = _accelerate_launch(d, tmp_path, monkeypatch)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert [str(w.message) for w in caught if not issubclass(w.category, ResourceWarning)] == []
    p = d["pick_detail"]
    if d["snippet"]["kind"] == "deepspeed":
        assert plugin.zero_stage == p["zero_stage"]
        assert plugin.hf_ds_config.config["zero_optimization"] == d["snippet"]["deepspeed_config"]["zero_optimization"]
        assert "mixed_precision" not in d["snippet"]["accelerate_config"]
    elif d["snippet"]["kind"] == "fsdp":
        want = "HYBRID_SHARD" if p["hybrid_shard"] else {2: "SHARD_GRAD_OP", 3: "FULL_SHARD"}[p["zero_stage"]]
        assert plugin.sharding_strategy.name == want
        assert plugin.transformer_cls_names_to_wrap == [
            d["snippet"]["fsdp"]["auto_wrap_policy"].split("{")[1].rstrip("})")
        ]
        assert plugin.activation_checkpointing == p["activation_checkpointing"]
    if d["rig"]["nodes"] > 1:
        assert (
            "$" not in d["snippet"]["accelerate_config"]
        )  # YAML does not expand variables: they go on the command line


def test_accelerate_refuses_mixed_precision_beside_a_deepspeed_config_file(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The validation above is the one that refused the old file: add the old mixed_precision line back."""
    pytest.importorskip("accelerate", reason="accelerate not installed: pip install -e '.[test]'")
    d = json.loads(json.dumps(_advice("zero1")))
    d["snippet"]["accelerate_config"] += "mixed_precision: bf16\n"
    with pytest.raises(ValueError, match="will be ignored"):
        _accelerate_launch(d, tmp_path, monkeypatch)


# -- torch -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(TRAIN_CASES))
def test_torchrun_line_parses_in_torchrun(case: str) -> None:
    pytest.importorskip("torch")
    from torch.distributed.run import get_args_parser

    d = _advice(case)
    argv = _shell(d["snippet"]["torchrun"])
    assert argv[0] == "torchrun"
    args = get_args_parser().parse_args(argv[1:])
    nodes, g = d["rig"]["nodes"], d["rig"]["gpus_per_node"]
    assert args.nnodes == str(nodes)
    assert args.nproc_per_node == str(1 if d["snippet"]["kind"] == "single" else g)
    if nodes > 1:
        assert args.rdzv_backend == "c10d" and args.rdzv_endpoint == "10.0.0.1:29500" and not args.standalone
    else:
        assert args.standalone
    script = {"megatron": "pretrain_gpt.py"}.get(d["snippet"]["kind"], "train.py")
    assert args.training_script == script
    if d["snippet"]["kind"] == "deepspeed":
        assert args.training_script_args == ["--deepspeed", "ds_config.json"]


@pytest.mark.parametrize("case", [c for c, k in EXPECTED_KIND.items() if k == "fsdp"])
def test_fsdp_settings_are_fsdp_arguments(case: str) -> None:
    """Every FSDP setting printed is a keyword of torch's FullyShardedDataParallel with a value its enums and
    MixedPrecision accept (activation checkpointing is applied beside it, not passed to it)."""
    pytest.importorskip("torch")
    import dataclasses

    import torch
    from torch.distributed.fsdp import BackwardPrefetch, FullyShardedDataParallel, MixedPrecision, ShardingStrategy

    d = _advice(case)
    s = d["snippet"]["fsdp"]
    accepted = set(inspect.signature(FullyShardedDataParallel.__init__).parameters)
    assert set(s) - {"activation_checkpointing"} <= accepted
    assert ShardingStrategy[s["sharding_strategy"]] and BackwardPrefetch[s["backward_prefetch"]]
    if s["mixed_precision"]:
        assert set(s["mixed_precision"]) <= {f.name for f in dataclasses.fields(MixedPrecision)}
        assert all(isinstance(getattr(torch, v), torch.dtype) for v in s["mixed_precision"].values())
    if "device_mesh" in s:
        assert s["device_mesh"] == [d["rig"]["nodes"], d["rig"]["gpus_per_node"]]
    compile(d["snippet"]["code"], f"<{case} snippet>", "exec")


@pytest.mark.parametrize("case", list(TRAIN_CASES))
def test_every_training_code_snippet_compiles(case: str) -> None:
    d = _advice(case)
    for name in TRAIN_FRAMEWORKS:
        f = launch(d, name)
        if f["code"]:
            compile(f["code"], f"<{case} {name}>", "exec")
            ast.parse(f["code"])


# -- frameworks --------------------------------------------------------------------------------------------


def test_every_framework_answers_for_every_pick() -> None:
    """Each framework either prints lines for the pick or says in one line why the pick does not map onto it."""
    for case in list(TRAIN_CASES) + list(SERVE_CASES):
        d = _advice(case)
        for name in FRAMEWORKS:
            f = launch(d, name)
            assert f["maps"] == bool(f["commands"]), (case, name)
            assert f["maps"] or (f["reason"] and "\n" not in f["reason"]), (case, name)
    serve = _advice("tp4")
    assert all(launch(serve, n)["maps"] for n in SERVE_FRAMEWORKS)
    assert not any(launch(serve, n)["maps"] for n in TRAIN_FRAMEWORKS)
    assert launch(_advice("megatron-tp4"), "megatron")["maps"] and not launch(_advice("zero1"), "megatron")["maps"]
    assert (
        not launch(_advice("hsdp-2nodes"), "deepspeed")["maps"]
        and not launch(_advice("zero3-offload"), "torch")["maps"]
    )
    assert not launch(_advice("megatron-pp-2nodes"), "jax")["maps"]
    # ZeRO-1 in plain torch: DDP with torch's ZeroRedundancyOptimizer, launched without the DeepSpeed flag.
    t = launch(_advice("zero1"), "torch")
    assert "ZeroRedundancyOptimizer(" in t["code"] and "--deepspeed" not in t["commands"][0]
    with pytest.raises(ValueError):
        launch(serve, "tensorflow")


def test_advise_framework_option_prints_that_framework(tmp_path: Any) -> None:
    from click.testing import CliRunner

    from gpuadvisor.cli import cli as main

    r = CliRunner().invoke(main, ["advise", "--simulate", "dgx-h100", "--model", "llama-3-8b", "--framework", "jax"])
    assert r.exit_code == 0, r.output
    assert "jax.make_mesh((8,), ('data',))" in r.output and "optimizer_state = P('data', None)" in r.output
    r = CliRunner().invoke(main, ["advise", "--simulate", "dgx-h100", "--model", "llama-3-8b", "--framework", "sglang"])
    assert r.exit_code == 0 and "sglang: not printed: sglang is for serving" in r.output
    r = CliRunner().invoke(
        main,
        [
            "advise",
            "--simulate",
            "dgx-h100",
            "--model",
            "llama-3-8b",
            "--task",
            "inference",
            "--framework",
            "llamacpp",
            "--format",
            "json",
        ],
    )
    assert r.exit_code == 0
    f = json.loads(r.output)["snippet"]["framework"]
    assert f["framework"] == "llamacpp" and f["commands"][0].startswith("CUDA_VISIBLE_DEVICES=0 llama-server")


# -- JAX ---------------------------------------------------------------------------------------------------

JAX_CASES = [
    "zero1",
    "zero3-offload",
    "fsdp-full-shard",
    "fsdp-shard-grad-op",
    "hsdp-2nodes",
    "ddp-qlora",
    "single-qlora",
    "megatron-tp4",
]
JAX_PROBE = r"""
import json, sys
import numpy as np
import jax
results = []
for code in json.load(sys.stdin):
    ns = {}
    exec(code, ns)
    mesh = ns["mesh"]
    out = {"shape": dict(mesh.shape), "devices": jax.device_count(), "specs": {}, "shards": {}}
    def check(name, spec):
        x = np.zeros([2 * mesh.size] * max(len(spec), 1), dtype=np.float32)
        arr = jax.device_put(x, ns["sharding"](spec))   # raises on an axis the mesh does not have
        out["specs"][name] = [list(e) if isinstance(e, tuple) else e for e in spec]
        out["shards"][name] = len({tuple((s.start, s.stop) for s in sh.index) for sh in arr.addressable_shards})
    for key in ("batch", "params", "grads", "optimizer_state"):
        v = ns.get(key)
        if v is None:
            continue
        for sub, spec in (v.items() if isinstance(v, dict) else [(None, v)]):
            check(key + (":" + sub if sub else ""), spec)
    results.append(out)
print(json.dumps(results))
"""


def _run_jax(codes: list[str], devices: int) -> list[dict[str, Any]]:
    """Run snippets in one fresh interpreter with ``devices`` fake CPU devices (XLA reads the flag at start-up)."""
    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}", "JAX_PLATFORMS": "cpu"}
    # jax.distributed.initialize needs the other nodes' processes: the one-process check leaves it out.
    codes = [
        "\n".join(line for line in c.splitlines() if not line.startswith("jax.distributed.initialize(")) for c in codes
    ]
    r = subprocess.run(
        [sys.executable, "-c", JAX_PROBE], input=json.dumps(codes), capture_output=True, text=True, env=env, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_jax_mesh_and_partition_specs_on_fake_devices() -> None:
    """The JAX snippet builds its mesh on as many (fake CPU) devices as the pick has GPUs, and every
    PartitionSpec it prints shards an array on that mesh: weights split over 'fsdp' for FSDP, over 'model' for
    tensor parallel (column and row), optimizer state over 'data' for ZeRO-1."""
    pytest.importorskip("jax", reason="jax not installed: pip install -e '.[test]'")
    got: dict[str, Any] = {}
    by_world: dict[int, list[tuple[str, str]]] = {}
    for case in JAX_CASES:
        d = _advice(case)
        f = launch(d, "jax")
        if not f["maps"]:
            got[case] = None
            continue
        if d["rig"]["nodes"] > 1:
            assert f["code"].count("jax.distributed.initialize(") == 1
        by_world.setdefault(d["rig"]["gpus_per_node"] * d["rig"]["nodes"], []).append((case, f["code"]))
    for world, items in by_world.items():
        for (case, _), out in zip(items, _run_jax([c for _, c in items], world), strict=True):
            assert out["devices"] == world
            got[case] = out
    assert got["zero3-offload"] is None  # ZeRO-Offload has no JAX mesh equivalent
    assert got["zero1"]["shape"] == {"data": 8}
    assert got["zero1"]["specs"] == {"batch": ["data"], "params": [], "grads": [], "optimizer_state": ["data", None]}
    assert got["zero1"]["shards"] == {"batch": 8, "params": 1, "grads": 1, "optimizer_state": 8}
    assert got["fsdp-shard-grad-op"]["specs"]["grads"] == ["data", None]
    assert got["fsdp-full-shard"]["shape"] == {"fsdp": 8} and got["fsdp-full-shard"]["specs"]["params"] == [
        "fsdp",
        None,
    ]
    assert got["fsdp-full-shard"]["shards"]["params"] == 8
    assert got["hsdp-2nodes"]["shape"] == {"replica": 2, "fsdp": 8}
    assert got["hsdp-2nodes"]["specs"]["batch"] == [["replica", "fsdp"]] and got["hsdp-2nodes"]["shards"]["batch"] == 16
    assert got["hsdp-2nodes"]["shards"]["params"] == 8  # sharded in the node, replicated across
    assert got["ddp-qlora"]["shape"] == {"data": 4} and got["ddp-qlora"]["shards"]["params"] == 1
    assert got["single-qlora"]["shape"] == {"data": 1}
    tp = got["megatron-tp4"]
    assert tp["shape"] == {"data": 4, "model": 4}
    assert tp["specs"]["params:column"] == [None, "model"] and tp["specs"]["params:row"] == ["model", None]
    assert tp["specs"]["optimizer_state:column"] == ["data", "model"] and tp["shards"]["optimizer_state:column"] == 16


# -- serving -----------------------------------------------------------------------------------------------
# vLLM, SGLang and TensorRT-LLM install only with CUDA builds of torch (and TensorRT-LLM, llama.cpp and Ollama are
# not Python packages to parse with): their options were recorded from their own parsers where those run on a
# CPU machine (vLLM's and SGLang's argparse, in a scratch venv; llama.cpp's common/arg.cpp) and by hand from the
# documentation otherwise (TensorRT-LLM, Ollama). Each file says its version and source; record.py rewrites them.

ARGS_DIR = Path(__file__).parent / "fixtures" / "launch_args"


def _recorded(tool: str) -> dict[str, Any]:
    return json.loads((ARGS_DIR / f"{tool}.json").read_text())


def _parse_recorded(rec: dict[str, Any], argv: list[str]) -> dict[str, Any]:
    """Parse argv with an argparse parser built from a recorded option list: unknown options, a value missing or
    given to a flag, a value outside the choices or not of the type, all fail."""
    import argparse

    class Fail(Exception):
        pass

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # type: ignore[override]
            raise Fail(message)

    p = Parser(add_help=False, allow_abbrev=False)
    for name in rec["positional"]:
        p.add_argument(name)
    for opt, spec in rec["options"].items():
        kind = {"int": int, "float": float}.get(spec.get("type") or "", str)
        if spec["takes_value"]:
            p.add_argument(opt, type=kind, choices=[kind(c) for c in spec["choices"]] if spec["choices"] else None)
        else:
            p.add_argument(opt, action="store_true")
    try:
        return vars(p.parse_args(argv))
    except Fail as e:
        raise AssertionError(f"{rec['tool']} {rec['version']} would refuse {' '.join(argv)}: {e}") from None


def _serve_argv(d: dict[str, Any], name: str) -> list[str]:
    f = launch(d, name)
    assert f["maps"], (name, f["reason"])
    return _shell(f["commands"][0])


@pytest.mark.parametrize("case", list(SERVE_CASES))
def test_vllm_command_parses_with_vllms_recorded_options(case: str) -> None:
    rec = _recorded("vllm")
    d = _advice(case)
    argv = _serve_argv(d, "vllm")
    assert argv[:2] == ["vllm", "serve"]
    a = _parse_recorded(rec, argv[2:])
    p = d["pick_detail"]
    assert (
        a["tensor_parallel_size"] == p["tensor_parallel_size"] and int(a["max_model_len"]) == d["workload"]["context"]
    )
    assert (a["pipeline_parallel_size"] or 1) == p["pipeline_parallel_size"]


@pytest.mark.parametrize("case", list(SERVE_CASES))
def test_sglang_command_parses_with_sglangs_recorded_options(case: str) -> None:
    rec = _recorded("sglang")
    d = _advice(case)
    argv = _serve_argv(d, "sglang")
    assert argv[:3] == ["python", "-m", "sglang.launch_server"]
    a = _parse_recorded(rec, argv[3:])
    p = d["pick_detail"]
    assert a["tp_size"] == p["tensor_parallel_size"] and int(a["context_length"]) == d["workload"]["context"]
    if p["pipeline_parallel_size"] > 1:
        assert a["pp_size"] == p["pipeline_parallel_size"] and a["nnodes"] == d["rig"]["nodes"] and a["node_rank"] == 1


@pytest.mark.parametrize("case", list(SERVE_CASES))
def test_trtllm_command_parses_with_recorded_options(case: str) -> None:
    rec = _recorded("trtllm")
    d = _advice(case)
    argv = _serve_argv(d, "trtllm")
    assert argv[0] == "trtllm-serve"
    a = _parse_recorded(rec, argv[1:])
    p = d["pick_detail"]
    assert a["tp_size"] == p["tensor_parallel_size"] and a["max_seq_len"] == d["workload"]["context"]
    assert a["backend"] == "pytorch" and (a["pp_size"] or 1) == p["pipeline_parallel_size"]


@pytest.mark.parametrize("case", ["tp4", "tp1-fp8-kv"])
def test_llamacpp_command_parses_with_llamacpps_recorded_options(case: str) -> None:
    rec = _recorded("llamacpp")
    d = _advice(case)
    argv = _serve_argv(d, "llamacpp")
    env = [x for x in argv if "=" in x and not x.startswith("-")]
    assert argv[len(env)] == "llama-server"
    a = _parse_recorded(rec, argv[len(env) + 1 :])
    gpus = d["pick_detail"]["tensor_parallel_size"] * d["pick_detail"]["pipeline_parallel_size"]
    assert env[0] == "CUDA_VISIBLE_DEVICES=" + ",".join(map(str, range(gpus)))
    assert (
        a["ctx_size"] == d["workload"]["context"] * d["workload"]["concurrency"]
        and a["parallel"] == d["workload"]["concurrency"]
    )
    if gpus > 1:
        assert a["split_mode"] == "layer" and a["tensor_split"] == ",".join(["1"] * gpus)


def test_llamacpp_and_ollama_refuse_a_multi_node_pipeline() -> None:
    d = _advice("pp-2nodes")
    assert not launch(d, "llamacpp")["maps"] and not launch(d, "ollama")["maps"]


@pytest.mark.parametrize("case", ["tp4", "tp1-fp8-kv"])
def test_ollama_environment_is_ollamas(case: str) -> None:
    rec = _recorded("ollama")
    f = launch(_advice(case), "ollama")
    serve = shlex.split(f["commands"][0])
    env = dict(x.split("=", 1) for x in serve if "=" in x)
    assert serve[len(env) :] == ["ollama", "serve"] and shlex.split(f["commands"][1])[:2] == ["ollama", "run"]
    for k, v in env.items():
        kind = rec["environment"][k]
        if kind == "int":
            int(v)
        elif kind == "bool":
            assert v in ("0", "1", "true", "false")
        elif isinstance(kind, list):
            assert v in kind
    assert env["OLLAMA_CONTEXT_LENGTH"] == str(_advice(case)["workload"]["context"])


def test_recorded_option_lists_say_their_version_and_source() -> None:
    for tool in ("vllm", "sglang", "trtllm", "llamacpp", "ollama"):
        rec = _recorded(tool)
        assert rec["version"] and rec["source"], tool
    # The recorded parsers refuse what the real ones refuse (the check can fail).
    with pytest.raises(AssertionError, match="would refuse"):
        _parse_recorded(_recorded("vllm"), ["m", "--tensor-parallel-size", "four"])
    with pytest.raises(AssertionError, match="would refuse"):
        _parse_recorded(_recorded("llamacpp"), ["--split-mode", "column"])
