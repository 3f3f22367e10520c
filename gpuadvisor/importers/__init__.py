"""Turn what nvidia-smi, lspci and nccl-tests print into a scan, on machines where gpuadvisor is not installed.

``import_files([...])`` / ``import_dir(path)`` give one :class:`gpuadvisor.facts.Rig` with
``source.kind == "imported"``, ``source.files`` the files read, and ``rig.origins`` naming the file, line and
command behind each fact. Each parser takes text and returns the facts it holds as a (partial) Rig; input it
cannot read raises :class:`ImportParseError` (an ``InputError``: one line naming the file, the line and why).
The formats read, with how each is recognised, parsed and merged, are the rows of :mod:`.registry`.
"""

from __future__ import annotations

from gpuadvisor.importers.cuda_samples import parse_bandwidth_test, parse_p2p_latency_test
from gpuadvisor.importers.errors import ImportParseError
from gpuadvisor.importers.lspci import parse_lspci
from gpuadvisor.importers.merge import (
    detect,
    import_dir,
    import_files,
    import_machines,
    import_storage,
    import_texts,
    merge,
    parse_text,
)
from gpuadvisor.importers.nccl import parse_nccl_tests
from gpuadvisor.importers.nvlink import parse_nvlink_status
from gpuadvisor.importers.smi_query import parse_smi_q, parse_smi_xml
from gpuadvisor.importers.smi_summary import parse_smi_summary
from gpuadvisor.importers.topo import parse_topo_matrix, parse_topo_p2p

__all__ = [
    "ImportParseError",
    "detect",
    "import_dir",
    "import_files",
    "import_machines",
    "import_storage",
    "import_texts",
    "merge",
    "parse_bandwidth_test",
    "parse_lspci",
    "parse_nccl_tests",
    "parse_nvlink_status",
    "parse_p2p_latency_test",
    "parse_smi_q",
    "parse_smi_summary",
    "parse_smi_xml",
    "parse_text",
    "parse_topo_matrix",
    "parse_topo_p2p",
]
