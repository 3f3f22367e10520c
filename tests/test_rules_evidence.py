"""Rules judge what the evidence shows (issue: real pastes): NVLinks against the model's link count, collective
bandwidth at its plateau, and no warning or failure from a fact the source does not show.

Inputs are real outputs (tests/fixtures/import/samples, copies of public pastes; tests/fixtures/import/found,
public outputs with their source in the file) and variants of them made by editing one fact, said at each use.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadvisor import facts
from gpuadvisor.facts import SweepRow
from gpuadvisor.importers import import_files, import_texts
from gpuadvisor.physics import plateau
from gpuadvisor.rules import evaluate
from gpuadvisor.rules.topology import links_not_shown

FIX = Path(__file__).parent / "fixtures" / "import"
SAMPLES, FOUND, OWN = FIX / "samples", FIX / "found", FIX / "own"
ELIDED = "not shown in the source (the paste elides it with '...')"


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def bad(rig: facts.Rig) -> list[tuple[str, str, tuple[int, ...]]]:
    return sorted((f.code, f.severity, tuple(f.gpus)) for f in evaluate(rig) if f.severity in ("warn", "fail", "error"))


def code(rig: facts.Rig, c: str) -> list[facts.Finding]:
    return [f for f in evaluate(rig) if f.code == c]


def mark_elided(rig: facts.Rig, index: int) -> None:
    """What the importer records for a link list cut by '...' (the facts below it unknown, with the reason)."""
    g = rig.gpu(index)
    if links_not_shown(g) is None:
        g.unavailable["nvlinks"] = ELIDED


# -- GA204: NVLinks against the model, not only against peers ---------------------------------------------


def test_v100_sxm2_all_six_links_active_is_quiet() -> None:
    rig = import_files([SAMPLES / "nvlink-s_8xv100-sxm2_lukolszewski.txt"])
    assert [len(g.active_nvlinks()) for g in rig.gpus] == [6] * 8
    assert code(rig, "GA204") == []


def test_every_gpu_losing_the_same_link_fails_against_the_datasheet() -> None:
    # variant: link 5 of every V100 printed <inactive>; peers agree with each other, the model has 6 links
    t = text(SAMPLES / "nvlink-s_8xv100-sxm2_lukolszewski.txt").replace("Link 5: 25.781 GB/s", "Link 5: <inactive>")
    rig = import_texts([("nvlink-s.txt", t)])
    fs = code(rig, "GA204")
    assert [(f.severity, f.gpus) for f in fs] == [("fail", [i]) for i in range(8)]
    assert fs[0].observed == {"active_links": 5, "inactive_links": [5]} and fs[0].expected == {"active_links": 6}
    assert fs[0].expected_source.startswith(
        "NVIDIA Tesla V100 SXM2: 6 NVLinks (NVIDIA Tesla V100 GPU architecture whitepaper"
    )


def test_the_only_gpu_in_a_paste_with_an_inactive_link_warns() -> None:
    """A V100 SXM2 shown alone: the paste cannot tell a board that wires all six links (DGX-1: then one is down) from
    one that does not (a two-GPU node joined by two links, an HPC centre's documented wiring): warn, not fail."""
    lines = text(SAMPLES / "nvlink-s_8xv100-sxm2_lukolszewski.txt").splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("GPU 0:"))
    gpu0 = lines[start : start + 7]  # the GPU 0 line and its 6 links
    gpu0[4] = gpu0[4].replace("25.781 GB/s", "<inactive>")  # variant: link 3 down
    rig = import_texts([("nvlink-s.txt", "\n".join(gpu0) + "\n")])
    assert len(rig.gpus) == 1
    (f,) = code(rig, "GA204")
    assert (f.severity, f.gpus, f.observed) == ("warn", [0], {"active_links": 5, "inactive_links": [3]})


def test_a100_two_inactive_links_fail_against_twelve() -> None:
    rig = import_files([SAMPLES / "smi-q_a100sxmx4_thamada.txt", OWN / "nvlink-status_4xa100-two-inactive.txt"])
    (f,) = code(rig, "GA204")
    assert (f.severity, f.gpus, f.expected) == ("fail", [2], {"active_links": 12})
    assert "where the NVIDIA A100 SXM4 80GB has 12 (inactive links: 10, 11)" in f.message


def test_unbridged_a6000_beside_bridged_peers_warns_from_nvlink_s_and_from_topo_m() -> None:
    rig = import_files([SAMPLES / "nvlink-s_3xa6000-one-unbridged_siboehm.txt"])
    assert bad(rig) == [("GA204", "warn", (2,))]
    topo = import_files([SAMPLES / "topo-m_3xa6000-nvlink-bridge-nv4_siboehm.txt"])  # topology alone: no names
    (f,) = [f for f in code(topo, "GA204") if f.severity == "warn"]
    assert f.gpus == [2] and f.observed == {"nvlink_peers": 0, "levels": ["NODE"]}
    assert f.message.startswith("GPU 2 has no NVLink to any other GPU (NODE) while GPUs 0, 1 are all joined by NVLink")
    both = import_files(
        [
            SAMPLES / "topo-m_3xa6000-nvlink-bridge-nv4_siboehm.txt",
            SAMPLES / "nvlink-s_3xa6000-one-unbridged_siboehm.txt",
        ]
    )
    assert bad(both) == [("GA204", "warn", (2,))]  # one finding, from the link list


