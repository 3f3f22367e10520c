"""Kubernetes outputs from GPU-operator and device-plugin reports: kubectl describe node / get node -o yaml (GPU
Feature Discovery labels, the nvidia.com/gpu resource) and kubectl get pods tables. Each paste is a fixture quoted
from the public thread its first line cites (tests/fixtures/import/k8s/README.md); the values asserted are what the
paste prints."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import parse_text
from gpuadvisor.importers.k8s import parse_node, parse_pods
from gpuadvisor.importers.sections import split_sections
from tests.corpus_cases import fixture_body

FIXTURES = Path(__file__).parent / "fixtures" / "import" / "k8s"  # each file's source URL on its first line


def _paste(name: str) -> str:
    return fixture_body(FIXTURES / name)


LABELS_1501 = _paste("describe-node-gfd-labels-8xh100-cut_k8s-device-plugin1501.txt")  # its last label cut
NODE_36 = _paste("describe-node-no-gpu-resource_gfd36.txt")
YAML_58 = _paste("get-node-yaml-allocatable-0-of-16_k8s-device-plugin58.txt")
NODE_995 = _paste("describe-node-capacity-1-gpu_k8s-device-plugin995.txt")
PODS_624 = _paste("get-pods-operator-crashloop_gpu-operator624.txt")
PODS_35 = _paste("get-pods-device-plugin-crashloop_gpu-operator35.txt")
PODS_488 = _paste("get-pods-all-namespaces-nfd-crashloop_gpu-operator488.txt")


def test_gfd_labels_give_the_gpus_and_a_cut_label_is_not_read():
    rig = parse_node(LABELS_1501, "n.txt")
    assert len(rig.gpus) == 8
    assert {g.name for g in rig.gpus} == {"NVIDIA-H100-80GB-HBM3"}
    assert rig.gpus[0].memory_total_bytes == 81559 * 1048576
    assert rig.origins["gpus[0]"] == "n.txt:2"
    assert not rig.node.health_checks  # no Capacity shown: nothing to compare


def test_capacity_without_the_gpu_resource_is_said_not_warned_without_labels():
    rig = parse_node(NODE_36, "n.txt")
    assert not rig.gpus
    assert not rig.node.health_checks
    assert any("Capacity lists no nvidia.com/gpu" in p for p in rig.problems)


def test_allocatable_below_capacity_warns_with_its_line():
    rig = parse_node(YAML_58, "y.txt")
    (hc,) = rig.node.health_checks
    assert hc.verdict == "warn" and hc.tool == "Kubernetes"
    assert "Capacity nvidia.com/gpu: 16" in hc.detail and "Allocatable nvidia.com/gpu: 0" in hc.detail
    assert "16 GPU(s) unhealthy" in hc.detail
    assert hc.evidence == "y.txt:13"


def test_labels_count_with_capacity_zero_warns():
    text = LABELS_1501.rsplit("\n", 1)[0] + "\nCapacity:\n  cpu:  128\n  nvidia.com/gpu:  0\n"
    checks = parse_node(text, "n.txt").node.health_checks
    assert len(checks) == 1 and "labels count 8 GPU(s)" in checks[0].detail
    assert checks[0].evidence == f"n.txt:{text.count(chr(10))}"


def test_equal_capacity_and_allocatable_is_no_finding():
    rig = parse_node(NODE_995, "n.txt")
    assert not rig.node.health_checks and not rig.problems
    assert len(rig.gpus) == 1  # the one GPU the plugin registered (Capacity's count: no label counts them)


def test_crash_looping_operator_pods_are_warnings_with_restarts():
    (hc,) = parse_pods(PODS_624, "p.txt").node.health_checks
    assert hc.check == "pod gpu-operator-657c5b798d-xgvgc" and hc.verdict == "warn"
    assert "CrashLoopBackOff" in hc.detail and "RESTARTS 12 (4m24s ago)" in hc.detail
    assert hc.evidence == "p.txt:5"
    checks = parse_pods(PODS_35, "p.txt").node.health_checks
    assert [c.check for c in checks] == [f"pod nvidia-device-plugin-daemonset-{x}" for x in ("5crlk", "6ccx4", "kljrg")]
    assert [c.detail.split("RESTARTS ")[1] for c in checks] == ["12", "13", "6"]


def test_all_namespaces_table_reads_gpu_components_only():
    checks = parse_pods(PODS_488, "p.txt").node.health_checks
    assert [c.check.split()[1] for c in checks] == [
        "gpu-operator-1676547773-node-feature-discovery-master-6774l2chz",
        "gpu-operator-dd7c784bc-6vxfn",
    ]  # calico's 0/1 Running row is not a GPU component, and not a crash


def test_imported_by_content():
    kinds = [s.kind for s in split_sections(PODS_35)]
    assert kinds == ["k8s-pods"]
    assert [s.kind for s in split_sections(NODE_36)] == ["k8s-node"]
    assert [s.kind for s in split_sections(YAML_58)] == ["k8s-node"]
    parts = parse_text(PODS_35 + "$ kubectl get node -o yaml\n" + YAML_58, "paste.txt")
    assert [p.kind for p in parts] == ["k8s-pods", "k8s-node"]
    assert sum(len(p.rig.node.health_checks or []) for p in parts) == 4


def test_a_paste_cut_inside_capacity_does_not_say_it_lacks_the_gpu():
    text = LABELS_1501.rsplit("\n", 1)[0] + "\nCapacity:\n  cpu:  128\n  memory:  1056410708Ki\n"
    rig = parse_node(text, "n.txt")
    assert not rig.node.health_checks and not rig.problems
    closed = parse_node(text + "Allocatable:\n  cpu:  128\n", "n.txt")
    assert [c.detail for c in closed.node.health_checks] == [
        "labels count 8 GPU(s) but Capacity lists no nvidia.com/gpu"
    ]


# https://github.com/NVIDIA/gpu-operator/issues/160 (oc get all -n gpu-operator-resources: pods named pod/NAME)
OC_160 = """\
NAME                                           READY   STATUS             RESTARTS   AGE
pod/nfd-master-bj47q                           1/1     Running            0          29h
pod/nvidia-container-toolkit-daemonset-srf6l   0/1     Init:0/1           0          18m
pod/nvidia-driver-daemonset-q45bl              0/1     CrashLoopBackOff   7          18m

