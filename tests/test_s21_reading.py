"""Held-out set 21's reading classes (GPU outputs), each on its s21 paste and another real public sample of the same
form.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import import_texts

TESTS = Path(__file__).parent
CORPUS = TESTS / "corpus"


def _read(path: Path | str, text: str | None = None):
    """The scan of a corpus file, or of ``text`` under the name ``path``."""
    name = Path(path).name
    return import_texts([(name, Path(path).read_text(encoding="utf-8") if text is None else text)])


def _unread(rig) -> list[str]:
    return [p for p in rig.problems if "not recognised" in p]


# --- class 1: a themed shell prompt, and a second table cut in its banner ---


def test_second_table_cut_in_driver_version_never_refuses_the_first():
    # https://github.com/bottlerocket-os/bottlerocket/pull/3718: 'nvidia-pr on Fedora ❯ k exec ... -- nvidia-smi',
    # one A10G table (driver 535.129.03, CUDA 12.2), then a second table cut at 'Driver Version: 535.129.'
    rig = _read(CORPUS / "s21-smi" / "kubectl-exec-smi-535-a10g-1e-then-second-table-cut-in-banner_arnaldo2792.txt")
    assert (rig.software.driver_version, rig.software.cuda_driver_version) == ("535.129.03", "12.2")
    assert [(g.name, g.bus_id, g.power_limit_w) for g in rig.gpus] == [("NVIDIA A10G", "0000:00:1e.0", 300.0)]
    assert not any("❯" in p for p in _unread(rig))  # the prompt line is glue, not an unread output


_TRIPLE_PROMPT = """\
```shell
  Administrator@yuluo-laptop ~ ❯❯❯ nvidia-smi
Tue Mar 12 20:52:14 2024
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 527.37       Driver Version: 527.37       CUDA Version: 12.0     |
|-------------------------------+----------------------+----------------------+
| GPU  Name            TCC/WDDM | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  NVIDIA GeForce ... WDDM  | 00000000:01:00.0 Off |                  N/A |
| N/A   54C    P0    N/A /  N/A |    109MiB /  3072MiB |      1%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
"""


def test_zsh_theme_prompt_with_repeated_glyph_is_glue():
    # a public CUDA setup guide on GitHub (a Windows laptop's zsh-themed prompt 'Administrator@yuluo-laptop ~ ❯❯❯'),
    # its table: driver 527.37, CUDA 12.0, one GPU at 00000000:01:00.0 with 3072MiB
    rig = _read("guide.md", _TRIPLE_PROMPT)
    assert rig.software.driver_version == "527.37"
    assert [(g.bus_id, g.memory_total_bytes) for g in rig.gpus] == [("0000:01:00.0", 3072 * 2**20)]
    assert _unread(rig) == []


def test_table_cut_inside_cuda_version_keeps_the_driver():
    # the same guide's banner, the file ending right after 'CUDA Version: 12.' (a cut, not a version)
    rig = _read("cut.txt", _TRIPLE_PROMPT.split("CUDA Version: 12.0")[0] + "CUDA Version: 12.")
    assert rig.software.driver_version == "527.37"
    assert rig.software.cuda_driver_version is None and "cut" in rig.software.unavailable["cuda_driver_version"]
