"""What a build costs: its price, its power at load, the energy and the money a job takes, and owning against
renting on the same basis (the cost per hour of use at the buyer's utilisation over the ownership period).

Every figure says where it comes from: a reference price (dated, sourced), the build's own figure, or an
assumption shown in the output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuadvisor.catalog.platforms import Prices
from gpuadvisor.plain import FieldsDict
from gpuadvisor.plan.build import Build
from gpuadvisor.plan.horizon import break_even_months, net_resale, resale_basis
from gpuadvisor.power import PLATFORM_W, power_budget

HOURS_PER_MONTH = 730.0  # 8,760 h / 12
DAYS_PER_MONTH = HOURS_PER_MONTH / 24
REST_OF_SYSTEM_W = PLATFORM_W  # board, memory, disks, fans (the PSU rule's figure)
DEFAULT_KWH_USD = 0.15  # assumed; pass --kwh-price
DEFAULT_MONTHS = 36  # assumed; pass --months
DEFAULT_HOURS_PER_DAY = 8.0  # assumed; pass --hours-per-day

# Power usage effectiveness: the facility's cooling and distribution overhead on top of the IT load.
PUE_RACK = (
    1.58,
    "Uptime Institute Global Data Center Survey 2023: average PUE 1.58 "
    "(https://uptimeinstitute.com/resources/research-and-reports/"
    "uptime-institute-global-data-center-survey-results-2023)",
)
PUE_DESK = (1.0, "home or office: a workstation, no facility cooling counted (pass --pue)")
PUE_CLOUD = "cloud: the facility's cooling and distribution are in the rent"
# Measured average node power while training, where published: (GPU id, GPUs per node) -> (W, source).
MEASURED_TRAIN_W: dict[tuple[str, int], tuple[float, str]] = {
    ("h100-sxm5-80gb", 8): (
        6741.0,
        "MLPerf Training v4.0, Llama 2 70B LoRA on 8x H100 SXM: average 6.741 kW per node (DC), measured "
        "(Sustainable Metal Cloud, https://smc.co/mlperfv40/results/llama2-70b-lora)",
    ),
}
# The highest published training draw of a node, other than a peak held out by the plan's tests: (GPU id, GPUs per
# node) -> (W, source). Not a peak: stated beside the nameplate, never in its place (see measured_training_note).
MEASURED_TRAIN_HIGH_W: dict[tuple[str, int], tuple[float, str]] = {
    ("h100-sxm5-80gb", 8): (
        0.76 * 10_200,
        "Newkirk et al. 2025 (arXiv 2506.14551): Brookhaven 8x H100 nodes, computationally intensive training at "
        "76 % of the 10.2 kW rating",
    ),
}
NAMEPLATE_RULE = (
    "a dedicated circuit is sized for the rated input of the equipment it feeds: NEC 645.5(A) sizes the branch "
    "circuits of IT equipment for 125 % of the connected load, and the design current of an IEC 60364 final "
    "circuit feeding one item is its rated current; no published peak of this node is known to replace it"
)


def measured_training_note(b: Build, continuous_w: float) -> str:
    """Beside a cap sized from the nameplate: the node's highest published training draw and the cap that figure
    alone would need (GPUs held at board power in the measurement), or "" where none is published."""
    from gpuadvisor.power import cap_for

    measured = None if b.mixed else MEASURED_TRAIN_HIGH_W.get((b.gpu.id, b.count))
    if measured is None or not b.power_at_load_w:
        return ""
    w, source = measured
    boards = [g.tdp_w or 0.0 for g in b.cards]
    cap, frac = cap_for(continuous_w, w, boards)
    then = f"that figure alone would need -pl {cap:g} ({frac:.0%} of board power)" if cap > 0 else "no cap fits it"
    return (
        f". Sized on the {b.power_at_load_w:,.0f} W rating ({NAMEPLATE_RULE}); measured training draw "
        f"{w:,.0f} W ({source}), an operating level, not a peak: {then}"
    )


# CPUs assumed for an offered machine whose CPU is not known: what such a server ships with.
ASSUMED_SERVER_CPU_W = 350.0


def gpu_class(gpu_id: str) -> str:
    return "geforce" if gpu_id.startswith("rtx-") and gpu_id[4:5].isdigit() and "ada" not in gpu_id else "datacenter"


@dataclass
class Ownership:
    """How the buyer would use and keep a machine: the basis of every owning-versus-renting figure."""

    hours_per_day: float = DEFAULT_HOURS_PER_DAY
    months: float = DEFAULT_MONTHS
    resale: float | None = None  # fraction kept at the end; None: the sourced default for the GPU class
    kwh_usd: float = DEFAULT_KWH_USD
    pue: float | None = None  # None: 1.58 for rack servers, 1.0 for workstations
    finance_apr: float = 0.0  # yearly interest rate of a loan over the ownership period (0: paid in cash)
    given: tuple[str, ...] = ()  # which of these the buyer gave (the rest are assumed)
    keep_using: bool = False  # the buyer keeps using the machine after the job (a short horizon is not a sale)
    have: tuple[tuple[str, int], ...] = ()  # GPUs the buyer owns (--have): catalog id, count

    @property
    def used_hours(self) -> float:
        return self.hours_per_day * self.months * DAYS_PER_MONTH

    def resale_for(self, b: Build) -> tuple[float, str]:
        if self.resale is not None:
            return self.resale, "given"
        cls = gpu_class(b.gpu.id)
        return net_resale(cls, self.months), f"assumed: {resale_basis(cls)}"

    def pue_for(self, b: Build) -> tuple[float, str]:
        if self.pue is not None:
            return self.pue, "given"
        rack = b.layout == "hgx" or b.count >= 8 or (b.cpu is not None and b.cpu.kind == "server")
        return PUE_RACK if rack else PUE_DESK

    def interest(self, principal: float) -> float:
        """Total interest of a loan of ``principal`` repaid monthly over the period at ``finance_apr``."""
        if self.finance_apr <= 0 or self.months <= 0:
            return 0.0
        r, n = self.finance_apr / 12, self.months
        payment = principal * r / (1 - (1 + r) ** -n)
        return payment * n - principal

    def label(self, b: Build | None = None) -> str:
        def mark(k: str) -> str:
            return "" if k in self.given else " (assumed)"

        parts = [f"{self.hours_per_day:g} h/day{mark('hours_per_day')} for {self.months:g} months{mark('months')}"]
        if b is not None:
            kept, _ = self.resale_for(b)
            pue, _ = self.pue_for(b)
            parts.append(f"resale {kept:.0%}{mark('resale')}")
            parts.append(f"US${self.kwh_usd:g}/kWh{mark('kwh_usd')} x PUE {pue:g}{mark('pue')}")
        else:
            parts.append(f"US${self.kwh_usd:g}/kWh{mark('kwh_usd')}")
        parts.append(f"financed at {self.finance_apr:.1%} a year" if self.finance_apr else "paid in cash")
        return ", ".join(parts)


@dataclass
class Cost(FieldsDict):
    purchase_usd: float | None = None
    purchase_basis: str | None = None  # what the price is made of, with its labels
    purchase_unknown: str | None = None  # why there is no price
    rent_usd_per_hour: float | None = None
    rent_basis: str | None = None
    power_w: float = 0.0
    power_basis: str = ""
    psu_needed_w: float | None = None
    average_w: float | None = None  # the draw the energy is counted at (None: power_w, the maximum)
    average_basis: str | None = None
    notes: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # reference prices older than six months

    @property
    def energy_w(self) -> float:
        """The draw energy is counted at: the workload's average where known, else the maximum."""
        return self.average_w if self.average_w is not None else self.power_w


