"""The GPU list an ML framework prints in its log, as bug reports paste it: llama.cpp (ggml), ollama, TensorFlow
and PyTorch. Each reader takes the device lines and lists the log's other lines as not read (framework_log.py).

- llama.cpp / ggml (ggml/src/ggml-cuda/ggml-cuda.cu, ``ggml_cuda_init``): ``ggml_cuda_init: found 2 CUDA devices:``
  over ``  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes`` (newer builds add ``, VRAM: 24135
  MiB``: ``cudaDeviceProp.totalGlobalMem`` in MiB, the figure deviceQuery prints); the model loader's ``using
  device CUDA0 (NVIDIA GeForce RTX 3090) - 23000 MiB free`` (free memory, not the card's: not read as its memory).
  Before 2024 (ggml-cuda.cu's ``ggml_init_cublas``) the same list began ``ggml_init_cublas: found 2
  CUDA devices:``; its device lines had no ``VMM:`` before December 2023 and, in June 2023 builds, no compute
  capability either (``  Device 0: NVIDIA GeForce RTX 3090``: read only under a ``found N CUDA devices`` line, as
  its N following device lines). ROCm builds print ``found N ROCm devices``: AMD GPUs, not read.
- ollama's server log (``msg="inference compute"``, one line per GPU, logfmt): ``id=GPU-<uuid>`` (or the CUDA
  number in early 2024 releases), ``library=cuda``, ``compute=8.9``, ``driver=12.5`` (the CUDA version the driver
  supports), ``name="NVIDIA GeForce RTX 4090"``; since 0.12 (discover/types.go) ``library=CUDA``, ``name=CUDA0`` (the
  backend's device number), ``description="NVIDIA ..."``, ``pci_id=0000:01:00.0``, the devices sorted by free
  memory. ``total="23.6 GiB"`` is "the total amount of memory the device can use for loading models" (ml/device.go),
  rounded to 0.1 GiB: not the card's memory. Lines without ``CUDAn`` are numbered in the order listed.
- TensorFlow (core/common_runtime/gpu/gpu_device.cc): ``Found device 0 with properties:`` over ``name: NAME major: 8
  minor: 6 ...`` and ``pciBusID: 0000:01:00.0`` (1.x) or ``pciBusID: 0000:01:00.0 name: NAME computeCapability:
  8.6`` (2.x); ``Created TensorFlow device (/job:localhost/.../device:GPU:0 with 22302 MB memory) -> physical GPU
  (device: 0, name: NAME, pci bus id: 0000:01:00.0, compute capability: 8.6)`` (the MB are what TensorFlow takes,
  not the card's memory); ``StreamExecutor device (0): NAME, Compute Capability 8.6`` (XLA).
- PyTorch: ``torch.cuda.get_device_properties(i)`` printed: ``_CudaDeviceProperties(name='NVIDIA A100-SXM4-80GB',
  major=8, minor=0, total_memory=81050MB, multi_processor_count=108, ...)`` (``total_memory`` is
  ``totalGlobalMem`` in MiB; the CUDA number is not printed: the devices are numbered in the order shown).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpuadvisor.facts import Rig
from gpuadvisor.importers.cuda_samples import _access_matrix as access_matrix
from gpuadvisor.importers.fragments import PCI_BUS_ID, PCI_BUS_ID_LOOSE, UUID_BODY
from gpuadvisor.importers.framework_log import LONGEST, Reading
from gpuadvisor.importers.section import Detector, Section
from gpuadvisor.importers.values import GPU_UUID

LLAMA, OLLAMA, TF, TORCH = "llama.cpp (ggml) log", "ollama server log", "TensorFlow log", "PyTorch device properties"
_NO_BUS = "not printed by this framework's device line"
_NO_UUID = "not printed by this framework's device line"

_GGML_FOUND = re.compile(
    r"(?:ggml_cuda_init|ggml_init_cublas): found (\d+) CUDA devices?(?: \(Total VRAM: \d+ MiB\))?:"
)
_GGML_DEVICE = re.compile(
    r"(?<!\S)Device (\d+): (.{1,160}?), compute capability (\d+)\.(\d+)"
    r"(?:, VMM: (?:yes|no)(?:, VRAM: (\d+) MiB)?|\s*$)"
)
_GGML_BARE = re.compile(r"^\s*Device (\d+): ([^,]{1,160}?)\s*$")  # June 2023: the name alone, under "found N"
_GGML_USING = re.compile(rf"using device CUDA(\d+) \((.{{1,160}}?)\)(?: \(({PCI_BUS_ID_LOOSE})\))? - \d+ MiB free")
_GGML_BACKEND = re.compile(
    r"load_backend: loaded CUDA backend|(?:ggml_cuda_init|ggml_init_cublas): (?:GGML_CUDA_|CUDA_USE_TENSOR_CORES)"
)


def _starts(kind: str, *patterns: re.Pattern[str]) -> Detector:
    """A detector: a line (not too long) one of ``patterns`` finds, outside an output of ``kind`` already."""

    def starts(lines: list[str], i: int, current: Section | None) -> bool:
        line = lines[i]
        if (current is not None and current.kind == kind) or len(line) > LONGEST:
            return False
        return any(p.search(line) for p in patterns)

    return starts


# ``ggml_cuda_init: found N CUDA devices:``, a ``Device 0: NAME, compute capability X.Y, VMM:`` line or the loader's
# ``using device CUDA0 (NAME) - N MiB free``
starts_llama = _starts("llama-devices", _GGML_FOUND, _GGML_DEVICE, _GGML_USING)


def parse_llama(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each CUDA device ggml lists: its number, name, compute capability, and (newer builds) its memory."""
    r = Reading(source, first_line, text)
    found: tuple[int, int] | None = None
    for k, line in enumerate(r.lines):
        if len(line) > LONGEST:
            continue
        if m := _GGML_FOUND.search(line):
            found = (int(m.group(1)), k)
            r.read.add(k)
        elif m := _GGML_DEVICE.search(line):  # whole once its compute capability shows, even where a paste ends
            g = r.gpu(k, int(m.group(1)))
            g.name, g.compute_capability = m.group(2).strip(), f"{m.group(3)}.{m.group(4)}"
            if m.group(5):
                g.memory_total_bytes = int(m.group(5)) * 1048576
        elif found and k - found[1] <= found[0] and (m := _GGML_BARE.match(line)) and k != r.cut:
            g = r.gpu(k, int(m.group(1)))
            g.name = g.name or m.group(2)
        elif (m := _GGML_USING.search(line)) and k != r.cut:
            g = r.gpu(k, int(m.group(1)), m.group(3))
            g.name = g.name or m.group(2).strip()
        elif _GGML_BACKEND.search(line):
            r.read.add(k)
    if found is not None:
        shown = {g.index for g in r.rig.gpus}
        missing = [i for i in range(found[0]) if i not in shown]
        if missing:
            r.rig.problems.append(
                f"{source}: line {r.lineno(found[1])}: ggml found {found[0]} CUDA devices; GPU(s) "
                f"{', '.join(map(str, missing))} not shown"
            )
    return r.finish(LLAMA, {"bus_id": _NO_BUS, "uuid": _NO_UUID, "memory_total_bytes": _LLAMA_MEMORY})