"""


def test_oc_get_all_pod_rows_and_init_is_not_a_crash():
    (hc,) = parse_pods(OC_160, "p.txt").node.health_checks
    assert hc.check == "pod nvidia-driver-daemonset-q45bl"
    assert hc.detail == "nvidia-driver-daemonset pod STATUS CrashLoopBackOff, READY 0/1, RESTARTS 7"


def test_mig_devices_counted_by_the_single_strategy_are_not_gpus():
    # 1501's labels with the product GFD gave the MIG devices of gpu-operator issue 479
    # (https://github.com/NVIDIA/gpu-operator/issues/479: "gpu.product is changed to NVIDIA-A100-SXM4-80GB-MIG-INVALID")
    text = LABELS_1501.replace("NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB-MIG-INVALID")
    rig = parse_node(text, "n.txt")
    assert not rig.gpus
    assert rig.problems == [
        "n.txt: line 2: nvidia.com/gpu.count=8 counts MIG devices (NVIDIA-A100-SXM4-80GB-MIG-INVALID), not GPUs: the "
        "GPUs are not read from these labels"
    ]


# the deprecated and the newer driver labels GFD writes, as NVIDIA/k8s-device-plugin pull 620 lists them
# (https://github.com/NVIDIA/k8s-device-plugin/pull/620), with the driver 535.104.05's numbers
def test_the_driver_version_from_either_label_form():
    old = "Name:  n1\nRoles:  <none>\nLabels:  nvidia.com/cuda.driver.major=535\n  nvidia.com/cuda.driver.minor=104\n"
    old += "  nvidia.com/cuda.driver.rev=05\n"
    assert parse_node(old, "n.txt").software.driver_version == "535.104.05"
    new = old + "  nvidia.com/cuda.driver-version.full=535.104.05\n"
    rig = parse_node(new, "n.txt")
    assert rig.software.driver_version == "535.104.05" and rig.origins["software.driver_version"] == "n.txt:6"