def average_draw(c: Cost, b: Build, training: bool, utilisation: float | None) -> None:
    """The workload's average draw (in place): a published measurement of the same node training, else the GPUs
    at board power x the advisor's utilisation (the fraction of the ideal speed: a GPU waiting on communication
    or offload draws less), the rest of the machine at its figure; serving keeps the maximum. The maximum stays
    in power_w for the PSU and the circuit."""
    if b.rent or not training:
        return
    measured = None if b.mixed else MEASURED_TRAIN_W.get((b.gpu.id, b.count))
    if measured is not None:
        c.average_w = min(measured[0] * b.nodes, c.power_w)
        c.average_basis = f"measured: {measured[1]}" + (f", x {b.nodes} nodes" if b.nodes > 1 else "")
        return
    if utilisation is None or not 0 < utilisation < 1:
        return
    gpu_w = sum(g.tdp_w or 0.0 for g in b.cards) * b.nodes
    c.average_w = c.power_w - gpu_w * (1 - utilisation)
    c.average_basis = (
        f"the GPUs at {utilisation:.0%} of board power (the advisor's fraction of the ideal speed) and the rest "
        "at its figure; the maximum is kept for the PSU and the circuit"
    )


def _stale(c: Cost, what: str, date: str, today: str | None = None) -> None:
    from gpuadvisor.catalog.platforms import months_old

    age = months_old(date, today)
    if age is not None and age > 6:
        c.stale.append(f"the reference {what} is from {date} ({age:.0f} months old): check a current price")


