"""Any tool's environment report, read at first sight: the reader tried last among the GPU outputs.

ML tools' bug templates ask for a system report, and each tool prints its own (vLLM's and FastDeploy's collect_env,
detectron2's, ComfyUI's system info, PaddleSeg's, PyTorch Lightning's, club-3090's report.sh, and many more). They
share a shape: ``key: value`` lines, ``- key: value`` / ``* key: value`` bullets, ``key   value`` two-column rows,
markdown ``**Key:** value``, or JSON's and Python dicts' ``"key": "value",`` lines, with keys from one small
vocabulary (GPU, GPU 0, GPU models, device name, VRAM, GPU memory, CUDA, CUDA runtime, driver, NVIDIA driver, torch,
PyTorch, Python, NCCL, cuDNN), case and punctuation aside.

Recognised: a line with a vocabulary key and a value of its form (or none: a heading), where at least three distinct
vocabulary keys with such values appear within 15 lines from it and one of them names an NVIDIA GPU (its value names
NVIDIA, GeForce, Tesla, Quadro, TITAN, RTX or a datacenter model) or CUDA (a CUDA key with a version). Only outside
every other output: the specific readers' rows come first.

Read, only where the value is unambiguous: a GPU's name (the part of the value that names an NVIDIA GPU; ``GPU 0,1``
names two GPUs; a list of ``GPU n: NAME`` items, or an empty GPU key over lines of names, one GPU each; a count
before the name, ``x3 RTX 2070``, is not one GPU's line: not read), its memory
with its unit (MiB and GiB 1024-based; MB and GB as these reports print them, 1024-based too, as nvidia-smi's and
torch's ``/ 1024**2`` do; a bare number is not read), the driver (``535.104.05``), torch's version (and the CUDA of
its ``+cuXYZ`` tag), the CUDA torch was built with (a key naming torch and CUDA), Python's and NCCL's version.
A CUDA or cuDNN version under another key (runtime, toolkit) is noted, not read (the scan has no field for it).
A placeholder (``N/A``, ``Could not collect``, ``None``, ``Unknown``) is never a value; the line a paste is cut in
is not read. Each fact's origin is its line; a note says the report was read as a generic one, and which keys.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.env_reports import set_torch
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.rows import stripped_rows
from gpuadvisor.importers.section import Section

WHAT = "generic environment report (key: value lines naming the GPU, CUDA, driver, torch, Python)"
WINDOW = 15  # the lines within which three vocabulary keys make a report
_LONGEST = 2000  # a longer line is not read (the patterns stay linear)
_MAX_GPUS = 64  # no report of one machine lists more; past them a line names no GPU (the matching stays linear)

# "**Key:** value", "key: value", "key   value" (two spaces or a tab), after an optional "-", "*" or "•" bullet
_QUOTED = re.compile(r"""^[{\s]*(["'])([^"']{1,60})\1\s*:\s*(["']?)(.*?)\3\s*,?\s*$""")  # JSON's, a dict's
_BOLD = re.compile(r"^\*\*([^*:]{1,60}?):?\*\*:?\s*(.*?)\s*$")
_COLON = re.compile(r"^([A-Za-z][^:]{0,60}?)\s*:\s*(.*?)\s*$")
_COLUMNS = re.compile(r"^([A-Za-z][\w ./(),+-]{0,60}?)(?:\s{2,}|\t+)(\S.*?)\s*$")
_BULLET = re.compile(r"^(?:[-*\u2022]\s+)+")

_KEYS = {
    "gpu": ("gpu", "gpus", "gpu type", "gpu name", "gpu model", "gpu models", "gpu models and configuration", "device",
            "device name", "name", "graphics card"),
    "memory": ("vram", "vram total", "total vram", "gpu memory", "total memory", "memory total", "gpu vram"),
    "cuda": ("cuda", "cuda version", "cuda runtime", "cuda runtime version", "cuda toolkit", "cuda compiled",
             "cuda used to build pytorch", "torch cuda version", "pytorch cuda version", "cuda compiled version"),
    "driver": ("driver", "nvidia driver", "driver version", "nvidia driver version", "gpu driver"),
    "torch": ("torch", "pytorch", "pytorch version", "torch version"),
    "python": ("python", "python version"),
    "nccl": ("nccl", "nccl version"),
    "cudnn": ("cudnn", "cudnn version"),
}  # fmt: skip
_CONCEPT = {k: c for c, keys in _KEYS.items() for k in keys}
_GPU_N = re.compile(r"^gpu (\d{1,3}(?: \d{1,3})*)$")  # "GPU 0", "GPU 0,1,2,3" (punctuation made spaces)
_TORCH_CUDA = ("cuda used to build pytorch", "torch cuda version", "pytorch cuda version", "cuda compiled")

_PLACEHOLDER = re.compile(r"^(?:n/?a|none|null|unknown|could not collect|not available|-+|\?+)?\.?$", re.IGNORECASE)
# a GPU name: from NVIDIA or a brand or a model, up to a separator (" : ", "|", "(", ",", a quote, the end)
_GPU_NAME = re.compile(
    r"(?<![\w-])((?:NVIDIA |Nvidia )?(?:GeForce|Tesla|Quadro|TITAN|RTX|GTX|[ABHLTV]\d{1,3}|GH\d{3}|GB\d{3}|B\d{3}"
    r"|NVIDIA(?= \w))(?:[ -][\w+-]+)*)"
)
_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)\s?(MiB|GiB|MB|GB)\b")
_VERSION = re.compile(r"^v?(\d+(?:\.\d+){1,3})(?![\w.])")
_TORCH = re.compile(r"^v?(\d+(?:\.\d+){1,3}(?:\+\w+)?)(?![\w.])")
_DRIVER = re.compile(r"^(\d{3}\.\d{2,3}(?:\.\d{2})?)(?![\w.])")
_COUNTED = re.compile(r"^\s*(?:\d{1,3}\s*[x\u00d7]|[x\u00d7]\s*\d{1,3})\s")
_LISTED = re.compile(r"GPU (\d{1,3}): ([^'\"(,\]]{1,120})")


def _key(s: str) -> tuple[str, str] | None:
    """The (normalised key, value) of a report line, None for a line of another shape."""
    s = _BULLET.sub("", s.strip())
    q = _QUOTED.match(s)
    m = _BOLD.match(s) or _COLON.match(s) or _COLUMNS.match(s) if q is None else None
    if q is None and m is None:
        return None
    key, value = (q.group(2), q.group(4)) if q is not None else (m.group(1), m.group(2)) if m else ("", "")
    return " ".join(re.sub(r"[^a-z0-9]+", " ", key.lower()).split()), value


def _concept(key: str) -> str | None:
    return "gpu" if _GPU_N.match(key) else _CONCEPT.get(key)


def gpu_name(value: str) -> str | None:
    """The part of ``value`` that names an NVIDIA GPU, None when none does."""
    for part in re.split(r"\s[:|]\s|\|", value):
        m = _GPU_NAME.search(part)
        if m and (
            m.group(1).startswith(("NVIDIA", "Nvidia", "GeForce", "Tesla", "Quadro", "TITAN"))
            or " " in m.group(1)
            or re.fullmatch(r"[ABHLT]\d{1,3}|GH\d{3}|GB\d{3}|B\d{3}|V100", m.group(1).split("-")[0])
        ):
            name = m.group(1).strip()
            # a whole name names its model: a number (RTX 3090, L4, A100-SXM4-80GB) or TITAN; "GeForce RT" is cut
            return name if re.search(r"\d|TITAN", name) else None
    return None


def _vocabulary(line: str) -> tuple[str, str] | None:
    """(concept, value) of a vocabulary line, None otherwise ("name" counts only naming an NVIDIA GPU)."""
    if len(line) >= _LONGEST:
        return None
    kv = _key(line)
    c = _concept(kv[0]) if kv else None
    if kv is None or c is None or (kv[0] in ("name", "device") and gpu_name(kv[1]) is None):
        return None
    return c, kv[1]


def _nvidia(concept: str, value: str) -> bool:
    return (concept == "gpu" and gpu_name(value) is not None) or (
        concept == "cuda" and _VERSION.match(value) is not None
    )


_READABLE = {"memory": _MEMORY, "cuda": _VERSION, "python": _VERSION, "nccl": _VERSION, "cudnn": _VERSION,
             "torch": _TORCH, "driver": _DRIVER}  # fmt: skip


def _readable(concept: str, value: str) -> bool:
    """A value of the form its key's concept has, or none (a heading: ``* CUDA:``, ``GPU models and configuration:``
    over the names listed)."""
    if value == "":
        return True
    if concept == "gpu":
        return gpu_name(value) is not None or _LISTED.search(value) is not None
    return _READABLE[concept].match(value) is not None


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A vocabulary line with a value of its form, outside every output; three distinct vocabulary keys with such
    values within 15 lines, one naming an NVIDIA GPU or CUDA ("python: can't open file" is no report's line)."""
    if current is not None and current.kind != "_after":
        return False
    first = _vocabulary(lines[i])
    if first is None or not _readable(*first):
        return False
    seen: set[str] = set()
    nvidia = False
    for line in lines[i : i + WINDOW]:
        v = _vocabulary(line)
        if v is None or not _readable(*v):  # a GPU's name alone on its line (under an empty GPU key) names one
            nvidia = nvidia or (v is None and _bare_name(line) is not None)
            continue
        seen.update(_inline(v[0], v[1]))
        nvidia = nvidia or _nvidia(*v)
        if len(seen) >= 3 and nvidia:
            return True
    return False


