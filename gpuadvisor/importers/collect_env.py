"""PyTorch's ``collect_env`` report (``python -m torch.utils.collect_env``), which vLLM and many other projects ask
for in every bug report ("Your current environment"): the GPUs it lists and the NVIDIA driver version.

It prints ``GPU models and configuration:`` followed by one ``GPU N: <name>`` line per GPU (or the single GPU's
name on the same line), and ``Nvidia driver version: 535.183.01``; and the torch it ran with: ``PyTorch version:
2.1.0+cu121`` and ``CUDA used to build PyTorch: 12.1`` (``None``: a CPU build), which the rules hold against the
driver. Under a GPU with MIG on it lists that GPU's MIG devices (``  MIG 1g.20gb Device 0:``): MIG mode, not GPUs.
vLLM's own report embeds an ``nvidia-smi topo -m`` under ``GPU Topology:``, which the topo -m reader
takes; ScaleLLM's copy prints it under ``GPU topology:`` above the driver line, where the report is read again.

SGLang's ``python3 -m sglang.check_env`` is read here too: it names the GPUs of one model on one line, ``GPU
0,1,2,3: NVIDIA H100 80GB HBM3`` (that many GPUs of that name), then ``GPU 0,1,2,3 Compute Capability: 9.0``, and
the NVIDIA driver as ``CUDA Driver Version: 550.54.15``; its ``NVIDIA Topology:`` matrix is the topo -m reader's.

OpenMMLab's ``collect_env`` (mmengine/utils/dl_utils/collect_env.py), which lmdeploy's ``lmdeploy check_env`` prints
and SGLang's check_env copies, is the same kind of ``Key: value`` report: ``sys.platform: linux``, ``Python: 3.10.18
(main, ...)``, ``CUDA available: True``, ``MUSA available: False``, ``numpy_random_seed: 2147483648``, the GPUs of one
name on one line (``GPU 0,1: Tesla V100-SXM2-32GB``, the indices ``torch.cuda.get_device_name`` groups by name),
``CUDA_HOME``, ``NVCC``, ``GCC``, then ``PyTorch: 2.8.0+cu128`` (``torch.__version__``: its ``+cuXYZ`` tag is the CUDA
build) and ``PyTorch compiling details: PyTorch built with:`` over the build's lines. It prints no driver version.
"""

from __future__ import annotations

import re

from gpuadvisor.catalog.cuda_drivers import SOURCE, cuda_for_driver
from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.env_reports import VERSION, set_torch
from gpuadvisor.importers.listed import listed_gpu
from gpuadvisor.importers.nvlink import MIG_DEVICE
from gpuadvisor.importers.section import Section, clean_lines, last_line_shown, outside
from gpuadvisor.importers.torch_config import RUNTIME
from gpuadvisor.importers.values import cuda_version