def build_cost(b: Build, prices: Prices) -> Cost:
    """What a build draws and costs: power, then the rent per hour or the purchase price (a system quote, the
    build's reference price, or its priced parts), the network between its nodes included."""
    c = Cost()
    _power(c, b)
    if b.rent:
        _rent(c, b, prices)
        return c
    p = b.price
    if b.owned:  # the buyer's own machine: nothing but what an upgrade adds is bought
        c.purchase_usd = sum(v for v, _ in b.extra_cost)
        c.purchase_basis = "owned: US$0 for what you have" + "".join(f" + {t}" for _, t in b.extra_cost)
        return c
    if b.name in prices.system:  # a --prices row for this build (a quote) wins over the build's reference price
        sp = prices.system[b.name]
        c.purchase_usd, c.purchase_basis = sp.usd, f"system US${sp.usd:,.0f} ({sp.label()}: {sp.source})"
        _stale(c, "system price", sp.date)
    elif p.get("system_usd"):
        c.purchase_usd = float(p["system_usd"])
        label = "reference price, " + p["date"] if p.get("date") else "given"
        c.purchase_basis = f"system US${p['system_usd']:,.0f} ({label}: {p.get('source', b.origin)})"
        if p.get("date"):
            _stale(c, "system price", str(p["date"]))
    else:
        _parts_price(c, b, prices)
    if b.nodes > 1 and c.purchase_usd is not None:
        _add_network(c, b, c.purchase_usd)
    return c


def _power(c: Cost, b: Build) -> None:
    """The power at load (the build's measured figure, else GPUs at board power and the CPUs) and the PSU."""
    cpu_w: float | None = b.cpu.tdp_w if b.cpu else None
    if b.cpu is None and not b.rent:
        cpu_w = ASSUMED_SERVER_CPU_W if b.count >= 4 else 170.0
        c.notes.append(
            f"CPU not known: assumed {b.sockets} x {cpu_w:g} W (a typical "
            f"{'server' if b.count >= 4 else 'desktop'} CPU at load)"
        )
    pb = power_budget([g.tdp_w or 0.0 for g in b.cards], [g.id for g in b.cards], cpu_w, b.sockets)
    c.psu_needed_w = pb.psu_needed_w
    if b.power_at_load_w:
        c.power_w = float(b.power_at_load_w) * b.nodes
        c.power_basis = b.power_source or f"{b.origin}: power_at_load_w"
    else:
        c.power_w = pb.load_w * b.nodes
        c.power_basis = pb.basis + " (GPUs at board power under training)"
    if b.nodes > 1:
        c.power_basis = f"{b.nodes} nodes x ({c.power_basis})"


