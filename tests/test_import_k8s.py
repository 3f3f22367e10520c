"""Kubernetes outputs from GPU-operator and device-plugin reports: kubectl describe node / get node -o yaml (GPU
Feature Discovery labels, the nvidia.com/gpu resource) and kubectl get pods tables. Each paste is quoted from the
public thread cited above it; the values asserted are what the paste prints."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers import parse_text
from gpuadvisor.importers.k8s import parse_node, parse_pods
from gpuadvisor.importers.sections import split_sections

L = " " * 20
FIXTURES = Path(__file__).parent / "fixtures" / "k8s"

# https://github.com/NVIDIA/k8s-device-plugin/issues/1501 (kubectl describe node, non-MIG node; its last label as the
# excerpt cuts it, with no newline after it)
LABELS_1501 = (
    "...\n"
    + "".join(
        f"{L}{x}\n"
        for x in (
            "nvidia.com/gpu.count=8",
            "nvidia.com/gpu.deploy.container-toolkit=true",
            "nvidia.com/gpu.deploy.device-plugin=true",
            "nvidia.com/gpu.family=hopper",
            "nvidia.com/gpu.machine=PowerEdge-XE9680",
            "nvidia.com/gpu.memory=81559",
            "nvidia.com/gpu.mode=compute",
            "nvidia.com/gpu.present=true",
            "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.replicas=1",
            "nvidia.com/mig.capable=true",
        )
    )
    + f"{L}nvidia.com/mig.config=al"
)

# https://github.com/NVIDIA/gpu-feature-discovery/issues/36 (kubectl describe node of a node GFD did not label)
NODE_36 = (FIXTURES / "describe-node-no-gpu-resource_gfd36.txt").read_text()

# https://github.com/NVIDIA/k8s-device-plugin/issues/58 (kubectl get node -o yaml: "allocatable stuck at zero")
YAML_58 = """\
    status:
      addresses:
      - address: 134.79.129.97
        type: InternalIP
      - address: ocio-gpu01
        type: Hostname
      allocatable:
        cpu: "48"
        ephemeral-storage: "9391196145"
        hugepages-1Gi: "0"
        hugepages-2Mi: "0"
        memory: 263412492Ki
        nvidia.com/gpu: "0"
        pods: "110"
      capacity:
        cpu: "48"
        ephemeral-storage: 10190100Ki
        hugepages-1Gi: "0"
        hugepages-2Mi: "0"
        memory: 263514892Ki
        nvidia.com/gpu: "16"
        pods: "110"
"""

# https://github.com/NVIDIA/k8s-device-plugin/issues/995 (kubectl describe node: 1 GPU registered on a 4-GPU node)
NODE_995 = """\
Capacity:
  cpu:                80
  ephemeral-storage:  459329648Ki
  hugepages-1Gi:      0
  hugepages-2Mi:      0
  memory:             131618692Ki
  nvidia.com/gpu:     1
  pods:               110
Allocatable:
  cpu:                80
  ephemeral-storage:  423318202896
  hugepages-1Gi:      0
  hugepages-2Mi:      0
  memory:             131516292Ki
  nvidia.com/gpu:     1
  pods:               110
"""

# https://github.com/NVIDIA/gpu-operator/issues/624
PODS_624 = """\
kubectl get pods -n gpu-operator
NAME                                                         READY   STATUS             RESTARTS         AGE
gpu-feature-discovery-97z5s                                  1/1     Running            1 (75m ago)      13h
gpu-feature-discovery-wpj2m                                  1/1     Running            1 (100m ago)     13h
gpu-operator-657c5b798d-xgvgc                                0/1     CrashLoopBackOff   12 (4m24s ago)   67m
gpu-operator-node-feature-discovery-gc-7cc7ccfff8-7tlsl      1/1     Running            0                50m
gpu-operator-node-feature-discovery-master-d8597d549-cx849   1/1     Running            0                85m
"""

# https://github.com/NVIDIA/gpu-operator/issues/35
PODS_35 = """\
kubectl get pods -n gpu-operator-resources
NAME                                       READY   STATUS             RESTARTS   AGE
nvidia-container-toolkit-daemonset-2s5nq   1/1     Running            0          45m
nvidia-container-toolkit-daemonset-nbjzb   1/1     Running            3          45m
nvidia-device-plugin-daemonset-5crlk       0/1     CrashLoopBackOff   12         40m
nvidia-device-plugin-daemonset-6ccx4       0/1     CrashLoopBackOff   13         40m
nvidia-device-plugin-daemonset-9q94x       1/1     Running            0          40m
nvidia-device-plugin-daemonset-kljrg       0/1     CrashLoopBackOff   6          6m1s
"""

# https://github.com/NVIDIA/gpu-operator/issues/488 (kubectl get pods --all-namespaces)
PODS_488 = (FIXTURES / "get-pods-all-namespaces-nfd-crashloop_gpu-operator488.txt").read_text()


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
    assert not rig.node.health_checks and not rig.problems and not rig.gpus


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
