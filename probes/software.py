"""Software facts: Python, torch and its CUDA/NCCL builds, relevant environment variables.

torch is not imported unless ``import_torch`` is set: its version comes from package metadata, its CUDA
version from ``torch/version.py`` read as text, and the NCCL version from the nvidia-nccl wheel's metadata.
Importing torch (seconds, and it may initialise CUDA) gives the exact NCCL version it loads.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import importlib.util
import os
import platform
import re
from pathlib import Path

from gpuadvisor import __version__
from gpuadvisor.facts import Software

ENV_PREFIXES = (
    "NCCL_",
    "CUDA_",
    "TORCH_NCCL_",
    "NVIDIA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS",
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "SLURM_JOB_ID",
    "SLURM_NNODES",
)
ENV_SECRETS = re.compile(r"(TOKEN|KEY|SECRET|PASSWORD)", re.I)


def relevant_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    return {k: v for k, v in sorted(env.items()) if k.startswith(ENV_PREFIXES) and not ENV_SECRETS.search(k)}


def _dist_version(*names: str) -> str | None:
    for n in names:
        try:
            return md.version(n)
        except md.PackageNotFoundError:
            continue
    return None


def probe_software(
    sw: Software | None = None, *, import_torch: bool = False, environ: dict[str, str] | None = None
) -> Software:
    sw = sw or Software()
    sw.python_version = platform.python_version()
    sw.gpuadvisor_version = __version__
    sw.nvml_binding_version = _dist_version("nvidia-ml-py")
    sw.env = relevant_env(environ)
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        for f in ("torch_version", "torch_cuda_version", "nccl_version"):
            sw.missing(f, "torch is not installed in this Python environment")
        return sw
    if import_torch:
        try:
            import torch

            sw.torch_version = torch.__version__
            sw.torch_cuda_version = torch.version.cuda
            if sw.torch_cuda_version is None:
                sw.unavailable["torch_cuda_version"] = "torch is a CPU build (no CUDA)"
            try:
                v = torch.cuda.nccl.version()
                sw.nccl_version = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
            except Exception as e:
                sw.missing("nccl_version", f"torch has no NCCL ({e.__class__.__name__})")
            return sw
        except Exception as e:  # a broken torch install is a fact too
            sw.missing("torch_version", f"import torch failed: {e.__class__.__name__}: {e}")
    sw.torch_version = _dist_version("torch")
    text = ""
    with contextlib.suppress(OSError):
        text = (Path(spec.origin).parent / "version.py").read_text()
    m = re.search(r"^cuda\s*(?::\s*\w+(?:\[\w+\])?)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    if m:
        sw.torch_cuda_version = m.group(1)
    elif re.search(r"^cuda\s*(?::[^=]*)?=\s*None", text, re.M):
        sw.missing("torch_cuda_version", "torch is a CPU build (no CUDA)")
    else:
        sw.missing("torch_cuda_version", "torch/version.py does not say (run with --torch to import torch)")
    nccl = _dist_version("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11")
    if nccl:
        sw.nccl_version = nccl
    elif sw.torch_cuda_version is None:
        sw.missing("nccl_version", "torch is a CPU build (no NCCL)")
    else:
        sw.missing("nccl_version", "no nvidia-nccl wheel found (run with --torch to ask torch)")
    return sw
