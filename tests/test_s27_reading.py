"""Held-out set 27's reading classes (Akash's GPU JSON, a lone dcgmi diag row, a topo -m whose cells ran together,
a table whose line breaks were lost, perftest's completion error), each on its s26/s27 paste and another real public
sample of the same form.

Values are the pastes' own (quoted in each test), never this tool's output."""

from __future__ import annotations

from gpuadvisor.importers import import_texts
from tests.test_s21_reading import CORPUS, _read

# --- class 1: Akash's GPU inventory (provider-services tools psutil list gpu), whole or through jq ---


def test_akash_jq_objects_read_the_nvidia_cards_not_the_bmc():
    # https://github.com/akash-network/provider-configs/issues/29: ASPEED 1a03:2000, then seven 10de:1db8
    # 'GV100GL [Tesla V100 SXM3 32GB]' and an eighth NVIDIA object cut after its vendor id
    rig = _read(
        CORPUS / "s26-lspci" / "akash-psutil-list-gpu-jq-pci-vendor-product-aspeed-and-v100-sxm3-32gb-cut_vghiur.txt"
    )
    assert [g.name for g in rig.gpus] == ["Tesla V100 SXM3 32GB"] * 7 + [None]
    assert all(g.bus_id is None for g in rig.gpus)
    assert any("ASPEED" in p for p in rig.problems)


def test_akash_cards_json_reads_bus_ids_and_skips_the_virtio_display():
    # https://github.com/akash-network/provider-configs/issues/20: 'virtio0' (pci null), then 10de:20b7
    # 'GA100GL [A30 PCIe]' at 0000:00:05.0 and 0000:00:06.0, cut in the second card's 'subclass'
    rig = _read(CORPUS / "s27-lspci" / "akash-gpu-cards-json-virtio-then-two-a30-pcie-cut_tim-leaf-cloud.txt")
    assert [(g.name, g.bus_id) for g in rig.gpus] == [("A30 PCIe", "0000:00:05.0"), ("A30 PCIe", "0000:00:06.0")]


def test_another_akash_jq_paste_with_a_laptop_igpu():
    # https://github.com/akash-network/provider-configs/issues/39: 10de:24a0 'GA104 [Geforce RTX 3070 Ti Laptop
    # GPU]', then Intel 8086:46a6 'Alder Lake-P GT2 [Iris Xe Graphics]' (not read)
    text = (
        "@aero5x-akash:~/github$ provider-services tools psutil list gpu | jq '.cards[] | .pci | "
        "{vendor: .vendor, product: .product}'\n\n```\n"
        '{\n  "vendor": {\n    "id": "10de",\n    "name": "NVIDIA Corporation"\n  },\n'
        '  "product": {\n    "id": "24a0",\n    "name": "GA104 [Geforce RTX 3070 Ti Laptop GPU]"\n  }\n}\n'
        '{\n  "vendor": {\n    "id": "8086",\n    "name": "Intel Corporation"\n  },\n'
        '  "product": {\n    "id": "46a6",\n    "name": "Alder Lake-P GT2 [Iris Xe Graphics]"\n  }\n}\n\n```\n'
    )
    rig = import_texts([("akash.txt", text)])
    assert [g.name for g in rig.gpus] == ["Geforce RTX 3070 Ti Laptop GPU"]
    assert any("8086" in p for p in rig.problems)


def test_another_akash_cards_json_with_a_product_the_ids_list_did_not_know():
    # https://github.com/akash-network/provider-configs/pull/77: one card at 0000:02:00.0, driver nvidia,
    # vendor 10de, product 2f04 named 'unknown' (an RTX 5070 newer than the PCI ids list)
    text = (
        "provider-services tools psutil list gpu\n"
        '{\n  "cards": [\n    {\n      "address": "0000:02:00.0",\n      "index": 1,\n      "pci": {\n'
        '        "driver": "nvidia",\n        "address": "0000:02:00.0",\n'
        '        "vendor": {\n          "id": "10de",\n          "name": "NVIDIA Corporation"\n        },\n'
        '        "product": {\n          "id": "2f04",\n          "name": "unknown"\n        },\n'
        '        "revision": "0xa1",\n        "subsystem": {\n          "id": "417e",\n          "name": "unknown"\n'
        '        },\n        "class": {\n          "id": "03",\n          "name": "Display controller"\n        }\n'
        "      }\n    }\n  ]\n}\n"
    )
    rig = import_texts([("akash.json", text)])
    assert [(g.name, g.bus_id) for g in rig.gpus] == [(None, "0000:02:00.0")]
    assert "2f04" in rig.gpus[0].unavailable["name"]


# --- class 2: a dcgmi diag Metadata row pasted without its box ---


def test_a_lone_dcgmi_diag_device_ids_row_counts_the_gpus():
    # https://github.com/NVIDIA/DCGM/pull/286: '| GPU Device IDs Detected   | 3182, 3182, 3182, 3182, 3182, 3182,
    # 3182       |' (Before) and the same row as 'GPU PCI Device IDs Detected' (After)
    rig = _read(CORPUS / "s27-dcgm" / "dcgmi-diag-one-metadata-row-device-ids-3182-before-after_cluster2600.txt")
    assert [g.index for g in rig.gpus] == list(range(7))
    assert all(g.name is None and "3182" in g.unavailable["name"] for g in rig.gpus)


