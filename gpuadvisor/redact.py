"""--redact: strip what identifies a machine (hostname, GPU UUIDs and serials) before a scan is shared."""
from __future__ import annotations

from gpuadvisor.facts import Rig

REDACTED = "redacted"


def redact(rig: Rig) -> Rig:
    """Replace identifying facts in place; the reason is kept beside each, like any other missing fact."""
    if rig.host.hostname is not None:
        rig.host.missing("hostname", REDACTED)
    for g in rig.gpus:
        for f in ("uuid", "serial"):
            if getattr(g, f) is not None:
                g.missing(f, REDACTED)
    for key in list(rig.software.env):
        if key.startswith(("SLURM_", "MASTER_ADDR")):
            rig.software.env[key] = REDACTED
    return rig
