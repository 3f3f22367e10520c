"""The container runtime's GPU errors users paste from ``docker run --gpus`` and Kubernetes pods.

- ``docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].`` (newer
  Docker: ``could not select device driver with capabilities``; compose's ``driver: nvidia``: ``"nvidia"``): Docker
  has no device driver for ``--gpus`` (moby's daemon/devices.go: no registered driver offers the ``gpu``
  capability): the NVIDIA Container Toolkit is not installed, or not configured for this Docker (NVIDIA Container
  Toolkit install guide: ``nvidia-ctk runtime configure --runtime=docker``, then restart Docker).
- ``nvidia-container-cli: initialization error: nvml error: driver not loaded`` (often at the end of Docker's
  ``OCI runtime create failed ... error running hook #0`` line): the toolkit's hook asked NVML for the GPUs and
  NVML answered NVML_ERROR_DRIVER_NOT_LOADED (NVML API reference): the host's NVIDIA kernel module is not loaded.
- ``nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object
  file``: the toolkit found no NVML library of the driver on the host (the toolkit install guide's first
  prerequisite: the NVIDIA driver installed on the host; a Docker installed as a snap does not see the host's).
- ``Failed to initialize NVML: Unknown Error``, printed by nvidia-smi inside a container that could use its GPUs
  before: the container lost access to its device nodes after systemd reloaded its unit files (the NVIDIA Container
  Toolkit troubleshooting guide, "Containers losing access to GPUs": systemd managing the container's cgroups,
  ``systemctl daemon-reload``); the container must be recreated, and the toolkit's documented workaround applied.

- ``nvidia-container-cli: detection error: driver error: timed out`` (``initialization error``; newer toolkits
  ``driver rpc error: timed out``): the toolkit asks NVML through its driver service (libnvidia-container
  src/rpc.c: a 10 s RPC timeout) and NVML did not answer in time (src/error.c: the RPC's "Timed out"): the driver
  hangs on a GPU that no longer answers (a hung or fallen GPU: the kernel log's Xid), or, with persistence mode
  off, takes longer than that to initialise its GPUs (NVIDIA/nvidia-docker issues 644 and 723).

The first three and the fifth mean the node cannot start a GPU container: each is the container runtime's check that
did not pass, with its line (rule GA507 judges it: the driver cannot be reached from a container). The fourth is a
note with its line: one container lost its GPUs; a new one gets them.
"""

from __future__ import annotations

import re

from gpuadvisor.facts import HealthCheck, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines

WHAT = "container runtime GPU errors (docker --gpus, nvidia-container-cli, NVML in a container)"
TOOL = "container runtime"  # the HealthCheck's tool: rule GA507 judges its checks
_CLI = r"nvidia-container-cli(?:\.real)?: initialization error: "
# the five errors, in the order they are tried: what the line says, and the words that say it
_ERRORS = (
    ("no-driver", re.compile(r'could not select device driver (?:"([^"]*)" )?with capabilities: \[\[gpu\]\]')),
    ("not-loaded", re.compile(rf"{_CLI}nvml error: driver not loaded")),
    ("no-library", re.compile(rf"{_CLI}load library failed: (libnvidia-ml\.so\.1): cannot open shared object file")),
    (
        "timed-out",
        re.compile(
            r"nvidia-container-cli(?:\.real)?: (?:initialization|detection) error: driver (?:rpc )?error: timed out"
        ),
    ),
    ("nvml", re.compile(r"^\s*Failed to initialize NVML: Unknown Error\s*$")),
)
MEANS = {
    "no-driver": "Docker has no device driver for --gpus: the NVIDIA Container Toolkit is not installed or not "
    "configured for this Docker (nvidia-ctk runtime configure --runtime=docker, then restart Docker)",
    "not-loaded": "nvidia-container-cli's NVML says the NVIDIA driver is not loaded on the host "
    "(NVML_ERROR_DRIVER_NOT_LOADED): check lsmod | grep nvidia and nvidia-smi on the host",
    "no-library": "nvidia-container-cli cannot load the driver's NVML library (libnvidia-ml.so.1) on the host: the "
    "NVIDIA driver is not installed there, or this Docker (a snap) does not see the host's libraries",
    "timed-out": "nvidia-container-cli's driver service got no answer from NVML within its 10 s RPC timeout: the "
    "driver hangs on a GPU that does not answer (check the kernel log for Xid / fallen off the bus), or, with "
    "persistence mode off, initialises its GPUs too slowly",
    "nvml": "NVML could not initialise (Unknown Error); in a container that used its GPUs before, it lost access "
    "to their device nodes after a systemd reload of unit files (NVIDIA Container Toolkit troubleshooting): recreate "
    "the container and apply the toolkit's workaround",
}


def _kind(line: str) -> tuple[str, str] | None:
    """(what the line says, its words) for one of the five errors, None for another line."""
    for kind, pattern in _ERRORS:
        if m := pattern.search(line):
            return kind, m.group(0).strip()
    return None


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """One of the five errors, where no such output is being read."""
    return (current is None or current.kind != "container-errors") and _kind(lines[i]) is not None


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """Each error as a note with its line and its meaning; those that stop every GPU container also as the
    container runtime's failed check (its words, its line)."""
    rig = Rig()
    lines = clean_lines(text)
    checks: list[HealthCheck] = []
    for k, line in enumerate(lines):  # each message is read whole or not at all: a cut one does not match
        if said := _kind(line):
            rig.problems.append(f"{source}: line {first_line + k}: {said[1]!r}: {MEANS[said[0]]}")
            if said[0] != "nvml":
                checks.append(HealthCheck(TOOL, said[0], "fail", said[1], [], None, f"{source}:{first_line + k}"))
    if not rig.problems:
        raise ImportParseError(source, first_line, f"{WHAT}: none of its messages shown whole")
    if checks:
        rig.node.health_checks = checks
    return rig