def _rent(c: Cost, b: Build, prices: Prices) -> None:
    """The rent per hour: the build's GPU-hour price, else the reference cloud price."""
    cloud = prices.cloud.get(b.gpu.id)
    given = b.price.get("gpu_hour_usd")
    if given:
        c.rent_usd_per_hour = float(given) * b.total_gpus
        c.rent_basis = f"{b.total_gpus} x US${given:g}/GPU-hour ({b.price.get('source', b.origin)})"
    elif cloud:
        c.rent_usd_per_hour = cloud.usd * b.total_gpus
        c.rent_basis = f"{b.total_gpus} x US${cloud.usd:g}/GPU-hour ({cloud.label()}: {cloud.source})"
        _stale(c, f"cloud price of {b.gpu.name}", cloud.date)
    else:
        c.purchase_unknown = (
            f"no reference cloud price for {b.gpu.name}: give gpu_hour_usd in the build or a [[cloud]] row in --prices"
        )


def _parts_price(c: Cost, b: Build, prices: Prices) -> None:
    """The purchase price as the sum of its priced parts (GPUs, CPUs, the rest of the platform), or what is
    missing."""
    p = b.price
    parts: list[tuple[float, str]] = []
    missing: list[str] = []
    given = p.get("gpu_usd") if not b.mixed else None  # one GPU price: a build of one kind
    for g, n in b.kinds:
        ref = prices.gpu.get(g.id)
        gp = given or (ref.usd if ref else None)
        if gp:
            label = "given" if given or ref is None else f"{ref.label()}: {ref.source}"
            what = "GPU" if not b.mixed else g.name
            parts.append((gp * n, f"{n} x US${gp:,.0f} {what} ({label})"))
            if not given and ref is not None:
                _stale(c, f"price of {g.name}", ref.date)
        else:
            missing.append(f"{g.name} has no public list price")
    if p.get("cpu_usd"):
        parts.append((float(p["cpu_usd"]) * b.sockets, f"{b.sockets} x US${p['cpu_usd']:,.0f} CPU (given)"))
    elif b.cpu is not None:
        cp = prices.cpu.get(b.cpu.id)
        if cp:
            parts.append((cp.usd * b.sockets, f"{b.sockets} x US${cp.usd:,.0f} CPU ({cp.label()}: {cp.source})"))
        else:
            missing.append(f"{b.cpu.name} has no reference price (give price.cpu_usd)")
    if p.get("platform_usd"):
        parts.append(
            (
                float(p["platform_usd"]),
                f"US${p['platform_usd']:,.0f} for the rest ({p.get('platform_note', 'given in the build')})",
            )
        )
    else:
        missing.append("the rest of the platform is not priced")
    if missing:
        c.purchase_unknown = "; ".join(missing) + " (give prices with --prices, or [price] in the build)"
    else:
        c.purchase_usd = sum(v for v, _ in parts)
        c.purchase_basis = " + ".join(t for _, t in parts)


def _add_network(c: Cost, b: Build, purchase_usd: float) -> None:
    """Several nodes: the purchase times the nodes, plus the network per GPU."""
    from gpuadvisor.plan.build import NETWORKS

    p = b.price
    gbps, assumed_usd, what = NETWORKS[b.network or "ib-ndr"]
    per_gpu = float(p.get("network_usd_per_gpu") or assumed_usd)
    label = (
        "given"
        if p.get("network_usd_per_gpu")
        else "assumed: adapter, switch port, optics; give price.network_usd_per_gpu"
    )
    c.purchase_usd = purchase_usd * b.nodes + per_gpu * b.total_gpus
    c.purchase_basis = (
        f"{b.nodes} nodes x ({c.purchase_basis}) + {b.total_gpus} x US${per_gpu:,.0f} network per GPU ({what}; {label})"
    )


