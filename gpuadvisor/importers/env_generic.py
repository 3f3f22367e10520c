"""Any tool's environment report, read at first sight: the reader tried last among the GPU outputs.

ML tools' bug templates ask for a system report, and each tool prints its own (vLLM's and FastDeploy's collect_env,
detectron2's, ComfyUI's system info, PaddleSeg's, PyTorch Lightning's, club-3090's report.sh, and many more). They
share a shape: ``key: value`` lines, ``- key: value`` / ``* key: value`` bullets, ``key   value`` two-column rows,
markdown ``**Key:** value``, or JSON's and Python dicts' ``"key": "value",`` lines, with keys from one small
vocabulary (GPU, GPU 0, GPU models, device name, VRAM, GPU memory, CUDA, CUDA runtime, driver, NVIDIA driver, torch,
PyTorch, Python, NCCL, cuDNN), case and punctuation aside.

A line of another shape is read by its clauses: tools print their report as sentences and log lines too (a start-up
banner's ``NVIDIA GeForce RTX 4090. Num GPUs = 1. Max memory: 23.621 GB.``, an info command's dotted keys
``gpu.name:  NAME``, a log's ``INFO     Torch detected GPU: NAME VRAM 8188 ...`` or ``[Tool]::INFO --> Using torch
device: NAME``). A clause's key is the vocabulary's run of the one to four words before ``:``, ``=`` or `` is ``
(``Max memory``, ``Using torch device`` ends in ``device``); its value runs to the sentence's end or the next key, and
counts only in its key's shape. Two values are known by their shape after a word with no separator: torch's
``X.Y.Z+cuNNN`` and ``VRAM N`` (a bare number after VRAM is MiB: those tools print ``round(total_memory / 1024 /
1024)``; a byte count, ten digits, is not one); a GPU's name alone in the sentence before the line's first key is a
GPU. A name, a size or a version in other prose is no value: it has no key.

Recognised: a line with a vocabulary key and a value of its form (or none: a heading), where at least three distinct
vocabulary keys with such values appear within 15 lines from it and one of them names an NVIDIA GPU (its value names
NVIDIA, GeForce, Tesla, Quadro, TITAN, RTX or a datacenter model) or CUDA (a CUDA key with a version); or, alone, a
runtime naming its device (a key with torch, PyTorch or CUDA in it that ends in GPU or device, its value an NVIDIA
model: one GPU). Only outside every other output but a log (a log's lines may hold a tool's report): the specific
readers' rows come first.

Read, only where the value is unambiguous: a GPU's name (the part of the value that names an NVIDIA GPU; ``GPU 0,1``
names two GPUs; a list of ``GPU n: NAME`` items, or an empty GPU key over lines of names, one GPU each; a count
before the name, ``x3 RTX 2070``, is not one GPU's line: not read), its memory with its unit (MiB and GiB
1024-based; MB and GB as these reports print them, 1024-based too, as nvidia-smi's and torch's ``/ 1024**2`` do; a
bare number is not read but after VRAM, above), the driver (``535.104.05``), torch's version (and the CUDA of its
``+cuXYZ`` tag), the CUDA torch was built with (a key naming torch and CUDA), Python's and NCCL's version.
A CUDA or cuDNN version under another key (runtime, toolkit) is noted, not read (the scan has no field for it).
A count (``Num GPUs = 2``) adds the GPUs it counts past those named, unnamed. A placeholder (``N/A``, ``Could not
collect``, ``None``, ``Unknown``) is never a value; the line a paste is cut in is not read, but for its clauses more of
the line follows (the cut shortened only the last). Each fact's origin is its line; a note says the report was read
as a generic one, and which keys. A compute capability is the last GPU's (noted when none is named before it).
"""

from __future__ import annotations

import re
from typing import NamedTuple

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
_MARK = re.compile(r"^[\u2600-\u27bf\u2b50\u2b55\U0001f300-\U0001faff\ufe0f]+\s*")

