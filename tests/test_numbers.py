"""Every numeric option and every number read from a file is finite and in range, or exit 2 with one line;
JSON output never holds NaN or Infinity (gpuadvisor.numbers, gpuadvisor.inputs)."""

from __future__ import annotations

import json

import click
import pytest

from gpuadvisor.cli import main
from gpuadvisor.numbers import Count, Finite

W = ("--simulate", "h100-pcie", "--model", "llama-3-8b")


def cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(list(args))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


BAD_OPTIONS = [
    (("scan", "--simulate", "h100-pcie", "--budget", "nan"), "--budget", "'nan' is not a finite number"),
    (("scan", "--simulate", "h100-pcie", "--budget", "inf"), "--budget", "'inf' is not a finite number"),
    (("scan", "--simulate", "h100-pcie", "--budget", "-1"), "--budget", "-1 is out of range"),
    (("scan", "--simulate", "h100-pcie", "--budget", "0"), "--budget", "0 is out of range"),
    (("scan", "--simulate", "h100-pcie", "--budget", "1e9"), "--budget", "out of range"),
    (("bench", "--budget", "nan"), "--budget", "'nan' is not a finite number"),
    (("bench", "--budget", "-Infinity"), "--budget", "not a finite number"),
    (("bench", "--nproc", "0"), "--nproc", "not in the range"),
    (("bench", "--nproc", "100000"), "--nproc", "not in the range"),
    (("bench", "-n", "0"), "--iters", "not in the range"),
    (("bench", "-w", "-1"), "--warmup", "not in the range"),
    (("bench", "-e", "1" + "0" * 400), "--max-bytes", "too long for a byte count"),
    (("bench", "-e", "2T"), "--max-bytes", "more than 1 TiB"),
    (("scan", "--simulate", "h100-pcie", "--psu-watts", "nan"), "--psu-watts", "'nan' is not a finite number"),
    (("scan", "--simulate", "h100-pcie", "--psu-watts", "inf"), "--psu-watts", "'inf' is not a finite number"),
    (("scan", "--simulate", "h100-pcie", "--psu-watts", "0"), "--psu-watts", "0 is out of range"),
    (("scan", "--simulate", "h100-pcie", "--psu-watts", "-5"), "--psu-watts", "-5 is out of range"),
    (("scan", "--simulate", "h100-pcie", "--psu-watts", "1e400"), "--psu-watts", "not a finite number"),
    (("advise", "--simulate", "h100-pcie", "--params", "nan"), "--params", "not a finite number"),
    (("advise", "--simulate", "h100-pcie", "--params", "1e400"), "--params", "not a finite number"),
    (("advise", "--simulate", "h100-pcie", "--params", "-7e9"), "--params", "out of range"),
    (("advise", "--simulate", "h100-pcie", "--params", "seven"), "--params", "not a number"),
    (("advise", *W, "--seq-len", "0"), "--seq-len", "not in the range"),
    (("advise", *W, "--seq-len", "1" + "0" * 30), "--seq-len", "not in the range"),
    (("advise", *W, "--micro-batch", "-1"), "--micro-batch", "not in the range"),
    (("advise", *W, "--global-batch", "0"), "--global-batch", "not in the range"),
    (("advise", *W, "--mfu", "nan"), "--mfu", "not a finite number"),
    (("advise", *W, "--mfu", "1.5"), "--mfu", "out of range"),
    (("advise", *W, "--mfu", "0"), "--mfu", "out of range"),
    (("advise", *W, "--trainable-fraction", "inf"), "--trainable-fraction", "not a finite number"),
    (("advise", *W, "--inter-node-gbps", "nan"), "--inter-node-gbps", "not a finite number"),
    (("advise", *W, "--inter-node-gbps", "0"), "--inter-node-gbps", "out of range"),
    (("advise", *W, "--nodes", "0"), "--nodes", "not in the range"),
    (("advise", *W, "--lora-rank", "0"), "--lora-rank", "not in the range"),
    (("advise", *W, "--task", "inference", "--context", "0"), "--context", "not in the range"),
    (("advise", *W, "--task", "inference", "--concurrency", "99999999999"), "--concurrency", "not in the range"),
    (("scan", *W, "--mfu", "nan"), "--mfu", "not a finite number"),
]


