"""A log of services, no kernel line in it: a syslog or journal excerpt of daemons (systemd, nvidia-persistenced,
bumblebeed ...), an IBM CSM daemon's log, a Slurm command's own error lines (``srun: error: cn125: task 0:
Segmentation fault (core dumped)``: a job's failure, its program's, not a GPU's), or slurmd's
log file (its node's configuration against its hardware: Slurm's matter, not a GPU's); AWS ParallelCluster's node
daemons' log (``2023-04-11 13:26:43,653 - [health_check_manager.py:main] - INFO - JobID 117 - ...``: its health
check manager's lines say which check ran, not the GPU's state); an Ansible play's task results (``TASK [stop system
services] ****`` then ``ok: [local] => (item=nvsm)``, ``failed: [local] (item=nvidia-fabricmanager) => ...``: what the
playbook asked of the host's services, a service it could not find being the playbook's list, not a fault).

Such a paste is a log the user gave: it is read as one (the kernel log's reader takes the kernel lines a later part
of it may hold), and a log with no GPU event in it says so ("no fault in the logs given"), never "not recognised".
It is the last row of :mod:`gpuadvisor.importers.registry`: a service's line that another row reads (the fabric
manager's ``nv-fabricmanager[N]:``, NHC's ``nhc[N]: Health check failed:``) is that row's, and only a paste's first
output starts here (inside another output its lines are that output's).
"""

from __future__ import annotations

import re

from gpuadvisor.facts import KernelEvent, Rig
from gpuadvisor.facts.beyond import SERVICE_LOG
from gpuadvisor.importers import error_codes, log_lines, memlock, xorg_log
from gpuadvisor.importers.beyond import FM_WORDS, LOG_LINE, parse_kernel_log
from gpuadvisor.importers.fragments import SYSLOG_TIME
from gpuadvisor.importers.nccl_log import shm_full, sigbus_at
from gpuadvisor.importers.section import Section
from gpuadvisor.probes.kmsg_unjudged import reports_failure, unjudged

# rsyslog's traditional and high-precision times, journalctl's short, short-iso and short-precise forms: a time, the
# host, then the service's tag ("systemd[1]:", "bumblebeed[29284]:", "CRON[42]:"; a tag without a pid, "sudo:")
_SYSLOG = re.compile(
    rf"^\s*(?:{SYSLOG_TIME}"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?)"
    r"\s+[\w.-]{1,63}\s+[\w.@/()-]{1,64}(?:\[\d{1,10}\])?:\s"
)
# systemd's boot console: a unit's status mark, then what it did ("[  OK  ] Started Login Service.", "[FAILED] Failed
# to start NVIDIA Persistence Daemon.", "[DEPEND] Dependency failed for ..."; systemd's core/job.c job_done messages)
_CONSOLE = re.compile(
    r"^\s*\[\s*(?:OK|FAILED|DEPEND|TIME|WARN|INFO)\s*\] (?:Started|Stopped|Finished|Reached target|Failed to start"
    r"|Dependency failed for|Mounted|Unmounted|Listening on|Created slice|Set up|Activated|Closed|Removed|Found device"
    r"|Timed out) \S"
)
# an NVIDIA unit that failed to start, on the console or in the journal ("systemd[1]: Failed to start
# nvidia-persistenced.service - NVIDIA Persistence Daemon.")
_UNIT_FAILED = re.compile(
    r"(?:^\s*\[\s*(?:FAILED|DEPEND)\s*\] |\bsystemd\[\d+\]: )(Failed to start|Dependency failed for) "
    r"((?=\S)[^\n]*?(?:NVIDIA|nvidia)[^\n]*?)\.?[ \t]*$",
    re.M,
)
# IBM CAST's CSM daemons: "[COMPUTE]2020-08-25 12:37:50.006451     csmenv::debug    | ..."
_CSM = re.compile(r"^\s*\[(?:COMPUTE|AGGREGATOR|MASTER|UTILITY)\]\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+\s+\w+::\w+\s+\|")
# AWS ParallelCluster's daemons (Python logging: "%(asctime)s - [%(name)s:%(funcName)s] - %(levelname)s - "; its
# health check scripts write the time with dashes: "2023-04-11 13-26-46,155 - [gpu_health_check.sh] - INFO - "; the
# time is taken off before the split when every line has one)
_PCLUSTER = re.compile(
    r"^\s*(?:\d{4}-\d\d-\d\d \d\d[:-]\d\d[:-]\d\d,\d{3} )?- \[[\w.:-]{1,120}\] - "
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - "
)
# an Ansible play's task header: "TASK [stop system services] *****" (and PLAY, RUNNING HANDLER)
_ANSIBLE = re.compile(r"^\s*(?:TASK|PLAY|RUNNING HANDLER) \[[^\]\n]{0,200}\] \*{3,}")
# Slurm's log.c prefixes a command's messages with its name and level ("srun: error: ", "sbatch: fatal: "); srun's
# task exit reads "srun: error: HOSTS: task N: SIGNAL[ (core dumped)]" or "...: Exited with exit code N"
_SLURM = re.compile(
    r"^\s*(?:srun|salloc|sbatch|sattach|sbcast|scancel|scontrol|sacct|squeue|sinfo|sstat): (?:error|fatal|warning): \S"
)
# slurmd's own log file (its log.c: "[ISO time] " then "error: " for an error; the time is taken off before the split
# when every line has one): a line at a level, or one of slurmd's own start and launch lines, opens it when one of
# slurmd's own lines is close below
_SLURMD_TIME = r"(?:\[\d{4}-\d\d-\d\dT[\d:.]+\]\s+)?"  # "[2024-03-05T10:11:12.345] ", when the log keeps it
_SLURMD_SIGN = re.compile(
    rf"^\s*{_SLURMD_TIME}(?:error: )?(?:Node configuration differs from hardware:"
    r"|slurmd version \S+ started|slurmd started on |Launching batch job \d+ for UID )"
)
_SLURMD_LINE = re.compile(rf"^\s*{_SLURMD_TIME}(?:error|fatal|warning|debug\d?|verbose): \S")

