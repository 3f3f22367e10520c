"""Reading classes fixed in session 16 (tests/test_s28_* to tests/test_s32_*), each on another real public paste of the
same class than the one it was built from (tests/corpus/sec6-*/, each read by hand before the tool ran on it).

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

from gpuadvisor.importers import import_files
from tests.test_s32_reading import _one, _raised

# --- PaddleSeg's environment summary with a GPU name cut at four words ------------------------------------------


def test_paddleseg_summary_padded_to_72_columns_reads_one_gpu_of_unknown_name_and_no_unread_heading() -> None:
    # https://github.com/PaddlePaddle/PaddleSeg/issues/3730: '------------Environment Information-------------' and
    # the next five lines padded with spaces to 72 columns, 'Python: 3.9.19 (main, Mar 21 2024, ...)', 'GPUs used: 1',
    # 'CUDA_VISIBLE_DEVICES: None', "GPU: ['GPU 0: NVIDIA GeForce']" (nvidia-smi -L's line cut at four words)
    rig = import_files([_one("sec6-env", "paddleseg-env-info-windows-1-gpu-name-cut-nvidia-geforce-padded")])
    (gpu,) = rig.gpus
    assert gpu.index == 0 and gpu.name is None and "'NVIDIA GeForce'" in gpu.why("name")
    assert gpu.bus_id is None and gpu.memory_total_bytes is None
    assert rig.software.python_version == "3.9.19" and "CUDA_VISIBLE_DEVICES" not in rig.software.env
    # the summary's own '---Environment Information---' heading is its first line, not a line left unread
    assert rig.problems == []
    assert not {"GA301", "GA801"} & set(_raised(rig))


def test_another_paddleseg_summary_with_the_same_cut_name_is_one_gpu_not_a_geforce_model() -> None:
    # https://github.com/PaddlePaddle/PaddleSeg/issues/3725: 'Python: 3.9.19 (main, May  6 2024, ...)',
    # 'NVCC: Build cuda_11.2.r11.2/compiler.29618528_0', "GPU: ['GPU 0: NVIDIA GeForce']", 'PaddlePaddle: 2.5.2'
    rig = import_files([_one("sec6-env", "paddleseg-env-info-windows-1-gpu-name-cut-nvidia-geforce_alanxinn")])
    assert [(g.index, g.name) for g in rig.gpus] == [(0, None)]
    assert rig.software.python_version == "3.9.19" and rig.problems == []


# --- nvidia-smi nvlink --status whose GPU lines carry no UUID ----------------------------------------------------


def test_dgx1_nvlink_status_without_uuids_reads_gpus_0_and_7_with_six_nvlink2_links_each() -> None:
    # https://www.microway.com/hpc-tech-tips/nvidia-smi_control-your-gpus/ ('Short summaries from nvidia-smi on
    # DGX-1'): 'GPU 0: Tesla V100-SXM2-32GB' over six '\t Link N: 25.781 GB/s' lines, '[snip]', then GPU 7 alike
    rig = import_files([_one("sec6-nvlink", "nvlink-status-dgx1-8x-v100-sxm2-32gb-no-uuid")])
    assert [(g.index, g.name, g.uuid) for g in rig.gpus] == [
        (0, "Tesla V100-SXM2-32GB", None),
        (7, "Tesla V100-SXM2-32GB", None),
    ]
    for gpu in rig.gpus:
        assert gpu.uuid is None and gpu.why("uuid")
        assert [(link.link, link.active, link.version) for link in gpu.nvlinks or []] == [
            (n, True, 2) for n in range(6)
        ]
    assert any("[snip]" in p for p in rig.problems)
    assert not {"GA204", "GA205"} & set(_raised(rig))


# --- a port's GID table from ibv_devinfo -v, shown without its 'port:' and 'state:' lines ------------------------


def test_bnxt_re_gid_table_under_elided_devinfo_is_one_roce_port_link_up_state_unknown() -> None:
    # https://github.com/linux-rdma/rdma-core/commit/bbce02ea333469c37a5b2b84588e3dc8ff750230 (its message):
    # 'hca_id: bnxt_re2', 'fw_ver: 216.0.220.0', four '  .' lines, '\tphys_state:     LINK_UP (5)', then
    # 'GID[  0]: fe80:...:b0f0, RoCE v1' ... 'GID[  3]: ::ffff:192.170.1.101, RoCE v2'
    rig = import_files([_one("sec6-rdma", "ibv-devinfo-v-bnxt-re2-elided-to-phys-state")])
    (port,) = rig.network.rdma_ports or []
    assert (port.device, port.state, port.phys_state, port.link_layer) == ("bnxt_re2", None, "LinkUp", "Ethernet")
    assert port.firmware == "216.0.220.0" and port.rate_gbps is None
    assert "'port:'" in port.why("port") and "4 GID(s), RoCE v1/v2" in port.why("state")
    assert not {"GA803", "GA822", "GA823", "GA826"} & set(_raised(rig))
