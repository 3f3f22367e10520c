"""How many real pastes of tests/corpus/ read exactly as written by hand, by folder and by kind.

python benchmarks/corpus_score.py [-v]      (-v: list each misread with its differences)
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.corpus_cases import cases, reading_diffs, run_import  # noqa: E402


def main(argv: list[str]) -> int:
    verbose = "-v" in argv
    if "--sources" in argv:
        for case in cases():
            print(f"{case.id}\t{case.kind}\t{case.source}")
        return 0
    total: Counter[str] = Counter()
    exact: Counter[str] = Counter()
    refused = 0
    for case in cases():
        rc, scan = run_import([case.path])
        diffs = reading_diffs(case, rc, scan)
        for key in (f"folder {case.folder}", f"kind {case.kind}", "all"):
            total[key] += 1
            exact[key] += not diffs
        refused += rc == 2 and not case.refused
        if diffs and verbose:
            print(f"MISREAD {case.id}: " + "; ".join(diffs[:4]), file=sys.stderr)
    for key in sorted(total, key=lambda k: (k != "all", k)):
        print(f"{key:<40} {exact[key]:>4} of {total[key]:<4} read exactly")
    print(f"refused although something in them is recognisable: {refused}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