# a line another row reads (the fabric manager's, NHC's, the kernel's) close below: the service lines above it are
# that output's preamble (systemd's "Starting NVIDIA fabric manager service..."), not a log of their own
_OTHERS = re.compile("|".join(re.escape(w) for w in (*FM_WORDS, "Health check failed:", " kernel:")))
_WINDOW = 20  # lines looked at below (a fixed number: the split stays linear)


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A paste's first output is a service's log line (syslog's or the journal's, a CSM daemon's, a Slurm command's,
    any logging library's: :mod:`gpuadvisor.importers.log_lines`) or a line that reports a failure of the GPU stack
    (an exception, a tool's error: what GA828 lists), no line another row reads among the next few; or slurmd's log,
    one of slurmd's own lines among the next few."""
    if current is not None:
        return False
    if _SLURMD_SIGN.match(lines[i]) or _SLURMD_LINE.match(lines[i]):
        return any(_SLURMD_SIGN.match(x) for x in lines[i : i + _WINDOW])
    known = any(p.match(lines[i]) for p in (_SYSLOG, _CSM, _SLURM, _CONSOLE, _PCLUSTER, _ANSIBLE))
    known = known or xorg_log.starts(lines[i])
    if not known and not log_lines.starts_log(lines, i) and not reports_failure(lines[i]) and not sigbus_at(lines, i):
        return False
    return not any(_OTHERS.search(x) for x in lines[i : i + _WINDOW])


def parse(text: str, source: str, first: int) -> Rig:
    """A kernel or service log: its kernel lines and signs, each NVIDIA unit systemd says failed to start (on the
    boot console or in the journal, among the kernel's lines or alone), and the locked-memory limit an RDMA library's
    message in it states (:mod:`gpuadvisor.importers.memlock`)."""
    rig = parse_kernel_log(text, source, first, unjudged_too=False)
    events = rig.kernel.events if rig.kernel.events is not None else []
    if "Failed to start" in text or "Dependency failed for" in text:  # (a substring search first: most logs hold none)
        for m in _UNIT_FAILED.finditer(text):
            unit = m.group(2).strip()
            said = f"systemd: {m.group(1)} {unit}"
            line = first + text.count("\n", 0, m.start())
            events.append(KernelEvent(kind="nvidia-unit-failed", text=said[:300], line=line))
    events += xorg_log.events(text, first)  # X's NVIDIA driver: a GPU it could not use
    judged = {e.line for e in events if e.line is not None} | memlock.add(rig, text, source, first)  # GA813's
    events += unjudged(text, first, judged)
    events += error_codes.coded_lines(text, first, {e.line for e in events if e.line is not None})  # a code, no word
    rig.kernel.events = events
    if "Bus error" in text:  # a bus error in NCCL's thread: its /dev/shm segment (GA812)
        rig.network.nccl_shm_full = shm_full(text.splitlines())
    if not _kernel_lines(text):  # the service's or program's own log: its events are its own lines
        rig.kernel.source = SERVICE_LOG
    return rig


def _kernel_lines(text: str) -> bool:
    """The log holds the kernel's lines (dmesg's, the journal's or syslog's "kernel:", the driver's "NVRM:")."""
    return "kernel:" in text or "NVRM" in text or any(LOG_LINE.match(x) for x in text.splitlines())