def _inline(concept: str, value: str) -> set[str]:
    """The concept, and those a GPU line's ``|`` fields give (``NAME | 24576 MiB | driver 590.48.01``)."""
    found = {concept}
    if concept == "gpu" and "|" in value:
        for f in (x.strip() for x in value.split("|")[1:]):
            found |= {"memory"} if _MEMORY.match(f) else {"driver"} if re.match(r"driver \d", f, re.I) else set()
    return found


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs (names, memory), driver, torch, its CUDA, Python and NCCL that the report's vocabulary lines show."""
    rig = Rig()
    taken: list[str] = []
    rows = stripped_rows(text, first_line)
    last = -1  # the last vocabulary line's row: the report ends WINDOW rows past it
    listing = False
    for k, (s, lineno, cut) in enumerate(rows):
        if last >= 0 and k - last > WINDOW:
            break
        where = f"{source}:{lineno}"
        v = _vocabulary(s) if not cut else None
        if v is None:
            listing = listing and not cut and _listed(rig, s, where)
            continue
        last = k
        concept, value = v
        key = (_key(s) or ("", ""))[0]
        listing = concept == "gpu" and _PLACEHOLDER.match(value) is not None and value == ""
        if _PLACEHOLDER.match(value):
            continue
        if _read(rig, concept, key, value, where):
            taken.append(key)
    if last < 0:
        raise ImportParseError(source, first_line, "an environment report without a 'key: value' line naming the GPU")
    keys = ", ".join(dict.fromkeys(taken)) or "none"
    rig.problems.append(f"{source}:{first_line}: read as a {WHAT}; keys taken: {keys}")
    return rig