_VERSION_SHAPE = r"^v?(\d+(?:\.\d+){1,3})(?![\w.])"
# each concept: its keys, and its value's shape from the value's start (a GPU's name: gpu_name)
_VOCABULARY: dict[str, tuple[tuple[str, ...], str]] = {
    "gpu": (("gpu", "gpus", "gpu type", "gpu name", "gpu model", "gpu models", "gpu models and configuration",
             "device", "device name", "name", "graphics card"), ""),
    "memory": (("vram", "vram total", "total vram", "gpu memory", "total memory", "memory total", "gpu vram",
                "max memory"), r"^(\d+(?:\.\d+)?)\s?(MiB|GiB|MB|GB)\b"),  # with its unit
    "cuda": (("cuda", "cuda version", "cuda runtime", "cuda runtime version", "cuda toolkit", "cuda compiled",
              "cuda used to build pytorch", "torch cuda version", "pytorch cuda version", "cuda compiled version"),
             _VERSION_SHAPE),
    "driver": (("driver", "nvidia driver", "driver version", "nvidia driver version", "gpu driver"),
               r"^(\d{3}\.\d{2,3}(?:\.\d{2})?)(?![\w.])"),  # NNN.NN(.NN)
    "torch": (("torch", "pytorch", "pytorch version", "torch version"),
              r"^v?(\d+(?:\.\d+){1,3}(?:\+\w+)?)(?![\w.])"),  # with its "+cuNNN" tag
    "python": (("python", "python version"), _VERSION_SHAPE),
    "nccl": (("nccl", "nccl version"), _VERSION_SHAPE),
    "cudnn": (("cudnn", "cudnn version"), _VERSION_SHAPE),
    "count": (("num gpus", "number of gpus", "gpu count"), r"^\d{1,3}$"),  # how many GPUs
    # whether the process saw a GPU (torch.cuda.is_available()): a report's key, nothing of the machine read from it
    "available": (("cuda available", "is cuda available", "gpu available", "cuda is available"),
                  r"^(?:True|False|Yes|No)\b"),
    "capability": (("compute capability", "gpu compute capability", "cuda compute capability"), r"^\d{1,2}\.\d$"),
    "version": ((), _VERSION_SHAPE),  # any version (no key of its own)
}  # fmt: skip
_KEYS = {c: keys for c, (keys, _) in _VOCABULARY.items()}
_SHAPE = {c: re.compile(shape) for c, (_, shape) in _VOCABULARY.items() if shape}
_CONCEPT = {k: c for c, keys in _KEYS.items() for k in keys}
_GPU_N = re.compile(r"^gpu (\d{1,3}(?: \d{1,3})*)$")  # "GPU 0", "GPU 0,1,2,3" (punctuation made spaces)
_TORCH_CUDA = ("cuda used to build pytorch", "torch cuda version", "pytorch cuda version", "cuda compiled")

_PLACEHOLDER = re.compile(r"^(?:n/?a|none|null|unknown|could not collect|not available|-+|\?+)?\.?$", re.IGNORECASE)
# a GPU name: from NVIDIA or a brand or a model, up to a separator (" : ", "|", "(", ",", a quote, the end)
_GPU_NAME = re.compile(
    r"(?<![\w-])((?:NVIDIA |Nvidia )?(?:GeForce|Tesla|Quadro|TITAN|RTX|GTX|[ABHLTV]\d{1,3}|GH\d{3}|GB\d{3}|B\d{3}"
    r"|NVIDIA(?= \w))(?:[ -][\w+-]+)*)"
)
_COUNTED = re.compile(r"^\s*(?:\d{1,3}\s*[x\u00d7]|[x\u00d7]\s*\d{1,3})\s")
# "GPU 0: NAME" items (nvidia-smi -L's lines in a list), or a device list's "<0: NAME>" items (JAX devices as
# NetKet's info prints them)
_LISTED = re.compile(r"(?:GPU |<)(\d{1,3}): ([^'\"(,\]<>]{1,120})")


