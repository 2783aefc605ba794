"""What a claim is: the declarations the suites' `<suite>_claims.py` files use (Fs, Measure, Side,
Claim) and the registry of every suite's claims. Data only: the verdict rules that judge a claim
against a run, and what each field means for them, are in harness/analysis/claims.py.

A claim cites either a seed (the studies' documents, ../shared/seeds: `source` "seed 001, table
119", its `quote` the seed's words) or a published web page (`web`, the key of a WebSource in
harness/suites/web_sources.py, which keeps the page's URL, date, setup and the words read from it
in one place; the claim's `quote` is some of those words).

    >>> Claim("x", "A beats B", "seed 000, fig. 1", "2x", "fio-matrix", "direction",
    ...       (Fs("a"), Fs("b")), measure=Measure("iops")).compared[0].fs.label
    'a'
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from dataclasses import dataclass, field

from harness.suites.web_sources import SOURCES, WebSource

KINDS = ("direction", "ratio", "extreme", "order", "equal", "absolute")
COMBINE = ("pool", "geomean", "sum")


@dataclass(frozen=True)
class Fs:
    """A filesystem as a claim names it, and the spellings that find it in a run (see the module
    docstring). `names` default to (label,)."""

    label: str
    names: tuple[str, ...] = ()
    type: str | None = None
    layout: str | None = None
    with_option: str | None = None
    without_option: str | None = None

    def spellings(self) -> tuple[str, ...]:
        return self.names or (self.label,)


@dataclass(frozen=True)
class Measure:
    """Which records make a side's sample, and how (see the module docstring)."""

    metric: str
    cases: tuple[str, ...] = ("*",)
    steps: tuple[str, ...] = ("",)
    combine: str = "pool"
    replicate: tuple[str, ...] = ("rep",)
    rate_of: str | None = None
    unit: str = ""
    detail: str | None = None  # only records of this detail (runs.key_of), "" = none; None = any
    pair_by: tuple[str, ...] = ()  # record fields that pair the sides' values (pool only): a paired test

    def where(self) -> str:
        """'iops of read-*-buffered-many-small' or 'real_s of compile/cp'."""
        steps = [s for s in self.steps if s]
        return f"{self.metric} of {','.join(self.cases)}" + (f"/{','.join(steps)}" if steps else "")


SEED_LANGUAGES = {"000": "Portuguese", "001": "Czech", "002": "Portuguese", "003": "Spanish", "004": "Russian"}
MACHINE_MARGIN = (1.5, "another machine, kernel and decade than the paper's")


def _number(text: str) -> float:
    """'11.41' -> 11.41, '6:24.75' (minutes:seconds) -> 384.75, '66,2' -> 66.2."""
    text = text.replace(",", ".")
    if ":" in text:
        m, sec = text.split(":")
        return 60 * float(m) + float(sec)
    return float(text)


def _half_unit(text: str, figure: bool) -> float:
    """Half the last printed digit's place: what rounding may hide. '11.41' -> 0.005, '8' -> 0.5;
    a round figure in words (`figure`) counts its trailing zeros as rounding: '40' -> 5."""
    text = text.replace(",", ".")
    if "." in text:
        return 0.5 * 10 ** -len(text.split(".")[1])
    digits = text.split(":")[-1]
    zeros = len(digits) - len(digits.rstrip("0")) if figure and digits.strip("0") else 0
    return 0.5 * 10**zeros


def interval(lo: float, hi: float, least: int = 3) -> str:
    """'[lo, hi]' with `least` significant digits, or as many more as tell the bounds apart: a
    band of 2.1372 .. 2.1390 prints '[2.137, 2.139]', not '[2.14, 2.14]'.

    >>> interval(2.13720, 2.13901), interval(1.5, 2.0), interval(1.0, 1.0)
    ('[2.137, 2.139]', '[1.5, 2]', '[1, 1]')
    """
    for digits in range(least, 10):
        a, b = f"{lo:.{digits}g}", f"{hi:.{digits}g}"
        if a != b or lo == hi:
            return f"[{a}, {b}]"
    return f"[{lo!r}, {hi!r}]"


