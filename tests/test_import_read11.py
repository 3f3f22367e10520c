"""Real pastes of held-out set 10 the readers misread (GPU side): each class is read from the paste it came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor import rules
from gpuadvisor.errors import InputError
from gpuadvisor.facts import Rig
from gpuadvisor.importers import import_texts
from gpuadvisor.importers.section import clean_lines

CORPUS = Path(__file__).parent / "corpus"


def _paste(folder: str, pattern: str) -> tuple[str, str]:
    path = next((CORPUS / folder).glob(pattern))
    return path.name, path.read_text()


def test_nccl_tests_from_a_device_line_below_the_header_reads_its_gpu_and_no_world_size() -> None:
    # https://github.com/coreweave/nccl-tests/pull/43: rank 71's device line (of 72), then the column header and rows
    name, text = _paste("s10-nccl-tests", "all_reduce-nvl72-72-ranks*.txt")
    rig = import_texts([(name, text)])
    assert [(g.index, g.name) for g in rig.gpus] == [(3, "NVIDIA Graphics Device")]
    assert rig.host.hostname == "slurm-gb200-207-171"
    (m,) = rig.measurements
    assert (m.kind, m.value_gbps, m.world_size) == ("all_reduce", 834.57, None)
    assert "up to rank 71" in m.unavailable["world_size"]


def test_device_lines_above_a_debug_log_stay_the_debug_log_s() -> None:
    # written by hand in nccl-tests' and NCCL's formats (NCCL_DEBUG=INFO): device lines, then the debug log
    text = (
        "#  Rank  0 Group  0 Pid  4242 on node1 device  0 [0x4c] NVIDIA H800\n"
        "node1:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    )
    rig = import_texts([("log.txt", text)])
    assert not rig.measurements


def test_lspci_device_line_cut_mid_line_gives_no_name_from_its_stub() -> None:
    # https://github.com/dylanaraps/neofetch/issues/65: '$ lspci | grep 3D' and one device line, cut here
    name, text = _paste("s10-lspci", "lspci-grep-3d-one-line-prompt-gt750m*.txt")
    line = text.rstrip("\n")
    for cut, expect in ((line[: line.index("Corporation") + 7], None), (line[:-3], "NVIDIA GeForce GT 750M")):
        (g,) = import_texts([(name, cut)]).gpus
        assert (g.bus_id, g.name) == ("0000:01:00.0", expect)
        assert expect or "cut mid-line" in g.unavailable["name"]


def test_a_headerless_query_gpu_line_of_two_cells_reads_its_gpu() -> None:
    # https://github.com/akash-network/provider-configs/pull/91: '--query-gpu=name,pci.device_id --format=csv,noheader'
    # printed one fenced line, its command in the prose only
    name, text = _paste("s10-smi-csv", "query-gpu-name-device-id-noheader*.txt")
    (g,) = import_texts([(name, text)]).gpus
    assert g.name == "NVIDIA H100 NVL"
    # written by hand in the forms of nvidia-smi --help-query-gpu (name,driver_version / name,compute_cap / name,uuid)
    for row in ("NVIDIA A100-SXM4-80GB, 535.104.05", "NVIDIA GeForce RTX 4090, 8.9", "Tesla T4, GPU-1a2b3c4d-0000"):
        (g,) = import_texts([("q.txt", f"```\n{row}\n{row}\n```\n")]).gpus[:1]
        assert g.name == row.split(",")[0]
    # two cells of no form only nvidia-smi prints are no GPU row (written by hand: prose with a comma)
    for prose in ("NVIDIA H100 NVL, a fast card\n", "Tesla V100, 16GB\n"):
        with pytest.raises(InputError):
            import_texts([("x.txt", prose)])


def test_fio_2_result_lines_indented_after_a_prompt_are_read() -> None:
    # https://github.com/axboe/fio/issues/41: fio 2.2.3, indented by four spaces, 'read : io=..., bw=57875KB/s'
    name, text = _paste("s10-storage", "fio-2.2-old-format*.txt")
    ((_, bench),) = [(p.path, p.bench) for p in import_texts([(name, text)]).storage.paths]
    assert bench is not None
    assert (bench.method, bench.block_bytes, bench.iodepth, bench.seq_read_gbps) == ("fio-2.2.3", 4096, 16, 0.059)
    # fio 2's HOWTO ('Interpreting the output'): padded figures, 'iops=89 ,'; KB are 1024 bytes (kb_base=1024)
    howto = (
        "seq: (g=0): rw=write, bs=1M-1M/1M-1M/1M-1M, ioengine=sync, iodepth=1\n"
        "seq: (groupid=0, jobs=1): err= 0: pid=16109\n"
        "  write: io=    32MB, bw=   666KB/s, iops=89 , runt= 50320msec\n"
    )
    ((_, bench),) = [(p.path, p.bench) for p in import_texts([("fio.txt", howto)]).storage.paths]
    assert bench is not None and bench.seq_write_gbps == round(666 * 1024 / 1e9, 3)


def test_an_sxm_gpu_shown_as_gpu_2_with_every_nvlink_inactive_fails() -> None:
    # https://github.com/leptonai/gpud/issues/1085: 'GPU 2: NVIDIA B200 (UUID: GPU-xxx)' and NVML's 'all links are
    # inActive': GPU 2 is one of the node's GPUs, off the NVLink fabric (not a VM's only GPU)
    name, text = _paste("s10-nvlink", "nvlink-b200-all-links-inactive*.txt")
    rig = import_texts([(name, text)])
    assert [(g.index, g.uuid) for g in rig.gpus] == [(2, None)]
    assert _codes(rig)["GA204"] == "fail"
    # the same lines shown as GPU 0, the only GPU: may be a VM's, passed through without NVLink (warn)
    rig = import_texts([(name, text.replace("GPU 2:", "GPU 0:"))])
    assert _codes(rig)["GA204"] == "warn"


def _codes(rig: Rig) -> dict[str, str]:
    return {f.code: f.severity for f in rules.evaluate(rig) if f.severity != "not-checked"}


def test_a_quoted_block_under_a_prompt_in_a_fence_or_quoted_again_is_unquoted() -> None:
    # https://github.com/leptonai/gpud/pull/1271: every line quoted with '> ' (the command, a '>' line, one kernel line)
    name, text = _paste("s10-logs", "journal-k-grep-postrxdetlinkmask-gh100-quoted*.txt")
    whole = import_texts([(name, text)])
    assert whole.kernel is not None and whole.kernel.lines_read == 1
    quoted = [f"> {x}" if x else ">" for x in text.splitlines()]
    for variant in (
        "user@node01:~$ journalctl -k\n" + text,  # a prompt line above the quoted block
        "```\n" + text + "```\n",  # the block in a markdown fence
        "\n".join(quoted) + "\n",  # quoted again ('> > ')
        "\n".join(f"% {x}" for x in text.splitlines()) + "\n",  # '% ' over '> '
    ):
        rig = import_texts([(name, variant)])
        assert rig.kernel is not None and rig.kernel.lines_read == 1, variant
    # one quoted line inside an output, or a command continued on '> ' (PS2) prompts, is the shell's: kept as it is
    for shell in (
        "$ for i in 0 1; do\n> nvidia-smi -i $i; done\n",
        "$ mpirun \\\n>   -np 16 \\\n>   ./all_reduce_perf\n",
    ):
        assert clean_lines(shell) == shell.splitlines()
