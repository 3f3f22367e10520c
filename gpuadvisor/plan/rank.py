"""Order the rows and say what to buy: fastest first among builds that fit; builds whose predicted ranges overlap
share a rank (a tie, not an order); then the recommendation in plain words."""

from __future__ import annotations

from gpuadvisor.plan.evaluate import Need, Row


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


def recommend(rows: list[Row], need: Need) -> list[str]:
    """Plain sentences: the cheapest build that meets the need, the fastest within the budget, what would change it."""
    meets = [r for r in rows if r.meets_need and r.tokens_per_second]
    out: list[str] = []
    if not meets:
        fits = [r for r in rows if r.fits]
        out.append(
            "No candidate meets the need."
            + (
                f" Closest: {fits[0].build.title} ({fits[0].need_reason})."
                if fits
                else " None of them fits the model: a larger machine, fewer bytes per parameter (LoRA/QLoRA, 8-bit "
                "optimizers) or more GPUs are needed."
            )
        )
        return out
    buys = [r for r in meets if not r.build.rent and r.cost and r.cost.purchase_usd is not None]
    cheapest_buy = min(buys, key=lambda r: r.cost.purchase_usd, default=None)
    if cheapest_buy:
        out.append(
            f"Cheapest to buy that meets the need: {cheapest_buy.build.title}, {_usd(cheapest_buy.cost.purchase_usd)}"
            f"{_time(cheapest_buy, need)}."
        )
    priced_jobs = [r for r in meets if r.job and r.job.job_usd is not None]
    if need.tokens and priced_jobs:
        cheapest_job = min(priced_jobs, key=lambda r: r.job.job_usd)
        how = (
            "renting"
            if cheapest_job.build.rent
            else "owning it (purchase written off over the months assumed, plus energy)"
        )
        out.append(
            f"Cheapest for this job: {cheapest_job.build.title}, {_usd(cheapest_job.job.job_usd)} by "
            f"{how}{_time(cheapest_job, need)}."
        )
    fastest = meets[0]
    if need.budget_usd is not None:
        within = [r for r in meets if _price_for_budget(r) is not None and _price_for_budget(r) <= need.budget_usd]
        if within:
            f = within[0]
            out.append(
                f"Fastest within US${need.budget_usd:,.0f}: {f.build.title}{_time(f, need)}"
                + (f" (a tie with {', '.join(f.tie_with)}: their predicted ranges overlap)" if f.tie_with else "")
                + "."
            )
            if f is not fastest:
                out.append(
                    f"What would change it: {fastest.build.title} is {_speed(fastest) / _speed(f):.1f}x faster "
                    f"for {_usd(_price_for_budget(fastest))}."
                )
        else:
            out.append(f"Nothing that meets the need has a known price within US${need.budget_usd:,.0f}.")
    else:
        out.append(
            f"Fastest: {fastest.build.title}{_time(fastest, need)}"
            + (
                f" (a tie with {', '.join(fastest.tie_with)}: their predicted ranges overlap)"
                if fastest.tie_with
                else ""
            )
            + "."
        )
    for r in meets:
        if r.job and r.job.break_even_months is not None and not r.build.rent:
            out.append(
                f"Buying {r.build.title} pays for itself against renting the same GPUs after "
                f"{r.job.break_even_months:.1f} months of round-the-clock use."
            )
            break
    unpriced = [r.build.name for r in meets if _price_for_budget(r) is None]
    if unpriced:
        out.append(f"Without a price ({', '.join(unpriced)}): give yours with --prices to rank them by cost.")
    return out


def _price_for_budget(r: Row) -> float | None:
    """What the budget is compared with: the purchase price, or for a rented build the job's rent (or, with no
    token budget, a month of it round the clock)."""
    if r.build.rent:
        if r.job and r.job.job_usd is not None:
            return r.job.job_usd
        if r.cost and r.cost.rent_usd_per_hour:
            from gpuadvisor.plan.costs import HOURS_PER_MONTH

            return r.cost.rent_usd_per_hour * HOURS_PER_MONTH
        return None
    return r.cost.purchase_usd if r.cost else None


def _time(r: Row, need: Need) -> str:
    if r.job and r.job.hours is not None:
        h = r.job.hours
        return f", {h / 24:.1f} days for the token budget" if h >= 48 else f", {h:.1f} hours for the token budget"
    if r.tokens_per_second:
        return f", {r.tokens_per_second:,.0f} tokens/s"
    return ""
