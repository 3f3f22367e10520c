"""Order the rows and say what to buy: fastest first among builds that fit; builds whose predicted ranges overlap
share a rank (a tie, not an order); then the recommendation in plain words."""

from __future__ import annotations

from dataclasses import dataclass

from gpuadvisor.plain import FieldsDict
from gpuadvisor.plan.costs import Ownership
from gpuadvisor.plan.evaluate import Need, Row
from gpuadvisor.plan.horizon import SHORT_HORIZON_MONTHS


def _speed(r: Row) -> float:
    return r.tokens_per_second or 0.0


def _within_each_other(a: Row, b: Row) -> bool:
    """A tie: each build's predicted figure lies inside the other's error band (identical figures always tie)."""
    if a.tokens_per_second == b.tokens_per_second:
        return True
    ra, rb = a.band, b.band
    return bool(ra and rb and ra[0] <= _speed(b) <= ra[1] and rb[0] <= _speed(a) <= rb[1])


def rank(rows: list[Row]) -> list[Row]:
    """Fastest first; a build ties with the fastest of its group (not with a neighbour's neighbour: ties do not
    chain)."""
    ok = sorted((r for r in rows if r.buildable and r.fits and r.tokens_per_second), key=lambda r: -_speed(r))
    rest = sorted((r for r in rows if r not in ok), key=lambda r: (not r.buildable, r.build.name))
    leader: Row | None = None
    for i, r in enumerate(ok):
        if leader is not None and _within_each_other(leader, r):
            r.rank = leader.rank
        else:
            leader = r
            r.rank = i + 1
    for r in ok:
        r.tie_with = [o.build.name for o in ok if o is not r and o.rank == r.rank]
    return ok + rest


def _usd(v: float | None) -> str:
    return "price unknown" if v is None else f"US${v:,.0f}"


@dataclass
class Verdict(FieldsDict):
    """The recommendation: which build, buy or rent, and why (the basis, the budget, the rules)."""

    build: str | None
    kind: str | None  # buy | rent
    why: list[str]
    within_budget: bool = True


def _basis_usd(r: Row) -> float | None:
    """What one build costs on the common basis: the job (with --tokens), else a million tokens, both at the
    buyer's utilisation over the ownership period (rent: the rate; owning: the period's cost / hours used)."""
    if r.job is None:
        return None
    return r.job.job_usd if r.job.job_usd is not None else r.job.usd_per_million_tokens


def _budget_cost(r: Row) -> float | None:
    """What the budget is compared with: the purchase price, or for a rented build the job's rent (with no token
    budget: the rent over the ownership period at the stated utilisation)."""
    if r.build.rent:
        if r.job is None:
            return None
        return r.job.job_usd if r.job.job_usd is not None else r.job.period_usd
    return r.cost.purchase_usd if r.cost else None


def _cost_text(r: Row, need: Need) -> str:
    j = r.job
    if j is None:
        return ""
    how = "renting" if r.build.rent else "owning"
    if j.job_usd is not None:
        return f"US${j.job_usd:,.0f} for the job by {how}"
    if j.usd_per_million_tokens is not None:
        return f"US${j.usd_per_million_tokens:,.2f} per million tokens by {how}"
    return ""


def recommend(rows: list[Row], need: Need, own: Ownership | None = None) -> tuple[list[str], Verdict]:
    """Plain sentences and the verdict: the cheapest build on the common basis among those that meet the need,
    pass their own design rules and keep the budget; then what the alternatives cost on the same basis.

    In phases: filter (the builds that meet the need, with or without failing rules), choose (the verdict and
    its alternative), then explain (the cheapest and fastest buys, break-even, failing rules, missing prices)."""
    own = own or Ownership()
    meets = [r for r in rows if r.meets_need and r.tokens_per_second]
    failing = [r for r in meets if r.fails_rules]
    ok = [r for r in meets if not r.fails_rules]
    if not ok:
        out = [_nothing_meets(rows, failing), *_failing_lines(failing)]
        return out, Verdict(None, None, list(out), within_budget=False)
    out, verdict = _choose(ok, need, own)
    out += _cheapest_buy(ok, need)
    out += _fastest(ok, need)
    out += _break_even(ok, verdict, own)
    out += _failing_lines(failing)
    unpriced = [r.build.name for r in ok if _basis_usd(r) is None]
    if unpriced:
        out.append(f"Without a price ({', '.join(unpriced)}): give yours with --prices to rank them by cost.")
    return out, verdict


