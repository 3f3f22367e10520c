"""What the verbs library (libibverbs, rdma-core) sees of the node's RDMA devices: its own warnings when it cannot
use one, ``ibv_devices``' table, and ``ls`` of ``/dev/infiniband`` and ``/sys/class/infiniband``.

libibverbs finds the kernel's verbs devices under ``/sys/class/infiniband_verbs`` (``uverbs0`` ...), skips those
whose ``/dev/infiniband/uverbsN`` node it cannot open (a container is given only some), and hands each of the others
to a provider, the user-space driver of its adapter (``libmlx5``, ``libbnxt_re`` ...: Debian and Ubuntu's
``ibverbs-providers``, part of ``rdma-core`` elsewhere) that ``/etc/libibverbs.d/*.driver`` names. Its messages
(rdma-core ``libibverbs/init.c``), each read with its line:

- ``libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbs0``: the
  kernel has the device, no provider claims it: the provider package is not installed;
- ``libibverbs: Warning: couldn't open config directory '/etc/libibverbs.d'.``: no provider is configured at all;
- ``libibverbs: Warning: couldn't load driver 'librxe-rdmav2.so': ...``: a provider configured is missing (alone, a
  leftover config file of one not in use);
- ``libibverbs: Warning: Driver bnxt_re does not support the kernel ABI of 6 (supports 1 to 1) for device ...``: the
  provider is older (or newer) than the kernel's driver (a container image's rdma-core against the host's kernel);
- ``libibverbs: Fatal: kernel ABI version N doesn't match library version M.``: the library against the kernel;
- ``No IB devices found`` (ibv_devinfo), perftest's `` Did not detect devices`` (ib_write_bw and the other tests,
  over ``If device exists, check if driver is up``) or ``Failed to get IB devices list: ...``, and an
  ``ibv_devices`` table without a row: no verbs device is usable here.

Each is kept as libibverbs' failed check (its words, its line; rule GA829 judges them: no device usable, and why);
the RDMA ports are then unknown with that reason. ``ibv_devices``' rows (``erdma_0  02163efffe1041ea``) are the verbs
devices this host or container can use, each read as a device whose ports' state the table does not print; the
``ls`` listings are notes (which ``uverbs`` nodes are mounted, which devices the kernel has).
"""

from __future__ import annotations

import re

from gpuadvisor.facts import HealthCheck, RdmaPort, Rig
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import Section, clean_lines, outside_log, shell_prompt

WHAT = (
    "libibverbs device discovery (its warnings, ibv_devinfo's 'No IB devices found', ibv_devices, ls /dev/infiniband)"
)
TOOL = "libibverbs"  # the HealthCheck's tool: rule GA829 judges its checks
_PFX = r"libibverbs: (?:Warning|Fatal): "
MESSAGES = {
    "no-provider": re.compile(
        _PFX + r"no userspace device-specific driver found for (/sys/class/infiniband_verbs/\S+)"
    ),
    "no-config": re.compile(_PFX + r"couldn't open config directory '([^']{1,200})'"),
    "load-failed": re.compile(_PFX + r"couldn't load driver '([^']{1,200})'(?::\s*\S.{0,200})?"),
    "abi-mismatch": re.compile(
        _PFX + r"Driver (\S+) does not support the kernel ABI of (\d+) \(supports (\d+) to (\d+)\) for device (\S+)"
    ),
    "kernel-abi": re.compile(_PFX + r"kernel ABI version (\d+) doesn't match library version (\d+)"),
    # ibv_devinfo's words, and perftest's (ib_write_bw ...: ctx_find_dev, when ibv_get_device_list lists none)
    "no-devices": re.compile(
        r"^\s*(?:No IB devices found|Did not detect devices|Failed to get IB devices list: .{1,80}?)\s*$"
    ),
}
_PER_DEVICE = {"no-provider": 1, "abi-mismatch": 5}  # the group naming the device in the messages said per device
_TABLE = re.compile(r"^\s*device\s+node GUID\s*$")  # ibv_devices' header, over a dashes line
_ROW = re.compile(r"^\s*([\w.-]{1,64})\s+([0-9a-fA-F]{16})\s*$")
_DASHES = re.compile(r"^\s*-{4,}\s+-{4,}\s*$")
_LS = shell_prompt(bare="$#", then=r"\s+ls(?:\s+-\w+)*\s+(/dev/infiniband|/sys/class/infiniband(?:_verbs)?)/?\s*$")
_ANY_PROMPT = shell_prompt(bare="$#")
_DEV_NODE = re.compile(r"(?:uverbs|umad|issm|ucm)\d{1,4}|rdma_cm")


def _said(line: str) -> tuple[str, re.Match[str]] | None:
    for kind, pattern in MESSAGES.items():
        if m := pattern.search(line):
            return kind, m
    return None


