"""docker compose prints each service's output behind its name ("test_1  | ", padded to the longest), between its own
status lines ("Creating gpu_test_1 ... done", "Attaching to gpu_test_1", "gpu_test_1 exited with code 0"): the
output under the prefix reads as printed, compose's own lines carry none."""

from __future__ import annotations

from pathlib import Path

from gpuadvisor.importers.prefixed import strip_prefix
from tests.corpus_cases import import_paste

# Docker's documentation, "Enable GPU access with Docker Compose" (docs.docker.com/compose/how-tos/gpu-support/), its
# example output, copied as printed (the trailing spaces of "Attaching to gpu_test_1    " and of the blank line kept)
DOCKER_DOCS = (
    "$ docker-compose up\n"
    'Creating network "gpu_default" with the default driver\n'
    "Creating gpu_test_1 ... done\n"
    "Attaching to gpu_test_1    \n"
    "test_1  | +-----------------------------------------------------------------------------+\n"
    "test_1  | | NVIDIA-SMI 450.80.02    Driver Version: 450.80.02    CUDA Version: 11.1     |\n"
    "test_1  | |-------------------------------+----------------------+----------------------+\n"
    "test_1  | | GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
    "test_1  | | Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
    "test_1  | |                               |                      |               MIG M. |\n"
    "test_1  | |===============================+======================+======================|\n"
    "test_1  | |   0  Tesla T4            On   | 00000000:00:1E.0 Off |                    0 |\n"
    "test_1  | | N/A   23C    P8     9W /  70W |      0MiB / 15109MiB |      0%      Default |\n"
    "test_1  | |                               |                      |                  N/A |\n"
    "test_1  | +-------------------------------+----------------------+----------------------+\n"
    "test_1  |                                                                                \n"
    "test_1  | +-----------------------------------------------------------------------------+\n"
    "test_1  | | Processes:                                                                  |\n"
    "test_1  | |  GPU   GI   CI        PID   Type   Process name                  GPU Memory |\n"
    "test_1  | |        ID   ID                                                   Usage      |\n"
    "test_1  | |=============================================================================|\n"
    "test_1  | |  No running processes found                                                 |\n"
    "test_1  | +-----------------------------------------------------------------------------+\n"
    "gpu_test_1 exited with code 0\n"
)


def test_the_service_name_is_a_prefix_and_composes_own_lines_carry_none() -> None:
    text, kind = strip_prefix(DOCKER_DOCS)
    assert kind == "docker compose's service name"
    assert "|   0  Tesla T4            On   | 00000000:00:1E.0 Off |" in text.splitlines()[11]


def test_docker_docs_example_reads_its_one_t4(tmp_path: Path) -> None:
    scan = import_paste(tmp_path, DOCKER_DOCS)
    assert (scan["software"]["driver_version"], scan["software"]["cuda_driver_version"]) == ("450.80.02", "11.1")
    ((name, bus, mem, cap),) = [
        (g["name"], g["bus_id"], g["memory_total_bytes"], g["power_limit_w"]) for g in scan["gpus"]
    ]
    assert (name, bus, mem, cap) == ("Tesla T4", "0000:00:1e.0", 15109 * 1048576, 70.0)


def test_lines_of_two_services_are_not_one_output() -> None:
    two = "web_1  | a\nweb_1  | b\ndb_1   | c\ndb_1   | d\n"
    assert strip_prefix(two) == (two, None)


def test_a_two_column_table_is_not_a_service_prefix() -> None:
    table = "name     | value\ngpu      | 4\nmemory   | 80 GB\n"  # three different "names"
    assert strip_prefix(table)[1] is None