def _nothing_meets(rows: list[Row], failing: list[Row]) -> str:
    if failing:
        return "No candidate that meets the need passes its own design rules (see below)."
    fits = [r for r in rows if r.fits]
    ram = [r for r in rows if (r.reason or "").startswith("add RAM")]
    if not fits and ram:
        fix = (ram[0].reason or "").split(" (as it is")[0]
        return f"No candidate meets the need. Closest: {ram[0].build.title}: {fix}."
    return "No candidate meets the need." + (
        f" Closest: {fits[0].build.title} ({fits[0].need_reason})."
        if fits
        else " None of them fits the model: a larger machine, fewer bytes per parameter (LoRA/QLoRA, 8-bit "
        "optimizers) or more GPUs are needed."
    )


def _choose(ok: list[Row], need: Need, own: Ownership) -> tuple[list[str], Verdict]:
    """The verdict: the lowest cost on the common basis within the budget, and what the other way (buy or rent)
    would cost; with nothing priced within the budget, no verdict and why."""
    costed = [r for r in ok if _basis_usd(r) is not None]
    budget = need.budget_usd
    within = [r for r in costed if budget is None or ((_budget_cost(r) or 0) <= budget and _budget_cost(r) is not None)]
    if not within:
        cheapest = min(costed, key=lambda r: _budget_cost(r) or float("inf"), default=None)
        if budget is not None and cheapest is not None:
            line = (
                f"Nothing that meets the need is within US${budget:,.0f}; the cheapest that meets it is "
                f"{cheapest.build.title} at {_usd(_budget_cost(cheapest))}"
                f"{' (' + _cost_text(cheapest, need) + ')' if cheapest.build.rent else ''}."
            )
        else:
            line = "No build that meets the need has a known price: give prices with --prices to rank them by cost."
        return [line], Verdict(None, None, [line], within_budget=False)
    basis = "job cost" if need.tokens else "cost per million tokens"
    short = _short_horizon(within, own)
    best = min(
        [r for r in within if r.build.rent] if short else within,
        key=lambda r: (_basis_usd(r), -(r.tokens_per_second or 0)),
    )
    kind = best.build.kind
    why = [
        f"lowest {basis} among the builds that meet the need"
        + (f" within US${budget:,.0f}" if budget is not None else "")
        + " and pass their design rules"
    ]
    rate = best.cost.rent_usd_per_hour if best.build.rent and best.cost else None
    price = f"US${rate:,.2f}/h" if rate else _usd(_budget_cost(best))
    verb = "" if best.build.owned or best.build.title.lower().startswith(kind) else f"{kind} "
    out = [
        f"Recommended: {verb}{best.build.title} ({price}): "
        f"{_cost_text(best, need)}{_time(best, need)}, "
        f"at {own.label(best.build if kind == 'buy' else None)}."
    ]
    if best.cost is not None and best.cost.stale:
        out[0] = out[0][:-1] + f"; but {best.cost.stale[0].removeprefix('the ')}."
        why.append("driven by a price older than six months")
    if best.circuit is not None and not best.circuit.fits:
        out.append(f"Power-cap it for the circuit: {best.circuit.text}.")
        why.append(f"fits the stated circuit only with nvidia-smi -pl {best.circuit.cap_w:g} on each GPU")
    if short:
        out.append(short)
        why.append("a short horizon: a machine bought for it would be sold nearly new at a used price")
    other = [r for r in within if r.build.kind != kind]
    if other:
        alt = min(other, key=lambda r: _basis_usd(r) or 0.0)
        out += _alternative(best, alt, need, own)
        why.append(
            f"{'renting' if alt.build.rent else 'owning'} the best alternative ({alt.build.name}) "
            "costs more on the same basis"
        )
    return out, Verdict(best.build.name, kind, why)


def _short_horizon(within: list[Row], own: Ownership) -> str | None:
    """Under a few months of use, and the buyer not keeping the machine: renting, when a rented build meets the
    need (a machine bought for the job is sold nearly new at a used price, less the cost of selling it)."""
    if own.months >= SHORT_HORIZON_MONTHS or own.keep_using or not any(r.build.rent for r in within):
        return None
    return (
        f"A {own.months:g}-month horizon: a machine bought for the job would be sold nearly new at a used price, "
        "less the cost of selling it, so renting is recommended (say --keep-using if you will go on using a "
        "bought machine after the job)."
    )


