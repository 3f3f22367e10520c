"""Classes of pastes the corpus showed misread, one test each, on text written by hand from the tool's
documentation or source (quoted at each test), so that every paste of the class reads, not one file.

- nccl-tests names its binary again below its rows (``# Collective test concluded: NAME``, nccl-tests
  src/common.cu: ``PRINT("# Collective test concluded: %s\\n", program_name)``);
- an ``lsmod | grep NAME`` that printed nothing says NAME is not loaded; modinfo says installed, not loaded;
- an ``nvidia-smi -q`` fragment from inside one GPU's section, without its ``GPU 0000:..`` line;
- nvidia-smi's banner line copied without its box;
- p2pBandwidthLatencyTest's ``P2P Connectivity Matrix`` (``cudaDeviceCanAccessPeer`` as 1 or 0) and a matrix
  row cut inside a number (the sample prints every cell ``%6.02f``);
- a storage output that cannot be read (JSON with ``...`` elisions) beside one that can.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor import facts
from gpuadvisor.importers import import_texts, parse_text
from gpuadvisor.importers.sections import split_sections

CORPUS = Path(__file__).parent / "corpus"


def _read(text: str, name: str = "paste.txt") -> facts.Rig:
    return import_texts([(name, text)])


# -- nccl-tests: the collective named below the rows ---------------------------------------------------------

_ROWS = """\
      262144         65536     float    none       0    43.00    6.10    6.10      0    42.86    6.12    6.12      0
     1048576        262144     float    none       0    151.9    6.90    6.90      0    149.8    7.00    7.00      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 6.4
#
# Collective test concluded: broadcast_perf
"""


def test_nccl_rows_named_by_the_concluded_line() -> None:
    rig = _read(_ROWS)
    (m,) = rig.measurements
    assert (m.kind, m.value_gbps) == ("broadcast", 6.90)


def test_nccl_the_starting_line_wins_over_a_later_concluded_line() -> None:
    text = "# Collective test starting: reduce_perf\n" + _ROWS.replace("broadcast_perf", "reduce_perf")
    assert [m.kind for m in _read(text).measurements] == ["reduce"]


def test_nccl_concluded_line_without_its_hash() -> None:
    text = _ROWS.replace("# Collective test concluded", "Collective test concluded")
    assert [m.kind for m in _read(text).measurements] == ["broadcast"]


# -- lsmod | grep that printed nothing --------------------------------------------------------------------


@pytest.mark.parametrize(
    "paste",
    [
        "$ lsmod | grep nvidia_peermem\n$ lsmod | grep nv_peer_mem\n$\n",
        "[root@gpu1 ~]# lsmod | grep -i PEERMEM\n[root@gpu1 ~]#\n",
        "# lsmod | grep nv_peer\n#\n\n# uname -r\n",
        "```\n$ sudo lsmod | grep -E 'nv_peer_mem|nvidia_peermem'\n```\n```\n$ nvidia-smi -L\n```\n",
    ],
)
def test_an_empty_lsmod_grep_says_not_loaded(paste: str) -> None:
    rig = _read(paste)
    assert rig.network.peermem_loaded is False
    assert any("printed nothing" in p for p in rig.problems)


def test_an_lsmod_grep_with_its_row_is_loaded_and_an_empty_one_does_not_undo_it() -> None:
    paste = "$ lsmod | grep nv_peer_mem\n$ lsmod | grep nvidia_peermem\nnvidia_peermem         16384  0\n"
    assert _read(paste).network.peermem_loaded is True


def test_an_lsmod_grep_at_the_end_of_the_paste_is_not_shown() -> None:
    """The paste ends after the command: its output is not shown, not empty (nothing else is read)."""
    with pytest.raises(Exception, match="not recognised"):
        _read("$ lsmod | grep nvidia_peermem\n")


def test_an_empty_grep_for_another_module_says_nothing_of_peer_memory() -> None:
    rig = _read("$ lsmod | grep gdrdrv\n$ nvidia-smi -L\nGPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-1)\n")
    assert rig.network.peermem_loaded is None


_MODINFO = """\
# modinfo nvidia_peermem
filename:       /lib/modules/5.15.0-91-generic/updates/dkms/nvidia-peermem.ko
version:        535.154.05
license:        Dual BSD/GPL
description:    NVIDIA GPU memory plug-in
"""


def test_modinfo_is_read_as_installed_not_loaded() -> None:
    rig = _read(_MODINFO)
    assert rig.network.peermem_loaded is None
    assert any("modinfo nvidia_peermem: installed" in p for p in rig.problems)


# -- nvidia-smi -q: a fragment of one GPU's section -----------------------------------------------------------

# The keys and layout of nvidia-smi -q's GPU section (nvidia-smi's man page, "GPU Attributes"), indented as
# nvidia-smi indents them; the GPU line above them not pasted.
_SMI_Q_FRAGMENT = """\
    Product Name                          : NVIDIA A100-SXM4-40GB
    Persistence Mode                      : Enabled
    Serial Number                         : N/A
    GPU UUID                              : GPU-11111111-2222-3333-4444-555555555555
    Minor Number                          : 3
    PCI
        Bus                               : 0x47
        Device                            : 0x00
        Domain                            : 0x0000
        Bus Id                            : 00000000:47:00.0