def starts(lines: list[str], i: int, current: Section | None) -> bool:
    """A libibverbs message, ibv_devinfo's ``No IB devices found``, ibv_devices' header, or a prompt's ``ls`` of
    ``/dev/infiniband`` or ``/sys/class/infiniband``, outside a log and another such output."""
    if (current is not None and current.kind == "verbs") or not outside_log(current):
        return False
    line = lines[i]
    if _TABLE.match(line):
        return i + 1 < len(lines) and bool(_DASHES.match(lines[i + 1]))
    return bool(_LS.match(line)) or _said(line) is not None


def _listings(lines: list[str]) -> dict[str, list[str]]:
    """Each ``ls`` of a device directory and the names it printed (up to a blank line or the next prompt)."""
    out: dict[str, list[str]] = {}
    where: str | None = None
    for line in lines:
        if m := _LS.match(line):
            where = m.group(1)
            out[where] = []
        elif where is not None and line.strip() and not _ANY_PROMPT.match(line):
            out[where].extend(line.split())
        else:
            where = None
    return out


def _table(lines: list[str]) -> list[tuple[str, str]] | None:
    """ibv_devices' rows (device, node GUID); None when its table is not shown."""
    k = next((k for k, line in enumerate(lines) if _TABLE.match(line)), None)
    if k is None:
        return None
    rows = []
    for line in lines[k + 2 :]:
        if not (m := _ROW.match(line)):
            break
        rows.append((m.group(1), m.group(2).lower()))
    return rows


def device_only(
    name: str,
    why: str = "ibv_devices lists devices, not their ports",
    unprinted: str = "ibv_devices prints only the device's name and node GUID",
) -> RdmaPort:
    """A device a lister names without its ports: its port number and state unknown, for ``why``."""
    port = RdmaPort(device=name)
    port.missing("port", why)
    for field in ("state", "phys_state", "rate_gbps", "link_layer", "firmware", "ca_type"):
        port.missing(field, unprinted)
    return port


def parse(text: str, source: str = "<text>", first_line: int = 1) -> Rig:
    """libibverbs' failed checks, the devices ibv_devices lists, and what ``ls`` shows of the device nodes."""
    rig = Rig()
    lines = clean_lines(text)
    checks: dict[str, HealthCheck] = {}
    for k, line in enumerate(lines):
        if said := _said(line):
            kind, m = said
            if kind not in checks:
                checks[kind] = HealthCheck(
                    TOOL, kind, "warn", m.group(0).strip(), [], None, f"{source}:{first_line + k}"
                )
            elif kind in _PER_DEVICE and (device := m.group(_PER_DEVICE[kind])) not in checks[kind].detail:
                checks[kind].detail += f"; also {device}"  # each device it could not use
    rows = _table(lines)
    if rows == [] and "no-devices" not in checks:
        at = next(k for k, line in enumerate(lines) if _TABLE.match(line))
        checks["no-devices"] = HealthCheck(
            TOOL, "no-devices", "warn", "ibv_devices lists no device", [], None, f"{source}:{first_line + at}"
        )
    if rows:
        rig.network.rdma_ports = [device_only(name) for name, _ in rows]
        rig.origins["network.rdma_ports"] = f"{source}:{first_line}"
        listed = ", ".join(f"{name} (node GUID {guid})" for name, guid in rows)
        rig.problems.append(f"{source}: line {first_line}: ibv_devices: the verbs devices usable here: {listed}")
    for where, names in _listings(lines).items():
        rig.problems.append(f"{source}: line {first_line}: {_listing_note(where, names)}")
    if checks:
        rig.node.health_checks = list(checks.values())
    if not checks and not rows and not rig.problems:
        raise ImportParseError(source, first_line, f"{WHAT}: none of its messages or rows shown whole")
    return rig


def _listing_note(where: str, names: list[str]) -> str:
    if where == "/dev/infiniband":
        uverbs = [n for n in names if n.startswith("uverbs")]
        others = [n for n in names if _DEV_NODE.fullmatch(n) and not n.startswith("uverbs")]
        return (
            f"/dev/infiniband holds {len(uverbs)} verbs device node(s) ({', '.join(uverbs) or 'none'})"
            + (f" and {', '.join(others)}" if others else "")
            + ": verbs can open only the devices whose uverbs node is here (in a container, those it was given)"
        )
    return f"{where} lists {len(names)} RDMA device(s) of the kernel: {', '.join(names) or 'none'}"


def finish(rig: Rig) -> None:
    """With no port lister among the outputs, the RDMA ports are unknown for the reason libibverbs gave."""
    said = [hc for hc in rig.node.health_checks or [] if hc.tool == TOOL]
    if rig.network.rdma_ports is None and said:
        rig.network.unavailable["rdma_ports"] = "libibverbs could not use an RDMA device: " + "; ".join(
            f"{hc.detail[:160]} ({hc.evidence})" for hc in said
        )