_LLAMA_MEMORY = "ggml prints the card's memory (VRAM: N MiB) only in newer builds; its 'MiB free' is free memory"

_OLLAMA = re.compile(r'msg="?inference compute"?\s')
_OLLAMA_CUDA = re.compile(r'msg="?inference compute"?\s.*\blibrary=cuda\b', re.IGNORECASE)
_KV = re.compile(r'(\w[\w.]*)=("(?:[^"\\]|\\.){0,200}"|\S{1,200})')
_CUDA_NAME = re.compile(r"CUDA(\d+)")
_OLLAMA_MEMORY = "ollama's total is CUDA's usable total rounded to 0.1 GiB, not the card's memory"


starts_ollama = _starts("ollama-devices", _OLLAMA_CUDA)  # ollama's "inference compute" line of a CUDA GPU


def parse_ollama(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each CUDA GPU ollama lists: its number, UUID, name, compute capability, bus id; the CUDA version the driver
    supports."""
    r = Reading(source, first_line, text)
    order, unnumbered = 0, False
    for k, line in r.shown():
        if not _OLLAMA.search(line):
            continue
        kv = {m.group(1): m.group(2).strip('"') for m in _KV.finditer(line)}
        if kv.get("library", "").lower() != "cuda":
            r.rig.problems.append(
                f"{source}: line {r.lineno(k)}: ollama's {kv.get('library', '?')} device, not an NVIDIA CUDA GPU: "
                "not read"
            )
            r.read.add(k)
            continue
        gid, name = kv.get("id", ""), kv.get("name", "")
        number = _CUDA_NAME.fullmatch(name) or (re.fullmatch(r"\d{1,3}", gid) and re.match(r"(\d+)", gid))
        if number is None and not unnumbered:
            unnumbered = True
            r.rig.problems.append(
                f"{source}: line {r.lineno(k)}: ollama's line names no CUDA number: GPUs numbered in the order listed"
            )
        g = r.gpu(k, int(number.group(1)) if number else order, kv.get("pci_id"))
        order += 1
        g.name = kv.get("description") or (name if name and not _CUDA_NAME.fullmatch(name) else None)
        uuid = gid if GPU_UUID.match(gid) else None
        if uuid is None and re.fullmatch(UUID_BODY, gid):
            uuid = "GPU-" + gid
        g.uuid = uuid
        if re.fullmatch(r"\d+\.\d+", kv.get("compute", "")):
            g.compute_capability = kv["compute"]
        if re.fullmatch(r"\d+\.\d+", kv.get("driver", "")):
            r.software(k, cuda_driver_version=kv["driver"])
    return r.finish(OLLAMA, {"bus_id": _NO_BUS, "uuid": _NO_UUID, "memory_total_bytes": _OLLAMA_MEMORY})


_TF_FOUND = re.compile(r"Found device (\d+) with properties:")
_TF_NAME = re.compile(r"(?:^|\s)name: (.{1,160}?) major: (\d+) minor: (\d+)")
_TF_BUS = re.compile(rf"pciBusID:? ({PCI_BUS_ID})")
_TF_NAME2 = re.compile(r"name: (.{1,160}?) computeCapability: (\d+\.\d+)")
_TF_CREATED = re.compile(
    r"Creat(?:ed|ing) TensorFlow device \(.{1,200}?\) -> (?:physical GPU )?\(device: (\d+), name: (.{1,160}?), "
    rf"pci bus id: ({PCI_BUS_ID_LOOSE})(?:, compute capability: (\d+\.\d+))?\)"
)
_TF_XLA = re.compile(r"StreamExecutor device \((\d+)\): (.{1,160}?), Compute Capability (\d+\.\d+)")
_TF_MEMORY = "TensorFlow prints the memory it takes (and GiB rounded to 0.01), not the card's memory"
# the GPUs TensorFlow uses (``Adding visible gpu devices: 0, 1, 2, 3``); its peer access matrix, 2.x's ``Device
# interconnect StreamExecutor with strength 1 edge matrix:`` over ``     0 1 2 3`` (the diagonal N: no edge to itself)
# or 1.x's ``Device peer to peer matrix`` over ``DMA: 0 1 2 3`` (the diagonal Y), then a row per GPU ``0:   Y N N N``;
# 1.x's ``Peer access not supported between device ordinals 0 and 3`` before it. Y: cudaDeviceCanAccessPeer.
_TF_VISIBLE = re.compile(r"Adding\s+visible\s+gpu\s+devices:\s*(\d{1,3}(?:,\s*\d{1,3}){0,63})\s*$")
_TF_MATRIX = re.compile(
    r"(?:Device\s+peer\s+to\s+peer\s+matrix|StreamExecutor\s+with\s+strength\s+\d+\s+edge\s+matrix:)\s*$"
)
_TF_COLUMNS = re.compile(r"(?:^|\]\s)\s*(?:(DMA:)\s*)?(\d{1,3}(?:[ \t]+\d{1,3}){0,63})\s*$")
_TF_ROW = re.compile(r"(?:^|\]\s)\s*(\d{1,3}):\s+([YN](?:[ \t]+[YN]){0,63})\s*$")
_TF_NO_PEER = re.compile(r"Peer\s+access\s+not\s+supported\s+between\s+device\s+ordinals\s+(\d{1,3})\s+and\s+(\d{1,3})")


# TensorFlow's ``Found device 0 with properties:``, ``Created TensorFlow device (...) -> physical GPU (device: 0, ...)``
# or XLA's ``StreamExecutor device (0): NAME, Compute Capability X.Y``; its peer matrix's title or 1.x's ``DMA:`` line
starts_tf = _starts(
    "tf-devices",
    _TF_FOUND,
    _TF_CREATED,
    _TF_XLA,
    _TF_VISIBLE,
    _TF_MATRIX,
    re.compile(r"\]\sDMA:(?:\s+\d{1,3})+\s*$"),
    _TF_NO_PEER,
)


def parse_tf(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each GPU TensorFlow names, once however many lines name it: its number, name, bus id, compute capability."""
    r = Reading(source, first_line, text)
    props: int | None = None  # the line of the last "Found device N" whose property lines may follow
    peers = _Peers()
    for k, line in r.shown():
        if peers.read(r, k, line):
            continue
        if m := _TF_FOUND.search(line):
            props = k
            r.gpu(k, int(m.group(1)))
        elif (m := _TF_CREATED.search(line)) or (m := _TF_XLA.search(line)):
            created = m.re is _TF_CREATED
            g = r.gpu(k, int(m.group(1)), m.group(3) if created else None)
            g.name = g.name or m.group(2).strip()
            cc = m.group(4) if created else m.group(3)
            g.compute_capability = g.compute_capability or cc
        elif props is not None and k - props <= 3:
            _tf_properties(r, k, int(_TF_FOUND.search(r.lines[props]).group(1)))  # type: ignore[union-attr]
    rig = r.finish(TF, {"bus_id": _NO_BUS, "uuid": _NO_UUID, "memory_total_bytes": _TF_MEMORY})
    if peers.first is not None:
        access_matrix(rig, peers.access, (r.lineno(peers.first), None), source, "TensorFlow's peer matrix")
    return rig


@dataclass
class _Peers:
    """TensorFlow's peer access as read so far: (a, b) -> whether GPU a can access GPU b's memory."""

    access: dict[tuple[int, int], bool] = field(default_factory=dict)
    columns: list[int] | None = None  # the matrix's column numbers, once its header line is read
    titled: bool = False  # the line above was the matrix's title
    first: int | None = None  # the first line that gave a pair

    def read(self, r: Reading, k: int, line: str) -> bool:
        """Whether line k is one of the peer lines (read into ``access``, its GPUs named)."""
        titled, self.titled = self.titled, False
        if m := _TF_VISIBLE.search(line):
            for n in re.split(r",\s*", m.group(1)):
                r.gpu(k, int(n))
        elif _TF_MATRIX.search(line):
            self.titled = True
            r.read.add(k)
        elif (m := _TF_COLUMNS.search(line)) and (titled or m.group(1)):
            self.columns = [int(n) for n in m.group(2).split()]
            for n in self.columns:
                r.gpu(k, n)
        elif self.columns and (m := _TF_ROW.search(line)) and len(m.group(2).split()) == len(self.columns):
            a = int(m.group(1))
            r.gpu(k, a)
            for b, cell in zip(self.columns, m.group(2).split(), strict=True):
                if a != b:
                    self.access[(a, b)] = cell == "Y"
            self.first = k if self.first is None else self.first
        elif m := _TF_NO_PEER.search(line):
            a, b = int(m.group(1)), int(m.group(2))
            r.gpu(k, a), r.gpu(k, b)
            self.access[(a, b)] = False
            self.first = k if self.first is None else self.first
        else:
            return False
        return True


def _tf_properties(r: Reading, k: int, index: int) -> None:
    """A property line under ``Found device N with properties:`` (its name, compute capability, bus id)."""
    line = r.lines[k]
    n1, n2, bus = _TF_NAME.search(line), _TF_NAME2.search(line), _TF_BUS.search(line)
    if not (n1 or n2 or bus or re.search(r"(?:totalMemory|coreClock|memoryClockRate)", line)):
        return
    g = r.gpu(k, index, bus.group(1) if bus else None)
    if n1:
        g.name, g.compute_capability = n1.group(1).strip(), f"{n1.group(2)}.{n1.group(3)}"
    elif n2:
        g.name, g.compute_capability = n2.group(1).strip(), n2.group(2)


_TORCH = re.compile(
    r"(?:\bdevice(?P<n>\d{1,3}) )?_CudaDeviceProperties\(name='(?P<name>[^']{1,160})'(?:, major=(?P<major>\d+), "
    r"minor=(?P<minor>\d+))?, total_memory=(?P<mib>\d+)MB(?P<rest>[^)]{0,600})"
)
_TORCH_UUID = re.compile(rf"uuid=(?:GPU-)?({UUID_BODY})")


starts_torch = _starts("torch-devices", _TORCH)  # ``_CudaDeviceProperties(name='NAME', ..., total_memory=NMB``


def parse_torch(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each device's properties PyTorch prints: name, compute capability, memory (MiB), UUID; numbered in order."""
    r = Reading(source, first_line, text)
    numbered = False  # YOLOv3/v5's "Using CUDA device0 _CudaDeviceProperties(...)" names the CUDA number
    for k, line in r.shown():
        for m in _TORCH.finditer(line):
            numbered = numbered or m.group("n") is not None
            g = r.gpu(k, int(m.group("n")) if m.group("n") else len(r.rig.gpus))
            g.name = m.group("name").strip()
            if m.group("major"):
                g.compute_capability = f"{m.group('major')}.{m.group('minor')}"
            g.memory_total_bytes = int(m.group("mib")) * 1048576
            if u := _TORCH_UUID.search(m.group("rest")):
                g.uuid = "GPU-" + u.group(1)
    if r.rig.gpus and not numbered:
        r.rig.problems.append(
            f"{source}: line {first_line}: PyTorch's device properties name no CUDA number: GPUs numbered in the "
            "order shown"
        )
    return r.finish(TORCH, {"bus_id": _NO_BUS, "uuid": _NO_UUID, "compute_capability": _NO_CC})


_NO_CC = "not printed (YOLO's device line gives the name and memory only)"