"""


def test_smi_q_fragment_is_one_gpu_with_its_pci_bus_id() -> None:
    rig = _read("some text before\n" + _SMI_Q_FRAGMENT)
    (g,) = rig.gpus
    assert (g.name, g.bus_id, g.uuid, g.persistence_mode) == (
        "NVIDIA A100-SXM4-40GB",
        "0000:47:00.0",
        "GPU-11111111-2222-3333-4444-555555555555",
        True,
    )
    assert g.serial is None and "N/A" in g.unavailable["serial"]
    assert g.temperature_c is None and facts.ELIDED in g.unavailable["temperature_c"]  # above or below: not shown
    assert rig.software.driver_version is None


def test_one_smi_q_key_alone_is_not_a_gpu() -> None:
    with pytest.raises(Exception, match="not recognised"):
        _read("    Product Name                          : NVIDIA A100-SXM4-40GB\n    Something : else\n")


# -- nvidia-smi's banner without its box ----------------------------------------------------------------------


def test_smi_banner_without_its_box_gives_the_versions() -> None:
    text = "NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     \n"
    rig = _read(text)
    assert (rig.software.driver_version, rig.software.cuda_driver_version) == ("535.104.05", "12.2")
    assert rig.gpus == []


def test_prose_about_nvidia_smi_is_not_a_banner() -> None:
    with pytest.raises(Exception, match="not recognised"):
        _read("NVIDIA-SMI 535 is the version we run on every node, see the driver notes\n")


# -- p2pBandwidthLatencyTest: connectivity matrix, and a row cut inside a number -------------------------------

# As the sample prints them (cuda-samples p2pBandwidthLatencyTest.cu: "P2P Connectivity Matrix" then
# printf("%6d", access ? 1 : 0); the bandwidth matrices printf("%6.02f ", ...)); the values written by hand.
_P2P = """\
P2P Connectivity Matrix
     D\\D     0     1     2
     0\t     1     1     0
     1\t     1     1     0
     2\t     0     0     1
Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)
   D\\D     0      1      2
     0 780.10  40.20  11.30
     1  40.10 781.00  11.20
     2  11.30  11.10 779.90
Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)
   D\\D     0      1      2
     0 790.00  75.10  1