def test_sxm_gpu_off_the_fabric_in_topo_m_fails(preset) -> None:
    rig = preset("dgx-h100")
    n = len(rig.gpus)
    for j in range(n):
        if j != 7:
            rig.topology.matrix[7][j] = rig.topology.matrix[j][7] = "SYS"
    for g in rig.gpus:
        g.nvlinks = []
        g.unavailable["nvlinks"] = facts.NOT_IN_SOURCE
    fs = [f for f in code(rig, "GA204") if f.severity != "not-checked"]
    assert [(f.severity, f.gpus) for f in fs] == [("fail", [7])]
    assert "it is off the NVLink fabric" in fs[0].message


def test_elided_link_list_is_not_checked_never_inactive() -> None:
    rig = import_files([SAMPLES / "nvlink-s_gb200-elided.txt"])
    mark_elided(rig, 1)
    fs = code(rig, "GA204")
    assert [(f.severity, f.gpus) for f in fs] == [("not-checked", [1])]
    assert fs[0].message.startswith("NVLink state not shown for every link: ")
    # a link shown <inactive> above the elision is a fact and is judged
    t = text(SAMPLES / "nvlink-s_gb200-elided.txt").replace(
        "GPU-39ac7bce-e3d6-b426-008e-fa47897c72d5)\n         Link 0: 53.125 GB/s",
        "GPU-39ac7bce-e3d6-b426-008e-fa47897c72d5)\n         Link 0: <inactive>",
    )
    rig = import_texts([("nvlink-s.txt", t)])
    mark_elided(rig, 1)
    (f,) = [f for f in code(rig, "GA204") if f.severity != "not-checked"]
    assert (f.severity, f.gpus, f.observed) == ("fail", [1], {"active_links_shown": 1, "inactive_links": [0]})


# -- GA602 at the plateau; nccl-tests runs complete at -e --------------------------------------------------


def test_plateau_definition_on_real_sweeps() -> None:
    bessemer = import_files([FOUND / "nccl-allreduce_4xv100-pcie-e128m_sheffield-bessemer.txt"])
    (m,) = bessemer.measurements
    p = plateau.find(m.rows, "pcie")
    # busbw peaks at 10.52 GB/s at 2 MiB, then settles: the flat tail is 4 MiB .. 128 MiB (9.40 .. 9.58)
    assert (p.reached, p.first_bytes, p.last_bytes, p.rows, p.gbps) == (True, 4 << 20, 128 << 20, 6, 9.415)
    assert (
        plateau.find(m.rows, "nvlink").why
        == "the sweep ends at 128 MiB, below the 1 GiB this link type needs to reach its peak"
    )
    h200 = import_files([SAMPLES / "nccl-allreduce_2x8xh200-slurm-log.txt"])
    r = plateau.find(h200.measurements[0].rows, "nvlink")
    assert (r.reached, r.first_bytes, r.rows, r.gbps) == (True, 2 << 30, 4, 482.5)


def test_all_gather_still_rising_at_1g_is_not_judged() -> None:
    path = SAMPLES / "session_2x2080ti-smi-topo-p2p-cudasamples-nccl.txt"
    session = import_files([path])
    ag = next(x for x in session.measurements if x.kind == "all_gather")
    q = plateau.find(ag.rows, "pcie")
    assert (q.reached, q.need_bytes) == (False, 2 << 30)
    assert q.why == "busbw still rising at the largest size (3.79 GB/s at 1 GiB, +12% over 512 MiB)"


def test_single_size_run_is_not_judged_with_the_size_to_run_to() -> None:
    rig = import_files([SAMPLES / "nccl-allreduce_tinybox-6x4090-p2p-single-size_tinygrad.txt"])
    (f,) = code(rig, "GA602")
    assert f.severity == "not-checked"
    assert f.message.startswith(
        "all-reduce (6 ranks, nccl): not judged: one size only (32 MiB): a single size cannot show where "
        "busbw stops rising; run to at least 128 MiB (all_reduce_perf -b 8 -e 128M -f 2)"
    )


