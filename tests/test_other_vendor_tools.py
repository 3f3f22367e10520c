"""Other vendors' GPU tools are refused in one line that names the tool and its vendor, also where the tool prints
a table shaped like nvidia-smi's (Habana's hl-smi) that a reader would take rows of."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor.importers import import_files
from gpuadvisor.importers.errors import ImportParseError
from tests.corpus_cases import run_import

CORPUS = Path(__file__).parent / "corpus"


@pytest.mark.parametrize(
    ("path", "says"),
    [
        # each paste's source is in its folder's INDEX.toml (a Gaudi2 node's hl-smi; two Intel Flex GPUs' xpu-smi)
        ("s38-not-read/hl-smi-habana-gaudi2-hl-225-cut-at-aip3_danielfleischer.txt", "hl-smi output (an Intel Gaudi"),
        ("s35-not-read/xpu-smi-discovery-uhd770-and-flex-140-cut_jcourtat-ektacom.txt", "xpu-smi output (an Intel GPU"),
        ("s36-not-read/xpu-smi-discovery-d0-intel-flex-170-opensuse-cut-at-uuid_js333031.txt", "xpu-smi output"),
    ],
)
def test_another_vendors_tool_is_refused_by_name(path: str, says: str) -> None:
    assert run_import([CORPUS / path]) == (2, None)
    with pytest.raises(ImportParseError) as refused:
        import_files([CORPUS / path])
    assert says in str(refused.value) and "\n" not in str(refused.value)