def test_another_lone_device_ids_row_from_the_issue_it_answers():
    # https://github.com/NVIDIA/DCGM/issues/282: the row quoted alone in a fence, DCGM 4.4.1
    text = "```\n| GPU Device IDs Detected   | 3182, 3182, 3182, 3182, 3182, 3182, 3182       |\n```\n"
    rig = import_texts([("diag.txt", text)])
    assert len(rig.gpus) == 7
    assert rig.software.driver_version is None  # not shown


def test_a_device_ids_row_cut_short_counts_nothing():
    # the same row as https://github.com/NVIDIA/DCGM/issues/282's full table would be cut after its first id: a row
    # without its closing bar may list too few
    text = (
        "| Driver Version Detected   | 580.95.05                                      |\n"
        "| GPU Device IDs Detected   | 3182, 31"
    )
    rig = import_texts([("diag.txt", text)])
    assert rig.gpus == [] and rig.software.driver_version == "580.95.05"


# --- class 3: nvidia-smi topo -m whose cells ran together (a web page's table render) ---


def test_topo_rows_run_together_read_their_link_codes_not_their_affinity():
    # https://ai-atlas-a.chatqaq.com/en/posts/understanding-and-analyzing-nvidia-gpu-topology-in-linux/:
    # 'GPU0GPU1GPU2CPU AffinityNUMA AffinityGPU NUMA ID' over 'GPU0XNODENODE0-310N/A' ...: every pair NODE;
    # '0-310' is 0-31 and 0 (or 0-3 and 10): not read
    rig = _read(CORPUS / "s27-topo" / "topo-m-blog-table-cells-run-together-three-gpus-node_ai-atlas.txt")
    assert len(rig.gpus) == 3
    m = rig.topology.matrix
    assert [m[a][b] for a in range(3) for b in range(3) if a != b] == ["NODE"] * 6
    assert all(g.cpu_affinity is None and "ran together" in g.unavailable["cpu_affinity"] for g in rig.gpus)


# the DGX-1 example of RSE Sheffield's "Lab 05: Multi-GPU and Benchmarking" (its Jekyll page, permalink
# /education/intro_dl_sharc_dgx1/lab05/ on https://rse.shef.ac.uk): the header's GPU names and its first NIC name
# ran together ('GPU0GPU1...GPU7mlx5_0'), the rows tab-separated, 'SOC' links (drivers before 2018)
DGX1 = (
    "\t    GPU0GPU1GPU2GPU3GPU4GPU5GPU6GPU7mlx5_0\tmlx5_2\tmlx5_1\tmlx5_3\tCPU Affinity\n"
    "GPU0\t X \tNV1\tNV1\tNV1\tNV1\tSOC\tSOC\tSOC\tPIX\tSOC\tPHB\tSOC\t1-1\n"
    "GPU1\tNV1\t X \tNV1\tNV1\tSOC\tNV1\tSOC\tSOC\tPIX\tSOC\tPHB\tSOC\t1-1\n"
    "GPU2\tNV1\tNV1\t X \tNV1\tSOC\tSOC\tNV1\tSOC\tPHB\tSOC\tPIX\tSOC\t1-1\n"
    "GPU3\tNV1\tNV1\tNV1\t X \tSOC\tSOC\tSOC\tNV1\tPHB\tSOC\tPIX\tSOC\t1-1\n"
    "GPU4\tNV1\tSOC\tSOC\tSOC\t X \tNV1\tNV1\tNV1\tSOC\tPIX\tSOC\tPHB\t1-1\n"
    "GPU5\tSOC\tNV1\tSOC\tSOC\tNV1\t X \tNV1\tNV1\tSOC\tPIX\tSOC\tPHB\t1-1\n"
    "GPU6\tSOC\tSOC\tNV1\tSOC\tNV1\tNV1\t X \tNV1\tSOC\tPHB\tSOC\tPIX\t1-1\n"
    "GPU7\tSOC\tSOC\tSOC\tNV1\tNV1\tNV1\tNV1\t X \tSOC\tPHB\tSOC\tPIX\t1-1\n"
    "mlx5_0\tPIX\tPIX\tPHB\tPHB\tSOC\tSOC\tSOC\tSOC\t X \tSOC\tPHB\tSOC\n"
    "mlx5_2\tSOC\tSOC\tSOC\tSOC\tPIX\tPIX\tPHB\tPHB\tSOC\t X \tSOC\tPHB\n"
    "mlx5_1\tPHB\tPHB\tPIX\tPIX\tSOC\tSOC\tSOC\tSOC\tPHB\tSOC\t X \tSOC\n"
    "mlx5_3\tSOC\tSOC\tSOC\tSOC\tPHB\tPHB\tPIX\tPIX\tSOC\tPHB\tSOC\t X\n"
)


