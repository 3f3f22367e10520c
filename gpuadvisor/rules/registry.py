"""The rule registry: a rule is one function with a stable code, a name, an area, a default severity and a
docstring in fixed sections that ``gpuadvisor explain`` prints.

Codes are never reused and the registry refuses a duplicate code or name at import time. The docstring of
every rule has a one-line summary, then these sections, each a heading line followed by indented text::

    What it checks
    Why it matters
    Threshold
    Source
    How to fix
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpuadvisor import severity
from gpuadvisor.rules.thresholds import THRESHOLDS, fmt

if TYPE_CHECKING:
    from gpuadvisor.facts import Finding, Rig
    from gpuadvisor.rules.engine import Context

AREAS = ("gpu", "pcie", "nvlink", "topology", "host", "software", "health", "bandwidth", "network", "storage")
SEVERITIES = severity.GATES  # what a rule may default to: info, warn, fail; findings may also be error / not-checked
SECTIONS = ("What it checks", "Why it matters", "Threshold", "Source", "How to fix")

CODE_RE = re.compile(r"^GA[1-9][0-9]{2}$")
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")

RuleFunc = Callable[["Rig", "Context"], Iterable["Finding"]]


class RuleDefinitionError(ValueError):
    """A rule that cannot be registered (bad code, duplicate, missing docstring section): a bug, not bad input."""


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    area: str
    severity: str
    func: RuleFunc
    summary: str
    sections: dict[str, str]
    thresholds: tuple[str, ...] = ()
    requires: tuple[str, ...] = field(default=())  # fact groups it reads, for docs: "gpus", "topology", ...

    def describe(self) -> str:
        """The full description ``gpuadvisor explain`` prints (plain text)."""
        lines = [
            f"{self.code} {self.name}",
            f"area: {self.area}    default severity: {self.severity}",
            "",
            self.summary,
        ]
        for title in SECTIONS:
            lines += ["", title, *("    " + ln if ln else "" for ln in self.sections[title].splitlines())]
        if self.thresholds:
            lines += ["", "Thresholds in force (override in a policy file, [thresholds] table)"]
            for name in self.thresholds:
                t = THRESHOLDS[name]
                lines += textwrap.wrap(
                    f"{name} = {fmt(t.value)} {t.unit}: {t.description}",
                    100,
                    initial_indent="    ",
                    subsequent_indent="        ",
                )
                lines += textwrap.wrap(
                    f"source: {t.source}",
                    100,
                    initial_indent="        ",
                    subsequent_indent="        ",
                    break_on_hyphens=False,
                )
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in ("code", "name", "area", "severity", "summary")} | {
            "sections": {k: self.sections[k] for k in SECTIONS},
            "thresholds": [
                {"name": n, "value": THRESHOLDS[n].value, "unit": THRESHOLDS[n].unit, "source": THRESHOLDS[n].source}
                for n in self.thresholds
            ],
        }


def parse_docstring(doc: str | None, where: str) -> tuple[str, dict[str, str]]:
    """Split a rule docstring into its summary line and its fixed sections; a missing section is an error."""
    if not doc or not doc.strip():
        raise RuleDefinitionError(f"{where}: rule has no docstring")
    text = inspect.cleandoc(doc)
    lines = text.splitlines()
    first = next((i for i, ln in enumerate(lines) if not ln.strip()), len(lines))  # the summary: a first paragraph
    summary = " ".join(ln.strip() for ln in lines[:first])
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in lines[first:]:
        stripped = line.strip()
        if stripped in SECTIONS and not line.startswith((" ", "\t")):
            if stripped in sections:
                raise RuleDefinitionError(f"{where}: docstring section '{stripped}' appears twice")
            current = stripped
            sections[current] = []
        elif current is not None:
            sections[current].append(line[4:] if line.startswith("    ") else line.strip())
        elif stripped:
            raise RuleDefinitionError(f"{where}: docstring text before the first section: {stripped[:40]!r}")
    missing = [s for s in SECTIONS if s not in sections]
    if missing:
        raise RuleDefinitionError(f"{where}: docstring lacks section(s) {', '.join(missing)}")
    out = {}
    for title, body in sections.items():
        content = "\n".join(body).strip("\n")
        if not content.strip():
            raise RuleDefinitionError(f"{where}: docstring section '{title}' is empty")
        out[title] = content
    return summary, out


class Registry:
    """Code -> Rule, in registration order; refuses duplicates."""

    def __init__(self) -> None:
        self._rules: dict[str, Rule] = {}
        self._names: dict[str, str] = {}

    def register(
        self,
        code: str,
        name: str,
        *,
        area: str,
        severity: str,
        thresholds: Iterable[str] = (),
        requires: Iterable[str] = (),
    ) -> Callable[[RuleFunc], RuleFunc]:
        if not CODE_RE.match(code):
            raise RuleDefinitionError(f"rule code {code!r} is not of the form GA101")
        if not NAME_RE.match(name):
            raise RuleDefinitionError(f"{code}: rule name {name!r} is not kebab-case")
        if area not in AREAS:
            raise RuleDefinitionError(f"{code}: area {area!r} is not one of {', '.join(AREAS)}")
        if severity not in SEVERITIES:
            raise RuleDefinitionError(f"{code}: default severity {severity!r} is not one of {', '.join(SEVERITIES)}")
        if code in self._rules:
            raise RuleDefinitionError(f"duplicate rule code {code} ({name} and {self._rules[code].name})")
        if name in self._names:
            raise RuleDefinitionError(f"duplicate rule name {name} ({code} and {self._names[name]})")
        thresholds = tuple(thresholds)
        unknown = [t for t in thresholds if t not in THRESHOLDS]
        if unknown:
            raise RuleDefinitionError(f"{code}: unknown threshold(s) {', '.join(unknown)}")

        def decorate(func: RuleFunc) -> RuleFunc:
            summary, sections = parse_docstring(func.__doc__, f"{code} {name}")
            self._rules[code] = Rule(code, name, area, severity, func, summary, sections, thresholds, tuple(requires))
            self._names[name] = code
            return func

        return decorate

    def all(self) -> list[Rule]:
        return sorted(self._rules.values(), key=lambda r: r.code)

    def get(self, code_or_name: str) -> Rule | None:
        key = code_or_name.strip()
        if key.upper() in self._rules:
            return self._rules[key.upper()]
        code = self._names.get(key.lower())
        return self._rules[code] if code else None

    def codes(self) -> list[str]:
        return sorted(self._rules)

    def __len__(self) -> int:
        return len(self._rules)


REGISTRY = Registry()
rule = REGISTRY.register
