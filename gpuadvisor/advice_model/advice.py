"""The advice: the pick among the candidates, its launch snippet, the summaries of the rig and the workload, the
smallest rig when nothing fits, the checkpoint plan; and what a scan's ``advice`` holds (AdviceModel)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuadvisor.advice_model.candidates import Batch, Candidate, ServingCandidate, StateBytes, TrainCandidate
from gpuadvisor.advice_model.record import AdviceFormatError, Record, describe, named

ADVICE_KIND = "gpuadvisor-advice"
ADVICE_VERSION = 1
UNITS = "bytes; the text output shows GiB (2**30 bytes) for memory and GB/s (1e9 bytes/s) for bandwidth"

# -- launch -----------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class FrameworkLaunch(Record):
    """What to run for the pick in one framework (advise --framework; advisor.frameworks.launch)."""

    framework: str = ""
    maps: bool = True
    reason: str | None = None  # why the pick does not map onto it
    commands: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # file name -> its text
    code: str | None = None
    notes: list[str] = field(default_factory=list)
    docs: str = ""


@dataclass(eq=False)
class TrainingSnippet(Record):
    """The launch snippet of a training pick (advisor.snippets.training_snippet). The DeepSpeed config and the FSDP
    settings are the framework's own open-ended objects, printed as JSON."""

    OPTIONAL = frozenset({"deepspeed_config_note", "framework"})
    nproc_per_node: int = 1
    nnodes: int = 1
    deepspeed_config: dict[str, Any] | None = None
    fsdp: dict[str, Any] | None = None
    accelerate_config: str | None = None  # accelerate.yaml
    accelerate_launch: str | None = None
    code: str | None = None  # the lines for train.py
    kind: str = ""  # single | ddp | deepspeed | fsdp | megatron | torchtitan
    torchrun: str = ""
    deepspeed_config_note: str | None = None
    framework: FrameworkLaunch | None = None


@dataclass(eq=False)
class ServingSnippet(Record):
    """The launch snippet of a serving pick: the vllm serve line."""

    OPTIONAL = frozenset({"framework"})
    kind: str = "vllm"  # the serving engine
    command: str = ""  # the first server line
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    nproc_per_node: int = 1
    nnodes: int = 1
    framework: FrameworkLaunch | None = None
    commands: list[str] = field(default_factory=list)  # every line: one per replica where the engine needs it
    model: str = ""  # the checkpoint the lines name
    replicas: int = 1


Snippet = TrainingSnippet | ServingSnippet


# -- when nothing fits ------------------------------------------------------------------------------------------


@dataclass(eq=False)
class RigFit(Record):
    """A catalog rig on which the workload fits (advisor.search)."""

    OPTIONAL = frozenset({"memory_per_gpu_bytes"})
    gpu: str = ""
    gpu_id: str = ""
    gpus_per_node: int = 1
    nodes: int = 1
    gpus: int = 1
    memory_per_gpu_gib: float = 0.0
    marketed_gb: float = 0.0
    strategy: str = ""
    memory_per_gpu_bytes: float | None = None  # training: the pick's memory per GPU there
    description: str = ""


@dataclass(eq=False)
class SmallestRig(Record):
    smallest: RigFit = field(default_factory=RigFit)  # the fewest GPUs of any catalog product
    same_gpu: RigFit | None = None  # the fewest of the scanned rig's own GPU
    all: list[RigFit] = field(default_factory=list)  # one per catalog product, fewest GPUs first


# -- the summaries ----------------------------------------------------------------------------------------------


@dataclass(eq=False)
class RigSummary(Record):
    """The rig as the advisor saw it (advisor.rigview), with where each figure comes from."""

    label: str = ""
    gpu: str = ""
    catalog_id: str | None = None
    gpus_per_node: int = 1
    nodes: int = 1
    memory_per_gpu_bytes: float | None = None
    cuda_memory_per_gpu_bytes: float | None = None
    memory_source: str = ""
    host_memory_bytes: float | None = None
    nvlink_domain: int = 1
    nvlink: str | None = None
    pcie: str | None = None
    p2p: bool | None = None
    peak_tflops: float | None = None
    peak_source: str = ""
    busbw_gbps: float | None = None
    busbw_source: str | None = None
    busbw_measured: bool | None = None
    inter_node_gbps: float | None = None
    inter_node_source: str | None = None

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * (self.nodes or 1)


@dataclass(eq=False)
class WorkloadSummary(Record):
    """The workload as the advisor took it (advisor.workload.Workload.to_dict): the fields the views and plan read;
    the rest of the workload's options (and the model's architecture, an open-ended object) kept as written."""

    task: str = "train"
    precision: str = "bf16"
    optimizer: str = "adamw"
    micro_batch: int = 1
    global_batch: int | None = None
    finetune: str = "full"
    state_bytes: str | None = None
    kv_cache_dtype: str = "auto"
    quantization: str | None = None
    nodes: int = 1
    model_label: str | None = None
    model: str | None = None
    params: float = 0
    trainable_params: float | None = None
    seq_len: int = 0
    context: int | None = None
    concurrency: int = 1
    architecture: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Excluded(Record):
    strategy: str = ""
    reason: str = ""


