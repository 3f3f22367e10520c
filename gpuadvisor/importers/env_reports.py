"""The environment reports ML projects' bug templates ask for, beyond PyTorch's collect_env: Hugging Face's ``accelerate
env`` / ``transformers-cli env`` / ``huggingface-cli env`` / ``diffusers-cli env``, DeepSpeed's ``ds_report`` and
``jax.print_environment_info()``. Each shows the software the job ran with; only the Hugging Face reports name a GPU.

Hugging Face (accelerate/commands/env.py, transformers/commands/env.py): a ``- Key: value`` list, its first line
``- `Accelerate` version: 0.21.0`` (or ``transformers``, ``diffusers``, ``huggingface_hub``), then ``- Platform:``,
``- Python version: 3.10.12``, ``- PyTorch version (GPU?): 2.0.1+cu118 (True)`` (newer transformers: ``(accelerator?):
2.6.0+cu124 (CUDA)``) and, where CUDA is available, ``- GPU type: NVIDIA GeForce RTX 3090``
(``torch.cuda.get_device_name()``: the current device, CUDA device 0 unless the script chose another; nvidia-smi's
GPU 0 unless ``CUDA_VISIBLE_DEVICES`` renumbers them, and a merged nvidia-smi output's name is kept first). Read: the
Python and torch versions, the CUDA version torch was built for from its ``+cu118`` tag (11.8), and the GPU type.

A GPU type without a count: the reports print the name of one device, never how many there are. collect_env's
"GPU models and configuration:" with a bare name on its own line is read as one GPU (GPU 0, that name), and this is
read the same way: GPU 0 named; but unlike collect_env (which lists every GPU nvidia-smi shows), this line never
lists the others, so the reading marks the GPU list partial (the count is not shown) and says so in the notes.

DeepSpeed's ``ds_report`` (deepspeed/env_report.py): the op compatibility table (``op name ..... installed ..
compatible``), then ``DeepSpeed general environment info:`` over dotted ``name ..... value`` lines: ``torch version``,
``torch cuda version`` (``torch.version.cuda``; ``None``: a CPU or ROCm build), ``nvcc version`` (the CUDA toolkit
installed: noted, the scan has no field for it), ``deepspeed wheel compiled w.`` (noted) and ``shared memory (/dev/shm)
size .... 31.33 GB`` (``human_readable_size``: 1024-based units, two decimals: read to that precision).

``jax.print_environment_info()`` (jax/_src/environment_info.py): ``jax:    0.4.33``, ``jaxlib: 0.4.33``, ``numpy:``,
``python: 3.10.12 (main, ...)``, ``jax.devices (8 total, 8 local): [...]``, ``process_count: 1``, then ``$ nvidia-smi``
and nvidia-smi's table, which the nvidia-smi reader reads (the GPUs and the driver come from it). Read here: the Python
version; jax's and jaxlib's versions and the devices jax sees (their count and kind: ``CudaDevice``, ``GpuDevice``
in older jax, ``CpuDevice`` where jaxlib has no CUDA) in the notes (the scan has no field for them).

A paste cut inside its last line (no newline after it) leaves that line's value not shown, never read; ds_report's
/dev/shm size, its last line, is read there only in its whole form (two decimals and a unit: nothing follows it).
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.merger import Merger
from gpuadvisor.importers.part import Part
from gpuadvisor.importers.rows import stripped_rows
from gpuadvisor.importers.section import Section, outside, shown_lines

WHAT_HF = "Hugging Face env (accelerate env, transformers-cli env, diffusers-cli env)"
WHAT_DS = "DeepSpeed ds_report"
WHAT_JAX = "jax.print_environment_info()"
_LONGEST = 400  # no line of these reports that is read is longer (the patterns stay linear)
VERSION = r"\d+(?:\.\d+){1,3}"
_PY = re.compile(rf"^({VERSION})(?:\s|$)")

# Hugging Face: "- `Accelerate` version: 0.21.0", "- `transformers` version: 4.36.2", "- huggingface_hub version: 0.2"
_HF_HEAD = re.compile(r"^-\s+(?:`[\w.-]+`|Accelerate|transformers|diffusers|huggingface_hub) version:\s*\S")
_HF_ITEM = re.compile(r"^-\s+([^:]{1,60}?):\s*(.*?)\s*$")
_HF_TORCH = re.compile(r"^(\S+)(?:\s+\(([^)]*)\))?$")  # "2.0.1+cu118 (True)", "not installed (NA)", "2.4.0+cu121"
# the CUDA build a torch wheel's local version names: "+cu118" is CUDA 11.8, "+cu121" 12.1 (the last digit the minor)
_CU_TAG = re.compile(r"\+cu(\d{2,4})$")

# ds_report: "torch version .................... 2.3.0+cu121" (the name, a space, dots, a space, the value)
_DS_HEADS = ("DeepSpeed general environment info:", "DeepSpeed C++/CUDA extension op report")
_DS_ITEM = re.compile(r"^([a-z][\w ()/.-]*?) \.{2,} ?(.*?)\s*$")
_SHM = "shared memory (/dev/shm) size"
_DS_SIZE = re.compile(r"^(\d+\.\d\d) (B|KB|MB|GB|TB)$")  # human_readable_size: f"{size:.2f} {unit}", whole
_DS_UNITS = {"B": 0, "KB": 1, "MB": 2, "GB": 3, "TB": 4}

# jax: "jax:    0.4.33" over "jaxlib: 0.4.33"
_JAX = re.compile(r"^(jax|jaxlib|python):\s+(\S.*?)\s*$")
# "jax.devices (8 total, 8 local): [CudaDevice(id=0) ...]" ("GpuDevice" in older jax, e.g. 0.3.17; "CpuDevice": no GPU)
_JAX_DEVICES = re.compile(r"^jax\.devices \((\d+) total, (\d+) local\): \[(\w+?)Device\(")


def cuda_of_tag(torch_version: str) -> str | None:
    """The CUDA version a torch wheel's ``+cuXYZ`` tag names (``2.3.0+cu121``: ``12.1``), None without one."""
    m = _CU_TAG.search(torch_version)
    return f"{m.group(1)[:-1]}.{m.group(1)[-1]}" if m else None


