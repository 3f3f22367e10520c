"""The container runtime's GPU errors (docker --gpus, nvidia-container-cli's NVML, NVML in a container), each a real
paste from the public thread its fixture's first line cites (tests/fixtures/import/container/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor.importers import parse_text
from gpuadvisor.importers.container_errors import parse
from tests.corpus_cases import fixture_body

FIXTURES = Path(__file__).parent / "fixtures" / "import" / "container"


def _paste(name: str) -> str:
    return fixture_body(FIXTURES / name)


@pytest.mark.parametrize(
    ("name", "line", "says"),
    [
        ("docker-gpus-no-device-driver_nvidia-docker1352.txt", 2, "NVIDIA Container Toolkit is not installed"),
        ("docker-gpus-no-device-driver_retinanet-examples278.txt", 1, "NVIDIA Container Toolkit is not installed"),
        ("oci-hook-nvml-driver-not-loaded_nvidia-container-toolkit260.txt", 1, "NVML_ERROR_DRIVER_NOT_LOADED"),
        ("nvidia-container-cli-info-driver-not-loaded_nvidia-container-toolkit1269.txt", 1, "driver is not loaded"),
        ("nvidia-smi-in-container-nvml-unknown-error_mattshma-bigdata150.txt", 1, "systemd reload"),
    ],
)
def test_each_error_is_one_note_with_its_line(name: str, line: int, says: str) -> None:
    rig = parse(_paste(name), "e.txt")
    (note,) = rig.problems
    assert note.startswith(f"e.txt: line {line}: ") and says in note
    assert not rig.gpus
    # the three that stop every GPU container are the container runtime's failed check too (GA507 judges it)
    checks = [(c.tool, c.verdict, c.evidence) for c in rig.node.health_checks or []]
    assert checks == ([] if says == "systemd reload" else [("container runtime", "fail", f"e.txt:{line}")])


def test_the_gpus_listed_before_the_error_are_read_and_the_error_too() -> None:
    parts = parse_text(_paste("kubectl-logs-smi-L-then-nvml-unknown-error_gpu-operator485.txt"), "pod.txt")
    assert [p.kind for p in parts] == ["smi-list", "container-errors"]
    assert {g.uuid for g in parts[0].rig.gpus} == {"GPU-551720f0-caf0-22b7-f525-2a51a6ab478d"}
    assert [n.split(":")[1] for n in parts[1].rig.problems] == [" line 5", " line 6"]


def test_the_docker_command_before_the_error_is_left_unread_not_refused() -> None:
    parts = parse_text(_paste("docker-gpus-no-device-driver_nvidia-docker1352.txt"), "d.txt")
    assert [p.kind for p in parts] == ["container-errors"]
