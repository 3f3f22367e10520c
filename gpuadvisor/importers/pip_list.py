"""Package lists pasted into bug reports: ``pip list``, ``pip freeze`` and ``conda list`` (whole, or through ``grep -i
-E "torch|nvidia|nccl"``). Read: torch's version and the CUDA version it was built for, and NCCL's version from the
``nvidia-nccl-cu12`` wheel.

``pip list`` prints ``Package  Version`` over a dashed ruler, then ``torch  2.3.0+cu121`` rows (an editable
project's location in a third column); ``pip freeze`` ``torch==2.3.0+cu121``; ``conda list`` ``# packages in
environment at ...:`` over ``# Name  Version  Build  Channel``, then ``pytorch  2.1.0  py3.10_cuda12.1_cudnn8.9.2_0
pytorch`` rows (pip's packages there as ``torch  2.3.0  pypi_0  pypi``).

torch's CUDA build: the wheel's ``+cu121`` tag (CUDA 12.1; ``+cpu``: none), conda's build string (``cuda12.1`` in
pytorch's channel, ``cuda120_`` in conda-forge's) or the ``pytorch-cuda 12.1`` package. A torch version without a tag
(PyPI's default wheel) does not name its CUDA build: not shown.

NCCL: torch's pip wheels load the NCCL of the ``nvidia-nccl-cu12`` (``-cu11``, ``-cu13``) wheel installed beside them
(PyTorch, "Nightly pip wheel+cu121 reports NCCL==2.18.1, but installs nvidia-nccl-cu12==2.19.3",
https://github.com/pytorch/pytorch/issues/116977: the installed wheel's is the one loaded); its version is read as
NCCL's, the origin saying it is the installed wheel's. A list that shows no torch row leaves torch unknown: only the
rows a paste shows are read.

Only rows of such a list are read: a name and a version (a bare word list is not this format). A paste cut inside its
last line (no newline after it) leaves that row's value not shown, never read.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.env_reports import set_torch
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.rows import stripped_rows
from gpuadvisor.importers.section import Section, outside

WHAT = "pip list / pip freeze / conda list"
_LONGEST = 400
# a row: "torch  2.3.0+cu121", "torch==2.3.0+cu121", "pytorch  2.1.0  py3.10_cuda12.1_cudnn8.9.2_0  pytorch"
_ROW = re.compile(r"^([A-Za-z0-9][\w.-]*)(?:==|\s+)(\d[\w.+!-]*)(?:\s+(\S+))?(?:\s+(\S+))?\s*$")
_HEADER = re.compile(r"^Package\s+Version(?:\s+Editable project location)?\s*$")
_CONDA_HEAD = re.compile(r"^# packages in environment at \S.*:\s*$")
# collect_env's "Versions of relevant libraries" part: its title (a banner between rules in FastDeploy's and vLLM's
# copies), then the same rows tagged "[pip3] torch==2.3.0" or "[conda] pytorch  2.1.0  py3.10_cuda12.1_0  pytorch"
_LIBRARIES = re.compile(r"^Versions of relevant libraries:?$")
_TAG = re.compile(r"^\[(?:pip3?|conda)\]\s+")
_NCCL = re.compile(r"^nvidia-nccl-cu(\d+)$")
_TORCH = ("torch", "pytorch")
_READ = re.compile(r"^(?:torch|pytorch|pytorch-cuda|nvidia-nccl-cu\d+)$")
_CONDA_CUDA = re.compile(r"(?:^|_)cuda(\d+\.\d+|\d{2,3}(?=_))")  # "py3.10_cuda12.1_cudnn8.9.2_0", "cuda120_py310h..."
VERSION = re.compile(r"^\d+(?:\.\d+){1,3}")


def _name(s: str) -> str | None:
    """The package a row names (``-`` for ``_``), if it is one this reads: pip and conda print torch's and NVIDIA's
    wheels' names in lower case (``PyTorch  1.13.1`` is another report's row, detectron2's)."""
    s = _TAG.sub("", s)
    m = _ROW.match(s) if len(s) < _LONGEST else None
    if m is None or (m.group(3) or "").startswith("@"):  # detectron2's "PyTorch  1.13.1+cu116 @/usr/..." row
        return None
    name = m.group(1).replace("_", "-")  # pip and conda print these names in lower case
    return name if _READ.match(name) else None


@outside("pip-list")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``Package  Version`` over a dashed ruler, conda's ``# packages in environment at ...:``, or a row of torch,
    pytorch, pytorch-cuda or nvidia-nccl-cu12 (``torch  2.3.0+cu121``, ``torch==2.3.0``)."""
    s = lines[i].strip()
    if _LIBRARIES.match(s) or _TAG.match(s):  # collect_env's part, read here when pasted without the report above it
        return (current is None or current.kind == "_after") and (_LIBRARIES.match(s) or _name(s)) is not None
    if _HEADER.match(s):
        return i + 1 < len(lines) and lines[i + 1].strip().startswith("---")
    if _CONDA_HEAD.match(s):
        return True
    return not lines[i].startswith((" ", "\t")) and _name(s) is not None


def parse_pip_list(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """torch's version and CUDA build, NCCL's version from its wheel."""
    rig = Rig()
    seen = False
    for s, lineno, cut in stripped_rows(text, first_line):
        name = _name(s)
        if name is None:
            seen = seen or bool(_HEADER.match(s) or _CONDA_HEAD.match(s) or _LIBRARIES.match(s))
            continue
        seen = True
        m = _ROW.match(_TAG.sub("", s))
        assert m is not None
        version, build, where = m.group(2), m.group(3) or "", f"{source}:{lineno}"
        if cut:
            _cut(rig, name, where)
        elif name in _TORCH and rig.software.torch_version is None and VERSION.match(version):
            set_torch(rig, version, where, WHAT)
            conda = _CONDA_CUDA.search(build)
            if conda and rig.software.torch_cuda_version is None:
                rig.software.unavailable.pop("torch_cuda_version", None)
                cuda = conda.group(1) if "." in conda.group(1) else f"{conda.group(1)[:-1]}.{conda.group(1)[-1]}"
                rig.software.torch_cuda_version = cuda
                rig.origins["software.torch_cuda_version"] = f"{where} (conda's build string {build})"
        elif name == "pytorch-cuda" and re.fullmatch(r"\d+\.\d+", version):
            rig.software.unavailable.pop("torch_cuda_version", None)
            rig.software.torch_cuda_version = version
            rig.origins["software.torch_cuda_version"] = f"{where} (conda's pytorch-cuda package)"
        elif (n := _NCCL.match(name)) and rig.software.nccl_version is None and VERSION.match(version):
            rig.software.nccl_version = VERSION.match(version).group(0)  # type: ignore[union-attr]
            rig.origins["software.nccl_version"] = (
                f"{where} (the installed {n.group(0)} wheel's version: the NCCL that torch from pip loads by default)"
            )
    if not seen:
        raise ImportParseError(source, first_line, f"{WHAT} without a 'name version' row")
    return rig


def _cut(rig: Rig, name: str, where: str) -> None:
    field = "nccl_version" if name.startswith("nvidia-nccl") else "torch_version"
    if getattr(rig.software, field) is None:
        rig.software.missing(field, f"{WHAT}: the paste ends inside its {name} row ({where})")