def test_healthy_nvlink_node_run_to_128m_is_not_judged(preset) -> None:
    """A healthy 8x H100 run with -e 128M: busbw still rising at 128 MiB (the old rule judged 152 GB/s against 370
    and failed the node). Rows: the H100 sweep of the real GCP A3 Mega run up to 128 MiB."""
    rig = preset("dgx-h100")
    src = import_files([SAMPLES / "nccl-allreduce_gcp-a3mega-2x8xh100_lessizzmore.txt"]).measurements[0]
    rows = [r for r in src.rows if r.size_bytes <= 128 << 20]
    m = facts.Measurement(
        kind="all_reduce",
        backend="nccl",
        provenance="imported",
        world_size=8,
        gpus=list(range(8)),
        rows=rows,
        value_gbps=rows[-1].busbw_gbps,
    )
    rig.measurements = [m]
    (f,) = code(rig, "GA602")
    assert f.severity == "not-checked"
    assert (
        "busbw still rising at the largest size (152.32 GB/s at 128 MiB, +53% over 64 MiB); run to at least 1 GiB"
        in f.message
    )
    # the same node run on to 8 GiB at 372 GB/s reaches its plateau and passes
    m.rows = rows + [SweepRow(size_bytes=s << 30, busbw_gbps=372.0) for s in (1, 2, 4, 8)]
    assert code(rig, "GA602") == []
    for r in m.rows[-4:]:
        r.busbw_gbps = 250.0  # a slow plateau fails
    (f,) = code(rig, "GA602")
    assert (f.severity, f.observed["plateau"]) == ("fail", "plateau 1 GiB to 8 GiB, median of 4 sizes")


def test_nccl_run_whose_next_size_passes_e_is_complete() -> None:
    t = text(FOUND / "nccl-allreduce_4xv100-pcie-e128m_sheffield-bessemer.txt")
    (m,) = import_texts([("all_reduce_perf.txt", t)]).measurements
    assert m.status == "ok"
    # variant: the same run with -e 200M (maxBytes 209715200): 256 MiB would pass it, so 128 MiB is the last size
    (m,) = import_texts([("all_reduce_perf.txt", t.replace("maxBytes 134217728", "maxBytes 209715200"))]).measurements
    assert (m.status, [n for n in m.notes if n.startswith("stopped")]) == ("ok", [])
    # a run cut before its last size is partial (the own 4x 4090 file is cut in the 128 MiB row)
    (m,) = import_files([OWN / "nccl-allreduce_4x4090-cut-short-wrong.txt"]).measurements
    assert m.status == "partial"


# -- no rule fails a node on a fact the text does not show ---------------------------------------------------

PARTIAL = {
    # topology only: the lone unbridged card (GA204) and the cross-socket pairs (GA201/GA203) are in the text
    "topo-m_3xa6000-nvlink-bridge-nv4_siboehm.txt": [("GA204", "warn", (2,))],
    "topo-m_8x4090-pcie-2socket_lukolszewski.txt": [
        ("GA201", "warn", (0, 1, 2, 3, 4, 5, 6, 7)),
        ("GA203", "warn", (0, 1, 2, 3, 4, 5, 6, 7)),
    ],
    # NVLink only, elided after two links of GPU 1
    "nvlink-s_gb200-elided.txt": [],
    # nccl-tests only
    "nccl-allreduce_tinybox-6x4090-p2p-single-size_tinygrad.txt": [],
    "nccl-allreduce_2x8xh200-slurm-log.txt": [],
    "found/nccl-allreduce_4xv100-pcie-e128m_sheffield-bessemer.txt": [],
    # nvidia-smi -q -x of one MIG GPU: persistence off and MIG on are printed
    "smi-q-x_a100-mig-enabled.txt": [("GA313", "warn", (0,)), ("GA314", "warn", (0,))],
}


@pytest.mark.parametrize("name", sorted(PARTIAL))
def test_partial_scans_warn_only_on_what_they_show(name: str) -> None:
    path = FOUND / name.split("/", 1)[1] if name.startswith("found/") else SAMPLES / name
    rig = import_files([path])
    if name.startswith("nvlink-s_gb200"):
        mark_elided(rig, 1)
    assert bad(rig) == PARTIAL[name]


def test_lspci_fragment_judges_only_the_link_it_shows() -> None:
    path = SAMPLES / "lspci-fragment_rtx-a4000-2.5gts.txt"
    rig = import_files([path])
    assert {c for c, _, _ in bad(rig)} <= {"GA101", "GA102"}


def test_every_rule_on_a_rig_with_no_facts_gives_no_verdict() -> None:
    """Eight GPUs known by index only (what a topology-less, name-less import leaves): nothing to fail on."""
    rig = facts.Rig(gpus=[facts.Gpu(index=i) for i in range(8)])
    for g in rig.gpus:
        for f in ("name", "memory_total_bytes", "nvlinks", "mig_mode", "persistence_mode", "clocks_event_reasons"):
            g.unavailable[f] = facts.NOT_IN_SOURCE
    rig.topology.unavailable["matrix"] = facts.NOT_IN_SOURCE
    assert bad(rig) == []
