"""Per-figure statistics of a group (median, MAD, range) for the reports, and the per-value outlier rule that
node pairs (``pairs``) use. Nodes themselves are judged per family by ``noise``, which measures the noise and
controls the number of comparisons; this rule, one value at a time, is for a handful of node-pair figures.

A node's figure is an outlier when both hold:

- its robust z-score |x - median| / (1.4826 MAD) = 0.6745 |x - median| / MAD exceeds ``Z_THRESHOLD`` = 3, the cut
  Leys et al. call very conservative ("Detecting outliers: Do not use standard deviation around the mean, use
  absolute deviation around the median", J. Exp. Soc. Psychol. 49(4), 2013; Iglewicz and Hoaglin's modified
  z-score, 1993, is the same statistic with 3.5). The median and the MAD are not dragged by the outliers the
  way the mean and standard deviation are; where more than half the values are equal (MAD 0) the mean absolute
  deviation scaled by 1.2533 stands in. This part keeps a noisy group (a spread of +-10%) from alarming at 5%;
  3 rather than 3.5 because at 3.5 a node 5% slow in a group spread evenly over +-2% (robust sigma 1.5%) sits
  at z 3.4 and would be missed;
- it is at least ``MIN_REL`` = 4% worse than the median (lower bandwidth or TFLOPS, higher latency): measurement
  noise of +-2% can put a healthy node at most 2% + 2% = 4% (3.9% relative to a median at +2%) from the median,
  so a healthy fleet that scatters +-2% never alarms, while a node 5% slow is found; a faster-than-siblings
  node is not a problem and is never flagged.

Groups of fewer than ``MIN_NODES`` = 5 values are not judged (a median of three or four moves with any one of
them).
"""

from __future__ import annotations

from array import array
from statistics import median

from gpuadvisor.fleet.model import FigureStats, Group, Node, figure_pairs, shared_columns

Z_THRESHOLD = 3.0
MIN_REL = 0.04
MIN_NODES = 5
MAD_TO_Z = 0.6745  # the 0.75 quantile of the standard normal: MAD / 0.6745 estimates sigma
MEANAD_TO_Z = 1 / 1.2533  # sqrt(pi/2): mean absolute deviation / 0.7979 estimates sigma


def robust(values: list[float]) -> tuple[float, float, float]:
    """(median, MAD, scale) where scale turns |x - median| into a modified z-score: z = scale * |x - median|."""
    med = median(values)
    dev = [abs(v - med) for v in values]
    mad = median(dev)
    if mad > 0:
        return med, mad, MAD_TO_Z / mad
    mean_ad = sum(dev) / len(dev)
    return med, mad, (MEANAD_TO_Z / mean_ad) if mean_ad > 0 else 0.0


def group_stats(group: Group, nodes: dict[str, Node]) -> dict[str, FigureStats]:
    per: dict[str, tuple[list[str] | tuple[str, ...], array]] = {}
    meta: dict[str, tuple[str, str, bool]] = {}
    cols = shared_columns([nodes[name].figures for name in group.judged])
    if cols is not None:  # every node has every figure: a column each
        judged = tuple(group.judged)
        for (k, family, unit, hb), vals in cols:
            per[k], meta[k] = (judged, vals), (family, unit, hb)
    for name in group.judged if cols is None else ():
        for k, v in figure_pairs(nodes[name].figures):
            got = per.get(k)
            if got is None:
                got = per[k] = ([], array("d"))
                f = nodes[name].figures[k]
                meta[k] = (f.family, f.unit, f.higher_better)
            got[0].append(name)  # type: ignore[union-attr]
            got[1].append(v)
    out = {}
    shared: dict[tuple[str, ...], tuple[str, ...]] = {}  # one tuple of names for every figure the same nodes have
    for k in sorted(per):
        names, vals = per[k]
        family, unit, hb = meta[k]
        med, mad, _ = robust(list(vals))
        out[k] = FigureStats(
            key=k,
            family=family,
            unit=unit,
            higher_better=hb,
            n=len(vals),
            median=med,
            mad=mad,
            lo=min(vals),
            hi=max(vals),
            names=shared.setdefault(tuple(names), tuple(names)),
            vals=vals,
        )
    return out


def is_outlier(
    value: float, med: float, scale: float, higher_better: bool, *, z: float = Z_THRESHOLD, min_rel: float = MIN_REL
) -> tuple[bool, float, float]:
    """(outlier?, relative deviation signed so negative is worse, modified z-score)."""
    if med == 0:
        return False, 0.0, 0.0
    rel = (value - med) / abs(med)
    worse = -rel if higher_better else rel
    zscore = scale * abs(value - med) if scale else (float("inf") if value != med else 0.0)
    return worse >= min_rel and zscore > z, -worse, zscore