_HEAD = "GPU models and configuration:"
_START = ("Collecting environment information...", _HEAD)
_GPU = re.compile(r"^GPU (\d+): (\S.*?)\s*$")
DRIVER_KEY = "Nvidia driver version:"  # as collect_env prints it
_DRIVER = re.compile(r"^Nvidia driver version:\s*(\d[\w.]*)\s*$", re.IGNORECASE)
# sglang check_env: the GPUs of one model on one line, their compute capability, and the driver (nvidia-smi's)
_GPUS = re.compile(r"^GPU (\d+(?:,\d+)+|\d+): (\S.*?)\s*$")
_CAPABILITY = re.compile(r"^GPU (\d+(?:,\d+)*) Compute Capability:\s*(\d+\.\d+)\s*$")
_SGL_DRIVER = re.compile(r"^CUDA Driver Version:\s*(\d{3}\.\d+(?:\.\d+)?)\s*$")
# the torch build the report was run with: "PyTorch version: 2.1.0+cu121", "CUDA used to build PyTorch: 12.1" ("None":
# a CPU build; "Could not collect" or "N/A": not known)
_TORCH = re.compile(r"^PyTorch version:\s*(\S+)(?:\s+\([^)]*\))?\s*$")  # docTR's: "1.8.0 (torchvision: 0.9.0)"
# torch's warning at CUDA initialisation: "The NVIDIA driver on your system is too old (found version 9010)": the
# driver's CUDA version as cudaDriverGetVersion gives it (1000 x major + 10 x minor)
_TOO_OLD = re.compile(r"driver on your system is too old \(found version (\d{4,5})\)")
_TORCH_CUDA = re.compile(r"^CUDA used to build PyTorch:\s*(\S.*?)\s*$")
_NOT_KNOWN = ("could not collect", "n/a")
_NO_GPU = ("could not collect", "n/a", "none", "no cuda")  # what it prints where it lists no GPU
# a ROCm build of torch ("ROCM used to build PyTorch: 3.7.20315-077bcfa0"): the GPUs it lists are AMD's
_ROCM = re.compile(r"^ROCM used to build PyTorch:\s*(\S+)\s*$")
# OpenMMLab's collect_env (lmdeploy check_env, SGLang check_env): "sys.platform: linux" or "Python: 3.10.18 (main, ...)"
# over "CUDA available: True"; a pasted inline-code span may open its first line with a backtick
MM_KEYS = ("sys.platform:", "Python:", "CUDA available:")
_MM_HEAD = re.compile(r"^`?(?:sys\.platform: \w+|Python: \d+\.\d+\S*(?:\s.*)?)$")
_MM_PYTHON = re.compile(rf"^`?Python:\s*({VERSION})(?:\s|$)")
_MM_TORCH = re.compile(rf"^PyTorch:\s*({VERSION}\S*)\s*$")  # torch.__version__: "2.8.0+cu128", "2.0.1"


# vLLM's sectioned report (0.9 and later) pads its keys: "PyTorch version              : 2.5.1+cu124", and its
# "GPU models and configuration : " line: read as the classic "Key: value"
_VLLM_RULE = re.compile(r"^={10,}$")  # its sections' banners: a rule, "System Info" (its first), a rule
_PADDED_KEY = re.compile(r"^([A-Za-z][\w ./()-]*?[\w)])\s+:(?=\s|$)\s*")


# cudnn-frontend's report (python -m cudnn.collect_env, its _get_gpu_info): "==== GPU / Driver ====" sections of
# padded "Key : value" lines, the driver as "Driver version : 595.71.05" and each GPU as "GPU 0 (CUDA order) : NAME |
# SM89 | 142 SMs | 44.4 GiB" (torch's view) or "GPU 0 (nvidia-smi order) : NAME, 8.9, 46068 MiB, 595.71.05"
CUDNN_HEADS = ("==== cuDNN Frontend ====", "==== GPU / Driver ====")
_FE_GPU = re.compile(r"^GPU (\d+) \((?:CUDA|nvidia-smi) order\):\s*(\S[^|,]*?)\s*(?:[|,].*)?$")
_FE_DRIVER = re.compile(r"^Driver version:\s*(\d{3}\.\d+(?:\.\d+)?)\s*$")


def _unpadded(s: str) -> str:
    return _PADDED_KEY.sub(r"\1: ", s, count=1) if " :" in s or "\t:" in s else s


