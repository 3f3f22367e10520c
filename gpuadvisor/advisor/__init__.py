"""The advisor: memory, communication and time of every parallelism strategy for a workload on a rig, and
the recommended one with its launch snippet (each formula cites its paper or documentation where it is defined).

Public API:
    Workload, Workload.from_options(**kw)      the model and the job (presets, --params, HF config.json)
    advise(rig, workload) -> Advice            also sets rig.advice to it (gpuadvisor.advice_model.Advice)
    workload_options                           click decorator with the workload options (for scan/advise)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuadvisor.advisor.advice import Advice, advise
    from gpuadvisor.advisor.architecture import Architecture
    from gpuadvisor.advisor.options import workload_options
    from gpuadvisor.advisor.workload import Workload

# Imported on first use (PEP 562), so a command that only adds the options stays quick to start.
_LAZY = {
    "Advice": "gpuadvisor.advisor.advice",
    "advise": "gpuadvisor.advisor.advice",
    "workload_options": "gpuadvisor.advisor.options",
    "Architecture": "gpuadvisor.advisor.architecture",
    "Workload": "gpuadvisor.advisor.workload",
}

__all__ = ["Advice", "Architecture", "Workload", "advise", "workload_options"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'gpuadvisor.advisor' has no attribute {name!r}")
