"""NVIDIA's Xid catalog: for each Xid, the mnemonic, the description and the resolution buckets (xids.toml).

Source: NVIDIA, "Analyzing Xid Errors with the Xid Catalog" (docs.nvidia.com/deploy/xid-errors/
analyzing-xid-catalog.html), Table 1 "Xids", for Ampere and newer GPUs: "Resolution Bucket (Immediate Action)"
and "Resolution Bucket (Investigatory Action)". Only the Xids the catalog marks as used on A100/H100/B100/GB200
are listed; any other number is reported as not in this catalog.

``severity`` is gpuadvisor's reading of the immediate action: a GPU reset, a node reboot or a hardware workflow
is a hardware fault (fail); restarting the application with an application check is an application fault (info);
IGNORE is informational (info); restarting the application where the investigation is not the application's
(contact support; Xid 94's "reset the GPU when convenient") is a warning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuadvisor.catalog import _read

CATALOG_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
CATALOG = "NVIDIA Xid Catalog (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)"


@dataclass(frozen=True)
class Xid:
    code: int
    mnemonic: str
    description: str
    immediate: str  # Resolution Bucket (Immediate Action)
    investigatory: str  # Resolution Bucket (Investigatory Action)

    @property
    def severity(self) -> str:
        return bucket_severity(self.immediate, self.investigatory)

    @property
    def application(self) -> bool:
        """An application fault by the catalog: its investigation is the application's or CUDA's (Xid 13, 31, 11,
        37...). Xid 38 (a firmware watchdog, investigated by support) and Xid 45 (cleanup after another Xid,
        which is the cause) are not."""
        return self.severity == "info" and self.investigatory in APP_INVESTIGATIONS

    @property
    def firmware(self) -> bool:
        """The catalog describes it as a driver firmware error (Xid 37, 38: at driver load, not the job's)."""
        return "firmware" in self.description.lower()


HARDWARE_BUCKETS = (
    "RESET_GPU",
    "RESTART_BM",
    "WORKFLOW_XID_48",
    "WORKFLOW_NVLINK_ERR",
    "WORKFLOW_NVLINK5_ERR",
    "CHECK_MECHANICALS",
    "RESTART_VM",
    "UPDATE_SWFW",
)
APP_INVESTIGATIONS = ("CHECK_APP/CUDA", "WORKFLOW_XID_13", "WORKFLOW_XID_31", "INVESTIGATE_SW")


def bucket_severity(immediate: str, investigatory: str) -> str:
    if immediate in HARDWARE_BUCKETS:
        return "fail"
    if immediate == "RESTART_APP":
        return "info" if investigatory in APP_INVESTIGATIONS else "warn"
    return "info"  # IGNORE, WORKFLOW_XID_45 (cleanup after another Xid), XID_154 (judged from its text)


XIDS: dict[int, Xid] = {int(code): Xid(int(code), *row) for code, row in _read("xids.toml").items()}

# Xid 154 names the recovery the other Xids need: "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot
# Required)"; the catalog lists None, Drain P2P, Drain and Reset, GPU Reset Required, Node Reboot Required. The value
# is NVML's nvmlDeviceGetGpuRecoveryAction (nvml.h: 0 NONE, 1 GPU_RESET, 2 NODE_REBOOT, 3 DRAIN_P2P, 4 DRAIN_AND_RESET);
# drivers have printed its name otherwise ("0x1 (PF FLR)", "0x2 (OS Reboot)"), so the value decides, and the name
# where no value is printed.
RECOVERY_SEVERITY = {
    "none": "info",
    "drain p2p": "warn",
    "drain and reset": "fail",
    "gpu reset required": "fail",
    "node reboot required": "fail",
}
RECOVERY_BY_VALUE = {
    0: "none",
    1: "gpu reset required",
    2: "node reboot required",
    3: "drain p2p",
    4: "drain and reset",
}


def recovery_action(text: str) -> str | None:
    """The action an Xid 154 line changes to, as the line names it ("Node Reboot Required", "OS Reboot"), or None."""
    m = re.search(r"to\s+0x[0-9a-fA-F]+\s*\(([^)]*)\)", text)
    return m.group(1).strip() if m else None


def recovery_kind(text: str) -> str | None:
    """The catalog's name of the action an Xid 154 line changes to, by its value (0x2: node reboot required) or,
    without one, by its name; None where the line gives neither."""
    m = re.search(r"to\s+0x([0-9a-fA-F]+)\b", text)
    if m and int(m.group(1), 16) in RECOVERY_BY_VALUE:
        return RECOVERY_BY_VALUE[int(m.group(1), 16)]
    action = (recovery_action(text) or "").lower()
    return action if action in RECOVERY_SEVERITY else None


def cause_of(text: str) -> list[int]:
    """The Xids an Xid line names as its cause: "... caused by previous Xid 149" (Xid 45's cleanup)."""
    return sorted({int(c) for c in re.findall(r"previous Xid (\d+)", text)})


# Xids the catalog buckets as RESTART_APP / CHECK_APP but whose causes, in NVIDIA's Xid error listing
# (docs.nvidia.com/deploy/xid-errors/index.html, "Xid Error Listing"), include no user-application error: a warning
# (the GPU stays usable, the driver, bus or memory is to be checked), with what to check.
NOT_APPLICATION = {
    32: "the Xid listing's causes are a driver error, system memory corruption, a bus error, a thermal issue or "
    "frame-buffer corruption (not the application): update the driver, check the PCIe AER log and temperatures",
}


def event_severity(code: int, text: str) -> str:
    """Severity of one Xid by the catalog (Xid 154 by the recovery action it names; unknown numbers warn)."""
    if code == 154:
        kind = recovery_kind(text)
        return RECOVERY_SEVERITY[kind] if kind else "warn"
    x = XIDS.get(code)
    if x and x.immediate == "WORKFLOW_NVLINK5_ERR" and re.search(r"non-?fatal", text, re.I):
        return "warn"  # the catalog's NVLink5 subcode table: the non-fatal ones need no reset (IGNORE / Xid 154)
    if code in NOT_APPLICATION:
        return "warn"
    return x.severity if x else "warn"
