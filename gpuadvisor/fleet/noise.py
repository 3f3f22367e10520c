"""The fleet's own noise model: one verdict per node and figure family, with the number of comparisons controlled.

Per group and family (``h2d pinned``, ``p2p_latency``, ``all_reduce busbw`` ...):

- every figure of a node is compared with the median of the same figure (same GPU, GPU pair or message size)
  over the group's fresh scans, as a relative deviation signed so that positive is worse;
- the noise of one figure is measured from the fleet itself: the robust spread (1.4826 MAD) of the family's
  deviations (Leys et al., "Detecting outliers: Do not use standard deviation around the mean, use absolute
  deviation around the median", J. Exp. Soc. Psychol. 49(4), 2013), per figure (message sizes, GPUs and links
  differ) shrunk towards the family's. Each deviation in those units is ``u``;
- the noise is not assumed Gaussian: benchmark readings have heavy tails (``tails``). Student's t is fitted to
  the family's ``u`` by maximum likelihood (degrees of freedom from 1.5 to the normal), and every p-value below
  comes from that fit;
- a node's family verdict combines two one-sided tests. Its figures together: each ``u`` becomes the normal
  score of its fitted t tail and the scores are added (Stouffer's method), so one wild reading adds a few
  units, not hundreds; the sum is divided by the spread of the nodes' sums where that is above 1 (the figures
  of one node move together). And its worst figure alone (the t tail, Bonferroni over the node's figures).
  p = 2 x the smaller (Bonferroni over the two);
- the collectives (every ``... busbw`` family) are also judged together per node, the same way over all their
  figures: a node 5 % slow in four collectives at 2 % noise is 5 sigma out although no one collective is;
- all verdicts of the fleet (every node, every family) go through Benjamini-Hochberg at false discovery rate
  ``FDR`` (Benjamini and Hochberg, "Controlling the false discovery rate", J. R. Stat. Soc. B 57(1), 1995),
  weighted (the collectives' joint verdicts ``COMBINED_WEIGHT``, the rest sharing what is left, the weights
  averaging 1; Genovese, Roeder and Wasserman, Biometrika 93(3), 2006). What that promises holds for the model:
  where the noise follows the fitted t tails and the figures of healthy nodes are independent (or share noise
  only as much as the measured spread of the sums shows), the expected share of false warnings among all
  warnings is at most ``FDR``, and on a healthy fleet the chance of any warning is at most ``FDR``. A wrong
  fit (a tail heavier than any in the grid, a fleet too small to fit: a t with ``tails.DOF_SMALL_SAMPLE`` is
  assumed under ``tails.FIT_MIN`` values) weakens it, which is why one figure alone never drains a node in a
  noisy family (``verdicts``);
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
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist, median

from gpuadvisor.fleet import tails
from gpuadvisor.fleet.model import Figure, FigureTable, Group, Node, figure_pairs, figure_rows

FDR = 0.05  # Benjamini-Hochberg false discovery rate over all node x family verdicts of one fleet
FLOOR_DEFAULT = 0.02  # bandwidths and throughputs
FLOOR_LATENCY = 0.10  # latencies: microsecond figures move by 10 % between runs
FLOOR_PAGEABLE = 0.15  # pageable copies go through the host's page cache and CPU: tens of percent run to run
FLOOR_STORAGE = 0.15  # storage throughput: page cache, shared file systems and other tenants, as pageable copies
MIN_NODES = 5  # fresh scans a group needs before a figure is judged
MIN_SIGMA = 1e-4  # a spread below 0.01 % is treated as 0.01 % (identical values)
POWER_Z = 0.8416  # the 80 % quantile of the standard normal: found 80 % of the time
_N = NormalDist()
MAD_SIGMA = 1.4826
SHRINK_NODES = 30  # a figure's own spread counts as many nodes as it has, the family's as this many
COMBINE_SUFFIX = " busbw"  # families judged together as well: the collectives
COMBINED = "collectives busbw"
COMBINED_WEIGHT = 4.0  # a synchronous job runs at its slowest rank's collectives: their joint test weighs more


def floor_of(family: str, unit: str) -> float:
    if unit == "us" or "latency" in family:
        return FLOOR_LATENCY
    if "pageable" in family:
        return FLOOR_PAGEABLE
    if family.startswith("storage"):
        return FLOOR_STORAGE
    return FLOOR_DEFAULT


def _excess(values: list[float]) -> float:
    """The spread of scores that are standard normal where figures are independent: 1, or the measured spread
    where it is beyond what two sampling errors of a MAD give (1.17 / sqrt(n) each) and the figures of a node
    move together."""
    s = _spread(values)
    return s if s > 1 + 2 * 1.17 / math.sqrt(max(len(values), 1)) else 1.0


def _spread(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    m = median(values)
    return MAD_SIGMA * median([abs(v - m) for v in values])


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
    dof: float | None = None  # degrees of freedom of the t tail fitted to the family's deviations (None: normal)
    sigma_combined: float = 1.0  # spread of the nodes' combined scores (over 1: the figures of a node share noise)


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
    z: float = 0.0  # the node's combined score (standard normal on a healthy node)
    members: tuple[str, ...] = ()  # a verdict over several families: theirs
    called: bool = False


def judge_group(group: Group, nodes: dict[str, Node]) -> tuple[list[FamilyNoise], list[Verdict]]:
    judged = [nodes[n] for n in group.judged]
    if len(judged) < MIN_NODES:
        return [], []
    ref = _medians(group, judged)
    fam_keys: dict[str, list[str]] = {}
    units: dict[str, str] = {}
    seen = 0
    for n in judged:
        if seen == len(ref):  # every figure's family met (most often on the first node)
            break
        for k in n.figures:
            if k in ref and k not in units:
                f = n.figures[k]
                units[k] = f.unit
                fam_keys.setdefault(f.family, []).append(k)
                units[f.family] = f.unit
                seen += 1
    noises: list[FamilyNoise] = []
    verdicts: list[Verdict] = []
    pooled: dict[str, list[float]] = {}  # node -> standardised deviations of the families judged together
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
        noise = FamilyNoise(
            group=group.id,
            family=fam,
            unit=units[fam],
            nodes=len(per_node),
            figures=k_med,
            sigma_figure=sig_fig,
            sigma_node=sig_node,
            floor=floor_of(fam, units[fam]),
        )
        shift = _yardstick_shift(noise, fam_ratios, means)
        verdicts += _family_verdicts(
            noise, per_node, shift, nodes, ref, pooled if fam.endswith(COMBINE_SUFFIX) else None
        )
        noises.append(noise)
    verdicts += _combined(verdicts, pooled, group.id)
    return noises, verdicts


def _medians(group: Group, judged: list[Node]) -> dict[str, float]:
    """Each figure's median over the judged nodes that have it (at least MIN_NODES): the group's statistics' where
    the analysis made them (outliers.group_stats), else from the nodes."""
    if group.stats:
        return {k: st.median for k, st in group.stats.items() if st.n >= MIN_NODES}
    per_key: dict[str, list[float]] = {}
    for n in judged:
        for k, v in figure_pairs(n.figures):
            per_key.setdefault(k, []).append(v)
    return {k: median(v) for k, v in per_key.items() if len(v) >= MIN_NODES}


def _key_sigmas(per_node: dict[str, list[tuple[str, float]]], sig_fig: float) -> dict[str, float]:
    """Each figure's own noise (message sizes, GPUs and links differ), shrunk towards the family's: a spread of
    few nodes is itself noisy, so it counts as many nodes as it has, the family's as ``SHRINK_NODES``."""
    by_key: dict[str, list[float]] = {}
    for pairs in per_node.values():
        for k, d in pairs:
            by_key.setdefault(k, []).append(d)
    small = math.sqrt(1 + math.pi / (2 * len(per_node)))
    out = {}
    for k, ds in by_key.items():
        s = _spread(ds) * small
        out[k] = max(
            math.sqrt((len(ds) * s * s + SHRINK_NODES * sig_fig * sig_fig) / (len(ds) + SHRINK_NODES)), MIN_SIGMA
        )
    return out


