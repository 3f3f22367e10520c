"""GPUDirect Storage's platform check, ``gdscheck -p`` (CUDA's gds/tools).

It prints the releases (`` GDS release version: 1.13.0.11``, `` nvidia_fs version:  2.17 libcufile version:
2.12``), then its DRIVER CONFIGURATION: one ``NAME : Supported|Unsupported`` line per storage path cuFile can
drive (NVMe, NVMeOF, NFS, the parallel filesystems...), `` Userspace RDMA``, and under it ``--Mellanox PeerDirect :
Enabled`` or ``Disabled`` (GPU memory registered with the RDMA adapters through peer memory: nvidia_peermem),
then its cuFile configuration. The peer-memory line is kept as that fact (``peermem_loaded``); the rest, which the
scan has no field for, is said in one note (the releases, what is supported, the RDMA devices up and down).
"""

from __future__ import annotations

import re

from gpuadvisor.facts import Rig
from gpuadvisor.importers.section import Section, clean_lines, outside

WHAT = "gdscheck -p (GPUDirect Storage)"
_START = re.compile(r"^\s*GDS release version\s*:\s*\d")
# a fragment from its ENVIRONMENT or DRIVER CONFIGURATION heading, when a driver's support line follows
_HEADING = re.compile(r"^\s*(?:ENVIRONMENT|DRIVER CONFIGURATION)\s*:\s*$")
_DRIVER = re.compile(r"^\s*(?:\*\*\s*)?NVMe\s*:\s*(?:Supported|Unsupported)\b")
_SETTING = re.compile(r"^\s*(?:--)?([A-Za-z][\w .+/-]{0,40}?)\s*:\s*(.+?)\s*$")


@outside("gdscheck", log=True)
def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """`` GDS release version: 1.13.0.11``, gdscheck -p's first line, or (a fragment) its ``ENVIRONMENT:`` or
    ``DRIVER CONFIGURATION:`` heading over an ``NVMe : Supported|Unsupported`` line, or that line over NVMeOF's."""
    if _START.match(lines[i]):
        return True
    if _DRIVER.match(lines[i]):  # its driver lines alone: NVMe's over NVMeOF's
        return i + 1 < len(lines) and bool(re.match(r"^\s*(?:\*\*\s*)?NVMeOF\s*:", lines[i + 1]))
    return bool(_HEADING.match(lines[i])) and any(_DRIVER.match(x) for x in lines[i + 1 : i + 8])


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The peer-memory fact and a note of what the check says."""
    rig = Rig()
    said: dict[str, str] = {}
    for k, line in enumerate(clean_lines(text)):
        line = line.replace("**", "")  # a line the poster set in markdown bold
        for part in re.split(
            r"(?<=\d)\s+(?=[a-z_]+ version\s*:)", line
        ):  # "nvidia_fs version: 2.17 libcufile version: 2.12"
            if m := _SETTING.match(part):
                said.setdefault(m.group(1).strip(), m.group(2))
        if m := re.match(r"^\s*--\s*Mellanox PeerDirect\s*:\s*(Enabled|Disabled)\b", line):
            rig.network.peermem_loaded = m.group(1) == "Enabled"
            rig.origins["network.peermem_loaded"] = f"{source}:{first_line + k}"
    supported = [n for n, val in said.items() if val == "Supported"]
    drivers = [n for n, val in said.items() if val in ("Supported", "Unsupported")]
    releases = ", ".join(
        f"{n} {said[n]}" for n in ("GDS release version", "nvidia_fs version", "libcufile version") if n in said
    )
    note = (
        f"{source}: line {first_line}: GPUDirect Storage (gdscheck -p): {releases or 'releases not shown'}; supported: "
        f"{', '.join(supported) or 'none shown'}"
        + (f"; RDMA devices {said['rdma_device_status']}" if "rdma_device_status" in said else "")
    )
    if "NVMe" in drivers and not supported:  # NVMe's line shown (a paste cut before it says too little)
        note += (
            f": not available on this host, every storage path it lists is Unsupported ({', '.join(drivers[:4])}"
            f"{', ...' if len(drivers) > 4 else ''})"
            + (
                "; cuFile's compatibility mode is on (use_compat_mode true): its reads and writes go through host "
                "memory (POSIX I/O), slower but working"
                if said.get("properties.use_compat_mode") == "true"
                else ""
            )
            + "; an optional feature, no fault (NVIDIA GPUDirect Storage Installation and Troubleshooting Guide: "
            "the nvidia-fs module, a supported filesystem or NVMe driver)"
        )
    rig.problems.append(note)
    return rig
