"""The "internal error" exits that were unhandled bugs, each now a specific one-line error (exit 2): deep
nesting, lone surrogates, numbers past the double range, binary or non-UTF-8 files, unbounded reads from
devices, a stdout that cannot be written."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gpuadvisor.cli import main


def cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(list(args))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def one_line(capsys, args, needle):
    rc, out, err = cli(capsys, *args)
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("gpuadvisor: error: "), err
    assert "internal error" not in err and "Traceback" not in err
    assert needle in err, err
    return err


@pytest.fixture(scope="module")
def scan_text() -> str:
    r = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "scan", "--simulate", "h100-pcie", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return r.stdout


def test_deep_json_nesting(capsys, tmp_path, scan_text):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)  # past the parser's recursion limit
    one_line(capsys, ("scan", "--from", str(deep)), "nested deeper than 64 levels")
    mid = tmp_path / "mid.json"  # parses, but deeper than any scan: refused before anything walks it
    doc = json.loads(scan_text)
    doc["advice"] = json.loads("[" * 500 + "]" * 500)
    mid.write_text(json.dumps(doc))
    one_line(capsys, ("report", str(mid)), "nested deeper than 64 levels at advice")
    toml = tmp_path / "deep.toml"
    toml.write_text("a = " + "[" * 5000 + "]" * 5000)
    one_line(capsys, ("check", "--simulate", "h100-pcie", "--policy", str(toml)), "nested deeper than 64 levels")


def test_lone_surrogates(capsys, tmp_path, scan_text):
    s = tmp_path / "s.json"
    s.write_text(scan_text.replace('"h100-pcie-sim"', '"\\udc80x"', 1))
    one_line(capsys, ("scan", "--from", str(s)), "the string at host.hostname holds a lone surrogate (\\udc80)")
    cfg = tmp_path / "config.json"
    cfg.write_text('{"\\ud800": 1}')
    one_line(capsys, ("advise", "--simulate", "h100-pcie", "--hf-config", str(cfg)), "lone surrogate")


def test_a_path_that_is_not_utf8_reaches_stderr_escaped():
    """Python holds an undecodable file name as lone surrogates; printing it used to raise UnicodeEncodeError."""
    r = subprocess.run(
        [sys.executable.encode(), b"-m", b"gpuadvisor", b"scan", b"--from", b"/nonexistent/\xff.json"],
        capture_output=True,
        timeout=120,
    )
    assert r.returncode == 2
    assert r.stderr.decode("ascii").splitlines() == [
        "gpuadvisor: error: /nonexistent/\\udcff.json: no such file (give the path of a scan saved with "
        "'gpuadvisor scan --json FILE')"
    ]


@pytest.mark.parametrize("literal", ["1" + "0" * 400, "1" + "0" * 400 + ".0", "1e400"])
def test_numbers_past_the_double_range(capsys, tmp_path, scan_text, literal):
    s = tmp_path / "s.json"
    s.write_text(scan_text.replace('"psu_watts": null', f'"psu_watts": {literal}', 1))
    one_line(
        capsys,
        ("check", "--from", str(s)),
        "out of range" if "e" not in literal and "." not in literal else "beyond the range of a double",
    )


@pytest.mark.parametrize(
    "content, needle",
    [
        (bytes(range(256)), "binary data (a NUL byte on line 1), not a TOML rig description"),
        (b'title = "caf\xe9"\n', "not UTF-8 text (byte 0xe9 on line 1); a TOML rig description must be UTF-8"),
        (b"\xff\xfet\x00i\x00", "binary data"),
    ],
)
def test_binary_or_non_utf8_simulate_file(capsys, tmp_path, content, needle):
    f = tmp_path / "rig.toml"
    f.write_bytes(content)
    one_line(capsys, ("scan", "--simulate", str(f)), needle)
    assert f.read_bytes() == content


@pytest.mark.parametrize(
    "args",
    [
        ("scan", "--from", "/dev/zero"),
        ("scan", "--simulate", "/dev/zero"),
        ("check", "--simulate", "h100-pcie", "--policy", "/dev/urandom"),
        ("report", "/dev/zero"),
        ("import", "/dev/zero"),
        ("advise", "--simulate", "h100-pcie", "--hf-config", "/dev/zero"),
        ("rules", "--policy", "/dev/zero"),
    ],
)
def test_devices_are_not_read(capsys, args):
    one_line(capsys, args, "is a character device, not a file")


def test_oversized_inputs_are_refused_by_size_not_read(capsys, tmp_path):
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:  # sparse: 5 GiB on paper, nothing on disk
        f.truncate(5 * 2**30)
    one_line(
        capsys, ("check", "--simulate", "h100-pcie", "--policy", str(big)), "is larger than a TOML policy file can be"
    )


def test_a_pipe_is_read_up_to_the_cap(tmp_path):
    """Process substitution (a pipe) works, and an endless one stops at the cap with one line."""
    ok = subprocess.run(
        [
            "bash",
            "-c",
            f"{sys.executable} -m gpuadvisor check --simulate h100-pcie "
            "--policy <(printf 'ignore = [\"GA203\"]\\n') --format json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    endless = subprocess.run(
        ["bash", "-c", f"{sys.executable} -m gpuadvisor check --simulate h100-pcie --policy <(yes '# comment')"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert endless.returncode == 2
    assert endless.stderr.splitlines()[0].endswith("more than 4 MiB; larger than a TOML policy file can be")
    assert len(endless.stderr.splitlines()) == 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_stdout_on_a_full_disk():
    with open("/dev/full", "w") as full:
        p = subprocess.run(
            [sys.executable, "-m", "gpuadvisor", "rules"], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
        )
    assert (p.returncode, p.stderr) == (2, "gpuadvisor: error: cannot write to stdout (No space left on device)\n")