def set_torch(rig: Rig, version: str, where: str, what: str) -> None:
    """torch's version and, from its ``+cuXYZ`` tag, the CUDA version it was built for (``+cpu``: none)."""
    sw = rig.software
    sw.torch_version = version
    rig.origins["software.torch_version"] = where
    cuda = cuda_of_tag(version)
    if cuda is not None:
        sw.torch_cuda_version = cuda
        rig.origins["software.torch_cuda_version"] = f"{where} (its +cu{cuda.replace('.', '')} tag)"
    elif version.endswith("+cpu"):  # a CPU build: torch.version.cuda is None
        rig.origins["software.torch_cuda_version"] = f"{where} (a +cpu build)"
    elif sw.torch_cuda_version is None:
        sw.missing("torch_cuda_version", f"{what}: torch {version} has no +cuXYZ tag naming its CUDA build ({where})")


def _cut(rig: Rig, field: str, what: str, where: str) -> None:
    rig.software.missing(field, f"{what}: the paste ends inside its line ({where})")


@outside("hf-env")
def starts_hf(lines: list[str], i: int, current: Section | None) -> bool:
    """``- `Accelerate` version: 0.21.0`` (or transformers', diffusers', huggingface_hub's) over ``- Platform:``
    or ``- Python version:`` within three lines."""
    s = lines[i].strip()
    if len(s) >= _LONGEST or not _HF_HEAD.match(s):
        return False
    return any(x.strip().startswith(("- Platform:", "- Python version:")) for x in lines[i + 1 : i + 4])


