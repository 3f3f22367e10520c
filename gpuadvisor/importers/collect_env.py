"""PyTorch's ``collect_env`` report (``python -m torch.utils.collect_env``), which vLLM and many other projects ask
for in every bug report ("Your current environment"): the GPUs it lists and the NVIDIA driver version.

It prints ``GPU models and configuration:`` followed by one ``GPU N: <name>`` line per GPU (or the single GPU's
name on the same line), and ``Nvidia driver version: 535.183.01``. Nothing else in it is a fact about the GPUs
(the CUDA, cuDNN and Python versions are the user's software stack, not the machine's); vLLM's own report embeds an
``nvidia-smi topo -m`` under ``GPU Topology:``, which the topo -m reader takes.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Gpu, Rig
from gpuadvisor.importers.section import Section, clean_lines

_HEAD = "GPU models and configuration:"
_START = ("Collecting environment information...", _HEAD)
_GPU = re.compile(r"^GPU (\d+): (\S.*?)\s*$")
_DRIVER = re.compile(r"^Nvidia driver version:\s*(\d[\w.]*)\s*$", re.IGNORECASE)


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """``Collecting environment information...`` or ``GPU models and configuration:``."""
    s = lines[i].strip()
    if current is not None and current.kind == "collect-env":
        return False
    return s.startswith(_START)


def parse_collect_env(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The GPUs (index and name) and the driver version of a collect_env report."""
    rig = Rig()
    listing = False
    for k, line in enumerate(clean_lines(text)):
        s, lineno = line.strip(), first_line + k
        if s.startswith(_HEAD):
            rest, listing = s[len(_HEAD) :].strip(), True
            if rest.lower() in ("could not collect", "n/a", "none"):  # no GPU seen by this Python: nothing shown
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
                rig.gpus.append(Gpu(index=idx, name=m.group(2)))
                rig.origins[f"gpu{idx}"] = f"{source}:{lineno}"
            continue
        if listing and s:
            listing = False
        d = _DRIVER.match(s)
        if d:
            rig.software.driver_version = d.group(1)
            rig.origins["software.driver_version"] = f"{source}:{lineno}"
    return rig
