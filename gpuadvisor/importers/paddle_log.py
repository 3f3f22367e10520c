"""PaddlePaddle's device lines, in its glog output (``paddle.utils.run_check()``, any training run's log).

Paddle logs, once per GPU it opens (platform/device_context.cc in 1.x-2.2, gpu_resources.cc since 2.3), a glog
warning ``W1023 17:00:07.024209  6741 device_context.cc:404] Please NOTE: device: 0, GPU Compute Capability: 6.1,
Driver API Version: 10.1, Runtime API Version: 10.1`` (1.3 to 1.8: ``CUDA Capability: 61, Driver API Version:
...``, the capability as major * 10 + minor; 1.2: ``CUDA Capability: 75, Driver Version: 10.0, Runtime Version:
8.0``). The driver's version is cudaDriverGetVersion's (the newest CUDA the installed driver supports), the
runtime's the CUDA Paddle was built with. Then ``device: 0, cuDNN Version: 7.6.``; a multi-GPU run's
parallel_executor.cc logs ``Cannot enable P2P access from 0 to 4`` for each pair cudaDeviceCanAccessPeer refuses.

Read: each GPU a line numbers (its compute capability), the driver's CUDA version, and the peer access of the pairs
shown (refused). Paddle prints no name, bus id or memory here.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.cuda_samples import _access_matrix as access_matrix
from gpuadvisor.importers.framework_log import LONGEST, Reading
from gpuadvisor.importers.section import Section, outside

WHAT = "PaddlePaddle log"
# 2.0+: "GPU Compute Capability: 6.1, Driver API Version: 10.1, Runtime API Version: 10.1"; 1.3-1.8: "CUDA
# Capability: 61, Driver API Version: ..." (major * 10 + minor); 1.2: "CUDA Capability: 75, Driver Version: 10.0,
# Runtime Version: 8.0"
_DEVICE = re.compile(
    r"\bdevice: (\d{1,2}), (?:GPU Compute|CUDA) Capability: (\d{1,2}\.\d|\d{2,3}), Driver (?:API )?Version: "
    r"(\d{1,2}\.\d{1,2}), Runtime (?:API )?Version: (\d{1,2}\.\d{1,2})"
)
_CUDNN = re.compile(r"\bdevice: (\d{1,2}), cuDNN Version: \d")
# a GPU number of two digits at most: no node has more, and the peer matrix stays small
_NO_PEER = re.compile(r"\bCannot enable P2P access from (\d{1,2}) to (\d{1,2})\s*$")
_UNSHOWN = "not printed (Paddle's device line gives the compute capability and CUDA versions only)"


@outside("paddle-devices")
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """Paddle's ``device: 0, GPU Compute Capability: ...`` line or its ``Cannot enable P2P access from A to B``."""
    line = lines[i]
    return len(line) <= LONGEST and (_DEVICE.search(line) or _NO_PEER.search(line)) is not None


def parse_paddle_log(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each GPU Paddle's lines number, its compute capability, the driver's CUDA version, refused peer pairs."""
    r = Reading(source, first_line, text)
    access: dict[tuple[int, int], bool] = {}
    first_pair: int | None = None
    for k, line in r.shown():
        if m := _DEVICE.search(line):
            cc = m.group(2) if "." in m.group(2) else f"{int(m.group(2)) // 10}.{int(m.group(2)) % 10}"
            r.gpu(k, int(m.group(1))).compute_capability = cc
            r.software(k, cuda_driver_version=m.group(3))
        elif m := _CUDNN.search(line):
            r.gpu(k, int(m.group(1)))
        elif m := _NO_PEER.search(line):
            a, b = int(m.group(1)), int(m.group(2))
            r.gpu(k, a), r.gpu(k, b)
            access[(a, b)] = False
            first_pair = k if first_pair is None else first_pair
    rig = r.finish(WHAT, {"name": _UNSHOWN, "bus_id": _UNSHOWN, "uuid": _UNSHOWN, "memory_total_bytes": _UNSHOWN})
    where = {id(g): rig.origins.get(f"gpus[{n}]", source) for n, g in enumerate(rig.gpus)}
    rig.gpus.sort(key=lambda g: g.index)  # in CUDA's order, not the order the lines name them
    rig.origins.update({f"gpus[{n}]": where[id(g)] for n, g in enumerate(rig.gpus)})
    if first_pair is not None:
        access_matrix(rig, access, (r.lineno(first_pair), None), source, "Paddle's P2P lines")
    return rig
