"""A kernel panic whose crash report is in the Mellanox adapter's driver: ``Kernel panic - not syncing: Fatal
exception`` (kernel/panic.c) after an oops whose faulting instruction (``RIP: 0010:esw_port_metadata_get+0x19/0x30
[mlx5_core]``) or, without one, whose call-trace frames are in mlx5_core/mlx5_ib: the adapter's driver crashed the
node (as posted, retyped from a console, in https://github.com/siderolabs/talos/issues/8624: a page fault in
esw_port_metadata_get while mlx5_core probed the adapter at boot). A panic elsewhere is not this sign."""

from __future__ import annotations

import re

ANCHOR = "Kernel panic - not syncing"
REPORT_CHARS = 6000  # the oops report above the panic line: its trace (some 30 frames), modules and registers
_RIP = re.compile(r"RIP: [0-9a-fA-F]{4}:(\S+?) \[(\w+)\]")
_FRAME = re.compile(r"(\w+)\+\S+ \[(mlx[45]_(?:core|ib))\]")


def mlx5_panic(line: str, text: str, end: int) -> tuple[str, None, str] | None:
    """("hca-driver-panic", None, what) of a panic line (ending at ``end`` in ``text``, -1: its last) whose report
    above it faults in, or runs through, the Mellanox driver; None for any other panic."""
    at = line.find(ANCHOR)
    if at < 0:
        return None
    start = (end if end >= 0 else len(text)) - len(line)
    report = text[max(0, start - REPORT_CHARS) : max(start, 0)]
    rips = _RIP.findall(report)
    if rips:
        where, module = rips[-1]
        if not module.startswith(("mlx4", "mlx5")):
            return None
    elif frame := _FRAME.search(report):
        where, module = frame.groups()
    else:
        return None
    return "hca-driver-panic", None, f"{module}: kernel panic in the adapter's driver ({where}): {line[at:].strip()}"