def _key(s: str) -> tuple[str, str] | None:
    """The (normalised key, value) of a report line, None for a line of another shape."""
    s = _BULLET.sub("", s.strip())
    q = _QUOTED.match(s)
    m = _BOLD.match(s) or _COLON.match(s) or _COLUMNS.match(s) if q is None else None
    if q is None and m is None:
        return None
    key, value = (q.group(2), q.group(4)) if q is not None else (m.group(1), m.group(2)) if m else ("", "")
    value = _MARK.sub("", value)  # a check's mark before the value (Ultralytics' "torch   ✅ 2.1.1+cu121>=1.8.0")
    return " ".join(re.sub(r"[^a-z0-9]+", " ", key.lower()).split()), value


def _concept(key: str) -> str | None:
    return "gpu" if _GPU_N.match(key) else "cuda" if _torch_cuda(key) else _CONCEPT.get(key)


_BUILD_WORDS = {"torch", "pytorch", "cuda", "version", "build", "built", "used", "to", "with", "compiled"}


def _torch_cuda(key: str) -> bool:
    """Whether a key names the CUDA torch was built with: the vocabulary's, or one of torch's and CUDA's words (and
    a version's or a build's) only: nnDetection's ``PyTorch CUDA``, ``CUDA version PyTorch was built with``."""
    words = set(key.split())
    return key in _TORCH_CUDA or ("cuda" in words and bool(words & {"torch", "pytorch"}) and words <= _BUILD_WORDS)


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
    """(concept, value) of a whole-line vocabulary line, None otherwise ("name" counts only naming an NVIDIA GPU)."""
    if len(line) >= _LONGEST:
        return None
    kv = _key(line)
    c = _concept(kv[0]) if kv else None
    if kv is None or c is None or (kv[0] in ("name", "device") and gpu_name(kv[1]) is None):
        return None
    return c, kv[1]


class Fact(NamedTuple):
    concept: str
    key: str  # the vocabulary key, normalised
    value: str
    strong: bool = False  # a runtime naming its device ("Using torch device: NAME"): a report of one GPU alone
    whole: bool = True  # more of the line follows it: a paste cut in the line did not cut it


# In a sentence or a log line: a key of one to four words (``Max memory``, dotted ``gpu.name``), then ``:``, ``=`` or
# `` is `` (not ``::``, ``==``, ``://``, a Windows drive's ``:\``); the words start where no word runs on
_SEP = re.compile(
    r"(?<![\w.\-/\\])([A-Za-z][\w.]{0,40}(?:[ \t]+[A-Za-z][\w.]{0,40}){0,3})"
    r"[ \t]*(?::(?![:/\\])|=(?!=)|[ \t]is[ \t])[ \t]*"
)
_WORD = re.compile(r"[A-Za-z][\w.]*")
# a word every vocabulary key holds; a line with a clause holds one of them, "name" before its separator (sift.py's
# condition for a clause inside a log, too)
WORDS = "gpu|device|name|graphics|vram|memory|cuda|torch|driver|python|nccl|cudnn|capability"
CLAUSE = WORDS.replace("name|", "") + r"|name[ \t]*(?::|=|[ \t]is[ \t])"
_WORDS = re.compile(WORDS, re.IGNORECASE)
_CLAUSE = re.compile(CLAUSE, re.IGNORECASE)
_SENTENCE = re.compile(r"\.(?=\s|$)|;\s|,\s")  # where a clause's value ends
# values known by their shape after a word with no separator: torch's ``X.Y.Z+cuNNN`` and ``VRAM N`` (a bare N in MiB)
_TORCH_WORD = re.compile(r"(?<![\w.])(?:[Pp]y)?[Tt]orch[ \t-]+v?(\d+\.\d+(?:\.\d+)?\+cu\d{2,3})(?![\w.])")
# a runtime's device with its name and memory in brackets: Ultralytics' "CUDA:0 (NVIDIA GeForce GTX 1650 SUPER,
# 4096MiB)" (ultralytics/utils/torch_utils.py select_device prints each device as
# f"CUDA:{d} ({p.name}, {p.total_memory / (1 << 20):.0f}MiB)")
_DEVICE_WORD = re.compile(
    r"(?<![\w.])(?:CUDA|cuda|GPU|gpu):?[ \t]?(\d{1,2})[ \t]+\(([^,()]{2,80}),[ \t]*(\d{1,7}(?:\.\d+)?)[ \t]?"
    r"(MiB|GiB|MB|GB)\)"
)
_VRAM_WORD = re.compile(r"(?<![\w.])VRAM[ \t]+(\d{1,7}(?:\.\d+)?)[ \t]?(MiB|GiB|MB|GB)?(?![\w.])")
_RUNTIME = {"torch", "pytorch", "cuda"}  # a key naming one of them and ending in a device: the runtime's own device
_DEVICE_KEYS = ("gpu", "device", "device name", "gpu name")
_NAME_END = re.compile(r"[ \t]+(?=VRAM\b)")  # a GPU's name ends where its memory starts ("NAME VRAM 8188")
_ART = re.compile(r"^[\W_]+")  # a banner's drawing before its first word
# "VRAM 8188" after a GPU's name: the tools that log it print round(total_memory / 1024 / 1024), MiB (kohya_ss's
# setup/setup_common.py and setup/validate_requirements.py, https://github.com/bmaltais/kohya_ss); a byte count (ten
# digits or more) is no such number
_BARE_VRAM = "vram (a bare number: MiB assumed)"


