"""Headless Chromium for the HTML report tests: dump the DOM after parsing, take a screenshot.

Debian's ``chromium`` package (``apt-get install -y chromium``). Every run gets its own throw-away profile
and has networking features off, so nothing reaches out; the report's own CSP (default-src 'none') is what
proves the page fetches nothing, and the tests look at the parsed DOM for any external URL.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
]
TIMEOUT_S = 60


def find_chromium() -> str | None:
    env = os.environ.get("GPUADVISOR_CHROMIUM")
    if env:
        return env if Path(env).exists() else None
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(args: list[str], timeout: int = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    exe = find_chromium()
    if exe is None:
        raise RuntimeError("chromium not found (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory(prefix="gpuadvisor-chromium-") as profile:
        cmd = [exe, *FLAGS, f"--user-data-dir={profile}", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False,
                              env={**os.environ, "HOME": profile})


def dump_dom(html_file: str | Path, *, window: tuple[int, int] = (1280, 900)) -> str:
    """The DOM as Chromium serialises it after parsing the file (what a user's browser builds)."""
    url = Path(html_file).resolve().as_uri()
    proc = _run([f"--window-size={window[0]},{window[1]}", "--dump-dom", url])
    if proc.returncode != 0 or "<html" not in proc.stdout:
        raise RuntimeError(f"chromium --dump-dom failed (exit {proc.returncode}): {proc.stderr[-800:]}")
    return proc.stdout


def screenshot(html_file: str | Path, png: str | Path, *, window: tuple[int, int] = (1280, 2400)) -> Path:
    url = Path(html_file).resolve().as_uri()
    out = Path(png).resolve()
    proc = _run([f"--window-size={window[0]},{window[1]}", f"--screenshot={out}", url])
    if not out.exists() or out.stat().st_size == 0:
        raise RuntimeError(f"chromium --screenshot wrote nothing (exit {proc.returncode}): {proc.stderr[-800:]}")
    return out


def print_pdf(html_file: str | Path, pdf: str | Path) -> Path:
    url = Path(html_file).resolve().as_uri()
    out = Path(pdf).resolve()
    proc = _run(["--no-pdf-header-footer", f"--print-to-pdf={out}", url])
    if not out.exists() or out.stat().st_size == 0:
        raise RuntimeError(f"chromium --print-to-pdf wrote nothing (exit {proc.returncode}): {proc.stderr[-800:]}")
    return out


def png_size(png: str | Path) -> tuple[int, int]:
    data = Path(png).read_bytes()[:24]
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{png}: not a PNG")
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


class Dom(HTMLParser):
    """The parsed DOM as flat lists: every element with its attributes, text by element, script bodies."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[tuple[dict[str, str], str]] = []
        self.text: list[str] = []
        self._in_script: dict[str, str] | None = None
        self._script_text: list[str] = []
        self._in_style = False
        self.style_text: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v or "") for k, v in attrs}
        self.elements.append((tag, a))
        if tag == "script":
            self._in_script = a
            self._script_text = []
        elif tag == "style":
            self._in_style = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._in_script is not None:
            self.scripts.append((self._in_script, "".join(self._script_text)))
            self._in_script = None
        elif tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            self._script_text.append(data)
        elif self._in_style:
            self.style_text.append(data)
        else:
            self.text.append(data)

    def all_text(self) -> str:
        return "".join(self.text)

    def with_attr(self, name: str) -> list[tuple[str, dict[str, str]]]:
        return [(t, a) for t, a in self.elements if name in a]
