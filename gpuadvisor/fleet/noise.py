"""The fleet's own noise model: one verdict per node and figure family, with the number of comparisons controlled.

Per group and family (``h2d pinned``, ``p2p_latency``, ``all_reduce busbw`` ...):

- every figure of a node is compared with the median of the same figure (same GPU, GPU pair or message size)
  over the group's fresh scans, as a relative deviation signed so that positive is worse;
- the noise of one figure is measured from the fleet itself: the robust spread (1.4826 MAD) of all those
  deviations in the family (Leys et al., "Detecting outliers: Do not use standard deviation around the mean,
  use absolute deviation around the median", J. Exp. Soc. Psychol. 49(4), 2013). The noise of a node's
  family mean is the larger of that spread over the square root of the number of figures (independent
  repeats) and the robust spread of the node means across the group (which also holds what the figures of
  one node share);
- a node's family verdict combines two one-sided tests: its mean deviation (a whole-node slowdown) and its
  worst figure (one GPU or link, Bonferroni over the family's figures); p = 2 x the smaller (Bonferroni over
  the two);
- all verdicts of the fleet (every node, every family) go through Benjamini-Hochberg at false discovery rate
  ``FDR`` (Benjamini and Hochberg, "Controlling the false discovery rate", J. R. Stat. Soc. B 57(1), 1995): on
  a healthy fleet this bounds the chance of any warning at all by ``FDR``;
- a difference smaller than the family's floor is never called, however significant: families that are
  noisy by nature (P2P latency, pageable host copies, which move by tens of percent between two runs of one
  machine) have high floors;
- the smallest slowdown a whole node could show in a family and be found 80 % of the time in this fleet is
  reported per family, so an operator knows what the fleet can and cannot see.

Absolute yardstick: figures whose scan carries the node rules' expected value (link physics, datasheets)
also have a ratio to it. Where a group's median in a family is below that expectation and the group's best
decile is clearly above its median, the majority is degraded: the best decile (less its noise), not the
median, is the reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist, median

from gpuadvisor.fleet.model import Group, Node, figure_lookup, figure_pairs

FDR = 0.01  # Benjamini-Hochberg false discovery rate over all node x family verdicts of one fleet
FLOOR_DEFAULT = 0.02  # bandwidths and throughputs
FLOOR_LATENCY = 0.10  # latencies: microsecond figures move by 10 % between runs
FLOOR_PAGEABLE = 0.15  # pageable copies go through the host's page cache and CPU: tens of percent run to run
MIN_NODES = 5  # fresh scans a group needs before a figure is judged
MIN_SIGMA = 1e-4  # a spread below 0.01 % is treated as 0.01 % (identical values)
POWER_Z = 0.8416  # the 80 % quantile of the standard normal: found 80 % of the time
_N = NormalDist()
MAD_SIGMA = 1.4826


def floor_of(family: str, unit: str) -> float:
    if unit == "us" or "latency" in family:
        return FLOOR_LATENCY
    if "pageable" in family:
        return FLOOR_PAGEABLE
    return FLOOR_DEFAULT


def _spread(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    m = median(values)
    return MAD_SIGMA * median(abs(v - m) for v in values)


def _upper(p_z: float) -> float:
    """One-sided p-value of a z-score (worse side)."""
    return 0.5 * math.erfc(p_z / math.sqrt(2))


@dataclass(slots=True)
class FamilyNoise:
    group: str
    family: str
    unit: str
    nodes: int
    figures: int  # per node (the median count)
    sigma_figure: float  # relative, one figure
    sigma_node: float  # relative, the node's family mean
    floor: float
    detectable: float = 0.0  # smallest whole-node slowdown found 80 % of the time (set once m is known)
    reference: str = "median"  # or "best decile" (majority below the absolute yardstick)
    median_ratio: float | None = None  # group median of measured / expected (the node rules' value)


@dataclass(slots=True)
class Verdict:
    node: str
    group: str
    family: str
    unit: str
    k: int
    mean_dev: float  # positive = worse
    worst_key: str
    worst_dev: float
    worst_value: float
    worst_ref: float
    p: float
    by_worst: bool
    floor: float
    called: bool = False


def judge_group(group: Group, nodes: dict[str, Node]) -> tuple[list[FamilyNoise], list[Verdict]]:
    judged = [nodes[n] for n in group.judged]
    if len(judged) < MIN_NODES:
        return [], []
    per_key: dict[str, list[float]] = {}
    for n in judged:
        for k, v in figure_pairs(n.figures):
            per_key.setdefault(k, []).append(v)
    ref = {k: median(v) for k, v in per_key.items() if len(v) >= MIN_NODES}
    del per_key
    fam_keys: dict[str, list[str]] = {}
    units: dict[str, str] = {}
    for n in judged:
        for k in n.figures:
            if k in ref and k not in units:
                f = n.figures[k]
                units[k] = f.unit
                fam_keys.setdefault(f.family, []).append(k)
                units[f.family] = f.unit
    noises: list[FamilyNoise] = []
    verdicts: list[Verdict] = []
    for fam in sorted(fam_keys):  # one family at a time: only its deviations are held
        per_node, fam_ratios = _deviations(judged, fam_keys[fam], ref)
        devs = [d for pairs in per_node.values() for _, d in pairs]
        # a deviation is from a median of n values, itself noisy: variance (1 + pi / 2n) of one figure's
        small = math.sqrt(1 + math.pi / (2 * len(per_node)))
        sig_fig = max(_spread(devs) * small, MIN_SIGMA)
        ks = sorted(len(v) for v in per_node.values())
        k_med = ks[len(ks) // 2]
        means = {n: sum(d for _, d in v) / len(v) for n, v in per_node.items()}
        sig_node = max(sig_fig / math.sqrt(k_med), _spread(list(means.values())) * small, MIN_SIGMA)
        fl = floor_of(fam, units[fam])
        noise = FamilyNoise(
            group=group.id,
            family=fam,
            unit=units[fam],
            nodes=len(per_node),
            figures=k_med,
            sigma_figure=sig_fig,
            sigma_node=sig_node,
            floor=fl,
        )
        shift = _yardstick_shift(noise, fam_ratios, means)
        for name, pairs in sorted(per_node.items()):
            nk = len(pairs)
            mean = means[name] + shift
            worst_key, worst = max(pairs, key=lambda kd: kd[1])
            worst += shift
            p_mean = _upper(mean / (sig_node * math.sqrt(k_med / nk)))
            p_worst = min(1.0, nk * _upper(worst / sig_fig))
            by_worst = p_worst < p_mean
            fig = nodes[name].figures[worst_key]
            verdicts.append(
                Verdict(
                    node=name,
                    group=group.id,
                    family=fam,
                    unit=units[fam],
                    k=nk,
                    mean_dev=mean,
                    worst_key=worst_key,
                    worst_dev=worst,
                    worst_value=fig.value,
                    worst_ref=ref[worst_key],
                    p=min(1.0, 2 * min(p_mean, p_worst)),
                    by_worst=by_worst,
                    floor=fl,
                )
            )
        noises.append(noise)
    return noises, verdicts


def _deviations(
    judged: list[Node], keys: list[str], ref: dict[str, float]
) -> tuple[dict[str, list[tuple[str, float]]], dict[str, list[float]]]:
    """Per node: (key, relative deviation, positive worse) of the family's figures, and measured / expected."""
    per_node: dict[str, list[tuple[str, float]]] = {}
    ratios: dict[str, list[float]] = {}
    for n in judged:
        figs = n.figures
        pairs = []
        for k in keys:
            got = figure_lookup(figs, k)
            if got is None:
                continue
            value, higher_better, expected = got
            m = ref[k]
            pairs.append((k, (m - value) / abs(m) if higher_better else (value - m) / abs(m)))
            if expected:
                ratios.setdefault(n.name, []).append(value / expected)
        if pairs:
            per_node[n.name] = pairs
    return per_node, ratios