@dataclass(frozen=True)
class Tolerance:
    """Where a ratio claim's band comes from: the paper's two numbers as printed (a table's, or
    one figure said in words, `den` "1"), what their rounding allows, and a stated margin for
    everything else: the effect (ratio - 1) may be `margin` times smaller or larger. The claim's
    ratio and band are computed from it.

    >>> t = Tolerance("8", "6", 1.5, "x"); round(t.ratio, 3), [round(x, 3) for x in t.precise()]
    (1.333, [1.154, 1.545])
    >>> [round(x, 3) for x in t.band()]
    [1.103, 1.818]
    >>> Tolerance("40", "1", 1.0, "x", figure=True).precise()
    (35.0, 45.0)
    """

    num: str  # as printed: "11.41", "8", "6:24.75", or a figure in words: "40"
    den: str
    margin: float  # the effect (ratio - 1) within this factor either way, for what precision does not cover
    why: str  # the margin's reason
    figure: bool = False  # a round figure in words: its trailing zeros are rounding
    almost: bool = False  # "almost N": no higher than N
    at_least: bool = False  # "more than N": the band is open above

    @property
    def ratio(self) -> float:
        return _number(self.num) / _number(self.den)

    def precise(self) -> tuple[float, float]:
        """The ratios the printed numbers allow (their rounding undone)."""
        n, d = _number(self.num), _number(self.den)
        hn = _half_unit(self.num, self.figure)
        hd = 0.0 if self.den == "1" else _half_unit(self.den, False)
        lo = (n - hn) / (d + hd)
        hi = math.inf if d - hd <= 0 else (n + hn) / (d - hd)
        return lo, (n / d if self.almost else hi)

    def band(self) -> tuple[float, float | None]:
        lo, hi = self.precise()
        return 1 + (lo - 1) / self.margin, (None if self.at_least or math.isinf(hi) else 1 + (hi - 1) * self.margin)

    def text(self) -> str:
        """"8 / 6 as printed (to 1) allows [1.15, 1.55]; effect within x1.5 (why): [1.1, 1.82]"."""
        lo, hi = self.precise()
        blo, bhi = self.band()
        what = f"'{self.num}'" if self.den == "1" else f"{self.num} / {self.den}"
        unit = 2 * _half_unit(self.num, self.figure)
        return (f"{what} as printed (to {unit:g}) allows {interval(lo, hi)}" +
                ("; 'almost': no higher" if self.almost else "") +
                f"; effect (ratio - 1) within x{self.margin:g} ({self.why}): " +
                (f"> {blo:.3g}" if bhi is None else interval(blo, bhi)))


ONE_KERNEL = "fslab runs one kernel and one version of each filesystem: a change over the years cannot be seen"
RECOVERY_TIME = ("recovery time is not measured; power-loss judges whether a repair is needed at all "
                 "(pl-ext2-needs-fsck, on seed 001's sentence)")  # two reasons several seeds' findings share


