"""What last round left: a node whose device plugin counts GPUs its labels do not; container runtime errors that
mean the node cannot run GPU containers; a closing code fence that ends a paste; one shell prompt grammar. Each
paste is quoted from the public thread cited beside it."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path

from gpuadvisor import cli
from gpuadvisor.importers import parse_text
from gpuadvisor.importers.k8s import parse_node
from tests.corpus_cases import fixture_body

FIXTURES = Path(__file__).parent / "fixtures" / "import"
K8S = FIXTURES / "k8s"
# https://github.com/tkestack/gpu-manager/issues/121: kubectl describe node's Capacity, nvidia.com/gpu 2, no GFD label
CAPACITY_121 = fixture_body(K8S / "describe-node-capacity-2-gpu-no-gfd-labels_gpu-manager121.txt")
# https://github.com/NVIDIA/k8s-device-plugin/issues/58: -o yaml, capacity nvidia.com/gpu 16, allocatable 0, no label
YAML_58 = fixture_body(K8S / "get-node-yaml-allocatable-0-of-16_k8s-device-plugin58.txt")


def _cli(*args: str) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return cli._run(list(args))


def test_the_device_plugins_capacity_counts_the_gpus_where_no_label_does():
    rig = parse_node(CAPACITY_121, "n.txt")
    assert len(rig.gpus) == 2
    assert rig.origins["gpus[1]"] == "n.txt:7"  # the `nvidia.com/gpu: 2` line
    g = rig.gpus[0]
    assert g.name is None and g.bus_id is None and g.memory_total_bytes is None
    assert "nvidia.com/gpu Capacity gives a count, not the GPUs" in g.unavailable["name"]
    assert "time-sliced GPU counts once per replica" in g.unavailable["bus_id"]
    assert not rig.node.health_checks  # Allocatable not shown: nothing to compare
    yaml = parse_node(YAML_58, "y.txt")
    assert len(yaml.gpus) == 16 and yaml.origins["gpus[0]"] == "y.txt:21"  # capacity's "16", not allocatable's "0"


def test_a_capacity_count_adds_no_gpu_to_the_gpus_nvidia_smi_lists():
    smi = fixture_body(FIXTURES / "samples" / "smi-q_a100sxmx4_thamada.txt")  # 4x A100-SXM4-80GB
    with tempfile.TemporaryDirectory() as tmp:
        paste = Path(tmp) / "node.txt"
        paste.write_text(smi + "\n$ kubectl get node -o yaml\n" + YAML_58, encoding="utf-8")
        scan = Path(tmp) / "s.json"
        assert _cli("import", str(paste), "--json", str(scan)) == 0
        got = json.loads(scan.read_text(encoding="utf-8"))
    assert [g["name"] for g in got["gpus"]] == ["NVIDIA A100-SXM4-80GB"] * 4
    assert any("nvidia.com/gpu counts 16, the other outputs list 4 GPU(s)" in p for p in got["problems"])


def test_check_on_the_saved_scan_exits_by_its_findings():
    """16 GPUs in capacity, none allocatable: GA827 warns; `check --from` gates on it, not 'cannot be judged'."""
    with tempfile.TemporaryDirectory() as tmp:
        paste, scan = Path(tmp) / "node.yaml.txt", Path(tmp) / "s.json"
        paste.write_text(YAML_58, encoding="utf-8")
        assert _cli("import", str(paste), "--json", str(scan)) == 0
        got = json.loads(scan.read_text(encoding="utf-8"))
        assert len(got["gpus"]) == 16
        assert [f["code"] for f in got["findings"] if f["severity"] == "warn"] == ["GA827"]
        assert _cli("check", "--from", str(scan)) == 0  # fail-on fail: a warning passes
        assert _cli("check", "--from", str(scan), "--fail-on", "warn") == 1


def test_the_node_paste_reads_by_content_with_its_gpus():
    (part,) = parse_text(CAPACITY_121, "paste.txt")
    assert part.kind == "k8s-node" and len(part.rig.gpus) == 2


def test_the_resource_list_without_its_header_still_counts():
    rig = parse_node(CAPACITY_121.split("\n", 1)[1], "n.txt")  # `Capacity:` not shown
    assert len(rig.gpus) == 2
    assert "Capacity or Allocatable (its header not shown)" in rig.gpus[0].unavailable["name"]


# --- the container runtime's GPU errors: the node cannot start a GPU container -------------------------------------
CONTAINER = FIXTURES / "container"


def _import(*names: str, folder: Path = CONTAINER) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        scan = Path(tmp) / "s.json"
        assert _cli("import", *(str(folder / n) for n in names), "--json", str(scan)) in (0, 1)
        return json.loads(scan.read_text(encoding="utf-8"))


def _ga507(scan: dict) -> list[dict]:
    return [f for f in scan["findings"] if f["code"] == "GA507" and f["severity"] != "not-checked"]


def test_docker_without_a_gpu_device_driver_fails_with_the_toolkits_fix():
    for name in ("docker-gpus-no-device-driver-then-erro_nvidia-docker1243.txt",
                 "docker-gpus-no-device-driver-unquoted_nvidia-docker1642.txt"):  # fmt: skip
        (f,) = _ga507(_import(name))
        assert f["severity"] == "fail"
        assert "could not select device driver" in f["message"] and "Container Toolkit is not installed" in f["message"]
        assert "nvidia-ctk runtime configure --runtime=docker" in f["fix"] and "restart docker" in f["fix"]
        assert f["observed"]["evidence"].endswith(":3")  # the paste's line (under its two '# ' lines)
        assert not [x for x in _import(name)["findings"] if x["code"] == "GA827"]  # judged once, by GA507


def test_the_toolkits_hook_with_no_driver_loaded_is_ga507s_fail():
    (f,) = _ga507(_import("oci-hook-driver-not-loaded_apollo-perception-ros20.txt"))
    assert f["severity"] == "fail" and "NVML_ERROR_DRIVER_NOT_LOADED" in f["expected_source"]
    assert "lsmod | grep nvidia" in f["fix"]


def test_no_libnvidia_ml_on_the_host_fails_with_install_the_driver():
    scan = _import("nvidia-container-cli-list-no-libnvidia-ml_libnvidia-container231.txt")
    (f,) = _ga507(scan)
    assert f["severity"] == "fail" and "libnvidia-ml.so.1" in f["message"]
    assert f["fix"].startswith("install the NVIDIA driver on the host")


def test_nvml_unknown_error_in_a_running_container_stays_a_note():
    scan = _import("nvidia-smi-in-container-nvml-unknown-error_mattshma-bigdata150.txt")
    assert not _ga507(scan) and any("systemd reload" in p for p in scan["problems"])


def test_a_host_whose_nvidia_smi_works_still_fails_for_gpu_containers():
    # retinanet-examples 278: nvidia-smi on the host answers, docker run --gpus does not
    smi = fixture_body(FIXTURES / "samples" / "smi-q_a100sxmx4_thamada.txt")
    docker = fixture_body(CONTAINER / "docker-gpus-no-device-driver-unquoted_nvidia-docker1642.txt")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "both.txt").write_text(smi + "\n$ docker run --rm --gpus all nvidia/cuda nvidia-smi\n" + docker,
                                            encoding="utf-8")  # fmt: skip
        scan = _import("both.txt", folder=Path(tmp))
    assert scan["software"]["driver_version"] == "555.42.02"
    assert [f["severity"] for f in _ga507(scan)] == ["fail"]


# --- a closing fence ends the paste: the line above it is whole ----------------------------------------------------
CORPUS = Path(__file__).parent / "corpus"


def test_the_row_above_a_closing_fence_is_read_whole():
    # https://github.com/NVIDIA/nccl-tests/issues/37: all_gather_perf, then nvidia-smi topo -m whose GPU7 row is the
    # last line before the closing fence: its CPU Affinity cell (0-95) was taken for a possibly cut one
    paste = CORPUS / "s19-nccl-tests" / "all-gather-4g-out-of-bounds-2-failed-then-topo-8x-v100-tabs_shaochuang-wsc.txt"
    assert fixture_body(paste).rstrip("\n").endswith("```")
    scan = _import(paste.name, folder=paste.parent)
    assert [g["cpu_affinity"] for g in scan["gpus"]] == ["0-95"] * 8
    assert not [p for p in scan["problems"] if "file ends inside row GPU7" in p]
