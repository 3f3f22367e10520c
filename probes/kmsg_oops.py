"""A kernel oops whose report is cut above its header, or whose header is of a form the sign reader does not take
(``Oops: 0000 [#1] SMP``, ``kernel BUG at ...``, arm64's ``Unable to handle kernel paging request``), with its code
address in an NVIDIA module: ``RIP: 0010:[<ffffffffa037aaee>]  [<ffffffffa037aaee>] _nv003083rm+0x87/0xad [nvidia]``
under ``Pid: 6510, comm: Xorg Tainted: P`` (as posted in https://github.com/MrMEEE/bumblebee-Old-and-abbandoned/issues/
160): the driver faulted in the kernel, whatever the header showed; the GPU and the module are unusable until a
reboot (the kernel's oops report, arch/x86/kernel/dumpstack.c; arm64's "pc : %pS", arch/arm64/kernel/process.c)."""

from __future__ import annotations

import re

# the oops headers the sign reader reads (oops_in_driver), the report's lines down to its call trace's first frames
OOPS = re.compile(
    r"BUG: unable to handle (?:kernel|page fault)|BUG: kernel NULL pointer|(?<!traps: )\bgeneral protection fault"
)
OOPS_LINES = 40
REPRINT_LINES = 200  # an oops report's lines down to its "end trace" (registers, modules, some 30 frames)

# an oops report's code address in an NVIDIA module: x86-64's "RIP: 0010:[<ffffffffa037aaee>]  [<ffffffffa037aaee>]
# _nv003083rm+0x87/0xad [nvidia]" (2.6 kernels) or "RIP: 0010:nvidia_vma_access+0x1b/0x350 [nvidia]", x86-64's "IP:
# [<...>] ..." (3.x), i386's "EIP: [<f8b1c2d3>] ... [nvidia]" and "EIP is at ...", arm64's "pc : ... [nvidia]" (older:
# "PC is at ...")
_CODE_AT = re.compile(
    r"(?:\b[RE]?IP: |EIP is at |\bpc : |\bPC is at )[^\n]*?"
    r"((?:[\w.]+\+0x[0-9a-f]+/0x[0-9a-f]+ \[nvidia\w*\])|\b_nv\d{4,}rm\+0x[0-9a-f]+)"
)
# not an oops: a kernel warning's header (kernel/panic.c __warn: "WARNING: CPU: 0 PID: 290 at PATH:LINE ...", older
# "WARNING: at PATH:LINE ..."), whose register dump prints the same RIP line; or a Code line whose trapping instruction
# is the ud2/ud1 of BUG() and WARN() (arch/x86/include/asm/bug.h: "<0f> 0b", "<67> 48 0f b9"), where only the header
# the paste cut off says which
_WARNING = re.compile(r"\bWARNING: (?:CPU: \d+ PID: \d+ at|at) ")
# not an oops either: a watchdog's report of a CPU stuck (kernel/watchdog.c "watchdog: BUG: soft lockup - CPU#12 stuck
# for 22s!", "Watchdog detected hard LOCKUP on cpu 3"; kernel/rcu/tree_stall.h "rcu: INFO: rcu_sched self-detected
# stall on CPU"), whose register dump prints the RIP where the CPU was stuck: the driver-hung sign reads those
_STALL = re.compile(r"\bsoft lockup - CPU#|\bhard LOCKUP\b|\bself-detected stall on CPU|\bdetected stalls on CPUs")
_TRAP = re.compile(r"\bCode: [^\n]*<(?:0f> (?:0b|b9)|67> 48 0f b9|48> 0f b9)")
# the task the oops ran for: "CPU: 5 PID: 9577 Comm: nvidia-smi ..." or 2.6 kernels' "Pid: 6510, comm: Xorg Tainted: P"
_TASK = re.compile(r"\b[Cc]omm: (\S+)")


def oops_at_driver(line: str, text: str, end: int) -> str | None:
    """The message of a kernel oops whose code address (``line``: its RIP, EIP or pc) is in an NVIDIA module, where
    no oops header the reader knows ("BUG: unable to handle ...", "general protection fault") sits in the lines above
    within its report (the paste cut above it, or a header of another form: "Oops:", "kernel BUG at", arm64's
    "Unable to handle kernel ..."): the driver faulted in the kernel, whatever the header said."""
    m = _CODE_AT.search(line)
    if m is None:
        return None
    start = (end if end >= 0 else len(text)) - len(line)
    above = text[max(0, start - 600 * OOPS_LINES) : max(start, 0)].split("\n")[-REPRINT_LINES:]
    # the kernel prints the code address again after its "---[ end trace ]---": the same oops as the report above
    reprint = any("end trace" in x for x in above[-3:])
    for x in reversed(above if reprint else above[-OOPS_LINES:]):
        if "end trace" in x and not reprint:
            break
        if OOPS.search(x) or _WARNING.search(x) or _STALL.search(x):
            return None  # its header's report holds this address (oops_in_driver reads it), or a warning's or stall's
        if reprint and (same := _CODE_AT.search(x)) and same.group(1) == m.group(1) and "end trace" not in x:
            return None  # the report above, its header cut, gave this address first
    if end >= 0 and any(_TRAP.search(x) for x in text[end + 1 : end + 2000].split("\n")[:2]):
        return None  # BUG() or WARN(): the header cut off says which
    task = next((t.group(1) for x in reversed(above[-OOPS_LINES:]) if (t := _TASK.search(x))), None)
    reg = re.search(r"\b(?:[RE]?IP|pc|PC)\b", line[: m.end(1)])
    of = f" (task {task})" if task else ""
    return f"kernel oops in the NVIDIA driver{of}: {reg.group(0) if reg else 'code'} at {m.group(1)}"