def _alternative(best: Row, alt: Row, need: Need, own: Ownership) -> list[str]:
    """What the best of the other way (buy or rent) costs on the same basis, and owning vs renting over the
    ownership period."""
    out = [
        f"On the same basis, {'renting' if alt.build.rent else 'buying'} {alt.build.title} would cost "
        f"{_cost_text(alt, need).split(' by ')[0]}."
    ]
    own_r, rent_r = (best, alt) if best.build.kind == "buy" else (alt, best)
    if own_r.job and rent_r.job and own_r.job.period_usd is not None and rent_r.job.usd_per_hour_of_use:
        # the same work over the period: the rented machine's hours scaled to the owned one's speed
        ratio = (own_r.tokens_per_second or 0) / (rent_r.tokens_per_second or 1)
        rent_period = rent_r.job.usd_per_hour_of_use * own.used_hours * ratio
        out.append(
            f"Over {own.months:g} months at {own.hours_per_day:g} h/day: owning {own_r.build.name} "
            f"costs US${own_r.job.period_usd:,.0f} ({own_r.job.period_basis}); renting "
            f"{rent_r.build.name} for the same work US${rent_period:,.0f}."
        )
    return out


def _cheapest_buy(ok: list[Row], need: Need) -> list[str]:
    budget = need.budget_usd
    buys_all = [r for r in ok if not r.build.rent and r.cost and r.cost.purchase_usd is not None and not _kept(r)]
    if not buys_all:
        return []
    cb = min(buys_all, key=lambda r: r.cost.purchase_usd if r.cost and r.cost.purchase_usd else 0.0)
    over = budget is not None and cb.cost is not None and (cb.cost.purchase_usd or 0) > budget
    return [
        f"Cheapest to buy that meets the need: {cb.build.title}, "
        f"{_usd(cb.cost.purchase_usd if cb.cost else None)}"
        + (f" (over the US${budget:,.0f} budget)" if over else "")
        + f"{_time(cb, need)}."
    ]


def _fastest(ok: list[Row], need: Need) -> list[str]:
    """The fastest build (with no budget), or the fastest to buy within the budget when it is not the fastest."""
    budget = need.budget_usd
    fastest = ok[0]
    if budget is None:
        return [f"Fastest: {fastest.build.title}{_time(fastest, need)}{_ties(fastest)}."]
    buys = [
        r
        for r in ok
        if not r.build.rent and r.cost and r.cost.purchase_usd is not None and r.cost.purchase_usd <= budget
    ]
    if buys and buys[0] is not fastest:
        f = buys[0]
        return [f"Fastest to buy within US${budget:,.0f}: {f.build.title}{_time(f, need)}{_ties(f)}."]
    return []


def _ties(r: Row) -> str:
    return f" (a tie with {', '.join(r.tie_with)}: their predicted ranges overlap)" if r.tie_with else ""


def _break_even(ok: list[Row], verdict: Verdict, own: Ownership) -> list[str]:
    """Above how many hours a day buying beats renting: for the chosen build, else the cheapest that says."""
    pick = [r for r in ok if r.build.name == verdict.build] + sorted(ok, key=lambda r: _basis_usd(r) or float("inf"))
    for r in pick:
        if r.job and r.job.break_even_hours_per_day is not None and not r.build.rent and not _kept(r):
            h = r.job.break_even_hours_per_day
            return [
                f"Buying {r.build.title} beats renting the same GPUs above {h:.1f} h/day of use over "
                f"{own.months:g} months" + (" (never at this period: more than 24 h/day)" if h > 24 else "") + "."
            ]
    return []


def _kept(r: Row) -> bool:
    """The buyer's own machine as it is: nothing to buy, nothing to pay back."""
    return r.build.owned and not (r.cost and r.cost.purchase_usd)


def _failing_lines(failing: list[Row]) -> list[str]:
    out = []
    for r in failing:
        for f in r.fails_rules:
            fix = f" Fix: {f['fix']}." if f.get("fix") else ""
            out.append(f"Not recommended: {r.build.title} fails {f['code']} ({f['message']}).{fix}")
    return out


def _time(r: Row, need: Need) -> str:
    if r.job and r.job.hours is not None:
        h = r.job.hours
        return f", {h / 24:.1f} days for the token budget" if h >= 48 else f", {h:.1f} hours for the token budget"
    if r.tokens_per_second:
        return f", {r.tokens_per_second:,.0f} tokens/s"
    return ""
