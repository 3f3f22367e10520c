"""The advisor's output as types: what ``advise`` returns, what ``Rig.advice`` holds, what the views and ``plan`` read.

A low package (it imports the standard library and gpuadvisor.errors only): the facts model, the advisor, the
renderers and ``plan`` all import it.

Every type is a ``Record``: a dataclass whose ``to_json_dict()`` is the advice JSON a scan saves (the key order and
names fixed here, a field's JSON name in its ``metadata["json"]`` where it differs), and whose
``from_json_dict(data, where)`` reads that JSON back, checking each field's type (an ``AdviceFormatError``, an
InputError of one line naming the field: ``advice.candidates[2].fits: expected boolean, got 5``). A record read
from a file keeps the keys it was saved with (their order, the ones an older gpuadvisor did not write, the ones
this version no longer writes), so an advice saved by any version is written back byte for byte.

Records are also read-only mappings over their JSON (``advice["pick"]``, ``advice.get("checkpoint")``): the
view that readers of the saved file use. Code reads the attributes.
"""

from gpuadvisor.advice_model.advice import (
    ADVICE_KIND,
    ADVICE_VERSION,
    Advice,
    AdviceModel,
    CheckpointPlan,
    Excluded,
    ForeignAdvice,
    FrameworkLaunch,
    RigFit,
    RigSummary,
    ServingSnippet,
    SmallestRig,
    Snippet,
    TrainingSnippet,
    WorkloadSummary,
    checkpoint_plan,
)
from gpuadvisor.advice_model.candidates import (
    Band,
    Batch,
    Candidate,
    CandidateBands,
    CommFigures,
    MemoryFigures,
    ServingBand,
    ServingCandidate,
    ServingResult,
    StateBytes,
    StateConvention,
    TrainCandidate,
)
from gpuadvisor.advice_model.record import AdviceFormatError, Record

__all__ = [
    "ADVICE_KIND",
    "ADVICE_VERSION",
    "Advice",
    "AdviceFormatError",
    "AdviceModel",
    "Band",
    "Batch",
    "Candidate",
    "CandidateBands",
    "CheckpointPlan",
    "CommFigures",
    "Excluded",
    "ForeignAdvice",
    "FrameworkLaunch",
    "MemoryFigures",
    "Record",
    "RigFit",
    "RigSummary",
    "ServingBand",
    "ServingCandidate",
    "ServingResult",
    "ServingSnippet",
    "SmallestRig",
    "Snippet",
    "StateBytes",
    "StateConvention",
    "TrainCandidate",
    "TrainingSnippet",
    "WorkloadSummary",
    "checkpoint_plan",
]