def _bare_name(line: str) -> str | None:
    """The GPU name a line holds alone (``- NVIDIA RTX 4090``, ``GPU 0: NVIDIA L40`` aside), None otherwise."""
    s = _BULLET.sub("", line.strip()) if len(line) < _LONGEST else ""
    name = gpu_name(s)
    return name if name is not None and len(s) <= len(name) + 2 else None


def _listed(rig: Rig, s: str, where: str) -> bool:
    """A GPU name alone on its line under an empty GPU key (``- NVIDIA RTX 4090``): one GPU. True while listing."""
    name = _bare_name(s)
    if name is None or len(rig.gpus) >= _MAX_GPUS:
        return False
    _gpu(rig, len(rig.gpus), name, where)
    return True


def _gpu(rig: Rig, index: int, name: str, where: str) -> None:
    """GPU ``index`` named (one seen before keeps its name); past _MAX_GPUS GPUs, none more (the cost stays linear)."""
    g = next((g for g in rig.gpus if g.index == index), None)
    if g is None and len(rig.gpus) >= _MAX_GPUS:
        return
    if g is None:
        g = Gpu(index=index)
        rig.origins[f"gpus[{len(rig.gpus)}]"] = where
        rig.gpus.append(g)
    g.name = g.name or name


def _read(rig: Rig, concept: str, key: str, value: str, where: str) -> bool:
    """Read one line's value into ``rig``; True when something was read."""
    if concept == "gpu":
        return _read_gpu(rig, key, value, where)
    if concept == "memory":
        return _memory(rig, value, where)
    sw = rig.software
    if concept == "driver" and (m := _DRIVER.match(value)) and sw.driver_version is None:
        sw.driver_version = m.group(1)
        rig.origins["software.driver_version"] = where
    elif concept == "torch" and (m := _TORCH.match(value)) and sw.torch_version is None:
        set_torch(rig, m.group(1), where, WHAT)
    elif concept == "cuda" and key in _TORCH_CUDA and (m := _VERSION.match(value)):
        sw.torch_cuda_version = m.group(1)
        rig.origins["software.torch_cuda_version"] = where
    elif concept == "python" and (m := _VERSION.match(value)) and sw.python_version is None:
        sw.python_version = m.group(1)
        rig.origins["software.python_version"] = where
    elif concept == "nccl" and (m := _VERSION.match(value)) and sw.nccl_version is None:
        sw.nccl_version = m.group(1)
        rig.origins["software.nccl_version"] = where
    elif concept in ("cuda", "cudnn") and (m := _VERSION.match(value)):
        rig.problems.append(f"{where}: {key} {m.group(1)} (the scan has no field for it)")
    else:
        return False
    return True


