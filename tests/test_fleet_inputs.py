"""`fleet` on bad, huge, hostile and unreadable inputs: one bad scan is one failed node naming its file (the
rest are judged); a bad nodes file, policy or argument is one line and exit 2; outputs never land on or among
the inputs; JUnit validates against both schemas and the Prometheus file parses, with hostile host names."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import fleet_gen as G
import pytest
from test_robustness import _bad_inputs

from gpuadvisor.cli import main

BAD = [
    "deep-json",
    "lone-surrogate",
    "float-1e400",
    "NaN",
    "Infinity",
    "truncated",
    "json-list",
    "binary",
    "latin-1",
    "utf-8-garbage",
    "empty",
    "findings-5",
    "gpus-5",
    "measurements-dict",
]


@pytest.fixture(scope="module")
def scans(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("fleet-in") / "scans"
    G.write_fleet(d, [f"n{i:02d}" for i in range(6)], seed=1, sigma=0.01)
    return d


def _state(root: Path) -> dict[str, bytes]:
    return {
        str(Path(dp) / n): (Path(dp) / n).read_bytes()
        for dp, _, ns in os.walk(root)
        for n in ns
        if not (Path(dp) / n).is_symlink()
    }


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(list(args))
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


@pytest.fixture(scope="module")
def bad_scans(tmp_path_factory, scans) -> Path:
    base = (scans / "n00.json").read_text()
    doc = json.loads(base)
    table = {
        k: v
        for k, v in _bad_inputs(base.replace('"hostname": "n00"', '"hostname": "h100-pcie-sim"')).items()
        if k in BAD and v is not None
    }
    table["Infinity"] = base.replace('"value_gbps": ', '"value_gbps": -Infinity, "x": ', 1).encode()
    table["findings-5"] = json.dumps(dict(doc, findings=5)).encode()
    table["gpus-5"] = json.dumps(dict(doc, gpus=[5, "x"])).encode()
    table["measurements-dict"] = json.dumps(dict(doc, measurements={"a": 1})).encode()
    out = {}
    for name in BAD:
        d = tmp_path_factory.mktemp("bad") / "scans"
        G.write_fleet(d, [f"n{i:02d}" for i in range(6)], seed=1, sigma=0.01)
        (d / f"bad-{name}.json").write_bytes(table[name])
        out[name] = d
    return out


@pytest.mark.parametrize("bad", BAD)
def test_one_bad_scan_is_one_failed_node_naming_its_file(capsys, bad_scans, bad):
    d = bad_scans[bad]
    before = _state(d)
    code, out, err = _cli(capsys, "fleet", str(d), "--format", "json")
    doc = json.loads(out)
    assert code == 1 and err == ""
    failed = [n for n in doc["nodes"] if n["status"] == "failed"]
    healthy = [n for n in doc["nodes"] if n["status"] == "ok"]
    assert len(failed) == 1 and len(healthy) >= 6, [n["name"] for n in doc["nodes"]]
    assert failed[0]["path"].endswith(f"bad-{bad}.json")
    assert f"bad-{bad}.json" in failed[0]["findings"][0]["message"] or failed[0]["name"] == f"bad-{bad}"
    assert _state(d) == before


def test_deep_nesting_where_fleet_never_reads_is_harmless(capsys, tmp_path):
    d = tmp_path / "scans"
    G.write_fleet(d, [f"n{i}" for i in range(5)], seed=8, sigma=0.01)
    text = (d / "n0.json").read_text()
    (d / "n0.json").write_text(text.replace('"problems": []', '"problems": ' + "[" * 200 + "]" * 200, 1))
    code, out, err = _cli(capsys, "fleet", str(d), "--format", "json")
    assert code == 0 and {n["status"] for n in json.loads(out)["nodes"]} == {"ok"}


def test_an_integer_beyond_64_bits_anywhere_in_a_scan_is_a_failed_node(capsys, tmp_path):
    """A 10**400 where fleet never reads is still not a scan gpuadvisor writes: a failed node, not "ok"."""
    d = tmp_path / "scans"
    G.write_fleet(d, [f"n{i}" for i in range(5)], seed=8, sigma=0.01)
    text = (d / "n1.json").read_text()
    (d / "n1.json").write_text(text.replace('"psu_watts": null', '"psu_watts": 1' + "0" * 400, 1))
    code, out, err = _cli(capsys, "fleet", str(d), "--format", "json")
    status = {n["name"]: (n["status"], n.get("error") or "") for n in json.loads(out)["nodes"]}
    assert code == 1 and status["n1"][0] == "failed" and "2**64" in status["n1"][1], status["n1"]
    assert {s for name, (s, _) in status.items() if name != "n1"} == {"ok"}


def test_nan_never_becomes_a_number(capsys, bad_scans):
    code, out, _ = _cli(capsys, "fleet", str(bad_scans["NaN"]), "--format", "json")
    doc = json.loads(out)
    bad = next(n for n in doc["nodes"] if n["name"] == "bad-NaN")
    assert code == 1 and bad["status"] == "failed" and "only finite numbers" in bad["error"]


def test_oversized_scan_is_refused_unread(capsys, tmp_path, scans, monkeypatch):
    from gpuadvisor import inputs

    d = tmp_path / "scans"
    G.write_fleet(d, ["a", "b"], seed=2, sigma=0.01)
    (d / "big.json").write_bytes(b" " * 3000 + b"{}")
    monkeypatch.setattr(inputs, "SCAN_LIMIT", 2048)
    import gpuadvisor.fleet.load as load

    monkeypatch.setattr(load, "SCAN_LIMIT", 2048)
    node = load.read_node(d / "big.json")
    assert node.status == "failed" and "larger than" in (node.error or "") and "big.json" in (node.error or "")


def test_symlink_out_of_the_scans_directory_is_not_followed(capsys, tmp_path):
    d = tmp_path / "scans"
    G.write_fleet(d, ["a", "b", "c"], seed=3, sigma=0.01)
    secret = tmp_path / "elsewhere.json"
    secret.write_text(json.dumps(G.node_scan("secret", __import__("random").Random(0), 0.01)))
    (d / "link.json").symlink_to(secret)
    code, out, _ = _cli(capsys, "fleet", str(d), "--format", "json")
    doc = json.loads(out)
    names = {n["name"]: n for n in doc["nodes"]}
    assert "secret" not in names and names["link"]["status"] == "failed"
    assert "outside the scans directory" in names["link"]["error"]


@pytest.mark.parametrize(("path", "what"), [("/dev/zero", "character device")])
def test_a_device_says_what_it_is(capsys, path, what):
    code, out, err = _cli(capsys, "fleet", path)
    assert code == 2 and what in err and "no such file" not in err and err.count("\n") == 1


def test_a_fifo_is_read_as_a_scan_not_missing(capsys, tmp_path):
    fifo = tmp_path / "scan.fifo"
    os.mkfifo(fifo)
    scan = json.dumps(G.node_scan("piped", __import__("random").Random(0), 0.01))
    import threading

    writer = threading.Thread(target=fifo.write_text, args=(scan,), daemon=True)
    writer.start()
    code, out, err = _cli(capsys, "fleet", str(fifo), "--format", "json")
    writer.join(timeout=30)
    assert code == 0, err
    assert [n["name"] for n in json.loads(out)["nodes"]] == ["piped"]


@pytest.mark.parametrize(
    "args",
    [
        ("--expect", "node[1-99999999]"),
        ("--expect", "a[1-1000]b[1-1000]"),
        ("--expect", "node[" + "1" * 40 + "-" + "2" * 40 + "]"),
        ("--expect-file", "/dev/zero"),
        ("--max-age", "99999999999999w"),
        ("--max-age", "1e400"),
    ],
)
def test_unbounded_or_bad_arguments_are_one_line(capsys, scans, args):
    code, out, err = _cli(capsys, "fleet", str(scans), *args)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "internal error" not in err and len(err) < 400
    if args[0] == "--expect" and "[1-" in args[1]:
        assert "100,000 hosts" in err


def test_binary_nodes_file_is_one_line(capsys, scans, tmp_path):
    f = tmp_path / "nodes.txt"
    f.write_bytes(bytes(range(256)))
    code, _, err = _cli(capsys, "fleet", str(scans), "--expect-file", str(f))
    assert code == 2 and "nodes.txt" in err and err.count("\n") == 1


@pytest.mark.parametrize("target", ["scans/sub/n00.json", "scans/fleet.json", "nodes.txt", "policy.toml"])
def test_outputs_never_land_on_or_among_the_inputs(capsys, tmp_path, target):
    d = tmp_path / "scans"
    G.write_fleet(d / "sub", ["n00", "n01"], seed=4, sigma=0.01)
    (tmp_path / "nodes.txt").write_text("n00\nn01\n")
    (tmp_path / "policy.toml").write_text('[fleet]\nfail = ["drift"]\n')
    before = _state(tmp_path)
    code, out, err = _cli(
        capsys,
        "fleet",
        str(d),
        "--expect-file",
        str(tmp_path / "nodes.txt"),
        "--policy",
        str(tmp_path / "policy.toml"),
        "--format",
        "json",
        "-o",
        str(tmp_path / target),
    )
    assert code == 2 and err.count("\n") == 1, err
    assert _state(tmp_path) == before


def test_scans_sharing_a_host_name_are_kept_apart_and_named(capsys, tmp_path):
    d = tmp_path / "scans"
    rng = __import__("random").Random(5)
    d.mkdir()
    for i in range(10):
        (d / f"sim{i}.json").write_text(json.dumps(G.node_scan("dgx-h100-sim", rng, 0.01)))
    code, out, _ = _cli(capsys, "fleet", str(d), "--format", "json")
    doc = json.loads(out)
    assert len(doc["nodes"]) == 10
    dup = [f for n in doc["nodes"] for f in n["findings"] if f["kind"] == "duplicate"]
    assert len(dup) == 10 and "sim0.json" in dup[0]["message"]


HOSTILE = ["evil\x1b]0;pwned\x07", "nul\x00byte", 'quote"and\\back\nslash', "surrogate-\udc80"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("hostile")
    rng = __import__("random").Random(6)
    for i, name in enumerate(HOSTILE + [f"ok{i}" for i in range(4)]):
        scan = G.node_scan(name, rng, 0.01)
        (d / f"h{i}.json").write_text(json.dumps(scan, ensure_ascii=True))
    return d


def test_junit_with_hostile_names_validates_against_both_schemas(capsys, hostile):
    xmlschema = pytest.importorskip("xmlschema")
    code, out, _ = _cli(capsys, "fleet", str(hostile), "--format", "junit", "--fail-on", "info")
    schemas = Path(__file__).parent / "fixtures" / "junit"
    for name in ("junit-4", "junit-10"):
        xmlschema.XMLSchema(str(schemas / f"{name}.xsd")).validate(out)
    assert "<skipped message" not in out


def test_prom_with_hostile_names_is_a_valid_textfile(capsys, hostile):
    code, out, _ = _cli(capsys, "fleet", str(hostile), "--format", "prom")
    out.encode("utf-8")  # no lone surrogate
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f]", out)
    sample = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*",?)*\})? \S+$')
    for line in out.splitlines():
        assert line.startswith("# HELP ") or line.startswith("# TYPE ") or sample.match(line), line
    assert r'node="evil\\x1b]0;pwned\\x07"' in out  # made visible, as the terminal shows it
    assert r'node="quote\"and\\back\nslash"' in out


def test_text_output_fits_columns_and_shows_no_raw_control_characters(capsys, hostile, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    out_file = tmp_path / "fleet.txt"
    _cli(capsys, "fleet", str(hostile), "-o", str(out_file), "--all")
    text = out_file.read_text(encoding="utf-8", errors="strict")
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f]", text)
    assert all(len(ln) <= 60 for ln in text.splitlines())


def test_a_hostile_scans_directory_never_hangs_or_stops_the_report(tmp_path):
    """Anything a node can put on the shared volume is one failed node naming the file, never a hang (a pipe
    named *.json is never opened) or an internal error (a loop of links); the healthy nodes are still judged."""
    import subprocess
    import sys

    d = tmp_path / "scans"
    G.write_fleet(d, [f"n{i}" for i in range(6)], seed=4, sigma=0.01)
    os.mkfifo(d / "pipe.json")
    (d / "loop-a.json").symlink_to("loop-b.json")
    (d / "loop-b.json").symlink_to("loop-a.json")
    (d / "to-pipe.json").symlink_to("pipe.json")
    (d / "dangling.json").symlink_to("gone.json")
    (d / "dir.json").mkdir()
    (d / "up.json").symlink_to("..")  # a link to a directory is not entered (no loop of directories)
    doc = json.loads((d / "n5.json").read_text())
    doc["gpus"][0]["memory_total_bytes"] = -85520809984
    (d / "n5.json").write_text(json.dumps(doc))
    (d / "n4.json").write_text((d / "n4.json").read_text().replace('"psu_watts": null', '"psu_watts": 1' + "0" * 400))
    run = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "fleet", str(d), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1 and "internal error" not in run.stderr, run.stderr
    nodes = {n["name"]: n for n in json.loads(run.stdout)["nodes"]}
    why = {name: n.get("error") or "" for name, n in nodes.items() if n["status"] == "failed"}
    assert "a pipe, not a regular file" in why["pipe"] and "a pipe, not a regular file" in why["to-pipe"]
    assert "a loop of symbolic links" in why["loop-a"] and "a loop of symbolic links" in why["loop-b"]
    assert "No such file" in why["dangling"]
    assert "memory_total_bytes: -85520809984 is negative" in why["n5"]
    assert "2**64" in why["n4"]
    assert set(why) == {"pipe", "to-pipe", "loop-a", "loop-b", "dangling", "n4", "n5"}
    assert [name for name, n in nodes.items() if n["status"] == "ok"] == ["n0", "n1", "n2", "n3"]


def test_a_pipe_swapped_in_after_the_walk_is_refused_not_waited_on(tmp_path):
    from gpuadvisor.fleet import load

    d = tmp_path / "scans"
    G.write_fleet(d, ["a"], seed=5, sigma=0.01)
    files = load.files_of([str(d)])
    (d / "a.json").unlink()
    os.mkfifo(d / "a.json")  # no writer: a blocking open would wait for ever
    node = load.read_node(files[0])
    assert node.status == "failed" and "is a pipe" in (node.error or ""), node.error


@pytest.mark.parametrize(
    ("number", "refused"),
    [
        ("1" + "0" * 400, True),  # an integer beyond 2**64
        ("18446744073709551617", True),  # 2**64 + 1
        ("1e400", True),
        ("-1E+309", True),
        ("1" + "0" * 400 + ".5", True),  # a float of 401 digits: beyond the double range
        ("1e-300", False),  # underflows to a tiny number: finite
        ("1.7976931348623157e+308", False),  # the largest double
        ("18446744073709551615", False),  # 2**64 - 1
    ],
)
def test_numbers_out_of_range_are_refused_wherever_they_are(number, refused):
    from gpuadvisor.errors import InputError
    from gpuadvisor.facts import lean

    text = '{"kind": "x", "deep": {"list": [1, ' + number + '], "uuid": "GPU-5e123456-0000"}}'
    if refused:
        with pytest.raises(InputError, match="2\\*\\*64|range of a double"):
            lean.parse_scan(text, "n.json")
    else:
        assert lean.parse_scan(text, "n.json")["deep"]["list"][1] == json.loads(number)
    assert lean.parse_scan('{"uuid": "GPU-5e123456-0000", "v": 1e-05}', "n.json")["v"] == 1e-05


def test_many_scans_claiming_one_host_name_stay_linear():
    """50,000 files that all claim one host name (a template copied without GPUADVISOR_HOSTNAME) are kept apart
    as name [2] ... name [50000] in one pass, the first one noted once (not once per copy)."""
    from gpuadvisor.fleet import load
    from gpuadvisor.fleet.model import Node

    nodes = load._load_nodes(Node(name="gpu", path=f"s{i}.json", status="failed", error="x") for i in range(50_000))
    assert len(nodes) == 50_000 and "gpu [50000]" in nodes
    assert len(nodes["gpu"].notes) == 1 and all(n.duplicate for n in nodes.values())
    assert nodes["gpu [3]"].notes == [
        "two or more scans claim the host name 'gpu' (s0.json, s2.json): kept apart by file; give each node its "
        "own name (GPUADVISOR_HOSTNAME, or the scheduler's node name)"
    ]


def test_a_directory_past_the_file_limit_stops_at_the_limit(capsys, tmp_path, monkeypatch):
    from gpuadvisor.fleet import load

    d = tmp_path / "scans"
    d.mkdir()
    for i in range(30):
        (d / f"n{i:02d}.json").write_text("{}")
    monkeypatch.setattr(load, "MAX_FILES", 10)
    seen = []
    real = load._not_read
    monkeypatch.setattr(load, "_not_read", lambda q, root: seen.append(q) or real(q, root))
    code, _, err = _cli(capsys, "fleet", str(d))
    assert code == 2 and "more than 10 scan files" in err and err.count("\n") == 1
    assert len(seen) == 11  # not every file of the directory first


# Texts written by hand from RFC 8259 and Python's json documentation: numbers at the edges of the double and
# 64-bit integer ranges, escapes, a byte-order mark, syntax errors, NaN, nesting; each a node's whole file.
PARSE_CASES = [
    '{"kind": "x", "v": [0, -0, -0.0, 1.0, 1E2, 0.1e1, 5e-324, 1e-400, 2.4703282292062327e-324]}',
    '{"v": [1.7976931348623157e308, 1.7976931348623159e308]}',
    '{"v": [18446744073709551615, 9223372036854775807, -9223372036854775808]}',
    '{"v": [18446744073709551616, -9223372036854775809, 1234567890123456789]}',
    '{"v": 123456789012345678901234567890e-10, "w": 0.1234567890123456789}',
    '{"s": "\\ud83d\\ude00 \\u00e9 \\u0000 \\"q\\" \\\\ \\/"}',
    '{"s": "\\ud800"}',
    '{"s": "\\udc00 x"}',
    '{"v": NaN}',
    '{"v": [Infinity]}',
    '{"v": -Infinity}',
    '\ufeff{"kind": "x"}',
    '{"a": 1, "a": 2}',
    '{"a": [1,]}',
    '{"a": 01}',
    '{"a": 1} x',
    '{"a": "\x01"}',
    "",
    "   ",
    '{"a": "caf\u00e9", "b": "\u4e2d"}',
    "[" * 500 + "]" * 500,
    "[" * 2000 + "]" * 2000,
]


@pytest.mark.parametrize("text", PARSE_CASES)
def test_the_fast_parser_reads_every_file_as_the_standard_library_does(tmp_path, monkeypatch, text):
    """facts.lean parses with orjson where it can: the same data, or the same one-line refusal, as without it."""
    from gpuadvisor.errors import InputError
    from gpuadvisor.facts import lean

    assert lean._orjson is not None  # a dependency: installed with gpuadvisor
    p = tmp_path / "n.json"
    p.write_bytes(text.encode("utf-8", "surrogatepass"))

    def outcome():
        try:
            data = lean.read_json(p)
        except InputError as e:
            return "refused", str(e)
        return "read", json.dumps(data)  # an int and a float of one value write differently (1 and 1.0)

    fast = outcome()
    monkeypatch.setattr(lean, "_orjson", None)
    assert fast == outcome()


def test_the_fast_parser_sends_long_integers_the_slow_way():
    """orjson makes an integer beyond 64 bits a float: 19 digits in a row anywhere leave it to Python's parser."""
    from gpuadvisor.facts import lean

    assert lean.parse_fast(b'{"v": -9223372036854775809}') is lean._SLOW
    assert lean.parse_fast(b'{"s": "x-1234567890123456789"}') is lean._SLOW
    assert lean.parse_fast(b'{"v": -922337203685477580, "u": "GPU-5e123456"}') == {
        "v": -922337203685477580,
        "u": "GPU-5e123456",
    }
