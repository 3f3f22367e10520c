"""A table of bad inputs through every command that reads a file, and bad arguments through the rest: each is
exit 2, exactly one line on stderr, no traceback or "internal error", nothing on stdout, no file written, and
every input byte-identical afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuadvisor.cli import main

SLOTS = {  # how each command takes a file; {f} is the bad input
    "scan --from": ("scan", "--from", "{f}"),
    "scan --simulate": ("scan", "--simulate", "{f}"),
    "scan --policy": ("scan", "--simulate", "h100-pcie", "--policy", "{f}"),
    "scan --hf-config": ("scan", "--simulate", "h100-pcie", "--hf-config", "{f}"),
    "check --from": ("check", "--from", "{f}"),
    "check --policy": ("check", "--simulate", "h100-pcie", "--policy", "{f}"),
    "report": ("report", "{f}"),
    "import": ("import", "{f}"),
    "import --storage": ("import", "--storage", "{f}"),
    "advise --from": ("advise", "--from", "{f}", "--model", "gpt2"),
    "advise --hf-config": ("advise", "--simulate", "h100-pcie", "--hf-config", "{f}"),
    "rules --policy": ("rules", "--policy", "{f}"),
    "bench --from": ("bench", "--from", "{f}"),
    "plan BUILD": ("plan", "{f}", "--model", "gpt2"),
    "plan --prices": ("plan", "--prices", "{f}", "--model", "gpt2"),
    "plan --calibrate-from": ("plan", "--calibrate-from", "{f}", "--model", "gpt2"),
    "fleet --expect-file": ("fleet", "{f}", "--expect-file", "{f}"),
    "fleet --policy": ("fleet", "{f}", "--policy", "{f}"),
    "fleet --baseline": ("fleet", "{good}", "--baseline", "{f}"),  # sound scans, a baseline where nothing reads
    "scan --from-nvidia-smi": ("scan", "--from-nvidia-smi", "{f}"),
    "plan --from-nvidia-smi": ("plan", "--from-nvidia-smi", "{f}", "--model", "gpt2"),
    "advise --model PATH": ("advise", "--simulate", "h100-pcie", "--model", "{f}"),
    "plan --model PATH": ("plan", "--model", "{f}"),
}
TOML_SLOTS = {
    "scan --simulate",
    "scan --policy",
    "check --policy",
    "rules --policy",
    "plan BUILD",
    "plan --prices",
    "fleet --policy",
    "fleet --expect-file",
}  # an empty nodes file is valid too: no node expected


def _bad_inputs(scan: str) -> dict[str, bytes | None]:
    doc = json.loads(scan)
    wrong_type = dict(doc, host=dict(doc["host"], hostname=5))
    return {
        "deep-json": b"[" * 100_000 + b"]" * 100_000,
        "deep-in-a-scan": scan.replace('"advice": null', '"advice": ' + "[" * 100 + "]" * 100, 1).encode(),
        "lone-surrogate": scan.replace('"h100-pcie-sim"', '"\\udc80"', 1).encode(),
        "int-10**400": scan.replace('"psu_watts": null', '"psu_watts": 1' + "0" * 400, 1).encode(),
        "float-1e400": scan.replace('"psu_watts": null', '"psu_watts": 1e400', 1).encode(),
        "NaN": scan.replace('"psu_watts": null', '"psu_watts": NaN', 1).encode(),
        "negative-gpu-memory": scan.replace(
            '"memory_total_bytes": 85520809984', '"memory_total_bytes": -85520809984', 1
        ).encode(),
        "truncated": scan[: len(scan) // 2].encode(),
        "wrong-type": json.dumps(wrong_type).encode(),
        "json-list": b"[]",
        "binary": bytes(range(256)) * 4,
        "latin-1": 'title = "caf\xe9"\nhostname = "\xe9"\n'.encode("latin-1"),
        "utf-8-garbage": b"\xc3\x28\xa0\xa1 = 1\n",
        "deep-toml": b"a = " + b"[" * 5000 + b"]" * 5000,
        "toml-nan": b"[thresholds]\nbandwidth_warn_ratio = nan\n",
        "toml-inf": b"x = -inf\n",
        "toml-broken": b"[[[\n= =\n",
        "empty": b"",
        "directory": None,
        **_bad_storage_builds(),
    }


# A sound build file with a hostile [storage] table (plan's drives): each one line, exit 2 through plan, and
# refused by every other command that reads a file too.
BAD_STORAGE = {
    "storage-price-1e308": 'drive = "samsung-990-pro-2tb"\ncount = 2\nprice_usd = 1e308',
    "storage-count-2**63-1": 'drive = "samsung-990-pro-2tb"\ncount = 9223372036854775807',
    "storage-count-negative": 'drive = "samsung-990-pro-2tb"\ncount = -2',
    "storage-count-float": 'drive = "samsung-990-pro-2tb"\ncount = 2.5',
    "storage-count-string": 'drive = "samsung-990-pro-2tb"\ncount = "2"',
    "storage-price-negative": 'drive = "samsung-990-pro-2tb"\nprice_usd = -180',
    "storage-price-nan": 'drive = "samsung-990-pro-2tb"\nprice_usd = nan',
    "storage-price-inf": 'drive = "samsung-990-pro-2tb"\nprice_usd = inf',
    "storage-price-string": 'drive = "samsung-990-pro-2tb"\nprice_usd = "180"',
    "storage-raid-nan": 'drive = "samsung-990-pro-2tb"\ncount = 2\nraid = nan',
    "storage-drive-missing": "count = 2\nraid = 0",
    "storage-drive-unknown": 'drive = "no-such-drive"',
    "storage-drive-number": "drive = 990",
    "storage-not-a-table": None,  # storage = "two drives", a string where the table goes
}


def _bad_storage_builds() -> dict[str, bytes]:
    from importlib import resources

    base = (resources.files("gpuadvisor.plan.builds") / "4x4090-tr-pro.toml").read_text(encoding="utf-8")
    head, _, tables = base.partition("\n[")  # the top-level keys, then its [price] table
    assert "[storage]" not in base
    return {
        name: (
            f'{head}\nstorage = "two drives"\n[{tables}'
            if table is None
            else f"{base.rstrip()}\n\n[storage]\n{table}\n"
        ).encode()
        for name, table in BAD_STORAGE.items()
    }


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bad")
    scan = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "scan", "--simulate", "h100-pcie", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert '"psu_watts": null' in scan and '"advice": null' in scan and '"memory_total_bytes": 85520809984' in scan
    files = {}
    for name, content in _bad_inputs(scan).items():
        p = d / (name + (".json" if content and content[:1] in b"[{" else ".toml"))
        if content is None:
            p = d / name
            p.mkdir()
            (p / "notes.txt").write_text("nothing an importer reads\n")
        else:
            p.write_bytes(content)
        files[name] = p
    files["dev-zero"] = Path("/dev/zero")
    files["symlink-loop"] = d / "loop-a.json"  # loop-a.json -> loop-b.json -> loop-a.json
    files["symlink-loop"].symlink_to("loop-b.json")
    (d / "loop-b.json").symlink_to("loop-a.json")
    files["missing"] = d / "missing.json"
    good = tmp_path_factory.mktemp("good")
    (good / "node-1.json").write_text(scan, encoding="utf-8")
    files["good-scans"] = good
    return files


def _state(root: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = Path(dirpath) / n
            out[str(p)] = os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
    return out


CASES = [
    (slot, bad)
    for slot in SLOTS
    for bad in [
        "deep-json",
        "deep-in-a-scan",
        "lone-surrogate",
        "int-10**400",
        "float-1e400",
        "NaN",
        "negative-gpu-memory",
        "truncated",
        "wrong-type",
        "json-list",
        "binary",
        "latin-1",
        "utf-8-garbage",
        "deep-toml",
        "toml-nan",
        "toml-inf",
        "toml-broken",
        "empty",
        "directory",
        "dev-zero",
        "symlink-loop",
        "missing",
        *BAD_STORAGE,
    ]
    if not (slot in TOML_SLOTS and bad == "empty")  # an empty policy or rig file is valid TOML: no keys
    # fleet reads only a scan's figures (its lean reader): a 100-deep advice or a numeric host name still leaves a
    # baseline it can compare with (scan --from refuses both)
    and not (slot == "fleet --baseline" and bad in ("deep-in-a-scan", "wrong-type"))
]


@pytest.mark.parametrize("slot, bad", CASES, ids=[f"{s}:{b}" for s, b in CASES])
def test_bad_input_is_one_line_exit_2_and_inputs_untouched(capsys, bad_files, slot, bad):
    path = bad_files[bad]
    root = bad_files["binary"].parent
    before = _state(root)
    args = [a.replace("{f}", str(path)).replace("{good}", str(bad_files["good-scans"])) for a in SLOTS[slot]]
    with pytest.raises(SystemExit) as e:
        main(args)
    out, err = capsys.readouterr()
    assert e.value.code == 2, (args, err)
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("gpuadvisor: error: "), err
    assert "Traceback" not in err and "internal error" not in err
    assert _state(root) == before


# what the one line says for each hostile [storage] table read by plan: the key, and what is expected
STORAGE_SAYS = {
    "storage-price-1e308": "storage.price_usd 1e+308: expected a price in US$ per drive, 0 to 1,000,000",
    "storage-count-2**63-1": "storage.count 9223372036854775807: expected a whole number of drives per node, at",
    "storage-count-negative": "storage.count -2: expected a whole number",
    "storage-count-float": "storage.count 2.5: expected a whole number",
    "storage-count-string": "storage.count '2': expected a whole number",
    "storage-price-negative": "storage.price_usd -180: expected a price",
    "storage-price-nan": "nan where a number was expected",
    "storage-price-inf": "inf where a number was expected",
    "storage-price-string": "storage.price_usd '180': expected a price",
    "storage-raid-nan": "nan where a number was expected",
    "storage-drive-missing": "storage.drive: missing (name the drive: ",
    "storage-drive-unknown": "storage.drive 'no-such-drive': unknown drive (known: ",
    "storage-drive-number": "storage.drive 990: unknown drive",
    "storage-not-a-table": "storage: expected dict, got 'two drives'",
}


@pytest.mark.parametrize("bad", list(BAD_STORAGE))
def test_plan_names_the_bad_storage_key(capsys, bad_files, bad):
    with pytest.raises(SystemExit) as e:
        main(["plan", str(bad_files[bad]), "--model", "gpt2"])
    _, err = capsys.readouterr()
    assert e.value.code == 2 and STORAGE_SAYS[bad] in err and err.count("\n") == 1, err


BAD_ARGS = [
    ("explain", "GA999"),
    ("explain", ""),
    ("explain", "x" * 10_000),
    ("explain",),
    ("rules", "--area", "gpus\x1b]0;x\x07"),
    ("bench", "--budget", "nan"),
    ("bench", "--budget", "0"),
    ("bench", "--backend", "mpi"),
    ("bench", "-b", "1x"),
    ("bench", "-e", "-5"),
    ("bench", "--nproc", "-1"),
    ("bench", "-n", "1e3"),
    ("scan", "--from", "a.json", "--simulate", "dgx-h100"),
    ("scan", "--simulate", "no-such-preset"),
    ("scan", "--simulate", "h100-pcie", "--bench"),
    ("check", "--simulate", "h100-pcie", "--quick"),
    ("advise", "--simulate", "h100-pcie"),
    ("advise", "--simulate", "h100-pcie", "--model", "gpt2", "--json"),
    ("advise", "--simulate", "h100-pcie", "--model", "gpt2", "--params", "7e9"),
    ("report",),
    ("import",),
    ("presets", "--format", "yaml"),
    ("--no-such-option",),
]


@pytest.mark.parametrize("args", BAD_ARGS, ids=lambda a: " ".join(a)[:60])
def test_bad_arguments_are_one_line_exit_2(capsys, tmp_path, args):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with pytest.raises(SystemExit) as e:
            main(list(args))
    finally:
        os.chdir(cwd)
    out, err = capsys.readouterr()
    assert e.value.code == 2, (args, err)
    assert out == "" and err.count("\n") == 1 and err.startswith("gpuadvisor: error: "), err
    assert "Traceback" not in err and "internal error" not in err
    assert os.listdir(tmp_path) == []
