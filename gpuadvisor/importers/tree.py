"""One small tree for both ``nvidia-smi -q`` text (indented "Key : Value") and ``-q -x`` XML, with line numbers."""

from __future__ import annotations

import re
import xml.parsers.expat
from collections.abc import Iterator
from dataclasses import dataclass, field

from gpuadvisor.facts import ELIDED
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.section import clean_lines
from gpuadvisor.importers.values import is_elision


@dataclass
class Node:
    key: str
    value: str | None = None
    line: int = 0
    children: list[Node] = field(default_factory=list)
    attrs: dict[str, str] = field(default_factory=dict)
    # Set on a line a paste left out ("[...]", "...", "<snip>": a node of its own) or on a value the file ends
    # inside: the reason ("elided in the paste (line 9)"), for the facts it hides.
    elided: str | None = None

    def elision(self) -> str | None:
        """The reason of the first elision inside this node (itself included), or None if it shows everything."""
        if self.elided:
            return self.elided
        for n in self.walk():
            if n.elided:
                return n.elided
        return None

    def child(self, key: str) -> Node | None:
        k = key.lower()
        for c in self.children:
            if c.key.lower() == k:
                return c
        return None

    def find(self, *path: str) -> Node | None:
        node: Node | None = self
        for key in path:
            node = node.child(key) if node is not None else None
        return node

    def first(self, *paths: tuple[str, ...]) -> Node | None:
        """The first of several paths present (newer and older driver names for one fact)."""
        for p in paths:
            n = self.find(*p)
            if n is not None:
                return n
        return None

    def walk(self) -> Iterator[Node]:
        """Every node below, depth first in document order; without recursion (a paste of thousands of unclosed
        elements nests as deep)."""
        stack = self.children[::-1]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(node.children[::-1])


# Values of nvidia-smi -q that no longer value starts with: on a line where the paste may be cut, shown whole
# ("No" is not one: "Not Active" starts with it; a number may have lost digits)
WHOLE_WORDS = frozenset({"Yes", "Enabled", "Disabled", "Active", "Not Active", "N/A", "Supported", "Not Supported"})
_KV = re.compile(r"^(?P<key>\S.*?)\s+:(?:\s(?P<value>.*))?$")


def text_tree(text: str, first_line: int = 1) -> Node:
    """The ``nvidia-smi -q`` text as a tree: a key with a deeper-indented block below it has children."""
    root = Node(key="", line=first_line)
    stack: list[tuple[int, Node]] = [(-1, root)]
    lines = clean_lines(text)
    cut = not text.endswith(("\n", "\r")) and bool(lines) and bool(lines[-1].strip())
    for k, raw in enumerate(lines):
        line = raw.expandtabs(4).rstrip()
        if not line.strip() or set(line.strip()) <= set("=-+`"):  # rules, and a markdown fence (or what a cut left)
            continue
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        m = _KV.match(body)
        node = (
            Node(key=m.group("key").strip(), value=(m.group("value") or "").strip(), line=first_line + k)
            if m
            else Node(key=body, value=None, line=first_line + k)
        )
        if is_elision(body) or node.value is not None and is_elision(node.value):
            node.elided = f"{ELIDED} (line {first_line + k})"
        elif cut and k == len(lines) - 1 and node.value not in WHOLE_WORDS:
            node.elided = f"{ELIDED} (line {first_line + k} is cut mid-line)"
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1] if stack else root
        parent.children.append(node)
        stack.append((indent, node))
    return root


class _Builder:
    def __init__(self, parser: xml.parsers.expat.XMLParserType, first_line: int) -> None:
        self.parser = parser
        self.first_line = first_line
        self.root: Node | None = None
        self.stack: list[Node] = []
        self.text: list[list[str]] = []
        self.elisions: list[int] = []  # per open element: the line of an elision in its text, or 0

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        node = Node(key=tag, line=self.first_line + self.parser.CurrentLineNumber - 1, attrs=dict(attrs))
        if self.stack:
            self.stack[-1].children.append(node)
        elif self.root is None:
            self.root = node
        self.stack.append(node)
        self.text.append([])
        self.elisions.append(0)

    def end(self, tag: str) -> None:
        node = self.stack.pop()
        value = "".join(self.text.pop()).strip()
        at = self.elisions.pop()
        # A leaf's text is its value ("" when empty); an element with children has a value only if it has text.
        node.value = value if (value or not node.children) else None
        if at and node.children:
            node.children.append(Node(key="...", line=at, elided=f"{ELIDED} (line {at})"))
        elif at:
            node.elided = f"{ELIDED} (line {at})"

    def data(self, s: str) -> None:
        if self.text:
            self.text[-1].append(s)
            if s.strip() and is_elision(s.strip()):
                self.elisions[-1] = self.first_line + self.parser.CurrentLineNumber - 1


def _no_entities(*_args: object) -> None:
    raise ValueError("entity declarations are not allowed in nvidia-smi XML")


def xml_tree(text: str, source: str, first_line: int = 1) -> tuple[Node, str | None]:
    """The XML as a tree, and (for a file cut short) why parsing stopped; what was read before stays."""
    parser = xml.parsers.expat.ParserCreate()
    b = _Builder(parser, first_line)
    parser.StartElementHandler = b.start
    parser.EndElementHandler = b.end
    parser.CharacterDataHandler = b.data
    parser.EntityDeclHandler = _no_entities  # no "billion laughs": nvidia-smi never declares entities
    stopped: str | None = None
    try:
        parser.Parse(text.lstrip("\ufeff"), True)
    except xml.parsers.expat.ExpatError as e:
        if b.root is None:
            raise ImportParseError(
                source, first_line + e.lineno - 1, f"not readable as XML ({xml.parsers.expat.ErrorString(e.code)})"
            ) from None
        stopped = f"line {first_line + e.lineno - 1}: {xml.parsers.expat.ErrorString(e.code)}"
        why = f"{ELIDED} (the XML stops at line {first_line + e.lineno - 1})"
        innermost = True
        while b.stack:  # close what was open, keeping the text read so far; what it did not reach is not shown
            node = b.stack[-1]
            b.end(node.key)
            if innermost and not node.children:
                node.elided = why  # the value the file stops inside may be cut short
            else:
                node.children.append(Node(key="...", line=first_line + e.lineno - 1, elided=why))
            innermost = False
    except ValueError as e:
        raise ImportParseError(source, first_line + parser.CurrentLineNumber - 1, str(e)) from None
    if b.root is None:
        raise ImportParseError(source, first_line, "no XML element found")
    return b.root, stopped


_XML_TAG = re.compile(r"<(/?)([A-Za-z_][\w.-]{0,80})[^<>]{0,400}?(/?)>")


def open_unclosed(text: str) -> str:
    """``text`` with the opening tags of the elements it closes but never opened put before it (a paste that starts
    inside an element: ``...</pci_bridge_chip> ... </pci> <fan_speed>``), outermost first, on its first line."""
    stack: list[str] = []
    unopened: list[str] = []
    for m in _XML_TAG.finditer(text):
        closing, name, empty = m.group(1), m.group(2), m.group(3)
        if not closing:
            stack += [] if empty else [name]
        elif name in stack:
            del stack[len(stack) - 1 - stack[::-1].index(name) :]
        else:
            unopened.append(name)
    return "".join(f"<{n}>" for n in reversed(unopened)) + text