"""


def test_p2p_connectivity_matrix_says_which_pairs_used_p2p() -> None:
    rig = _read(_P2P)
    uni = {tuple(m.gpus): m for m in rig.measurements if m.kind == "p2p_unidir"}
    assert uni[(0, 1)].p2p_enabled is True and uni[(0, 1)].value_gbps == 40.20
    assert uni[(0, 2)].p2p_enabled is False  # cannot access: a copy through host memory
    assert rig.topology.p2p_read is not None
    assert rig.topology.p2p_read[0] == ["X", "OK", "NS"]


def test_p2p_row_cut_inside_a_number_keeps_the_cells_before_it() -> None:
    rig = _read(_P2P)
    bi = {tuple(m.gpus): m.value_gbps for m in rig.measurements if m.kind == "p2p_bidir"}
    assert bi == {(0, 1): 75.10}  # "1" is the start of a number the paste cut: not shown, never 1 GB/s


def test_p2p_row_cut_inside_the_decimals_is_not_a_value() -> None:
    rig = _read(_P2P.replace("     0 790.00  75.10  1\n", "     0 790.00  75.1"))
    bi = {tuple(m.gpus): m.value_gbps for m in rig.measurements if m.kind == "p2p_bidir"}
    assert bi == {}


# -- storage: an output that cannot be read beside one that can ------------------------------------------------

# nvme-cli's "nvme list" table (its documentation's example layout), then "nvme list -o json" with fields elided
_NVME = """\
Node             SN                   Model                                    Namespace Usage                      Format           FW Rev
---------------- -------------------- ---------------------------------------- --------- -------------------------- ---------------- --------
/dev/nvme0n1     S4EWNX0R123456       Samsung SSD 980 PRO 1TB                  1         200.00  GB /   1.00  TB    512   B +  0 B   5B2QGXA7
$ nvme list -o json
{
  "Devices" : [
    {
      "DevicePath" : "/dev/nvme0n1",
      ...
    }
  ]
}
"""  # noqa: E501


def test_an_unreadable_json_beside_a_readable_table_is_a_note() -> None:
    parts = parse_text(_NVME, "paste.txt")
    rig = _read(_NVME)
    (dev,) = rig.storage.paths[0].devices
    assert (dev.name, dev.model, dev.size_bytes) == ("nvme0n1", "Samsung SSD 980 PRO 1TB", 10**12)
    assert any("line 5" in n and "not JSON" in n and "not read" in n for n in parts[0].notes)


# -- outputs of one kind pasted one after another -------------------------------------------------------------


def test_nvbandwidth_banner_is_one_output() -> None:
    """nvbandwidth's banner ("nvbandwidth Version:" then "Built from Git version:") starts one output, not two
    (the first of one line, refused as holding nothing)."""
    paste = (CORPUS / "copies/nvbandwidth_a100-h2d-sm_yuyuankang.txt").read_text(encoding="utf-8")
    parts = parse_text(paste, "nvbandwidth.txt")
    assert [p.kind for p in parts] == ["nvbandwidth"]
    assert not [n for n in parts[0].notes if "not read" in n]


_LSPCI_FULL = """\
01:00.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 80GB] (rev a1)
\tCapabilities: [60] Express (v2) Endpoint, MSI 00
\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM not supported
\t\tLnkSta:\tSpeed 16GT/s, Width x16
"""  # lspci -vv's layout (lspci(8)); the values written by hand


def test_lspci_lines_grepped_after_their_own_command_are_another_device() -> None:
    text = _LSPCI_FULL + "$ sudo lspci -vv | grep -E 'LnkCap|LnkSta'\n\t\tLnkCap:\tPort #0, Speed 8GT/s, Width x16\n"
    text += "\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16\n"
    assert [s.kind for s in split_sections(text)] == ["lspci", "lspci"]
    rig = _read(text)
    assert rig.gpus[0].pcie.current_gen == 4  # the A100's own link, not the grepped one's 2.5 GT/s


_HEADER_NO_ROWS = """\
# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""  # noqa: E501  (nccl-tests 2.x's header, as src/common.cu prints it; the run's rows not pasted)


@pytest.mark.parametrize("between", ["$ ./build/broadcast_perf -b 256K -e 128M\n", "\n"])
def test_nccl_rows_after_another_runs_header_are_their_own_run(between: str) -> None:
    """Rows of another width than the header above (no root column) or after a command of their own: another
    run, read by its rows' shape, never refused with the run above."""
    rows = _ROWS.replace("    none       0 ", "    none ")  # no root column: 12 cells, the header above 13
    text = _HEADER_NO_ROWS + between + rows
    assert [s.kind for s in split_sections(text)] == ["nccl-tests", "nccl-tests"]
    parts = parse_text(text, "runs.txt")
    assert not [n for n in parts[0].notes if "not read" in n]