def test_a_topo_header_whose_gpu_and_nic_names_ran_together():
    rig = import_texts([("topo.txt", DGX1)])
    assert len(rig.gpus) == 8
    m = rig.topology.matrix
    assert (m[0][1], m[0][5], m[4][7]) == ("NV1", "SYS", "NV1")  # SOC is the old name of SYS
    assert rig.topology.nics == ["mlx5_0", "mlx5_2", "mlx5_1", "mlx5_3"]


# --- class 4: an nvidia-smi table whose line breaks were lost (all on one line, spaces squeezed) ---


def test_a_flattened_535_table_reads_its_gpu():
    # http://www.nshx.cn/Finance/31220.html: '+---...---+ | NVIDIA-SMI 535.129.03 Driver Version: 535.129.03 CUDA
    # Version: 12.2 | |---...' then '| 0 NVIDIA A100-SXM4... On | 00000000:00:1B.0 Off | Off| | N/A 37C P0 55W / 400W |
    # 1024MiB / 40960MiB | 0% Default |'
    rig = _read(CORPUS / "s26-smi" / "smi-535-one-line-flattened-blog-a100-sxm4-40960mib-400w_nshx.txt")
    assert (rig.software.driver_version, rig.software.cuda_driver_version) == ("535.129.03", "12.2")
    g = rig.gpus[0]
    assert (len(rig.gpus), g.bus_id, g.memory_total_bytes, g.power_limit_w) == (1, "0000:00:1b.0", 40960 * 2**20, 400.0)


def test_a_flattened_580_table_with_empty_cells_reads_its_gpus():
    # https://chegva.com/6622.html (the page's table, its line breaks lost): driver 580.95.05, CUDA 13.0, B200s at
    # 51:00.0, 52:00.0 and 62:00.0, '136W / 1000W', '0MiB / 183359MiB', the MIG row's empty cells '| | | Disabled |'
    rule = "+-----------------------------------------+------------------------+----------------------+"
    text = (
        "+-----------------------------------------------------------------------------------------+ | NVIDIA-SMI "
        "580.95.05 Driver Version: 580.95.05 CUDA Version: 13.0 | "
        "|-----------------------------------------+------------------------+----------------------+ | GPU Name "
        "Persistence-M | Bus-Id Disp.A | Volatile Uncorr. ECC | | Fan Temp Perf Pwr:Usage/Cap | Memory-Usage | "
        "GPU-Util Compute M. | | | | MIG M. | "
        "|=========================================+========================+======================| "
        "| 0 NVIDIA B200 On | 00000000:51:00.0 Off | 0 | | N/A 27C P0 136W / 1000W | 0MiB / 183359MiB | 0% Default | "
        f"| | | Disabled | {rule} | 1 NVIDIA B200 On | 00000000:52:00.0 Off | 0 | | N/A 25C P0 140W / 1000W | "
        f"0MiB / 183359MiB | 0% Default | | | | Disabled | {rule} | 2 NVIDIA B200 On | 00000000:62:00.0 Off | 0 | "
        f"| N/A 27C P0 138W / 1000W | 0MiB / 183359MiB | 0% Default | | | | Disabled | {rule}\n"
    )
    rig = import_texts([("smi.txt", text)])
    assert (rig.software.driver_version, rig.software.cuda_driver_version) == ("580.95.05", "13.0")
    assert [(g.name, g.bus_id, g.power_limit_w) for g in rig.gpus] == [
        ("NVIDIA B200", "0000:51:00.0", 1000.0),
        ("NVIDIA B200", "0000:52:00.0", 1000.0),
        ("NVIDIA B200", "0000:62:00.0", 1000.0),
    ]
    assert all(g.memory_total_bytes == 183359 * 2**20 and g.mig_mode is False for g in rig.gpus)


# --- class 5: perftest's completion error (a failed run, status named as libibverbs names it) ---


def test_perftest_completion_error_is_a_failed_run_with_its_status():
    # https://github.com/linux-rdma/perftest/issues/173: 'Completion with error at client', 'Failed status 4: wr_id 0
    # syndrom 0x51', 'scnt=828, ccnt=700', 'Failed to complete run_iter_bw function successfully'
    rig = _read(
        CORPUS / "s26-rdma-logs" / "perftest-ib-write-bw-use-cuda-completion-error-status-4-syndrom-0x51_farhanma.txt"
    )
    (m,) = rig.measurements
    assert (m.kind, m.status, m.value_gbps) == ("rdma_bw", "failed", None)
    assert "status 4 (local protection error)" in (m.error or "") and "700 of 828" in (m.error or "")


def test_another_completion_error_pasted_on_one_line():
    # https://github.com/zrlio/softiwarp/issues/27 (ib_send_bw over softiwarp): ' Completion with error at client
    # Failed status 12: wr_id 0 syndrom 0x81 scnt=128, ccnt=0' (12: transport retry counter exceeded)
    text = " Completion with error at client Failed status 12: wr_id 0 syndrom 0x81 scnt=128, ccnt=0\n"
    rig = import_texts([("perftest.txt", text)])
    (m,) = rig.measurements
    assert m.status == "failed" and "status 12 (transport retry counter exceeded)" in (m.error or "")
    assert "0 of 128" in (m.error or "")