def parse_hf_env(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Python's and torch's versions, torch's CUDA build, and the one GPU type shown."""
    rig = Rig()
    lines, cut = shown_lines(text)
    seen = False
    indent = next((_indent(x) for x in lines if _HF_ITEM.match(x.strip())), "")  # the list's own (its items')
    for k, line in enumerate(lines):
        s = line.strip()
        m = _HF_ITEM.match(s) if len(s) < _LONGEST and _indent(line) == indent else None
        if m is None:  # not an item of the list: a line of accelerate's config under it, or another output
            continue
        seen = True
        key, value, where = m.group(1).lower(), m.group(2), f"{source}:{first_line + k}"
        if key == "python version":
            _python(rig, value, where, WHAT_HF, k == cut)
        elif key.startswith("pytorch version"):
            t = _HF_TORCH.match(value)
            if k == cut:
                _cut(rig, "torch_version", WHAT_HF, where)
            elif t and re.match(VERSION, t.group(1)):
                set_torch(rig, t.group(1), where, WHAT_HF)
        elif key == "gpu type" and value and not rig.gpus:
            _gpu_type(rig, value, where, k == cut)
    if not seen:
        raise ImportParseError(source, first_line, f"{WHAT_HF} without its '- Key: value' lines")
    return rig


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _python(rig: Rig, value: str, where: str, what: str, cut: bool) -> None:
    if cut:
        _cut(rig, "python_version", what, where)
    elif p := _PY.match(value):
        rig.software.python_version = p.group(1)
        rig.origins["software.python_version"] = where


def _gpu_type(rig: Rig, name: str, where: str, cut: bool) -> None:
    """GPU 0 (the current device) named, the others not shown: the list is partial."""
    gpu = Gpu(index=0)
    if cut:
        gpu.unavailable["name"] = f"{WHAT_HF}: the paste ends inside its 'GPU type' line ({where})"
    else:
        gpu.name = name
    rig.gpus.append(gpu)
    rig.origins["gpus[0]"] = where
    rig.partial_gpu_list = True
    rig.problems.append(
        f"{where}: {WHAT_HF} names the type of the GPU torch uses (its current device, GPU 0), not how many GPUs "
        "there are: the others are not shown"
    )


def starts_ds(lines: list[str], i: int, current: Section | None) -> bool:
    """``DeepSpeed general environment info:`` or ``DeepSpeed C++/CUDA extension op report``, or (pasted without
    them) ``torch version ..... 2.3.0`` over a ``deepspeed ... ..... `` line within three lines."""
    s = lines[i].strip()
    if s.startswith(_DS_HEADS):
        return current is None or current.kind != "ds-report" or s.startswith(_DS_HEADS[1])
    if current is not None and current.kind == "ds-report":
        return False
    m = _DS_ITEM.match(s) if len(s) < _LONGEST else None
    return (
        m is not None
        and m.group(1) == "torch version"
        and any(x.strip().startswith("deepspeed ") and _DS_ITEM.match(x.strip()) for x in lines[i + 1 : i + 4])
    )


def parse_ds_report(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """torch's version and CUDA build, the /dev/shm size; nvcc's and the wheel's build in the notes."""
    rig = Rig()
    seen = False
    for s, lineno, cut in stripped_rows(text, first_line):
        m = _DS_ITEM.match(s) if len(s) < _LONGEST else None
        if m is None:
            seen = seen or s.startswith(_DS_HEADS)
            continue
        seen = True
        name, value, where = m.group(1), m.group(2), f"{source}:{lineno}"
        if cut and name in ("torch version", "torch cuda version"):
            _cut(rig, "torch_version" if name == "torch version" else "torch_cuda_version", WHAT_DS, where)
        elif cut and not (name == _SHM and _DS_SIZE.match(value)):  # a size's whole form ends its line
            continue
        elif name == "torch version" and re.match(VERSION, value):
            set_torch(rig, value, where, WHAT_DS)
        elif name == "torch cuda version":
            _ds_cuda(rig, value, where)
        elif name in ("nvcc version", "deepspeed wheel compiled w.") and value not in ("", "None"):
            what = "the CUDA toolkit's nvcc" if name == "nvcc version" else "the DeepSpeed wheel was compiled with"
            rig.problems.append(f"{where}: {what}: {value} (the scan has no field for it)")
        elif name == _SHM and (z := _DS_SIZE.match(value)):
            rig.node.shm_bytes = round(float(z.group(1)) * 1024 ** _DS_UNITS[z.group(2)])
            rig.origins["node.shm_bytes"] = f"{where} ({value}: 1024-based, to two decimals)"
    if not seen:
        raise ImportParseError(source, first_line, f"{WHAT_DS} without its 'name ..... value' lines")
    return rig


def _ds_cuda(rig: Rig, value: str, where: str) -> None:
    """``torch cuda version .... 12.1`` (``None``: torch.version.cuda is None, a CPU or ROCm build)."""
    sw = rig.software
    if re.fullmatch(r"\d+\.\d+(?:\.\d+)?", value):
        sw.torch_cuda_version = value
        sw.unavailable.pop("torch_cuda_version", None)
        rig.origins["software.torch_cuda_version"] = where
    elif value == "None":
        sw.torch_cuda_version = None
        sw.unavailable.pop("torch_cuda_version", None)
        rig.origins["software.torch_cuda_version"] = f"{where} (None: a CPU or ROCm build)"


def merge_ds(m: Merger, part: Part) -> None:
    """Merge ``part``, and the /dev/shm size it shows where no output merged before gave one."""
    m.add(part)
    shm, node = part.rig.node.shm_bytes, m.rig.node
    if shm is not None and node.shm_bytes is None:
        node.shm_bytes = shm
        node.unavailable.pop("shm_bytes", None)
        m.rig.origins.setdefault("node.shm_bytes", part.at("node.shm_bytes"))


@outside("jax-env")
def starts_jax(lines: list[str], i: int, current: Section | None) -> bool:
    """``jax:    0.4.33`` over ``jaxlib: 0.4.33``."""
    m = _JAX.match(lines[i].strip()) if len(lines[i]) < _LONGEST else None
    below = _JAX.match(lines[i + 1].strip()) if m and i + 1 < len(lines) else None
    return m is not None and below is not None and (m.group(1), below.group(1)) == ("jax", "jaxlib")


def parse_jax_env(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Python's version; jax's and jaxlib's in the notes."""
    rig = Rig()
    lines, cut = shown_lines(text)
    seen = False
    for k, line in enumerate(lines):
        m = _JAX.match(line.strip()) if len(line) < _LONGEST else None
        d = _JAX_DEVICES.match(line.strip()) if m is None and k != cut else None
        if d is not None:
            rig.problems.append(
                f"{source}:{first_line + k}: jax sees {d.group(1)} {d.group(3)} device(s), {d.group(2)} of them local "
                "(the GPUs themselves are nvidia-smi's, below it)"
            )
        if m is None:
            continue
        seen = True
        key, value, where = m.group(1), m.group(2), f"{source}:{first_line + k}"
        if key == "python":
            _python(rig, value, where, WHAT_JAX, k == cut)
        elif k != cut and re.fullmatch(rf"{VERSION}\S*", value):
            rig.problems.append(f"{where}: {key} {value} (the scan has no field for it)")
    if not seen:
        raise ImportParseError(source, first_line, f"{WHAT_JAX} without its 'jax:' and 'jaxlib:' lines")
    return rig