@outside("collect-env")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``Collecting environment information...``, ``PyTorch version:`` over its build lines, or ``GPU models and
    configuration:``; sglang check_env's ``GPU 0,1: NAME`` over its ``GPU 0,1 Compute Capability:`` line, or below
    its ``CUDA available:`` line (versions before the compute capability was printed)."""
    s = _unpadded(lines[i].strip())
    if current is not None and current.kind in ("topo-m", "topo-p2p") and s.startswith(DRIVER_KEY):
        return True  # the report goes on after its topology matrix (ScaleLLM's prints it above the driver line)
    if s.startswith(_START) or s.startswith(CUDNN_HEADS):
        return True
    if s.startswith("CUDA available:"):  # sglang check_env before its "Compute Capability" lines (0.2), mmengine's
        return any(_GPUS.match(x.strip()) for x in lines[i + 1 : i + 4])
    if _MM_HEAD.match(s):  # OpenMMLab's report from its first lines
        return any(x.strip().startswith("CUDA available:") for x in lines[i + 1 : i + 3])
    if _VLLM_RULE.match(s) and i + 1 < len(lines) and lines[i + 1].strip() == "System Info":
        return True  # vLLM's sectioned report, from its first banner
    if _TORCH.match(s):  # its first line lost or mistyped: "PyTorch version:" over its build lines
        below = [_unpadded(x.strip()) for x in lines[i + 1 : i + 4]]
        return any(x.startswith(("Is debug build:", "CUDA used to build PyTorch:")) for x in below)
    m = _GPUS.match(s)
    cap = _CAPABILITY.match(lines[i + 1].strip()) if m and i + 1 < len(lines) else None
    return cap is not None and m is not None and cap.group(1) == m.group(1)


def parse_collect_env(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs (index and name) and the driver version of a collect_env report."""
    rig = Rig()
    listing = False
    lines = clean_lines(text)
    last_shown = last_line_shown(lines)  # the paste's last line
    cut = last_shown if not text.endswith(("\n", "\r")) else -1  # the line the paste ends inside, if it does
    for k, line in enumerate(lines):
        s, lineno = _unpadded(line.strip()), first_line + k
        if s.startswith(_HEAD):
            rest, listing = s[len(_HEAD) :].strip(), True
            if rest.lower() in _NO_GPU:  # no GPU seen by this Python: nothing shown
                rig.problems.append(f"{source}: line {lineno}: collect_env could not list the GPUs ({rest})")
                listing = False
            elif rest:  # one GPU, on the same line: "GPU 0: <name>" or the bare name
                one = _GPU.match(rest)
                rig.gpus.append(Gpu(index=int(one.group(1)) if one else 0, name=one.group(2) if one else rest))
                rig.origins[f"gpu{rig.gpus[-1].index}"] = f"{source}:{lineno}"
                listing = False
            continue
        m = _GPU.match(s)
        if listing and m and "(UUID" not in s:
            idx = int(m.group(1))
            if all(g.index != idx for g in rig.gpus):
                rig.gpus.append(listed_gpu(idx, m.group(2), rig.gpus, lineno, last=k == last_shown))
                rig.origins[f"gpu{idx}"] = f"{source}:{lineno}"
            continue
        if listing and rig.gpus and MIG_DEVICE.match(s):  # "  MIG 1g.20gb Device 0:" under its GPU: MIG is on
            rig.gpus[-1].mig_mode = True
            continue
        if listing and s:
            listing = False
        if _sglang(rig, s, source, lineno, k == last_shown):
            continue
        if (fe := _FE_GPU.match(s)) and all(g.index != int(fe.group(1)) for g in rig.gpus):
            rig.gpus.append(listed_gpu(int(fe.group(1)), fe.group(2), rig.gpus, lineno, last=k == last_shown))
            rig.origins[f"gpu{fe.group(1)}"] = f"{source}:{lineno}"
            continue
        d = _DRIVER.match(s) or _FE_DRIVER.match(s)
        if k != cut and _mm(rig, s, f"{source}:{lineno}"):
            continue
        if d:
            rig.software.driver_version = d.group(1)
            rig.origins["software.driver_version"] = f"{source}:{lineno}"
        else:
            _torch(rig, s, f"{source}:{lineno}")
    rocm = next(
        (m.group(1) for x in lines if (m := _ROCM.match(_unpadded(x.strip()))) and m.group(1).lower() != "n/a"), None
    )
    if rocm is not None and rig.gpus:  # "GPU models and configuration: Device 66a1": an AMD GPU
        rig.problems.append(
            f"{source}: a ROCm build of torch (ROCm {rocm}): the {len(rig.gpus)} GPU(s) it lists are AMD GPUs, "
            "not NVIDIA's: not read"
        )
        rig.gpus.clear()
        for key in [k for k in rig.origins if k.startswith("gpu")]:
            del rig.origins[key]
    sw = rig.software
    if sw.cuda_driver_version is None and (old := _TOO_OLD.search(text)) is not None:
        n = int(old.group(1))
        sw.cuda_driver_version = cuda_version(n)
        rig.origins["software.cuda_driver_version"] = f"{source}: torch's 'driver ... too old (found version {n})'"
    if sw.cuda_driver_version is None and (cuda := cuda_for_driver(sw.driver_version)) is not None:
        sw.cuda_driver_version = cuda  # collect_env does not print it: the driver's version tells it
        rig.origins["software.cuda_driver_version"] = f"catalog: driver {sw.driver_version}, {SOURCE}"
    return rig


