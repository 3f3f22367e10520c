"""A Go service's own log, as ``kubectl logs`` prints it: structured JSON lines or Go's standard log lines.

Forms read (each as the library writes it):

- JSON, one object a line, with a level and a message: Go's log/slog JSON handler (``{"time":"...","level":"INFO",
  "msg":"...",...}``: NVSentinel's health monitors), logrus's JSON formatter (``{"level":"info","msg":"...",
  "time":"..."}``), zap's production encoder (``{"level":"info","ts":...,"msg":"..."}``);
- Go's standard library log (``log.Println``): ``2023/06/12 09:21:25 No devices found. Waiting indefinitely.`` (the
  NVIDIA Kubernetes device plugin before v0.15, which then moved to klog).

Such a log is the service's, no fault in itself: it is read as a log (the kernel log's reader takes any Xid or
driver line it quotes), and a line no other reader judges says nothing wrong. One line is a note: the NVIDIA device
plugin's ``No devices found. Waiting indefinitely.`` (cmd/nvidia-device-plugin/main.go): when it started, NVML
listed no GPU (the driver or the container runtime was not ready, as after a reboot); the plugin then waits and
advertises no GPU to the kubelet until it is restarted. That is no lost GPU: nothing here says a GPU failed.
It starts a paste's first output, or follows another output (not inside a log, not the next line of its own).
"""

from __future__ import annotations

import json
import re

from gpuadvisor.facts import HealthCheck, Rig
from gpuadvisor.importers import xid_relay
from gpuadvisor.importers.beyond import parse_kernel_log
from gpuadvisor.importers.section import Section, clean_lines, outside_log
from gpuadvisor.importers.smi_summary import GPU_DISCOVERY

WHAT = "a Go service's log (JSON lines, Go's log lines)"
# after an optional prefix of log.SetPrefix's (the NVIDIA Docker plugin 1.0's "nvidia-docker-plugin | ")
_GO_LOG = re.compile(r"^\s*(?:[\w.-]{1,60} \| )?\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})? \S")
_DISCOVERING = "Discovering GPU devices"  # nvidia-docker-plugin 1.0 (its main.go), before it lists each GPU
_JSON_START = re.compile(r'^\s*\{\s*"(?:time|ts|level|msg|severity)"\s*:')
_LEVEL_KEYS = ("level", "severity")
_MESSAGE_KEYS = ("msg", "message")
_LONGEST = 20000
_NO_DEVICES = "No devices found. Waiting indefinitely."  # the device plugin's words (cmd/nvidia-device-plugin)


def _json_line(line: str) -> bool:
    """One JSON object with a level and a message (slog, logrus, zap)."""
    if len(line) > _LONGEST or not _JSON_START.match(line):
        return False
    try:
        obj = json.loads(line)
    except ValueError:
        return False
    return isinstance(obj, dict) and any(k in obj for k in _LEVEL_KEYS) and any(k in obj for k in _MESSAGE_KEYS)


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A Go service's log line (JSON with a level and a message, or Go's log line), outside a log."""
    if current is not None and (current.kind in ("go-log", "daemon-log") or not outside_log(current)):
        return False
    if current is not None and current.kind == "xid-relay" and xid_relay.relays(lines[i]):
        return False  # the device plugin's next Xid or unhealthy line: the relayer's output goes on
    return bool(len(lines[i]) <= _LONGEST and _GO_LOG.match(lines[i])) or _json_line(lines[i])


def parse_go_log(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """The log as a log (the kernel log's reader judges any kernel line it quotes), and a note for each time the
    device plugin found no GPU when it started."""
    rig = parse_kernel_log(text, source, first_line)
    for k, line in enumerate(clean_lines(text)):
        if _NO_DEVICES in line and len(line) <= _LONGEST:
            rig.problems.append(
                f"{source}: line {first_line + k}: the NVIDIA device plugin found no GPU when it started "
                f"('{_NO_DEVICES}'): the driver or the container runtime was not ready then (as after a reboot); "
                "the plugin advertises no GPU until it restarts: restart its pod once nvidia-smi lists the GPUs (no "
                "GPU is said to have failed)"
            )
    _stuck_discovering(rig, clean_lines(text), source, first_line)
    return rig


def _stuck_discovering(rig: Rig, lines: list[str], source: str, first_line: int) -> None:
    """The NVIDIA Docker plugin's last line is 'Discovering GPU devices': it looked for the host's GPUs (NVML loaded)
    and the log lists none after it (a warning of the plugin's; with nvidia-smi's "No devices were found", no GPU
    answers on this GPU host)."""
    shown = [(k, x) for k, x in enumerate(lines) if x.strip()]
    if not shown or not shown[-1][1].rstrip().endswith(_DISCOVERING) or len(shown[-1][1]) > _LONGEST:
        return
    k, line = shown[-1]
    tool = line.split(" | ", 1)[0].strip() if " | " in line else "NVIDIA Docker plugin"
    rig.problems.append(
        f"{source}: line {first_line + k}: {tool}: '{_DISCOVERING}' is the log's last line: it looked for the "
        "host's GPUs and lists none after it"
    )
    check = HealthCheck(tool, GPU_DISCOVERY, "warn", f"'{_DISCOVERING}', no GPU listed after it", [], None, "")
    check.evidence = f"{source}:{first_line + k}"
    rig.node.health_checks = [*(rig.node.health_checks or []), check]