def _read_gpu(rig: Rig, key: str, value: str, where: str) -> bool:
    listed = _LISTED.findall(value)
    if listed:  # "['GPU 0: NVIDIA A100-PCIE-40GB', 'GPU 1: ...']"
        for n, name in listed:
            if (nm := gpu_name(name)) is not None:
                _gpu(rig, int(n), nm, where)
        return True
    name = gpu_name(value)
    if name is None or _COUNTED.match(value):  # "x3 RTX 2070", "2x A100": how many is not one GPU's line
        return False
    m = _GPU_N.match(key)
    indexes = [int(x) for x in m.group(1).split()] if m else [len(rig.gpus)]
    for n in indexes:
        _gpu(rig, n, name, where)
    if "|" in value:  # club-3090's "NAME | 24576 MiB | driver 590.48.01 | ..."
        for f in (x.strip() for x in value.split("|")[1:]):
            d = re.match(r"driver (\S+)", f, re.IGNORECASE)
            if not _memory(rig, f, where) and d:
                _read(rig, "driver", "driver", d.group(1), where)
    return True


def _memory(rig: Rig, value: str, where: str) -> bool:
    """The last GPU's memory, with its unit (``24576 MiB``; MB and GB 1024-based); a bare number is not read."""
    m = _MEMORY.match(value)
    if m is None or not rig.gpus or rig.gpus[-1].memory_total_bytes is not None:
        return False
    power = 20 if m.group(2) in ("MiB", "MB") else 30
    rig.gpus[-1].memory_total_bytes = round(float(m.group(1)) * 2**power)
    rig.origins[f"gpus[{len(rig.gpus) - 1}].memory_total_bytes"] = f"{where} ({m.group(0)}: 1024-based)"
    return True
