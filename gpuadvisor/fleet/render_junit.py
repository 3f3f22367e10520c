"""The fleet view as JUnit XML: one testcase per node, failing when a finding at or above --fail-on names it."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from gpuadvisor.fleet.model import SEV_RANK, FleetReport


def render_junit(r: FleetReport) -> str:
    lim = SEV_RANK[r.fail_on]
    cases = []
    failures = skipped = 0
    for n, fs in r.ranked():
        bad = [f for f in fs if SEV_RANK[f.severity] <= lim]
        name = quoteattr(n.name)
        cls = quoteattr(f"gpuadvisor.fleet.{n.group or 'ungrouped'}")
        if bad:
            failures += 1
            text = escape("\n".join(f"[{f.severity}] {f.kind}: {f.message}" for f in bad))
            msg = quoteattr(f"{len(bad)} finding(s) at or above {r.fail_on}: {bad[0].message}"[:300])
            cases.append(
                f'  <testcase classname={cls} name={name}><failure message={msg} type="{bad[0].kind}">'
                f"{text}</failure></testcase>"
            )
        elif n.status == "ok" and n.shape is None:
            skipped += 1
            cases.append(f'  <testcase classname={cls} name={name}><skipped message="no facts to compare"/></testcase>')
        else:
            cases.append(f"  <testcase classname={cls} name={name}/>")
    head = (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="gpuadvisor fleet">\n'
        f'<testsuite name="gpuadvisor fleet" tests="{len(cases)}" failures="{failures}" errors="0" '
        f'skipped="{skipped}" timestamp={quoteattr(r.generated_at)}>'
    )
    return head + "\n" + "\n".join(cases) + "\n</testsuite>\n</testsuites>\n"
