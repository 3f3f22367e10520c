"""Every format ``gpuadvisor import`` reads is recognised by content in ONE import call: a file that holds a
real paste of each (from tests/corpus and tests/fixtures, their sources in those folders' indexes), one after
the other with the shell prompt a user would paste between them. Three have no real paste in the repository
yet and are written by hand from their tool's documentation (quoted where they are defined)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from gpuadvisor import cli
from gpuadvisor.importers import parse_text
from gpuadvisor.importers.registry import KINDS
from gpuadvisor.importers.sections import split_sections
from tests.test_beyond_tools import PERFQUERY
from tests.test_env_generic import ANNOTATEAI_5
from tests.test_import_env_reports import ACC_3446, DS_6762, JAX_285, PIP_4614
from tests.test_import_framework_devices import (
    GPUSTAT_130,
    LLAMA_VRAM,
    NVITOP,
    OLLAMA_1663,
    TF_31969,
    TORCH_PADDLE,
)
from tests.test_import_k8s import NODE_36, PODS_35
from tests.test_import_smi_csv import CSV
from tests.test_import_sysfs_pci import LACT_334
from tests.test_import_versions import NVCC_110, PROC_OPEN, RPM_570, SMI_570

TESTS = Path(__file__).parent

# nvme-cli 1.x "nvme list -o json": the keys nvme-cli's json_print_list_items prints, the values written by hand
NVME_JSON = """{
  "Devices" : [
    {
      "NameSpace" : 1,
      "DevicePath" : "/dev/nvme1n1",
      "ModelNumber" : "SAMSUNG MZQL23T8HCLS-00A07",
      "PhysicalSize" : 3840755982336,
      "SectorSize" : 512
    }
  ]
}
"""
WRITTEN = {
    "SYSFS_334": LACT_334,
    "CSV": CSV.split("\n", 1)[1],
    "PERFQUERY": PERFQUERY,
    "NVME_JSON": NVME_JSON,
}  # CSV: its own prompt off

# the kind it must be read as | the command typed before it | the paste (under tests/, or =NAME: WRITTEN[NAME]);
# a kind appears more than once for its forms; a service log starts only a paste's first output, so it comes first
PERSISTENCED = "s16-logs/journal-nvidia-persistenced-registers-3d00-then-sigterm-shutdown_jelmd.txt"
TABLE = f"""
daemon-log | journalctl -u nvidia-persistenced | corpus/{PERSISTENCED}
smi-q | nvidia-smi -q | corpus/captures/lx_l40s__595.80.q.txt
smi-q | nvidia-smi -q -i 2 | corpus/smi/smi-q-fragment-no-gpu-line_gjgjh.txt
smi-xml | nvidia-smi -q -x | fixtures/import/samples/smi-q-x_rtx4090-gen3-host.txt
topo-m | nvidia-smi topo -m | corpus/topo/topo-m_5gpu-4090-two-numa_snoby.txt
topo-p2p | nvidia-smi topo -p2p r | fixtures/import/samples/p2p-r_8gpu-vm-all-ok_cloud-hypervisor.txt
nvlink | nvidia-smi nvlink -s | corpus/nvlink/nvlink-s_8xa100-12-links-all-up_gpud.txt
smi-summary | nvidia-smi | corpus/smi/smi_tesla-p4_slackr31337.txt
smi-list | nvidia-smi -L | corpus/smi/smi-L_4x3090-prompt_alexanderjacuna.txt
smi-csv | nvidia-smi --query-gpu=... | =CSV
collect-env | python collect_env.py | corpus/collect-env/vllm-collect-env_4x3090-driver-535-cut_rodrimora.txt
lspci | sudo lspci -vv | corpus/lspci/lspci-vv_a100-numa5-cut_aksbaih.txt
lspci | lspci -vvv | grep ACSCtl | corpus/pcie-acs/lspci-grep-acsctl-twelve-cut_dobiup.txt
lspci | lspci -vv | grep Lnk | corpus/lspci/lnk-fragment-riser-4090-gen1_0xsage.txt
sysfs-pci | grep . /sys/class/drm/card*/device/*_link_* | =SYSFS_334
nccl-tests | all_reduce_perf -b 8 -e 8G | corpus/nccl-tests/all_reduce_8xa100-mpirun-no-hash-cut_elevenxiang.txt
nccl-tests | rccl-tests | corpus/nccl-tests/rccl_broadcast-rows-then-next-test-cut_chihayak.txt
cuda-bw | ./bandwidthTest | corpus/copies/bandwidthTest_2080ti-range-htod_soi.txt
cuda-p2p | ./p2pBandwidthLatencyTest | corpus/cuda-samples/p2p_4xv100-cut_gflegar.txt
nvbandwidth | ./nvbandwidth | corpus/copies/nvbandwidth_a100-h2d-sm_yuyuankang.txt
ibstat | ibstat | corpus/rdma/ibstat_one-ca-rate-2.5_mrbr.txt
ibv-devinfo | ibv_devinfo | corpus/rdma/ibv_devinfo_port-down-roce_minhuiwan.txt
ibstatus | ibstatus | fixtures/beyond/ibstatus-roce-cut.txt
rdma-link | rdma link show | corpus/rdma/rdma-link-show-soft-roce-rxe_qiuxinyidian.txt
perfquery | perfquery | =PERFQUERY
ibqueryerrors | ibqueryerrors | fixtures/beyond/ibqueryerrors-link-downed-rcv-errors.txt
ibdev2netdev | ibdev2netdev | corpus/s9-rdma/ibdev2netdev-column-t-comments-12-ports_bawr.txt
lsmod | lsmod | grep nv_peer | corpus/modules/lsmod-empty-modinfo-nv_peer_mem_thaivo88.txt
fabric-manager | systemctl status nvidia-fabricmanager | corpus/fabric/fm-status-active-info-lines_yeazelm.txt
smi-fabric | nvidia-smi -q | grep -A 4 Fabric | corpus/fabric/smi-q-fabric-insufficient-resources_hglkrijger.txt
smi-lost | nvidia-smi | corpus/lost-gpu/smi_unable-device-handle_xxd3vin.txt
nccl-debug | NCCL_DEBUG=INFO torchrun | corpus/nccl-debug/nccl-info-gdr-disabled-peermem-loaded_blegear.txt
fio | fio --rw=randread | corpus/storage/fio-text_randread-4k-qd64-then-write-cut_liuw.txt
fio-json | fio --output-format=json | fixtures/storage/fio-seqread-vm.json
lsblk | lsblk | fixtures/storage/lsblk-vm.txt
lsblk-json | lsblk -J | fixtures/storage/lsblk-vm.json
nvme-list | nvme list | corpus/storage/nvme-list_960evo-host_smitkothari.txt
nvme-list-json | nvme list -o json | =NVME_JSON
kernel-log | dmesg | corpus/kernel-log/dmesg_xid31-one-fault-board-serial-0_whoracle.txt
kernel-log | journalctl -k | corpus/kernel-log/journal_rminitadapter-failed-5080_eniac11.txt
kernel-log | grep NVRM /var/log/syslog | corpus/kernel-log/syslog_xid13-illegal-instruction_dzyla.txt
kernel-log | cat /dev/kmsg | corpus/kernel-log/kmsg_xid94-contained-ecc_gyuho.txt
"""

DCGM = "s13-dcgm/dcgmi-discovery-l-4-gpus-found-name-null-trailing-spaces-cut_bergentruckung.txt"
TABLE += f"dcgm | dcgmi discovery -l | corpus/{DCGM}\n"
IB_SYSFS = "s15-rdma/sysfs-grep-infiniband-ports-state-rate-phys-state-2x-mlx5-edr-active_sjpb.txt"
TABLE += f'ib-sysfs | grep "" /sys/class/infiniband/*/ports/*/state | corpus/{IB_SYSFS}\n'
NHC = "s16-rdma-logs/nhc-check-hw-ib-no-port-active-new-node-no-cables_OleHolmNielsen.txt"
TABLE += f"nhc | nhc | corpus/{NHC}\n"
GPUD = "s17-fabric/gpud-fabric-state-json-gb200-completed-success-healthy-cut_gyuho.txt"
TABLE += f"gpud | curl -kL https://localhost:15132/v1/states | corpus/{GPUD}\n"
PROC_INFO = "s17-smi/proc-driver-nvidia-gpus-information-h100-80gb-hbm3-62-00-trailing-spaces_landontclipp.txt"
SIMPLE_P2P = "s17-cuda-samples/simplep2p-4x-tesla-k40m-pairs-only-peer-root-prompt-cut_liumilan.txt"
TABLE += f"cuda-simplep2p | ./simpleP2P | corpus/{SIMPLE_P2P}\n"
DETECTRON2 = "s19-collect-env/detectron2-collect-env-tesla-t4-driver-525-torch-built-with-cut_ettore9x9.txt"
TABLE += f"detectron2-env | python -m detectron2.utils.collect_env | corpus/{DETECTRON2}\n"
LIGHTNING = "s32-collect-env/lightning-collect-env-4x-rtx-pro-6000-blackwell-max-q-torch-2-10-cu130-cut_niemiaszek.txt"
TABLE += f"lightning-env | python collect_env_details.py | corpus/{LIGHTNING}\n"
PADDLE = "s32-collect-env/paddleseg-env-info-8x-a100-pcie-40gb-nvcc-11-7-fenced_shiyutang.txt"
TABLE += f"paddle-env | python tools/train.py (PaddleSeg) | corpus/{PADDLE}\n"
TABLE += "devicequery | ./deviceQuery | fixtures/import/found/devicequery_a100-sxm4-40gb_router-gao.txt\n"
NUMBA = "s17-collect-env/numba-cuda-detect-2x-quadro-rtx8000-decimal-bus-ids_gmarkall.txt"
TABLE += f"numba-detect | python -c 'from numba import cuda; cuda.detect()' | corpus/{NUMBA}\n"
TABLE += f"proc-info | cat /proc/driver/nvidia/gpus/0000:62:00.0/information | corpus/{PROC_INFO}\n"
NVC_INFO = "s16-collect-env/nvidia-container-cli-info-465-8x-rtx2080ti-cut-in-device-0_ethanabrooks.txt"
TABLE += f"nvc-info | nvidia-container-cli -k -d /dev/tty info | corpus/{NVC_INFO}\n"
CUDA_802 = "s18-fabric/gpu-burn-h100-hbm3-system-not-yet-initialized-no-fabric-manager_disjustin.txt"
TABLE += f"cuda-not-ready | gpu_burn -d 60 | corpus/{CUDA_802}\n"
DRIVER_CTR = "s34-logs/gpu-operator-driver-pod-450-80-02-loaded-waiting-for-signal-then-caught-signal-cut_geoberle.txt"
TABLE += f"driver-container | kubectl logs nvidia-driver-daemonset-x -c nvidia-driver-ctr | corpus/{DRIVER_CTR}\n"
CUDA_ECC = "s23-logs/torch-runtimeerror-uncorrectable-ecc-slurm-node-dgk713_philipdarke.txt"
TABLE += f"cuda-ecc | python train.py | corpus/{CUDA_ECC}\n"
# https://github.com/alephium/gpu-miner/issues/9 (the miner's own check macro)
WRITTEN["CUDA_ERROR"] = (
    "cudaError 719 (unspecified launch failure) calling 'cudaMemcpyAsync(worker->device_hasher, worker->hasher, "
    "sizeof(blake3_hasher), cudaMemcpyHostToDevice, worker->stream)' (src/mining.h line 13)\n"
)
TABLE += "cuda-error | ./gpu-miner | =CUDA_ERROR\n"
GPU_MR = "s31-rdma-logs/mscclpp-ibmr-debug-ibv-reg-mr-errno-14-bad-address-gpu4-peer-mem-loaded_wuxb45.txt"
TABLE += f"gpu-mr-failed | ./ib_test | corpus/{GPU_MR}\n"
HOSTENGINE = "s14-fabric/nv-hostengine-log-dcgm-2-2-nvswitch-status-undefined-state-every-30s-cut_13416157913.txt"
TABLE += f"nv-hostengine | tail /var/log/nv-hostengine.log | corpus/{HOSTENGINE}\n"
SHOW_GIDS = "s19-rdma-logs/show-gids-cx6-roce-v1-v2-ipv4-172-19-healthy_cristeab.txt"
TABLE += f"show-gids | show_gids mlx5_0 | corpus/{SHOW_GIDS}\n"
SENTINEL = "s19-logs/nvsentinel-dcgm-imex-unhealthy-status-3-p5-single-node-no-imex_njhensley.txt"
TABLE += f"nvsentinel | kubectl describe node | corpus/{SENTINEL}\n"
ID_CTRL = "s20-storage/nvme-id-ctrl-micron-9200-1-6tb-prompt-fenced-ps0-25w_tniedermeier.txt"
TABLE += f"nvme-id-ctrl | nvme id-ctrl /dev/nvme1 | corpus/{ID_CTRL}\n"
DF = "s15-storage/df-h-azure-hb120rs-v2-nfs-home-nvme-not-mounted-unfenced_garvct.txt"
TABLE += f"df | df -h | corpus/{DF}\n"
BUSGRIND = "s9-cuda-samples/busgrind-host-device-matrix-8gpu-bidir-low-gpu5-7-cut_rainzhouzzz.txt"
TABLE += f"busgrind | ./busGrind -p 1 -u 0 -e 0 -d 1 | corpus/{BUSGRIND}\n"
SCONTROL = "s17-logs/scontrol-show-node-drain-gres-gpu-count-0-of-1-rtx3090_MouseSun846.txt"
TABLE += f"scontrol-node | scontrol show node | corpus/{SCONTROL}\n"
PAIR_MATRIX = "s21-cuda-samples/nvlink-bw-memcpykernel-8x8-376gbs-matrices-cut-both-ends_guptanswati.txt"
TABLE += f"pair-matrix | ./nvlink_bandwidth_test | corpus/{PAIR_MATRIX}\n"
# p2pBandwidthLatencyTest's GPU latency table with its title cut: the 'GPU 0 1 ...' header and its eight rows
ABCI_P2P = (TESTS / "fixtures/import/found/p2pbandwidthlatencytest_8xa100-sxm4-40gb-nvlink_abci.txt").read_text()
WRITTEN["LATENCY_ROWS"] = (
    ABCI_P2P.split("P2P=Enabled Latency (P2P Writes) Matrix (us)\n", 1)[1].split("\n\n", 1)[0] + "\n"
)
TABLE += "latency-rows | ./p2pBandwidthLatencyTest | tail -n 20 | =LATENCY_ROWS\n"
GDSCHECK = "s21-storage/gdscheck-p-gds-1.13-nvme-nfs-rdma-up-8-cut-in-cufile-config_henrybewell.txt"
TABLE += f"gdscheck | /usr/local/cuda/gds/tools/gdscheck -p | corpus/{GDSCHECK}\n"
PERFTEST = "s15-rdma-logs/perftest-ib-send-lat-quoted-port-1-state-down-no-context_mycatnamedweb.txt"
TABLE += f"perftest | ./ib_send_lat --duration=30 -H | corpus/{PERFTEST}\n"
NVVS = "s18-dcgm/nvvs-418-mig-configuration-incompatible-gpu0-two-lines_mick-t.txt"
TABLE += f"nvvs | dcgmi diag -r 1 | corpus/{NVVS}\n"
DMON = "s18-smi/smi-dmon-markdown-quoted-escaped-hash-4-gpus-83c-no-names_lissyx.txt"
TABLE += f"smi-dmon | nvidia-smi dmon -s pucvmet | corpus/{DMON}\n"
IBLINKINFO = "s18-rdma/iblinkinfo-4-v100-hosts-edr-25g-lanes-qm8700-hdr-aggregation-node-elided_ductuantruong.txt"
TABLE += f"iblinkinfo | iblinkinfo | corpus/{IBLINKINFO}\n"
# DCGM 4's dcgmi dmon as its reference page describes it (docs.nvidia.com/datacenter/dcgm/latest/reference/
# command-line-reference/dcgmi/dcgmi-dmon.html): the names, then 'ID' and each field's unit
WRITTEN["DCGMI_DMON"] = "#Entity   POWER   TMPTR\nID        W       C\nGPU 0     16.609  42\n"
TABLE += "dcgmi-dmon | dcgmi dmon -e 155,150 -c 1 | =DCGMI_DMON\n"
NCCL_XML = "s20-topo/nccl-topo-dump-xml-dgx1-v100-plx-switch-two-gpus-nvlink-counts-cut_xiaosong9905.txt"
TABLE += f"nccl-topo-xml | NCCL_TOPO_DUMP_FILE=topo.xml ./all_reduce_perf -g 2; cat topo.xml | corpus/{NCCL_XML}\n"
TORCH_CONFIG = "s20-collect-env/torch-config-show-pytorch-built-with-cuda-10-1-cudnn-7-6-3-cut_junxnone.txt"
TABLE += f"torch-config | python -c 'import torch; print(torch.__config__.show())' | corpus/{TORCH_CONFIG}\n"
IP_LINK = "s20-rdma-logs/ip-link-show-four-ib-netdevs-noop-state-down-cut_thomas-bouvier.txt"
TABLE += f"ip-link | ip link show | corpus/{IP_LINK}\n"
IFCONFIG = "s25-rdma-logs/ifconfig-ib0-ipoib-up-running-hardware-address-warning-no-rx_afernandezody.txt"
TABLE += f"ifconfig | ifconfig ib0 | corpus/{IFCONFIG}\n"
XID_RELAY = "s20-lost-gpu/gpud-reason-xid79-fallen-off-bus-ae-00-error-gpu-is-lost_eahydra.txt"
TABLE += f"xid-relay | curl -kL https://localhost:15132/v1/states | corpus/{XID_RELAY}\n"
GO_LOG = "s21-lost-gpu/k8s-device-plugin-pod-log-no-devices-found-waiting-indefinitely-after-reboot_xqlang.txt"
VERBS_QP = "s21-rdma-logs/uccl-ep-roce-ionic-port-active-modify-qp-rtr-timed-out-errno-110-mi355x-cut_zhenhuang12.txt"
TABLE += f"verbs-qp | python tests/test_low_latency.py | corpus/{VERBS_QP}\n"
VERBS = "s28-rdma-logs/ibv-devinfo-2014-pib-no-userspace-driver-uverbs0-uverbs1_hiroyuki-sato.txt"
TABLE += f"verbs | ibv_devinfo | corpus/{VERBS}\n"
RDMA_RES = "s16-rdma-logs/rdma-res-mlx5-after-4026-clients_AdjoiningCat.txt"
TABLE += f"rdma-res | rdma res | corpus/{RDMA_RES}\n"
PINGPONG = "s30-rdma-logs/ibv-rc-pingpong-transport-retry-counter-exceeded-12-parse-wc-failed-ndr-opensm_rixon.txt"
TABLE += f"ibv-pingpong | ibv_rc_pingpong test1 | corpus/{PINGPONG}\n"
UCX_LOG = "s22-rdma-logs/ucx-transport-retry-count-exceeded-mlx5-0-1-ib-dci-qp-openmpi-cut_afernandezody.txt"
TABLE += f"ucx-log | mpirun --mca pml ucx -H master,compute001 executable | corpus/{UCX_LOG}\n"
LSHCA = "s29-rdma-logs/ucx-ci-hca-table-mlx5-0-down-mlx5-1-init-pcie-x8-of-x16_avildema.txt"
TABLE += f"lshca | sudo lshca | corpus/{LSHCA}\n"
MST_STATUS = "fixout-mst/mst-status-vv-vmware-connectx4-connectx3pro-no-rdma-devices-mft-docs.txt"
TABLE += f"mst-status | mst status -v | corpus/{MST_STATUS}\n"
PADDLE = (
    "fixout-paddle/paddle-1-2-docker-rtx2070-cc-75-driver-10-0-runtime-8-0-invalid-device-function_yeyupiaoling.txt"
)
TABLE += f"paddle-devices | python train.py | corpus/{PADDLE}\n"
MEMLOCK = "s29-rdma-logs/ucx-ib-create-cq-cannot-allocate-memory-ulimit-l-64-kbytes-osu-bcast_gkatev.txt"
TABLE += f"memlock | mpirun -n 2 --mca pml ob1 osu_bcast -m 1 | corpus/{MEMLOCK}\n"
MLXLINK = "s22-rdma-logs/mlxlink-spectrum-switch-port1-active-linkup-25gbe-firecode-fec-healthy-cut_keboliu.txt"
TABLE += f"mlxlink | mlxlink -d /dev/mst/mt52100_pci_cr0 -p 1 | corpus/{MLXLINK}\n"
# the version outputs, from their real pastes (cited in tests/test_import_versions.py)
WRITTEN.update(SMI_VERSION=SMI_570, PROC_VERSION=PROC_OPEN, NVCC=NVCC_110, PACKAGES=RPM_570.split("\n", 1)[1])
TABLE += "smi-version | nvidia-smi --version | =SMI_VERSION\n"
TABLE += "proc-version | cat /proc/driver/nvidia/version | =PROC_VERSION\n"
TABLE += "cuda-toolkit | nvcc --version | =NVCC\n"
TABLE += "driver-packages | rpm -qa | grep nvidia | sort | =PACKAGES\n"
# ML framework logs and gpustat: real pastes quoted in tests/test_import_framework_devices.py (URLs there)
WRITTEN.update(LLAMA=LLAMA_VRAM, OLLAMA=OLLAMA_1663, TF=TF_31969, TORCH=TORCH_PADDLE, GPUSTAT=GPUSTAT_130)
TABLE += "llama-devices | ./llama-server -m model.gguf | =LLAMA\n"
TABLE += "ollama-devices | ollama serve | =OLLAMA\n"
TABLE += "tf-devices | python train.py | =TF\n"
TABLE += "torch-devices | python -c 'import torch; print(torch.cuda.get_device_properties(0))' | =TORCH\n"
TABLE += "gpustat | gpustat | =GPUSTAT\n"
WRITTEN["NVITOP"] = NVITOP.split("\n", 1)[1]  # its clock line off: the prompt's date glue
TABLE += "nvitop | nvitop -1 | =NVITOP\n"
TABLE += f"go-log | kubectl logs nvidia-device-plugin-daemonset-x -n kube-system | corpus/{GO_LOG}\n"
# ML environment reports: real pastes quoted in tests/test_import_env_reports.py (URLs there)
WRITTEN.update(HF_ENV=ACC_3446, DS_REPORT=DS_6762, JAX_ENV=JAX_285.split("\n", 1)[1], PIP_LIST=PIP_4614)
TABLE += "hf-env | accelerate env | =HF_ENV\n"
TABLE += "ds-report | ds_report | =DS_REPORT\n"
TABLE += "jax-env | python -c 'import jax; jax.print_environment_info()' | =JAX_ENV\n"
TABLE += "pip-list | pip list | grep torch | =PIP_LIST\n"
MIG_LGI = "s25-smi/smi-mig-lgi-gpu-instances-1g10gb-3g40gb-profiles-cut-at-gpu2_neggert.txt"
TABLE += f"smi-mig | sudo nvidia-smi mig -lgi | corpus/{MIG_LGI}\n"
POWER = "s28-lost-gpu/proc-driver-nvidia-power-rtd3-d3cold-by-design-blackwell-pro-healthy-cut_sysadmin-guru.txt"
TABLE += f"proc-power | cat /proc/driver/nvidia/gpus/0000:11:00.0/power | corpus/{POWER}\n"
PROFTESTER = "s28-dcgm/dcgmproftester12-t1007-fp32-engine-active-dcgm-0-no-validation_bmerry.txt"
TABLE += f"dcgm-proftester | dcgmproftester12 -t 1007 --no-dcgm-validation | corpus/{PROFTESTER}\n"
UCC = "s28-nccl-tests/ucc-perftest-alltoall-cuda-float32-bw-columns-cut_sergei-lebedev.txt"
TABLE += f"ucc-perftest | ucc_perftest -c alltoall -m cuda -F | corpus/{UCC}\n"
VGPU = "s28-smi/smi-vgpu-host-470-63-2x-t4-grid-t4-4c-vms-cut_kralicky.txt"
TABLE += f"smi-vgpu | nvidia-smi vgpu | corpus/{VGPU}\n"
CUPY = "s25-collect-env/cupy-show-config-cuda-driver-13000-runtime-12090-cublas-importerror-cut_leofang.txt"
TABLE += f"cupy-config | python -c 'import cupy; cupy.show_config()' | corpus/{CUPY}\n"
# Kubernetes: real pastes quoted in tests/test_import_k8s.py (URLs there), their own command line off
WRITTEN.update(K8S_NODE=NODE_36, K8S_PODS=PODS_35.split("\n", 1)[1])
TABLE += "k8s-node | kubectl describe node geo-node1 | =K8S_NODE\n"
TABLE += "k8s-pods | kubectl get pods -n gpu-operator-resources | =K8S_PODS\n"
CONTAINER = "fixtures/import/container/oci-hook-nvml-driver-not-loaded_nvidia-container-toolkit260.txt"
TABLE += f"container-errors | docker run --rm --gpus all nvidia/cuda:11.0-base nvidia-smi | {CONTAINER}\n"
DIGITS = "s23-collect-env/digits-device-query-py-2x-titan-z-dies-and-k40c-mixed-cut_lukeyeager.txt"
TABLE += f"digits-devices | ./device_query.py | corpus/{DIGITS}\n"
MEMTEST = "s23-cuda-samples/cuda-memtest-1.2.3-rtx-pro-6000-blackwell-open-570-4gb-free-cut_createthis.txt"
TABLE += f"cuda-memtest | ./cuda_memtest | corpus/{MEMTEST}\n"
LIBGPU = "s23-collect-env/gpgpu-course-device-list-uhd-igpu-rtx3050-laptop-cpu-russian-pr_achvanov7.txt"
TABLE += f"libgpu-devices | ./main_aplusb_matrix | corpus/{LIBGPU}\n"
CLUB3090 = "s30-smi/club3090-report-md-2x-rtx3090-lxc-350w-default-610-driver-cut-in-ecc_steamengineer.txt"
TABLE += f"club3090 | bash scripts/report.sh | corpus/{CLUB3090}\n"
INCUS = "s22-collect-env/incus-info-resources-gpu-rtx3060ti-560-35-03-empty-nvidia-fields_stgraber.txt"
TABLE += f"incus-gpu | incus info --resources | corpus/{INCUS}\n"
AKASH = "s27-lspci/akash-gpu-cards-json-virtio-then-two-a30-pcie-cut_tim-leaf-cloud.txt"
TABLE += f"akash-gpu | provider-services tools psutil list gpu | corpus/{AKASH}\n"
DETECT_GPU = "s29-smi/detect-gpu-json-4x-a10-nvml-fields-cut_flybirdkh.txt"
TABLE += f"detect-gpu | curl -s localhost:2376/api/v1/detect/gpu | corpus/{DETECT_GPU}\n"
DCGMI_PROFILE = "s29-dcgm/dcgmi-profile-l-a10-metric-groups-cut_xuchenhui-5.txt"
TABLE += f"dcgmi-profile | dcgmi profile -l -i 7 | corpus/{DCGMI_PROFILE}\n"
FAH_LSPCI = "s29-lspci/fahclient-lspci-2x-gtx980-same-bus-3-0-0-with-hdmi-audio_jchodera.txt"
TABLE += f"fah-lspci | FAHClient --lspci | corpus/{FAH_LSPCI}\n"
GPU_BURN = "fix37a-gpu-burn/gpu-burn-16-gpus-negative-warning-counts-all-faulty-exit-0_bladernr.txt"
TABLE += f"gpu-burn | ./gpu_burn 60 | corpus/{GPU_BURN}\n"
SMARTCTL = "s22-storage/smartctl-7-1-nvme-intel-optane-16gb-memory-cut-in-smart-log_karlowich.txt"
TABLE += f"smartctl-nvme | smartctl -a /dev/nvme0 | corpus/{SMARTCTL}\n"
COMFYUI = "s31-collect-env/comfyui-startup-powershell-total-vram-24564mb-rtx4090-native-cut_plebghud.txt"
TABLE += f"comfyui | python main.py | corpus/{COMFYUI}\n"
GPU_TOOLS = "s31-lost-gpu/gpu-cc-tool-h100-44-00-0-bar0-not-in-d0-state-3-forcing-d0-cc-settings_seungsoo-lee.txt"
TABLE += f"gpu-tools | python3 gpu_cc_tool.py --gpu-name=H100 --query-cc-settings | corpus/{GPU_TOOLS}\n"
DCGM_JSON = "s35-logs/dcgmi-diag-r3-json-t400-every-test-skip-elided-cut_disjustin.txt"
TABLE += f"dcgm-json | dcgmi diag -r 3 -j | corpus/{DCGM_JSON}\n"
VERBS_WC = "s35-rdma-logs/uccl-ep-cqe-error-status-12-transport-retry-exceeded-amd-broadcom-cut_YangZhou1997.txt"
TABLE += f"verbs-wc | python3 test_internode.py | corpus/{VERBS_WC}\n"
# a report no specific reader knows (a user's environment, as posted: fenced), read by the generic row
WRITTEN.update(ENV_GENERIC="```\n" + ANNOTATEAI_5.split("\n", 2)[2] + "```\n")
TABLE += "env-generic | cat environment.txt | =ENV_GENERIC\n"


def _pastes() -> list[tuple[str, str, str]]:
    """(kind, command, text) of each row of TABLE; a command may hold "|", the kind and the paste never do."""
    rows = []
    for line in TABLE.strip().splitlines():
        kind, rest = (x.strip() for x in line.split("|", 1))
        command, where = (x.strip() for x in rest.rsplit("|", 1))
        text = WRITTEN[where[1:]] if where.startswith("=") else (TESTS / where).read_text(encoding="utf-8")
        rows.append((kind, command, text))
    return rows


def _session(prompts: bool = True) -> str:
    """The pastes one after the other, each after the command typed for it (``prompts``), or glued together."""
    return "".join(
        (f"$ {command}\n" if prompts else "") + body + ("" if body.endswith("\n") else "\n")
        for _kind, command, body in _pastes()
    )


# the registry's last row reads a paste no other row reads (an application's own log): never inside a session of
# outputs other rows read; tests/test_fixlog_app_log.py reads real ones alone
ALONE = {"app-log"}
READ_HERE = set(KINDS) - ALONE


def test_the_session_holds_every_format_of_the_registry() -> None:
    assert {kind for kind, _, _ in _pastes()} == READ_HERE


@pytest.mark.parametrize("prompts", [True, False])
def test_every_format_is_recognised_and_read_in_one_import_call(prompts: bool) -> None:
    """One text, one reading: every format recognised, no output refused."""
    text = _session(prompts)
    assert {s.kind for s in split_sections(text)} == READ_HERE
    parts = parse_text(text, "session.txt")
    assert {p.kind for p in parts} == READ_HERE
    assert not [n for n in parts[0].notes if "was not read" in n], parts[0].notes


def test_the_import_command_reads_the_session(tmp_path: Path) -> None:
    """``gpuadvisor import session.txt --split``: the pastes come from many machines, each is read, none refused."""
    path = tmp_path / "session.txt"
    path.write_text(_session(), encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        rc = cli._run(["import", str(path), "--split", "--json", str(tmp_path / "scan.json")])
    assert rc == 0, err.getvalue()
    scans = sorted(tmp_path.glob("scan-*.json"))
    assert len(scans) > 1
    assert sum(len(json.loads(p.read_text())["gpus"]) for p in scans) > 0