def _facts(line: str, cut: bool = False) -> list[Fact]:
    """What a line says in the vocabulary: its whole-line ``key: value`` form, or else each clause of a sentence or a
    log line (``Max memory: 23.6 GB.``, ``Num GPUs = 1``, ``gpu.name: NAME``, ``INFO --> Using torch device: NAME``,
    ``Torch 2.1.2+cu118``, ``VRAM 8188``), in the line's order; only values of their key's form. In the line a paste
    is cut in (``cut``), only the clauses more of the line follows (the cut may have shortened the last one)."""
    if len(line) >= _LONGEST:
        return []
    v = _vocabulary(line)
    if v is not None:
        listed = v[0] == "gpu" and any(gpu_name(n) for _, n in _LISTED.findall(v[1]))  # numbered GPUs: one report
        return [Fact(v[0], (_key(line) or ("", ""))[0], v[1], listed)] if _readable(*v) and not cut else []
    if not _CLAUSE.search(line):  # no vocabulary word: no clause of the vocabulary
        return []
    return [f for _, f in sorted(_clauses(line), key=lambda x: x[0]) if f.whole or not cut]


def _clauses(line: str) -> list[tuple[int, Fact]]:
    keys = [(m, *_suffix(m)) for m in _SEP.finditer(line)]
    found: list[tuple[int, Fact]] = []
    for k, (m, start, key, concept) in enumerate(keys):
        end = keys[k + 1][1] if k + 1 < len(keys) else len(line)
        value = line[m.end() : end]
        if (s := _SENTENCE.search(value)) is not None:
            value = value[: s.start()]
        whole = m.end() + len(value) < len(line.rstrip())
        value = value.strip()
        if concept == "gpu":
            value = _NAME_END.split(value, maxsplit=1)[0]
        if concept is None or not value or not _readable(concept, value):
            continue
        if key in ("name", "device") and gpu_name(value) is None:
            continue
        words = {w.lower() for w in _WORD.findall(m.group(1))}
        strong = concept == "gpu" and key in _DEVICE_KEYS and bool(words & _RUNTIME) and gpu_name(value) is not None
        found.append((start, Fact(concept, key, value, strong, whole)))
    if found and keys:  # a GPU's name, alone in the sentence before the line's first key ("NAME. Num GPUs = 1.")
        lead = [x for x in _SENTENCE.split(line[: keys[0][1]]) if x.strip()]
        name = _ART.sub("", lead[-1]).strip() if lead else ""
        if name and gpu_name(name) == name:
            found.append((-1, Fact("gpu", "gpu", name)))
    rest = len(line.rstrip())
    found += [(m.start(), Fact("torch", "torch", m.group(1), whole=m.end() < rest)) for m in _TORCH_WORD.finditer(line)]
    for m in _DEVICE_WORD.finditer(line):
        if gpu_name(m.group(2)) is not None:
            found.append((m.start(), Fact("gpu", f"gpu {m.group(1)}", m.group(2).strip(), whole=m.end() < rest)))
            found.append((m.start(2), Fact("memory", "vram", f"{m.group(3)} {m.group(4)}", whole=m.end() < rest)))
    for m in _VRAM_WORD.finditer(line):  # a bare number: MiB (see _BARE_VRAM)
        key = "vram" if m.group(2) else _BARE_VRAM
        found.append((m.start(), Fact("memory", key, f"{m.group(1)} {m.group(2) or 'MiB'}", whole=m.end() < rest)))
    return found


