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


# --- one shell prompt grammar (section.shell_prompt) for the four readers that each wrote their own -------------
# What each reader's own pattern accepted before (its regex as it was): the shared grammar accepts every line these
# accepted, in the real pastes, at the same place (the prompt ends where it ended; the command captured the same).
LEGACY = {
    "section": r"^\s*(?:\[[^\]]*\][$#]|[\w@.:~/-]*\$|[\w@.:~/-]+#)\s+\S",
    "prefixed": r"^\s*(?:\([^)]{0,40}\)\s*)?[\w@.:~/\[\]-]{0,80}[$#]\s+\S",
    "beyond_tools shell": r"^\s*(?:\([^)]{0,40}\)\s*)?(?:\[[^\]]{0,80}\]|[\w.@~:/-]{0,80})[$#%>](?:\s+(.*?))?\s*$",
    "beyond_tools nccl": r"^\s*(?:\[[^\]]*\][$#]|[\w@.:~/-]*\$)\s+\w",
    "launch_env": r"^\s*(?:\([^)]{0,40}\)\s*)?(?:\[[^\]]{0,80}\][$#]|[\w.@~:/-]{0,80}[$%#>])\s+",
}
# prompts the readers' tests and docstrings name, and real ones from the pastes (the corpus adds thousands of lines)
PROMPTS = [
    "$ nvidia-smi topo -m",
    "user@node01:~$ sudo dmesg",
    "root@n1:~# dmesg",
    "[root@n1 ~]# lspci -vv",
    "(venv) user@host:~$ python collect_env.py",
    "(base) vale@debianace:~$ gpustat --debug",  # https://github.com/wookayin/gpustat/issues/122
    "anamaria@gpu-a-11.extreme:~ $ gpustat",  # https://github.com/wookayin/gpustat/issues/130
    "root@node1:~# nvidia-smi -L",  # https://github.com/akash-network/provider-configs/pull/12
    ":~/nccl-tests$ ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 1",  # https://github.com/NVIDIA/nccl-tests/issues/217
]
NOT_PROMPTS = ["Error: could not open /dev/nvidia0", "GPU 0: NVIDIA A100", "NCCL INFO Bootstrap : Using eth0", ""]


def _sites():
    from gpuadvisor.importers import beyond_tools, launch_env, prefixed, section

    return {
        "section": section._PROMPT,
        "prefixed": prefixed._PROMPT,
        "beyond_tools shell": beyond_tools._SHELL,
        "beyond_tools nccl": beyond_tools._PROMPT,
        "launch_env": launch_env._PROMPT,
    }


def test_each_reader_still_takes_every_prompt_it_took():
    import re

    from tests.corpus_cases import real_pastes

    lines = {x for _, text in real_pastes() for x in text.splitlines()} | set(PROMPTS)
    for site, now in _sites().items():
        before = re.compile(LEGACY[site])
        taken = [x for x in lines if before.match(x)]
        assert taken, site
        for line in taken:
            old, new = before.match(line), now.match(line)
            assert new is not None, f"{site}: {line!r} no longer a prompt"
            assert new.groups()[:1] == old.groups()[:1], f"{site}: {line!r}: the command read differs"
            if site == "launch_env":  # what it strips off the line before the command
                assert new.end() == old.end(), f"{site}: {line!r}"


def test_the_named_prompts_are_prompts_and_prose_is_not():
    sites = _sites()
    for line in PROMPTS:
        assert sites["section"].match(line) and sites["prefixed"].match(line), line
    for line in NOT_PROMPTS + ["# comment", "#  Rank  0 Group  0 Pid  70918 on NAME device  0 [0x01] NVIDIA RTX A6000"]:
        assert not sites["section"].match(line), line  # a comment, nccl-tests' '#' rows: no prompt
        assert not sites["beyond_tools nccl"].match(line), line
    for line in NOT_PROMPTS:
        assert not any(p.match(line) for p in sites.values()), line