@dataclass(eq=False)
class CheckpointPlan(Record):
    """Checkpoint size, save time and stall, and the data loader's read rate (advisor.checkpoint)."""

    params: int = 0
    trained_params: int = 0
    bytes_per_param: float = 0.0
    contents: str = ""
    total_bytes: int = 0
    weights_only_bytes: int = 0  # consolidated bf16 export
    sharded: bool = False
    writers: str = ""
    per_node_bytes: int = 0
    write_gbps: float = 0.0
    write_source: str = ""
    write_provenance: str = ""  # measured | imported | assumed
    save_seconds: float = 0.0
    consolidated_save_seconds: float = 0.0
    interval_seconds: float = 0.0
    interval_source: str = ""
    stall_fraction: float = 0.0
    host_ram_needed_bytes: int = 0  # consolidated: the whole state staged on rank 0's host
    free_bytes: int | None = None
    free_path: str | None = None
    data_read_needed_gbps: float | None = None
    data_read_measured_gbps: float | None = None
    data_read_source: str | None = None
    notes: list[str] = field(default_factory=list)


# -- the advice -------------------------------------------------------------------------------------------------


def checkpoint_plan(advice: object) -> CheckpointPlan | None:
    """The checkpoint plan a scan's advice carries (the advisor's, or a "checkpoint" object in another's), or None."""
    if isinstance(advice, Advice):
        return advice.checkpoint
    plan = advice.get("checkpoint") if isinstance(advice, Mapping) else None
    return CheckpointPlan.from_json_dict(plan, "advice.checkpoint") if isinstance(plan, dict) else None


@dataclass(eq=False)
class AdviceModel(Record):
    """What a scan's ``advice`` holds: the advisor's ``Advice``, or ``ForeignAdvice`` (an object another tool
    wrote there, kept as it is)."""

    @classmethod
    def from_json_dict(cls, data: Any, where: str = "advice") -> Any:
        if cls is not AdviceModel:
            return super().from_json_dict(data, where)
        if isinstance(data, dict) and data.get("kind") == ADVICE_KIND:
            return Advice.from_json_dict(data, where)
        if isinstance(data, dict):
            return ForeignAdvice(data=data)
        raise AdviceFormatError(f"{where}: expected object or null, got {describe(data)}")


@dataclass(eq=False)
class ForeignAdvice(AdviceModel):
    """Advice another tool wrote into a scan: shown as it is (the HTML report's generic view)."""

    data: dict[str, Any] = field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        return self.data

    to_dict = to_json_dict


@dataclass(eq=False)
class Advice(AdviceModel):
    """The advisor's answer: every candidate, the pick with its reason, the launch snippet; for training the batch
    and the state bytes; when nothing fits, the smallest rig that would."""

    OPTIONAL = frozenset({"checkpoint"})
    kind: str = ADVICE_KIND
    version: int = ADVICE_VERSION
    task: str = "train"  # train | inference
    fits: bool = False
    pick_name: str | None = named("pick")
    reason: str = ""
    workload: WorkloadSummary = field(default_factory=WorkloadSummary)
    rig: RigSummary = field(default_factory=RigSummary)
    candidates: list[Candidate] = field(default_factory=list)
    excluded: list[Excluded] = field(default_factory=list)
    pick: Candidate | None = named("pick_detail")
    snippet: Snippet | None = None
    batch: Batch | None = None
    smallest_rig: SmallestRig | None = None
    assumptions: list[str] = field(default_factory=list)
    state_bytes: StateBytes | None = None
    notes: list[str] = field(default_factory=list)
    units: str = UNITS
    checkpoint: CheckpointPlan | None = None  # attached by scan/advise with a training pick

    @classmethod
    def _field_type(cls, name: str, tp: Any, data: dict[str, Any]) -> Any:
        serving = data.get("task") == "inference"
        if name == "candidates":
            return list[ServingCandidate] if serving else list[TrainCandidate]
        if name == "pick":
            return ServingCandidate | None if serving else TrainCandidate | None
        if name == "snippet":
            return ServingSnippet | None if serving else TrainingSnippet | None
        return tp

    @classmethod
    def coerce(cls, advice: Advice | Mapping[str, Any]) -> Advice:
        """The typed advice: ``advice`` itself, or its JSON (``to_json_dict``, a saved scan's) read into one."""
        if isinstance(advice, Advice):
            return advice
        out: Advice = cls.from_json_dict(dict(advice), "advice")
        return out

    @property
    def training(self) -> list[TrainCandidate]:
        return [c for c in self.candidates if isinstance(c, TrainCandidate)]

    @property
    def serving(self) -> list[ServingCandidate]:
        return [c for c in self.candidates if isinstance(c, ServingCandidate)]

    def __setitem__(self, key: str, value: Any) -> None:
        """``advice["checkpoint"] = plan`` (a CheckpointPlan or its JSON): the one part attached after advising."""
        if key != "checkpoint":
            raise TypeError(f"advice[{key!r}]: only the checkpoint plan is attached after advising")
        if value is not None and not isinstance(value, CheckpointPlan):
            value = CheckpointPlan.from_json_dict(value, "advice.checkpoint")
        self.checkpoint = value
        if self.saved is not None and key not in self.saved[0]:
            self.saved = ((*self.saved[0], key), self.saved[1])
