"""Real pastes the readers once misread (GPU side): each class is read from the paste it came from."""

from __future__ import annotations

from pathlib import Path

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
