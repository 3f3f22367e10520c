"""Headless Chromium for the HTML report tests: dump the DOM after parsing, take a screenshot.

Debian's ``chromium`` package (``apt-get install -y chromium``). Where it is missing the browser tests are
skipped with the reason, except under CI (``CI`` set, as ``.ci/run`` and every CI service set it), where they
fail: a green CI run always means the report was rendered (``chromium_missing``, applied in conftest.py).
Every run gets its own throw-away profile
and has networking features off, so nothing reaches out; the report's own CSP (default-src 'none') is what
proves the page fetches nothing, and the tests look at the parsed DOM for any external URL.
"""

from __future__ import annotations

import html as htmllib
import json
import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--mute-audio",
    "--hide-scrollbars",
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


def under_ci(environ: dict[str, str] | None = None) -> bool:
    """CI=true (or any value but empty, 0, false, no), as GitHub Actions, GitLab CI and .ci/run set it."""
    value = (os.environ if environ is None else environ).get("CI", "")
    return value.strip().lower() not in ("", "0", "false", "no")


def chromium_missing(environ: dict[str, str] | None = None, chromium: str | None = None) -> tuple[str, str] | None:
    """What a browser test does when Chromium is absent: None (it is there), ("skip", why) or, under CI,
    ("fail", why). ``chromium``: the browser found (default: ``find_chromium()``)."""
    exe = chromium if chromium is not None else find_chromium()
    if exe:
        return None
    why = "chromium not installed (apt-get install -y chromium, or GPUADVISOR_CHROMIUM=/path/to/chrome)"
    if under_ci(environ):
        return (
            "fail",
            f"{why}: under CI (CI={(os.environ if environ is None else environ).get('CI')}) the browser tests must "
            "run, not skip",
        )
    return "skip", why


def _run(args: list[str], timeout: int = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    exe = find_chromium()
    if exe is None:
        raise RuntimeError("chromium not found (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory(prefix="gpuadvisor-chromium-") as profile:
        cmd = [exe, *FLAGS, f"--user-data-dir={profile}", *args]
        return subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, check=False, env={**os.environ, "HOME": profile}
        )


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


# Measured inside the page once it has laid out: the page's scroll width, elements sticking out of the viewport
# (outside the table's own scroll box), and the smallest font size of any visible text.
_MEASURE = """<script>window.addEventListener('load',function(){var de=document.documentElement;var min=99,at='';
function clipped(e){for(var a=e.parentElement;a&&a!==document.body;a=a.parentElement){
var o=getComputedStyle(a).overflowX;if(o==='auto'||o==='scroll'||o==='hidden')return true}return false}
var w=document.createTreeWalker(document.body,NodeFilter.SHOW_TEXT),n;
while((n=w.nextNode())){if(!n.textContent.trim())continue;
var el=n.parentElement;if(el.closest('script,style,title,desc'))continue;
var r=el.getBoundingClientRect();if(!r.width&&!r.height)continue;
if(getComputedStyle(el).visibility==='hidden'||el.closest('details:not([open]) > :not(summary)'))continue;
var fs=parseFloat(getComputedStyle(el).fontSize);
if(el instanceof SVGElement&&el.getScreenCTM){var m=el.getScreenCTM();fs=fs*Math.sqrt(m.a*m.a+m.b*m.b)}
if(fs<min){min=fs;at=n.textContent.slice(0,30)}}
var over=[];document.querySelectorAll('body *').forEach(function(e){var r=e.getBoundingClientRect();
if(r.right>de.clientWidth+1&&!clipped(e))over.push(e.tagName+'#'+(e.id||'')+'.'+(e.getAttribute('class')||''))});
var p=document.createElement('pre');p.id='layout-metrics';p.textContent=JSON.stringify({scrollWidth:de.scrollWidth,
scrollHeight:de.scrollHeight,clientWidth:de.clientWidth,minFont:Math.round(min*10)/10,minFontAt:at,overflow:over.slice(0,5),
probe:Array.from(document.querySelectorAll(PROBE)).map(function(e){var r=e.getBoundingClientRect();
return {text:e.textContent.trim().slice(0,60),left:r.left,right:r.right,height:r.height}})});
window.parent.document.body.appendChild(p);});</script>"""


def layout_metrics(page: str, width: int, tmp: Path, probe: str = "nothing-to-probe") -> dict:
    """Lay the page out in an iframe ``width`` px wide (the phone's viewport: its media queries apply) and read
    the measurements back (``probe``: a CSS selector whose elements' left/right edges are returned too). The copy
    measured has the measuring script added and the CSP that would block it removed."""
    inner = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page).replace(
        "</body>", _MEASURE.replace("PROBE", json.dumps(probe)) + "</body>"
    )
    (tmp / "page.html").write_text(inner, encoding="utf-8")
    host = tmp / "host.html"
    host.write_text(
        '<!DOCTYPE html><html><body style="margin:0"><iframe src="page.html" '
        f'style="border:0;width:{width}px;height:900px">'
        "</iframe></body></html>"
    )
    proc = _run(
        [
            "--window-size=1400,1000",
            "--allow-file-access-from-files",
            "--virtual-time-budget=3000",
            "--dump-dom",
            host.resolve().as_uri(),
        ]
    )
    m = re.search(r'<pre id="layout-metrics">(.*?)</pre>', proc.stdout, re.S)
    if m is None:
        raise RuntimeError(f"chromium measured nothing (exit {proc.returncode}): {proc.stderr[-800:]}")
    return json.loads(htmllib.unescape(m.group(1)))