# -- found while collecting new pastes (tests/fixtures/import/pastes/README.md) --------------------------------

PASTES = Path(__file__).parent / "fixtures" / "import" / "pastes"


def test_noheader_csv_is_read_by_the_fields_its_command_names() -> None:
    rig = import_texts([("p.txt", (PASTES / "smi-csv-noheader_gb10-na-memory_llamastash.txt").read_text())])
    (g,) = rig.gpus
    assert (g.name, g.temperature_c, g.memory_total_bytes) == ("NVIDIA GB10", 39.0, None)
    assert "[N/A]" in g.unavailable["memory_total_bytes"]


def test_a_noheader_csv_without_its_command_reads_only_the_cells_whose_form_says_what_they_are() -> None:
    """Without the command that names its fields, a row's GPU name is read; the "[N/A]" and bare numbers are not
    (a "0" may be an index, a fan or a utilization)."""
    (g,) = _read("NVIDIA GB10, [N/A], [N/A], 0, 39\n").gpus
    assert (g.name, g.memory_total_bytes, g.bus_id, g.index) == ("NVIDIA GB10", None, None, 0)


def test_a_csv_under_a_zsh_prompt_leaves_no_line_unread() -> None:
    text = (PASTES / "smi-csv_a5500-zsh-prompt_duct.txt").read_text(encoding="utf-8")
    parts = parse_text(text, "p.txt")
    assert [p.kind for p in parts] == ["smi-csv"] and parts[0].notes == []
    (g,) = import_texts([("p.txt", text)]).gpus
    assert (g.name, g.bus_id, g.memory_total_bytes) == ("NVIDIA RTX A5500 Laptop GPU", "0000:01:00.0", 16384 * 2**20)


def test_a_one_field_csv_under_its_command_is_read() -> None:
    text = "$ nvidia-smi --query-gpu=name --format=csv\nname\nNVIDIA GeForce GTX 1080 Ti\n"  # as the corpus's jchodera
    assert [s.kind for s in split_sections(text)] == ["smi-csv"]
    assert [g.name for g in _read(text).gpus] == ["NVIDIA GeForce GTX 1080 Ti"]


MASKED = [
    "GPU-xxxxx11f-ce5d-xxxx-xxxx-6ea62fb1xxxx",
    "GPU-1234abcd-XXXX-XXXX-XXXX-XXXXXXXXXXXX",
    "MIG-****0000-1111-2222-3333-444455556666",
]


@pytest.mark.parametrize("uuid", MASKED)
def test_a_partly_masked_uuid_is_not_shown(uuid: str) -> None:
    from gpuadvisor.importers.values import placeholder

    assert placeholder(uuid)
    assert not placeholder("GPU-45535fc5-0734-b693-29f7-43fe940f6e67")
    rig = _read(f"GPU 0: NVIDIA A100-SXM4-80GB (UUID: {uuid})\n")
    assert rig.gpus[0].uuid is None and rig.gpus[0].unavailable["uuid"].startswith(facts.ELIDED)


def test_xml_with_a_partly_masked_uuid() -> None:
    rig = import_texts([("p.txt", (PASTES / "smi-q-x_410m-uuid-partly-masked-cut_1panel.txt").read_text())])
    (g,) = rig.gpus
    assert (g.name, g.bus_id, g.uuid, g.persistence_mode) == ("GeForce 410M", "0000:01:00.0", None, False)
    assert "not shown" in g.unavailable["uuid"]
    assert rig.software.driver_version == "390.157"


def test_a_p2p_matrix_labelled_rw_is_both_read_and_write() -> None:
    """A script's label "topo -p2p rw" over one matrix (the corpus's club-3090 post): read and write alike."""
    rig = import_texts([("p.txt", (CORPUS / "topo/topo-m-p2p-rw_2x5090-markdown-details_paulp83.txt").read_text())])
    assert rig.topology.p2p_read == rig.topology.p2p_write == [["X", "GNS"], ["GNS", "X"]]
    assert not any("without its mode" in p for p in rig.problems)


