"""What changed since an earlier set of scans (``--baseline DIR``): per node, every figure that moved by at
least the outlier rule's minimum (4%), and every version, mode or link state that differs."""

from __future__ import annotations

from gpuadvisor.fleet.model import Finding, Node
from gpuadvisor.fleet.outliers import MIN_REL


def compare(now: dict[str, Node], before: dict[str, Node], *, min_rel: float = MIN_REL) -> list[Finding]:
    out: list[Finding] = []
    for name in sorted(before):
        old = before[name]
        if name not in now:
            out.append(
                Finding(
                    node=name,
                    kind="changed",
                    severity="warn",
                    subject="node",
                    message="scanned in the baseline, no scan now",
                )
            )
            continue
        new = now[name]
        if old.status == "ok" and new.status != "ok":
            continue  # the failure itself is reported
        for k in sorted(set(old.attrs) | set(new.attrs)):
            a, b = old.attrs.get(k), new.attrs.get(k)
            if a != b and a is not None and b is not None:
                out.append(
                    Finding(
                        node=name,
                        kind="changed",
                        severity="info",
                        subject=k,
                        message=f"{k} changed: {a} -> {b}",
                        observed=b,
                        expected=a,
                    )
                )
        for k in sorted(set(old.figures) & set(new.figures)):
            fo, fn = old.figures[k], new.figures[k]
            if fo.value == 0:
                continue
            rel = (fn.value - fo.value) / abs(fo.value)
            worse = -rel if fn.higher_better else rel
            if abs(rel) >= min_rel:
                out.append(
                    Finding(
                        node=name,
                        kind="changed",
                        severity="warn" if worse > 0 else "info",
                        subject=k,
                        figure=k,
                        deviation=-worse,
                        observed=fn.value,
                        expected=fo.value,
                        evidence=fn.evidence,
                        message=f"{k}: {fo.value:.4g} -> {fn.value:.4g} {fn.unit} "
                        f"({'worse' if worse > 0 else 'better'} by {abs(rel) * 100:.0f}%)",
                    )
                )
        gone = sorted(set(old.figures) - set(new.figures))
        if gone and new.status == "ok":
            out.append(
                Finding(
                    node=name,
                    kind="changed",
                    severity="info",
                    subject="figures",
                    message=f"{len(gone)} figure(s) measured in the baseline are not in this scan (e.g. {gone[0]})",
                )
            )
    for name in sorted(set(now) - set(before)):
        out.append(
            Finding(node=name, kind="changed", severity="info", subject="node", message="new since the baseline")
        )
    return out