def _family_verdicts(
    noise: FamilyNoise,
    per_node: dict[str, list[tuple[str, float]]],
    shift: float,
    nodes: dict[str, Node],
    ref: dict[str, float],
    pooled: dict[str, list[float]] | None,
) -> list[Verdict]:
    """One verdict per node: its figures' combined shift (Stouffer over t-tail normal scores) and its worst
    figure (t tail, Bonferroni over the node's figures of the family)."""
    sig_k = _key_sigmas(per_node, noise.sigma_figure)
    us = {name: [(d + shift) / sig_k[k] for k, d in pairs] for name, pairs in per_node.items()}
    if shift:
        dof, scale = tails.fit(
            [
                u - shift / sig_k[k]
                for name, pairs in per_node.items()
                for (k, _), u in zip(pairs, us[name], strict=True)
            ]
        )
    else:  # u - 0.0 is u
        dof, scale = tails.fit([u for vals in us.values() for u in vals])
    noise.dof = None if dof == tails.NORMAL else dof
    kappa = 1 / scale
    zs = {name: tails.score_sum(vals, kappa, dof) / math.sqrt(len(vals)) for name, vals in us.items()}
    if noise.figures > 1:  # what the figures of one node share (sizes of one collective, copies of one host)
        noise.sigma_combined = _excess(list(zs.values()))
    if pooled is not None:
        for name, vals in us.items():
            pooled.setdefault(name, []).extend(vals)
    out = []
    for name, pairs in sorted(per_node.items()):
        nk = len(pairs)
        ds = sorted([d + shift for _, d in pairs])
        typical = ds[nk // 2] if nk % 2 else (ds[nk // 2 - 1] + ds[nk // 2]) / 2
        mine = us[name]
        worst_u = max(mine)
        at = mine.index(worst_u)  # the first of the largest
        worst_key = pairs[at][0]
        worst = pairs[at][1] + shift
        z = zs[name] / noise.sigma_combined
        p_mean = tails.upper(z)
        p_worst = min(1.0, nk * tails.t_sf(worst_u * kappa, dof))
        out.append(
            Verdict(
                node=name,
                group=noise.group,
                family=noise.family,
                unit=noise.unit,
                k=nk,
                mean_dev=typical,
                worst_key=worst_key,
                worst_dev=worst,
                worst_value=_value(nodes[name].figures, worst_key),
                worst_ref=ref[worst_key],
                p=min(1.0, 2 * min(p_mean, p_worst)),
                by_worst=p_worst < p_mean,
                floor=noise.floor,
                z=z,
            )
        )
    return out


def _value(figs: Mapping[str, Figure], key: str) -> float:
    got = figs.lookup(key) if isinstance(figs, FigureTable) else None
    return figs[key].value if got is None else got[0]


def _combined(verdicts: list[Verdict], pooled: dict[str, list[float]], group: str) -> list[Verdict]:
    """Per node, the collectives' figures together (t tail fitted to all of them, Stouffer over their normal
    scores, spread measured over the nodes): a node a little slow in all of them is found where no one family's
    figures put it out."""
    per: dict[str, list[Verdict]] = {}
    for v in verdicts:
        if v.family.endswith(COMBINE_SUFFIX):
            per.setdefault(v.node, []).append(v)
    names = [n for n, vs in per.items() if len(vs) >= 2]
    if len(names) < MIN_NODES:
        return []
    dof, scale = tails.fit([u for n in names for u in pooled[n]])
    kappa = 1 / scale
    zs = {n: tails.score_sum(pooled[n], kappa, dof) / math.sqrt(len(pooled[n])) for n in names}
    spread = _excess(list(zs.values()))
    out = []
    for name in sorted(names):
        vs = per[name]
        top = max(vs, key=lambda v: v.z)
        z = zs[name] / spread
        out.append(
            Verdict(
                node=name,
                group=group,
                family=COMBINED,
                unit=top.unit,
                k=sum(v.k for v in vs),
                mean_dev=median(v.mean_dev for v in vs),
                worst_key=top.worst_key,
                worst_dev=top.worst_dev,
                worst_value=top.worst_value,
                worst_ref=top.worst_ref,
                p=tails.upper(z),
                by_worst=False,
                floor=FLOOR_DEFAULT,
                z=z,
                members=tuple(v.family for v in vs),
            )
        )
    return out


def _deviations(
    judged: list[Node], keys: list[str], ref: dict[str, float]
) -> tuple[dict[str, list[tuple[str, float]]], dict[str, list[float]]]:
    """Per node: (key, relative deviation, positive worse) of the family's figures, and measured / expected."""
    per_node: dict[str, list[tuple[str, float]]] = {}
    ratios: dict[str, list[float]] = {}
    ids = FigureTable.IDS
    known = [(k, ids.get(k, -1), ref[k], FigureTable.META[ids[k]][3] if k in ids else True) for k in keys]
    for n in judged:
        figs = n.figures
        if isinstance(figs, FigureTable):
            at, vals, expect = figs.columns()
            pairs, rs = [], []
            for k, i, m, higher_better in known:
                p = at.get(i)
                if p is None:
                    continue
                value = vals[p]
                pairs.append((k, (m - value) / abs(m) if higher_better else (value - m) / abs(m)))
                expected = expect.get(p)
                if expected:
                    rs.append(value / expected)
        else:
            pairs, rs = _deviations_of(figs, keys, ref)
        if rs:
            ratios[n.name] = rs
        if pairs:
            per_node[n.name] = pairs
    return per_node, ratios


def _deviations_of(
    figs: Mapping[str, Figure], keys: list[str], ref: dict[str, float]
) -> tuple[list[tuple[str, float]], list[float]]:
    pairs, rs = [], []
    for k, value, higher_better, expected in figure_rows(figs, keys):
        m = ref[k]
        pairs.append((k, (m - value) / abs(m) if higher_better else (value - m) / abs(m)))
        if expected:
            rs.append(value / expected)
    return pairs, rs


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


def weights(verdicts: list[Verdict]) -> list[float]:
    """Weighted Benjamini-Hochberg (Genovese, Roeder and Wasserman, "False discovery control with p-value
    weighting", Biometrika 93(3), 2006): the verdicts over the collectives together weigh ``COMBINED_WEIGHT``, the
    others share the rest, the weights averaging 1 (which keeps the false discovery rate at q)."""
    m = len(verdicts)
    c = sum(1 for v in verdicts if v.members)
    if not c or c == m:
        return [1.0] * m
    w_comb = min(COMBINED_WEIGHT, m / c)
    w_rest = (m - c * w_comb) / (m - c)
    return [w_comb if v.members else w_rest for v in verdicts]


def decide(noises: list[FamilyNoise], verdicts: list[Verdict], q: float = FDR) -> None:
    """Mark the called verdicts and each family's smallest detectable slowdown (in place). A verdict over several
    families is not called where one of its families already is (the node is named once)."""
    m = max(len(verdicts), 1)
    ws = weights(verdicts)
    cut = benjamini_hochberg([v.p / w if w else 1.0 for v, w in zip(verdicts, ws, strict=True)], q)
    for v, w in zip(verdicts, ws, strict=True):
        dev = v.worst_dev if v.by_worst else v.mean_dev
        v.called = bool(w) and v.p / w <= cut and v.p < 1 and dev >= v.floor
    called = {(v.node, v.family) for v in verdicts if v.called and not v.members}
    for v in verdicts:
        if v.members and any((v.node, f) in called for f in v.members):
            v.called = False
    z_crit = _N.inv_cdf(1 - q / (2 * m))
    for n in noises:
        n.detectable = max(n.floor, (z_crit + POWER_Z) * n.sigma_node)
