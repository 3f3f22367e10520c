"""Property: whatever text the parsers get, they return facts or raise their own one-line ImportParseError.

Inputs: random text, random bytes decoded, real outputs cut at any point, with lines shuffled, deleted,
duplicated or mangled, and outputs of one kind fed to another kind's parser.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuadvisor import facts
from gpuadvisor.importers import (
    ImportParseError,
    import_texts,
    parse_lspci,
    parse_nccl_tests,
    parse_nvlink_status,
    parse_smi_q,
    parse_smi_summary,
    parse_smi_xml,
    parse_topo_matrix,
    parse_topo_p2p,
)
from gpuadvisor.importers.merge import decode

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS_FILES = (
    sorted((FIXTURES / "import" / "samples").glob("*.txt"))
    + sorted((FIXTURES / "import" / "own").glob("*.*"))
    + [FIXTURES / "h100-vm" / "smi.txt", FIXTURES / "h100-vm" / "smi-q.xml"]
)
CORPUS = [p.read_text(encoding="utf-8") for p in CORPUS_FILES if p.suffix != ".md"]
# Long -q files are cut to their first 12 000 characters to keep each example fast; the cut is itself a case.
CORPUS = [t if len(t) < 12_000 else t[:12_000] for t in CORPUS]

PARSERS: list[Callable[..., facts.Rig]] = [
    parse_smi_q,
    parse_smi_xml,
    parse_smi_summary,
    parse_topo_matrix,
    parse_topo_p2p,
    parse_nvlink_status,
    parse_lspci,
    parse_nccl_tests,
]

# 40 examples per property in CI (a few seconds); GPUADVISOR_FUZZ_EXAMPLES=5000 for a long run.
FUZZ = settings(
    max_examples=int(os.environ.get("GPUADVISOR_FUZZ_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def check(text: str) -> None:
    """Every parser, and the whole import, on ``text``: facts that serialise, or ImportParseError."""
    for parse in [*PARSERS, lambda t, s: import_texts([(s, t)])]:
        try:
            rig = parse(text, "fuzz.txt")
        except ImportParseError as e:
            msg = str(e)
            assert msg.startswith("fuzz.txt") and "\n" not in msg, msg
            continue
        data = json.loads(rig.to_json())
        facts.from_dict(data)  # what was produced is a valid scan


@st.composite
def mangled(draw: st.DrawFn) -> str:
    lines = draw(st.sampled_from(CORPUS)).splitlines()
    op = draw(st.sampled_from(["cut", "shuffle", "delete", "duplicate", "mangle", "splice"]))
    if op == "cut":
        text = "\n".join(lines)
        return text[: draw(st.integers(0, len(text)))]
    if op == "shuffle":
        return "\n".join(draw(st.permutations(lines)))
    if op == "delete" and lines:
        drop = set(draw(st.lists(st.integers(0, len(lines) - 1), max_size=20)))
        return "\n".join(x for i, x in enumerate(lines) if i not in drop)
    if op == "duplicate" and lines:
        i = draw(st.integers(0, len(lines) - 1))
        return "\n".join(lines[: i + 1] + lines[i : i + draw(st.integers(1, 6))] + lines[i + 1 :])
    if op == "mangle" and lines:
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(lines) - 1))
            line = lines[i]
            j = draw(st.integers(0, len(line)))
            lines[i] = line[:j] + draw(st.text(max_size=6)) + line[j + draw(st.integers(0, 4)) :]
        return "\n".join(lines)
    other = draw(st.sampled_from(CORPUS)).splitlines()  # splice: the head of one output on the tail of another
    return "\n".join(lines[: draw(st.integers(0, len(lines)))] + other[draw(st.integers(0, len(other))) :])


@FUZZ
@given(st.text(max_size=2000))
def test_random_text(text: str) -> None:
    check(text)


@FUZZ
@given(st.binary(max_size=2000), st.sampled_from(["utf-8", "latin-1", "utf-16-le"]))
def test_random_bytes_decoded(data: bytes, encoding: str) -> None:
    check(data.decode(encoding, errors="replace"))
    try:
        check(decode(data, "fuzz.txt"))
    except ImportParseError as e:
        assert "\n" not in str(e)


@FUZZ
@given(mangled())
def test_real_outputs_mangled(text: str) -> None:
    check(text)


@FUZZ
@given(
    st.lists(
        st.sampled_from(
            [
                "\tGPU0\tGPU1\tCPU Affinity",
                "GPU0\t X \tNV4\t0-7",
                "GPU1\tNV4\t X \t0-7",
                "GPU0 X OK",
                " GPU1\tOK\tX",
                "GPU 0: NVIDIA H100 (UUID: GPU-1)",
                "\t Link 0: 26.562 GB/s",
                "\t Link 1: <inactive>",
                "==============NVSMI LOG==============",
                "GPU 00000000:18:00.0",
                "    PCI",
                "        GPU Link Info",
                "            Link Width",
                "                Max : 16x",
                "01:00.0 3D controller: NVIDIA Corporation GH100 [H100]",
                "\tBus: primary=00, secondary=01, subordinate=01",
                "\t\tLnkSta: Speed 32GT/s, Width x16",
                "# nThread 1 nGpus 2 minBytes 8 maxBytes 8",
                "#  Rank  0 Group  0 Pid 1 on h device  0 [0x01] G",
                "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong",
                "  8  2  float  sum  -1  1.0  0.0  0.0  0  1.0  0.0  0.0  0",
                "<nvidia_smi_log>",
                '<gpu id="0000:01:00.0">',
                "</gpu>",
                "| NVIDIA-SMI 580.1  Driver Version: 580.1  CUDA Version: 13.0 |",
                "|====+====+====|",
                "|   0  H100  On  | 00000000:01:00.0 Off | 0 |",
                "|   5  H100  Off  | 00000000:05:00.0 Off | 0 |",
                "| N/A   34C    P8    42W / 300W |  0MiB / 16160MiB |  0%  Default |",
                "Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error",
                "Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost",
                "",
                "Legend:",
                "NIC Legend:",
                "  NIC0: mlx5_0",
            ]
        ),
        max_size=40,
    )
)
def test_fragments_of_every_format_in_any_order(lines: list[str]) -> None:
    check("\n".join(lines))
