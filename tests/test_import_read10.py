"""Real pastes the readers once misread (GPU side): each class is read from the paste it came from."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor import rules
from gpuadvisor.facts import Rig
from gpuadvisor.importers import import_texts

CORPUS = Path(__file__).parent / "corpus"


def test_lspci_s_block_named_a_bridge_is_not_a_second_gpu() -> None:
    # https://github.com/noonghunna/club-3090/issues/1028: '# lspci -vvv -s BUS' blocks of grepped Lnk/ACS lines,
    # the GPU's and then its upstream bridge's, the header calling the second an upstream bridge
    path = next((CORPUS / "s9-lspci").glob("lspci-t-tail-then-grep-lnk-acs-gpu-and-bridge*.txt"))
    rig = import_texts([(path.name, path.read_text())])
    assert [g.bus_id for g in rig.gpus] == ["0000:01:00.0"]
    assert (rig.gpus[0].pcie.current_gen, rig.gpus[0].pcie.current_width) == (1, 16)
    assert any("calls 0000:00:01.1 a port" in p for p in rig.problems)
    assert rig.network.acs is not None and rig.network.acs[0].control["ReqRedir"]


def test_smi_q_attached_gpus_over_one_cut_record_counts_them_all() -> None:
    # https://github.com/NVIDIA/nvidia-docker/issues/756 (banner, 'Attached GPUs : 8', GPU 0's record cut) and
    # https://github.com/NVIDIA/nvidia-docker/issues/914 (the paste starts at 'Attached GPUs : 8')
    for pattern, bus in (("smi-q_8gpu-first-1080ti*", "0000:04:00.0"), ("smi-q-no-banner-attached-8*", "0000:06:00.0")):
        path = next((CORPUS / "s8-smi-q").glob(pattern))
        rig = import_texts([(path.name, path.read_text())])
        assert [g.index for g in rig.gpus] == list(range(8))
        assert rig.gpus[0].bus_id == bus
        assert all(g.bus_id is None and g.name is None and g.uuid is None for g in rig.gpus[1:])
        assert not any("not recognised" in p for p in rig.problems)


# lspci's NVIDIA functions, written by hand in lspci's format (pci.ids names GH100 '[H100 SXM5 80GB]')
LSPCI = """
$ lspci | grep -i nvidia
{0} 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)
{1} 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)
"""


def _codes(rig: Rig) -> dict[str, str]:
    return {f.code: f.severity for f in rules.evaluate(rig) if f.severity != "not-checked"}


def test_cut_smi_table_beside_lspci_is_no_lost_gpu() -> None:
    # https://github.com/google/gvisor/issues/10413: a table pasted up to GPU 0's block, no Processes table below
    paste = (CORPUS / "s8-smi" / "smi_2xh100-cut-second-row_thundergolfer.txt").read_text().splitlines()
    text = "\n".join(paste[:11]) + "\n" + LSPCI.format("04:00.0", "05:00.0")
    rig = import_texts([("cut.txt", text)])
    assert [g.bus_id for g in rig.gpus] == ["0000:04:00.0"]
    assert (
        rig.node.nvidia_pci_functions is None and "not shown to its end" in rig.node.unavailable["nvidia_pci_functions"]
    )
    assert "GA810" not in _codes(rig)


def test_whole_smi_table_beside_lspci_still_finds_the_lost_gpu() -> None:
    # a table shown to its end (its Processes table below it) lists every GPU the driver has
    table = (CORPUS / "captures" / "lx_h100-80gb-hbm3__590.48.01.plain.txt").read_text()
    rig = import_texts([("whole.txt", table + LSPCI.format("00:09.0", "00:0a.0"))])
    assert rig.node.nvidia_pci_functions == ["0000:00:09.0", "0000:00:0a.0"]
    assert _codes(rig).get("GA810") == "fail"


def test_topo_row_ending_the_paste_after_its_cpu_list_keeps_the_cpu_affinity() -> None:
    # https://github.com/sgl-project/sglang/issues/10216: check_env's topology ends in GPU0's row after its NUMA
    # cell: '0-47,96-143' can only be the CPU Affinity cell, so the cells are in column order, the last one cut
    path = CORPUS / "s9-collect-env" / "sglang-check-env-8xh100-topo-cut-row0_zhaotyer.txt"
    rig = import_texts([(path.name, path.read_text())])
    assert rig.gpus[0].cpu_affinity == "0-47,96-143"
    assert rig.gpus[0].numa_node is None  # the row's last cell may be cut short: not read


def test_a_launcher_prefix_on_every_line_is_read_through() -> None:
    # a captured nvidia-smi table under the prefixes launchers document: kubectl logs --timestamps (RFC 3339 with
    # nanoseconds), mpirun --tag-output ('[job,rank]<stdout>:'), pdsh ('host: ')
    table = (CORPUS / "captures" / "lx_h100-80gb-hbm3__590.48.01.plain.txt").read_text()
    for prefix in ("2024-05-01T12:00:00.123456789Z ", "[2024-05-01 12:00:00] ", "[1,0]<stdout>:", "node01: "):
        text = "".join(prefix + x for x in table.splitlines(keepends=True))
        rig = import_texts([("p.txt", text)])
        assert [(g.name, g.bus_id) for g in rig.gpus] == [("NVIDIA H100 80GB HBM3", "0000:00:09.0")], prefix
        assert rig.software.driver_version == "590.48.01"
        assert any("read without it" in p for p in rig.problems)


def test_two_hosts_lines_and_kernel_logs_keep_their_prefixes() -> None:
    from gpuadvisor.importers.prefixed import strip_prefix

    two = "node01: GPU 0: NVIDIA H100 80GB HBM3\nnode02: GPU 0: NVIDIA H100 80GB HBM3\n"
    assert strip_prefix(two) == (two, None)
    log = "2024-05-01T12:00:00+0000 gpu01 kernel: NVRM: Xid (PCI:0000:04:00): 79\n" * 2
    assert strip_prefix(log) == (log, None)