def _yardstick_shift(noise: FamilyNoise, ratios: dict[str, list[float]], means: dict[str, float]) -> float:
    """How much worse than its median the group's healthy level is (0 unless the majority is degraded)."""
    per = sorted(sum(v) / len(v) for v in ratios.values() if v)
    if len(per) < MIN_NODES:
        return 0.0
    med = median(per)
    noise.median_ratio = med
    margin = max(noise.floor, 3 * noise.sigma_node)
    top = per[min(len(per) - 1, int(0.9 * len(per)))] * (1 - 1.2816 * noise.sigma_node)
    if med >= 1 - margin or top < med * (1 + margin):
        return 0.0
    noise.reference = "best decile"
    return top / med - 1


def benjamini_hochberg(ps: list[float], q: float = FDR) -> float:
    """The p-value cut: every p at or below it is a discovery (0.0: none)."""
    m = len(ps)
    cut = 0.0
    for i, p in enumerate(sorted(ps), 1):
        if p <= q * i / m:
            cut = p
    return cut


def decide(noises: list[FamilyNoise], verdicts: list[Verdict], q: float = FDR) -> None:
    """Mark the called verdicts and each family's smallest detectable slowdown (in place)."""
    m = max(len(verdicts), 1)
    cut = benjamini_hochberg([v.p for v in verdicts], q)
    for v in verdicts:
        dev = v.worst_dev if v.by_worst else v.mean_dev
        v.called = v.p <= cut and v.p < 1 and dev >= v.floor
    z_crit = _N.inv_cdf(1 - q / (2 * m))
    for n in noises:
        n.detectable = max(n.floor, (z_crit + POWER_Z) * n.sigma_node)
