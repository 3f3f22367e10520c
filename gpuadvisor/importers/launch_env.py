"""The NCCL variables a launch command line above an output sets: ``NCCL_P2P_DISABLE=1 ./all_reduce_perf``,
``export NCCL_IB_HCA=mlx5_0``, ``mpirun -x NCCL_P2P_DISABLE=1 ...`` (Open MPI's ``-x NAME=VALUE``, "export an
environment variable", https://docs.open-mpi.org/en/main/man-openmpi/man1/mpirun.1.html), ``mpiexec -genv NAME
VALUE`` (MPICH, Intel MPI), ``docker run -e NAME=VALUE``, ``srun --export=ALL,NAME=VALUE``.

Only a command line is read, never prose: the line (after a shell prompt) starts with ``export``, ``env``, an
assignment followed by a command, or a launcher. Only ``NCCL_*`` names are kept: what NCCL's own log reports as
"set by environment", so the rules judge them the same way (a CUDA_VISIBLE_DEVICES on the command line renumbers
the devices the output shows: not a fact about this machine's GPUs)."""

from __future__ import annotations

import re
import shlex

from gpuadvisor.facts import Rig
from gpuadvisor.importers.section import shell_prompt

# a shell prompt: "$ ", "# ", "user@host:~$ ", "[root@n1 ~]# ", "(conda) $ "
_PROMPT = shell_prompt(marks="$%#>", bare="$%#>", then=r"\s+")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_MPI = {"mpirun", "mpiexec", "mpiexec.hydra", "orterun", "prterun"}
_CONTAINER = {"docker", "podman", "nerdctl", "enroot"}


def _tokens(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=False)
    except ValueError:  # an unclosed quote (the paste cut inside it)
        return line.split()


def _options(tokens: list[str]) -> list[tuple[str, str]]:
    """``NAME=VALUE`` pairs a launcher or container command passes to what it runs."""
    out: list[tuple[str, str]] = []
    for j, tok in enumerate(tokens):
        nxt = tokens[j + 1] if j + 1 < len(tokens) else ""
        pair = nxt if tok in ("-x", "-e", "--env") else tok[6:] if tok.startswith("--env=") else ""
        if m := _ASSIGN.match(pair):
            out.append((m.group(1), m.group(2)))
        elif tok in ("-genv", "-env") and nxt:
            m = _ASSIGN.match(nxt)
            out.append((m.group(1), m.group(2)) if m else (nxt, tokens[j + 2] if j + 2 < len(tokens) else ""))
        elif tok.startswith("--export="):
            out += [(m.group(1), m.group(2)) for x in tok[9:].split(",") if (m := _ASSIGN.match(x))]
    return out


def _line_env(line: str) -> list[tuple[str, str]]:
    tokens = _tokens(_PROMPT.sub("", line, count=1))
    if not tokens:
        return []
    if tokens[0] == "export":
        return [(m.group(1), m.group(2)) for t in tokens[1:] if (m := _ASSIGN.match(t))]
    lead: list[tuple[str, str]] = []
    k = 1 if tokens[0] in ("env", "sudo") else 0
    while k < len(tokens) and (m := _ASSIGN.match(tokens[k])):
        lead.append((m.group(1), m.group(2)))
        k += 1
    if k >= len(tokens) or (not lead and tokens[k].rsplit("/", 1)[-1] not in _MPI | _CONTAINER | {"srun"}):
        return []  # assignments alone (an env listing), or not a command this reads
    return lead + _options(tokens[k:])


def command_env(lines: list[str], first_line: int) -> dict[str, tuple[str, int]]:
    """``{NAME: (VALUE, line)}`` of the NCCL variables the command lines in ``lines`` set (the last one wins);
    ``first_line``: the number of ``lines[0]``. A line ending in ``\\`` continues on the next."""
    env: dict[str, tuple[str, int]] = {}
    k = 0
    while k < len(lines):
        start, line = k, lines[k].rstrip()
        while line.endswith("\\") and k + 1 < len(lines):
            k += 1
            line = line[:-1] + " " + lines[k].strip()
        for name, value in _line_env(line):
            if name.startswith("NCCL_"):
                env[name] = (value, first_line + start)
        k += 1
    return env


def add_command_env(rig: Rig, context: list[str], first_line: int, source: str) -> None:
    """The NCCL variables of the command lines above an output, into its scan's environment (what the output
    itself reports, e.g. NCCL's "set by environment" lines, is kept)."""
    env = command_env(context, first_line)
    for name, (value, line) in env.items():
        rig.software.env.setdefault(name, value)
        rig.origins.setdefault("software.env", f"{source}:{line}")
