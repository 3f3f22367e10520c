"""The row type of the importer registry (:mod:`gpuadvisor.importers.registry`): what one output's row gives (how
it is recognised, parsed and merged), and the two ways a module's parser becomes a row's parser."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpuadvisor.facts import Rig
from gpuadvisor.importers.merger import Merger
from gpuadvisor.importers.part import Part
from gpuadvisor.importers.section import Detector, Section

Parser = Callable[[Section, str, str], Part]  # (the output, the file's name as given, its base name) -> Part
MergeHook = Callable[[Merger, Part], None]
GPU, BEYOND, STORAGE = "GPU", "beyond the GPU", "storage"


@dataclass(frozen=True)
class Format:
    kind: str
    name: str  # what the user reads
    group: str  # GPU, BEYOND or STORAGE: how help and README group the rows
    family: str  # the command, as the lists name it ("nvidia-smi")
    variant: str  # its form within the family ("-q"; "" when the family has one)
    starts_with: str  # what its first line looks like, for the README
    starts: Detector | None  # None: reached through another row's settle
    parse: Parser
    merge: MergeHook
    trust: int
    settle: Callable[[Section], str] | None = None  # the kind of a section once read whole (topo -m or -p2p)
    ends: Callable[[str], bool] | None = None  # it runs to this line, and nothing else starts inside it
    after: MergeHook | None = None  # once every output's GPUs are merged (matrices in the Rig's GPU order)
    finish: Callable[[Rig], None] | None = None  # once, after the merge, when an output of the kind was read
    extras: Callable[[Rig, str], None] | None = None  # facts beyond the GPU its text holds too


def reads(parse: Callable[[str, str, int], Rig]) -> Parser:
    """A parser of ``(text, source, first line)`` as a row's parser."""

    def parser(section: Section, source: str, filename: str) -> Part:
        return Part(section.kind, source, section.start, parse(section.text, source, section.start))

    return parser


def reads_under(parse: Callable[..., Rig]) -> Parser:
    """A parser of ``(text, source, first line, context=lines above it)`` as a row's parser: the lines above the
    output (its command line) tell it what was asked."""

    def parser(section: Section, source: str, filename: str) -> Part:
        rig = parse(section.text, source, section.start, context=section.context)
        return Part(section.kind, source, section.start, rig)

    return parser


add = Merger.add


def beyond_row(
    kind: str,
    name: str,
    starts_with: str,
    starts: Detector,
    parse: Callable[[str, str, int], Rig],
    trust: int,
    family: str | None = None,
    merge: MergeHook = add,
) -> Format:
    """A row of an output beyond the GPU: one form per command (its family its name unless given), read by
    ``parse(text, source, first line)`` and merged as every output is (unless ``merge`` is given)."""
    return Format(kind, name, BEYOND, family or name, "", starts_with, starts, reads(parse), merge, trust)


def gpu_row(
    kind: str,
    name: str,
    family: str,
    variant: str,
    starts_with: str,
    starts: Detector | None,
    parse: Callable[[str, str, int], Rig],
    trust: int,
    *,
    settle: Callable[[Section], str] | None = None,
    ends: Callable[[str], bool] | None = None,
    after: MergeHook | None = None,
    finish: Callable[[Rig], None] | None = None,
    extras: Callable[[Rig, str], None] | None = None,
) -> Format:
    """A row of a GPU output read by ``parse(text, source, first line)`` and merged as every output is, with the
    hooks of :class:`Format` it is given."""
    hooks = (settle, ends, after, finish, extras)
    return Format(kind, name, GPU, family, variant, starts_with, starts, reads(parse), add, trust, *hooks)