def test_a_runs_header_after_rows_starts_the_next_run() -> None:
    """Rows of one run (its header and binary not shown), then the next run's command and "# nThread" line: the
    next run is its own output (named by its command), so the file reads. The rows are the old layout's (no redop
    or root column) with count = size / (4 B x 2 ranks): all_gather, the one such test with a per-rank count."""
    text = (PASTES / "nccl-tests_rows-then-next-runs-header-cut_nccl340.txt").read_text(encoding="utf-8")
    assert [s.start for s in split_sections(text)] == [1, 17]
    first, second = import_texts([("p.txt", text)]).measurements
    assert (first.kind, first.value_gbps) == ("all_gather", 20.34)
    assert (second.kind, second.status, second.rows) == ("broadcast", "skipped", [])


def test_nvidia_smi_that_cannot_talk_to_the_driver_is_read_not_refused() -> None:
    rig = import_texts([("p.txt", (PASTES / "smi-failed-no-driver_gpu-operator751.txt").read_text())])
    assert rig.gpus == [] and rig.software.driver_version is None
    assert "could not talk to the NVIDIA driver" in rig.software.unavailable["driver_version"]
    assert any("couldn't communicate" in p for p in rig.problems)


def test_nvidia_smis_inforom_warning_is_read() -> None:
    rig = import_texts([("p.txt", (PASTES / "smi-warning-inforom-corrupted_microk8s3097.txt").read_text())])
    assert any("GPU 0000:00:05.0: nvidia-smi reports its infoROM corrupted" in p for p in rig.problems)
    table = (CORPUS / "smi/smi_tesla-p4_slackr31337.txt").read_text(encoding="utf-8")
    above = import_texts([("p.txt", "WARNING: infoROM is corrupted at gpu 0000:00:05.0\n" + table)])
    assert len(above.gpus) == 1 and any("infoROM corrupted" in p for p in above.problems)


def test_another_tools_table_with_a_name_column_is_not_lsblk() -> None:
    """lsblk prints only its own columns (util-linux misc-utils/lsblk.c); `ollama ps` (NAME ID SIZE PROCESSOR
    UNTIL, https://github.com/ollama/ollama/issues/6160) is not block devices, its "22 GB" no 22-byte disk."""
    from gpuadvisor.importers.blockdev import starts_lsblk

    assert starts_lsblk(["NAME        MAJ:MIN RM   SIZE RO TYPE MOUNTPOINTS"], 0, None)
    assert starts_lsblk(["NAME   FSTYPE FSVER LABEL UUID FSAVAIL FSUSE% MOUNTPOINTS"], 0, None)
    assert not starts_lsblk([" NAME                           ID           SIZE  PROCESSOR UNTIL"], 0, None)
    assert not starts_lsblk(["NAME      READY   STATUS    RESTARTS   AGE"], 0, None)  # kubectl get pods


def test_a_q_block_grepped_alone_is_one_gpu_and_a_last_value_no_longer_word_starts_with_is_whole() -> None:
    """A -q block grepped alone (a "Remapped Rows" block as posted, see the s11-smi-q corpus): one GPU of unknown
    bus id; "Yes" at the end of a paste is whole (no -q value starts with it), "No" may be the start of "Not
    Active", so a paste that ends on it leaves the value unknown."""
    block = "    Remapped Rows\n        Correctable Error : 0\n        Uncorrectable Error : 4\n        Pending : "
    yes = import_texts([("p.txt", block + "Yes")])
    assert len(yes.gpus) == 1 and yes.gpus[0].bus_id is None and yes.gpus[0].remapped_rows_pending is True
    no = import_texts([("p.txt", block + "No")])
    assert no.gpus[0].remapped_rows_pending is None and "cut mid-line" in no.gpus[0].why("remapped_rows_pending")
    assert import_texts([("p.txt", block + "No\n")]).gpus[0].remapped_rows_pending is False