def _torch(rig: Rig, s: str, where: str) -> None:
    """collect_env's torch version and the CUDA version that torch was built with."""
    sw = rig.software
    if m := _TORCH.match(s):
        if m.group(1).lower() in _NOT_KNOWN:
            sw.missing("torch_version", f"collect_env says {m.group(1)!r} ({where})")
        else:
            sw.torch_version = m.group(1)
            rig.origins["software.torch_version"] = where
    elif m := _TORCH_CUDA.match(s):
        value = m.group(1)
        if value.lower() in _NOT_KNOWN:
            sw.missing("torch_cuda_version", f"collect_env says {value!r} ({where})")
        elif value == "None":  # torch.version.cuda is None: a CPU build
            sw.torch_cuda_version = None
            sw.unavailable.pop("torch_cuda_version", None)
            rig.origins["software.torch_cuda_version"] = where
        elif re.fullmatch(r"\d+\.\d+(?:\.\d+)?", value):
            sw.torch_cuda_version = value
            rig.origins["software.torch_cuda_version"] = where
    elif (m := RUNTIME.match(s)) and m.group(1) == "CUDA" and sw.torch_cuda_version is None:
        # "  - CUDA Runtime 9.2" under "PyTorch compiling details" (torch.__config__.show(): torch.version.cuda),
        # what a torch version without a +cuXYZ tag does not say
        sw.torch_cuda_version = m.group(2)
        sw.unavailable.pop("torch_cuda_version", None)
        rig.origins["software.torch_cuda_version"] = f"{where} (the CUDA Runtime torch was built with)"


def _mm(rig: Rig, s: str, where: str) -> bool:
    """OpenMMLab's collect_env ``Python:`` and ``PyTorch:`` lines; False if not one."""
    if m := _MM_PYTHON.match(s):
        rig.software.python_version = m.group(1)
        rig.origins["software.python_version"] = where
    elif m := _MM_TORCH.match(s):
        set_torch(rig, m.group(1), where, "collect_env (OpenMMLab's: lmdeploy, SGLang check_env)")
    else:
        return False
    return True


def _sglang(rig: Rig, s: str, source: str, lineno: int, last: bool) -> bool:
    """An sglang check_env line (its GPUs of one model, their compute capability, the driver); False if not one."""
    if (m := _GPUS.match(s)) and "(UUID" not in s:
        for idx in (int(x) for x in m.group(1).split(",")):
            if all(g.index != idx for g in rig.gpus):
                rig.gpus.append(listed_gpu(idx, m.group(2), rig.gpus, lineno, last))
                rig.origins[f"gpu{idx}"] = f"{source}:{lineno}"
    elif m := _CAPABILITY.match(s):
        ids = {int(x) for x in m.group(1).split(",")}
        for g in rig.gpus:
            if g.index in ids:
                g.compute_capability = m.group(2)
    elif m := _SGL_DRIVER.match(s):
        rig.software.driver_version = m.group(1)
        rig.origins["software.driver_version"] = f"{source}:{lineno}"
    else:
        return False
    return True