@pytest.mark.parametrize(
    "args, option, needle", BAD_OPTIONS, ids=lambda v: " ".join(v) if isinstance(v, tuple) else None
)
def test_bad_numbers_are_one_line_exit_2(capsys, args, option, needle):
    rc, out, err = cli(capsys, *args)
    assert rc == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"gpuadvisor: error: Invalid value for '{option}'") or f"'{option}'" in lines[0], lines[
        0
    ]
    assert needle in lines[0]


def test_good_numbers_still_work(capsys):
    rc, out, _ = cli(
        capsys,
        "advise",
        "--simulate",
        "h100-pcie",
        "--params",
        "7e9",
        "--mfu",
        "0.4",
        "--seq-len",
        "2048",
        "--format",
        "json",
    )
    assert rc == 0 and json.loads(out)["workload"]["params"] == 7_000_000_000
    rc, out, _ = cli(capsys, "scan", "--simulate", "h100-pcie", "--psu-watts", "1600", "--format", "json")
    assert rc == 0 and json.loads(out)["host"]["psu_watts"] == 1600.0


def test_finite_param_type():
    t = Finite(0, 10, min_open=True)
    assert t.convert("2.5", None, None) == 2.5 and t.convert(10, None, None) == 10.0
    for bad in ("nan", "NaN", "inf", "-inf", "Infinity", "1e999", "0", "-0", "10.0001", "", "x"):
        with pytest.raises(click.BadParameter):
            t.convert(bad, None, None)
    c = Count(1, 4)
    with pytest.raises(click.BadParameter):
        c.convert("5", None, None)


@pytest.mark.parametrize(
    "literal, needle",
    [
        ("NaN", "NaN is not a number JSON allows"),
        ("Infinity", "Infinity is not a number JSON allows"),
        ("-Infinity", "-Infinity is not a number JSON allows"),
        ("1e400", "the number 1e400 is beyond the range of a double"),
        ("1" + "0" * 400, "out of range (more than 2**64)"),
        ("1" + "0" * 5000, "out of range (more than 2**64)"),  # past Python's 4300-digit int limit too
    ],
)
def test_numbers_in_a_scan_file_are_finite_and_in_range(capsys, tmp_path, literal, needle):
    rc, out, _ = cli(capsys, "scan", "--simulate", "h100-pcie", "--format", "json")
    text = out.replace('"psu_watts": null', f'"psu_watts": {literal}', 1)
    assert text != out
    f = tmp_path / "s.json"
    f.write_text(text)
    before = f.read_bytes()
    for cmd in (
        ("scan", "--from", str(f)),
        ("check", "--from", str(f)),
        ("report", str(f)),
        ("advise", "--from", str(f), "--model", "gpt2"),
    ):
        rc, out2, err = cli(capsys, *cmd)
        assert rc == 2 and len(err.splitlines()) == 1 and needle in err, (cmd, err)
    assert f.read_bytes() == before


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "+nan"])
def test_numbers_in_toml_files_are_finite(capsys, tmp_path, value):
    pol = tmp_path / "p.toml"
    pol.write_text(f"[thresholds]\nbandwidth_warn_ratio = {value}\n")
    rc, _, err = cli(capsys, "check", "--simulate", "h100-pcie", "--policy", str(pol))
    assert rc == 2 and len(err.splitlines()) == 1 and "only finite numbers are accepted" in err


def _refuse(constant: str) -> None:
    pytest.fail(f"{constant} in the JSON")


def test_json_output_never_holds_nan(capsys, tmp_path):
    from gpuadvisor.probes.rigdesc import preset_names

    for name in preset_names():
        for args in (
            ("scan", "--simulate", name, "--format", "json", "--psu-watts", "2000"),
            ("check", "--simulate", name, "--format", "json"),
        ):
            rc, out, _ = cli(capsys, *args)
            assert rc in (0, 1)
            assert "NaN" not in out and "Infinity" not in out, args
            json.loads(out, parse_constant=_refuse)