@dataclass(frozen=True)
class Finding:
    """One quantitative or directional finding of a seed (harness/suites/seed_findings.py): the
    claims that check it, or why fslab cannot measure it (exactly one of the two)."""

    seed: str  # "000"
    where: str  # "Figure 3 (text)", "table 119, row rm -rf"
    quote: str  # the seed's words, short and verbatim (its language: SEED_LANGUAGES)
    says: str  # the finding in English
    claims: tuple[str, ...] = ()  # the ids of the claims that check it
    why: str = ""  # no claim: "not measurable here, because ..."
    note: str = ""  # how the claims read it, or the part of it they cannot check

    @property
    def checked(self) -> bool:
        return bool(self.claims)


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a filesystem (None: each of the claim's `for_each`), a measure
    (None: the claim's) and how the row labels it (default: the filesystem's label)."""

    fs: Fs | None = None
    measure: Measure | None = None
    label: str = ""


@dataclass(frozen=True)
class Claim:
    """One published finding and the comparison it implies (see the module docstring)."""

    id: str
    text: str
    source: str  # "seed 001, table 119", or a web page's title, date and page (with `web`)
    paper: str  # the paper's number(s), with units
    suite: str
    kind: str
    sides: tuple[Side | Fs, ...]
    measure: Measure | None = None
    ratio: float | None = None
    band: tuple[float | None, float | None] | None = None
    extreme: str = ""  # extreme claims: "best" or "worst"
    top: int = 1  # extreme claims: the first `top` sides are each the best (worst) of the rest
    for_each: tuple[Fs, ...] = ()
    profiles: tuple[str, ...] | None = None
    tcg: str | None = None  # why TCG cannot judge this claim, beyond its kind's rule
    higher_is_better: bool | None = None
    note: str = ""
    pending: str = ""  # the suite it names is not in this tree yet: why, and what checks it later
    quote: str = ""  # the seed's (or web page's) own words, verbatim (a seed's in its language: SEED_LANGUAGES)
    says: str = ""  # the quote in English, when the claim's `text` is not its translation
    tolerance: Tolerance | None = None  # a ratio claim: where ratio and band come from (they are computed)
    web: str = ""  # a claim from a web page: its WebSource's key (harness/suites/web_sources.py), else a seed's

    compared: tuple[Side, ...] = field(init=False, repr=False, compare=False)  # `sides`, each a Side

    def __post_init__(self) -> None:
        object.__setattr__(self, "compared", tuple(s if isinstance(s, Side) else Side(s) for s in self.sides))
        if self.tolerance is not None:
            if self.ratio is not None or self.band is not None:
                raise ValueError(f"claim {self.id}: give a tolerance or ratio and band, not both")
            object.__setattr__(self, "ratio", self.tolerance.ratio)
            object.__setattr__(self, "band", self.tolerance.band())
        problems = _problems(self)
        if problems:
            raise ValueError(f"claim {self.id}: " + "; ".join(problems))

    @property
    def seed(self) -> str:
        """'001' of source 'seed 001, table 119'; '' for a web claim."""
        return self.source.split(",")[0].split()[1] if self.source.startswith("seed ") and not self.web else ""

    @property
    def web_source(self) -> WebSource | None:
        """The WebSource a web claim cites (None for a seed's claim)."""
        return SOURCES[self.web] if self.web else None

    def side_measure(self, side: Side) -> Measure:
        m = side.measure or self.measure
        assert m is not None  # __post_init__ checked
        return m


def _problems(c: Claim) -> list[str]:
    out = []
    if c.kind not in KINDS:
        out.append(f"kind {c.kind!r} is not allowed; allowed: {', '.join(KINDS)}")
    least = {"direction": 2, "ratio": 2, "extreme": 2, "order": 2, "equal": 2, "absolute": 1}.get(c.kind, 1)
    if len(c.compared) < least or (c.kind == "ratio" and len(c.compared) != 2):
        out.append(f"a {c.kind} claim needs {least} sides{'' if c.kind != 'ratio' else ' exactly'}")
    if c.kind == "direction" and len(c.compared) % 2:
        out.append("a direction claim's sides come in pairs (A1, B1, A2, B2, ...): each A better than its B")
    if any(s.measure is None for s in c.compared) and c.measure is None:
        out.append("a side has no measure and the claim none either")
    for s in c.compared:
        m = s.measure or c.measure
        if m is not None and m.combine not in COMBINE:
            out.append(f"combine {m.combine!r} is not allowed; allowed: {', '.join(COMBINE)}")
        if m is not None and m.pair_by and m.combine != "pool":
            out.append("pair_by pairs pooled values only (combine 'pool')")
    if any(s.fs is None for s in c.compared) != bool(c.for_each):
        out.append("for_each and sides without a filesystem go together")
    if c.kind == "ratio" and (c.ratio is None or c.band is None):
        out.append("a ratio claim needs ratio and band")
    if c.kind == "ratio" and c.ratio is not None and c.ratio == 1:
        out.append("a ratio of 1 is an equal claim")
    if c.kind == "ratio" and c.ratio is not None and c.band is not None and not (
            (c.band[0] is None or c.band[0] <= c.ratio) and (c.band[1] is None or c.ratio <= c.band[1])):
        out.append(f"the paper's ratio {c.ratio} is outside its band")
    if c.kind == "equal" and (c.band is None or not (c.band[0] or 0) <= 1 <= (c.band[1] or math.inf)):
        out.append("an equal claim needs a band around 1")
    if c.band is not None and None not in c.band and c.band[0] > c.band[1]:  # type: ignore[operator]
        out.append("band low above band high")
    if c.kind == "extreme" and not 1 <= c.top < len(c.compared):
        out.append("an extreme claim's top is 1 or more, below its number of sides")
    if c.kind == "extreme" and c.extreme not in ("best", "worst"):
        out.append("an extreme claim says extreme='best' or 'worst'")
    if c.web:
        if c.web not in SOURCES:
            out.append(f"web source {c.web!r} is not in harness/suites/web_sources.py; known: {', '.join(SOURCES)}")
        if not c.quote or c.source.startswith("seed "):
            out.append("a web claim quotes its page (quote) and names it in source, not a seed")
    return out



# --- every suite's claims ---------------------------------------------------------------------------

def all_claims() -> dict[str, tuple[Claim, ...]]:
    """Every harness/suites/<module>_claims.py's CLAIMS, by module name."""
    import harness.suites as pkg

    out = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.endswith("_claims"):
            mod = importlib.import_module(f"harness.suites.{info.name}")
            out[info.name] = tuple(mod.CLAIMS)
    return out


def claims_for(suite: str) -> list[Claim]:
    return [c for cs in all_claims().values() for c in cs if c.suite == suite]