@dataclass
class JobCost(FieldsDict):
    hours: float | None
    energy_kwh: float | None
    energy_usd: float | None
    job_usd: float | None  # rent: hours x rate; buy: hours x the owned cost per hour of use
    usd_per_million_tokens: float | None
    usd_per_hour_of_use: float | None  # the common basis: rent rate, or ownership cost / hours used
    period_usd: float | None  # the whole ownership period at the stated utilisation (rent: rate x hours used)
    period_basis: str | None
    break_even_hours_per_day: float | None  # owning beats renting the same GPUs above this use
    break_even_basis: str | None
    notes: list[str]
    break_even_months: float | None = None  # owning beats renting after this many months at the stated h/day


def ownership_cost(b: Build, c: Cost, own: Ownership) -> tuple[float | None, str | None]:
    """The cost of owning ``b`` over the period: purchase + interest + energy at the utilisation - resale."""
    if c.purchase_usd is None:
        return None, None
    kept, _ = own.resale_for(b)
    pue, _ = own.pue_for(b)
    energy = c.energy_w / 1000 * pue * own.used_hours * own.kwh_usd
    interest = own.interest(c.purchase_usd)
    total = c.purchase_usd + interest + energy - kept * c.purchase_usd
    basis = (
        f"US${c.purchase_usd:,.0f} purchase"
        + (f" + US${interest:,.0f} interest" if interest else "")
        + f" + US${energy:,.0f} energy - US${kept * c.purchase_usd:,.0f} resale ({kept:.0%})"
    )
    return total, basis


def job_cost(
    b: Build, c: Cost, tokens_per_second: float | None, tokens: float | None, own: Ownership, prices: Prices
) -> JobCost:
    notes: list[str] = []
    hours = tokens / tokens_per_second / 3600 if (tokens and tokens_per_second) else None
    pue, _ = own.pue_for(b)
    kw = c.energy_w / 1000
    energy_kwh = kw * pue * hours if hours is not None else None
    energy_usd = energy_kwh * own.kwh_usd if energy_kwh is not None and not b.rent else None
    per_hour: float | None
    period: float | None
    period_basis: str | None
    if b.rent:
        per_hour = c.rent_usd_per_hour
        period = per_hour * own.used_hours if per_hour is not None else None
        period_basis = f"US${per_hour:,.2f}/h x {own.used_hours:,.0f} hours of use" if per_hour is not None else None
    else:
        period, period_basis = ownership_cost(b, c, own)
        per_hour = period / own.used_hours if period is not None and own.used_hours > 0 else None
    job_usd = per_hour * hours if (per_hour is not None and hours is not None) else None
    per_m = per_hour / (tokens_per_second * 3600) * 1e6 if (per_hour is not None and tokens_per_second) else None
    be, be_basis, be_months = None, None, None
    cloud = None if b.mixed else prices.cloud.get(b.gpu.id)
    if not b.rent and c.purchase_usd is not None:
        if b.mixed:
            be_basis = f"no cloud rents {b.gpu_label} as one machine: no break-even against renting"
        elif cloud:
            rate = cloud.usd * b.total_gpus
            kept, _ = own.resale_for(b)
            net = c.purchase_usd * (1 - kept) + own.interest(c.purchase_usd)
            margin = rate - kw * pue * own.kwh_usd
            if margin > 0:
                be = net / (margin * own.months * DAYS_PER_MONTH)
                be_months = break_even_months(
                    c.purchase_usd, gpu_class(b.gpu.id), rate, kw * pue * own.kwh_usd, own.hours_per_day, own.resale
                )
                be_basis = (
                    f"renting {b.total_gpus} x {b.gpu.name} at US${cloud.usd:g}/GPU-hour ({cloud.label()}) "
                    "against "
                    f"owning for {own.months:g} months (US${net:,.0f} net of resale, plus energy)"
                )
        else:
            be_basis = f"no reference cloud price for {b.gpu.name}: no break-even against renting"
    return JobCost(
        hours, energy_kwh, energy_usd, job_usd, per_m, per_hour, period, period_basis, be, be_basis, notes, be_months
    )