def _suffix(m: re.Match[str]) -> tuple[int, str, str | None]:
    """Where a clause's key starts, the key and its concept: the longest vocabulary run of its last words, else its
    last word (a key outside the vocabulary: ``Arch``), whose words before it belong to the value before."""
    words = list(_WORD.finditer(m.group(1)))
    for j in range(len(words) if _WORDS.search(m.group(1)) else 0):
        key = " ".join(re.sub(r"[^a-z0-9]+", " ", m.group(1)[words[j].start() :].lower()).split())
        c = _concept(key)
        if c is not None:
            return m.start(1) + words[j].start(), key, c
    return m.start(1) + words[-1].start(), "", None


def _nvidia(f: Fact) -> bool:
    return (f.concept == "gpu" and gpu_name(f.value) is not None) or (
        f.concept == "cuda" and _SHAPE["version"].match(f.value) is not None
    )


def _readable(concept: str, value: str) -> bool:
    """A value of the form its key's concept has, or none (a heading: ``* CUDA:``, ``GPU models and configuration:``
    over the names listed)."""
    if value == "":
        return True
    if concept == "gpu":
        return gpu_name(value) is not None or _LISTED.search(value) is not None
    return _SHAPE[concept].match(value) is not None


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A vocabulary line with a value of its form, outside every other output but a log (whose lines may hold a
    tool's report); three distinct vocabulary keys with such values within 15 lines, one naming an NVIDIA GPU or CUDA
    ("python: can't open file" is no report's line), or a runtime naming its NVIDIA device among them."""
    if current is not None and current.kind not in ("_after", "daemon-log"):
        return False
    if not _facts(lines[i]):
        return False
    seen: set[str] = set()
    nvidia = False
    for line in lines[i : i + WINDOW]:
        facts = _facts(line)
        if not facts:  # a GPU's name alone on its line (under an empty GPU key) names one
            nvidia = nvidia or (_vocabulary(line) is None and _bare_name(line) is not None)
            continue
        for f in facts:
            seen.update(_inline(f.concept, f.value))
            nvidia = nvidia or _nvidia(f)
        if (len(seen) >= 3 and nvidia) or any(f.strong for f in facts):
            return True
    return False


def _inline(concept: str, value: str) -> set[str]:
    """The concept, and those a GPU line's ``|`` fields give (``NAME | 24576 MiB | driver 590.48.01``)."""
    found = {concept}
    if concept == "gpu" and "|" in value:
        for f in (x.strip() for x in value.split("|")[1:]):
            found |= (
                {"memory"} if _SHAPE["memory"].match(f) else {"driver"} if re.match(r"driver \d", f, re.I) else set()
            )
    return found


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs (names, memory), driver, torch, its CUDA, Python and NCCL that the report's vocabulary lines show."""
    rig = Rig()
    taken: list[str] = []
    rows = stripped_rows(text, first_line)
    last = -1  # the last vocabulary line's row: the report ends WINDOW rows past it
    listing = False
    count: tuple[int, str] | None = None  # "Num GPUs = 2" and its line: GPUs the report counts but does not name
    for k, (s, lineno, cut) in enumerate(rows):
        if last >= 0 and k - last > WINDOW:
            break
        where = f"{source}:{lineno}"
        v = _vocabulary(s) if not cut else None
        facts = _facts(s, cut) if v is None else []
        if v is None and not facts:
            listing = listing and not cut and _listed(rig, s, where)
            continue
        last = k
        if v is None:  # a sentence's or a log line's clauses
            listing = False
            for f in facts:
                count = (int(f.value), where) if f.concept == "count" else count
                if f.concept == "count" or _read(rig, f.concept, f.key, f.value, where):
                    taken.append(f.key)
            continue
        concept, value = v
        key = (_key(s) or ("", ""))[0]
        listing = concept == "gpu" and _PLACEHOLDER.match(value) is not None and value == ""
        if _PLACEHOLDER.match(value):
            continue
        count = (int(value), where) if concept == "count" and value.isdigit() else count
        if concept == "count" or _read(rig, concept, key, value, where):
            taken.append(key)
    if last < 0:
        raise ImportParseError(source, first_line, "an environment report without a 'key: value' line naming the GPU")
    for n in range(len(rig.gpus), min(count[0], _MAX_GPUS) if count else 0):  # counted, not named: no name
        _gpu(rig, n, None, count[1] if count else "")
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


def _gpu(rig: Rig, index: int, name: str | None, where: str) -> None:
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
    if concept == "memory":  # a bare VRAM number: say the unit assumed where the value came from
        return _memory(rig, value, f"{where}, {_BARE_VRAM}" if key == _BARE_VRAM else where)
    sw = rig.software
    if concept == "driver" and (m := _SHAPE["driver"].match(value)) and sw.driver_version is None:
        sw.driver_version = m.group(1)
        rig.origins["software.driver_version"] = where
    elif concept == "torch" and (m := _SHAPE["torch"].match(value)) and sw.torch_version is None:
        set_torch(rig, m.group(1), where, WHAT)
    elif concept == "cuda" and _torch_cuda(key) and (m := _SHAPE["version"].match(value)):
        sw.torch_cuda_version = m.group(1)
        rig.origins["software.torch_cuda_version"] = where
    elif concept == "python" and (m := _SHAPE["version"].match(value)) and sw.python_version is None:
        sw.python_version = m.group(1)
        rig.origins["software.python_version"] = where
    elif concept == "nccl" and (m := _SHAPE["version"].match(value)) and sw.nccl_version is None:
        sw.nccl_version = m.group(1)
        rig.origins["software.nccl_version"] = where
    elif concept == "capability" and rig.gpus and rig.gpus[-1].compute_capability is None:
        rig.gpus[-1].compute_capability = value
        rig.origins[f"gpus[{len(rig.gpus) - 1}].compute_capability"] = where
    elif concept == "capability":
        rig.problems.append(f"{where}: {key} {value} (no GPU named before it: not read)")
    elif concept == "available" and value.lower() in ("false", "no"):
        rig.problems.append(f"{where}: {key}: {value} (the process that wrote the report saw no usable GPU)")
    elif concept == "available":
        pass  # the GPU seen: what the other keys name
    elif concept in ("cuda", "cudnn") and (m := _SHAPE["version"].match(value)):
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
    m = _SHAPE["memory"].match(value)
    if m is None or not rig.gpus or rig.gpus[-1].memory_total_bytes is not None:
        return False
    power = 20 if m.group(2) in ("MiB", "MB") else 30
    rig.gpus[-1].memory_total_bytes = round(float(m.group(1)) * 2**power)
    rig.origins[f"gpus[{len(rig.gpus) - 1}].memory_total_bytes"] = f"{where} ({m.group(0)}: 1024-based)"
    return True
