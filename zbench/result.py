"""A measured configuration as a notebook shows it: `Result` (summary, figure, comparisons), with the
project's statistics (the analysis's admissible runs, log-scale intervals, log-ratio Welch test, merged
latency histograms) and its truth checks, and the models of zfs/models.py beside it.

Everything here reads the sweep's store (`load_sweep`); nothing talks to a host, so a Result of any
finished one-cell sweep can be reopened (`load_result`) and compared later.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pandas as pd

from zbench.errors import InvalidInput
from zbench_lib.analysis.claims.caveats import import_line, io_path_line
from zbench_lib.analysis.data.columns import config_columns
from zbench_lib.analysis.data.flags import select_admissible, truth_summary
from zbench_lib.analysis.data.replication import to_units
from zbench_lib.analysis.data.sweep_data import Sweep, load_sweep
from zbench_lib.analysis.claims.wording import ci_text, interval_text, p_text
from zbench_lib.analysis.stats.decision import DEFAULT_MARGIN, Decision, decide, interval_verdict
from zbench_lib.analysis.stats.ratio import log_ratio_test
from zbench_lib.analysis.stats.stats import summary
from zbench_lib.analysis.data.metrics import workload_metric
from zbench_lib.analysis.stats.tables import space_check
from zbench_lib.analysis.stats.tails import SOURCE_BINS, cell_tails
from zbench_lib.core.sizes import format_size
from zbench_lib.measure import workloads
from zbench_lib.zfs.models import has_model, predicted_random_read_iops

UNITS = {"iops": ("IOPS", 1.0), "bw_bytes_s": ("MiB/s", 1024 ** 2)}


def _fmt(x: float, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:,.{max(0, digits - len(str(int(abs(x)))))}f}" if abs(x) < 10 ** digits else f"{x:,.0f}"


@dataclass(frozen=True)
class Comparison:
    """This result against another: the ratio of their means with its 95% CI and p (methods §2), and the
    verdict of the one decision rule (methods §3.1, `decision.decide`): a lone comparison is a family of
    one, so "higher/lower" needs its 95% CI to exclude 1 and clear ±`margin`, "equivalent" the same CI
    to include 1 and lie inside ±`margin`. `se` and `df` are the log ratio's standard error and Welch df;
    without them (a Comparison built by hand) the given CI is read the same way."""
    this: str
    other: str
    metric: str
    ratio: float
    low: float
    high: float
    p: float
    pools: tuple[int, int] = (1, 1)     # pools measured on each side: the units when both have two or more
    se: float = math.nan
    df: float = math.nan
    margin: float = DEFAULT_MARGIN
    alpha: float = 0.05
    units: tuple[int, int] | None = None    # the units a side the test used (pools or runs): how finely p is said

    def unit(self) -> str:
        """What the interval speaks for: the layouts (pools as units) or the two pools measured."""
        a, b = self.pools
        if min(a, b) >= 2:
            return f"{a} and {b} pools as units: the interval speaks for the configurations"
        return ("runs of one pool on a side: the interval speaks for these pools, not for the configurations "
                "(measure with pools=3)")

    @property
    def decision(self) -> Decision:
        """The verdict and the interval that decided it (a family of one, at `alpha`)."""
        if math.isfinite(self.se) and math.isfinite(self.df):
            return decide(math.log(self.ratio), self.se, self.df, self.alpha, self.margin)
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            return decide(math.nan, math.nan, math.nan, self.alpha, self.margin)
        # no SE: the 95% CI itself decides, as the one rule reads every interval
        return interval_verdict(self.low, self.high, 1 - self.alpha, self.margin)

    def sentence(self) -> str:
        unit = UNITS.get(self.metric, (self.metric, 1))[0]
        if math.isnan(self.low):
            return (f"{self.this}: {self.ratio:.2f}x the {unit} of {self.other} (no interval: fewer than 2 units "
                    f"a side; {self.unit()})")
        d = self.decision
        words = {"equivalent": f"equivalent within ±{self.margin:.0%}",
                 "different, within margin": f"different, by less than the ±{self.margin:.0%} margin",
                 "higher, margin unclear": f"higher, but not shown to clear the ±{self.margin:.0%} margin",
                 "lower, margin unclear": f"lower, but not shown to clear the ±{self.margin:.0%} margin",
                 "inconclusive": f"inconclusive (not distinguishable, and equivalence within ±{self.margin:.0%} "
                                 "is not shown)"}
        return (f"{self.this}: {self.ratio:.2f}x the {unit} of {self.other} ({d.level_text} CI "
                f"{ci_text(d.low, d.high, 2, level='', sep='-')}, p {self._p()}): "
                f"{words.get(d.verdict, d.verdict)}; {self.unit()}")

    def _p(self) -> str:
        """'= 0.031', or '< 0.05' below what its units a side support (`p_values.p_text`, methods §2)."""
        text = p_text(self.p, *(self.units or (None, None)))
        return text if text.startswith("<") else f"= {text}"

    __repr__ = sentence

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(self.sentence())}</p>"


@dataclass(frozen=True)
class ModelCheck:
    """The measurement beside zfs/models.py: the space model (what ZFS charges per logical byte, the raw
    bytes it allocates) and, for random reads, the IOPS model from the disks' envelope."""
    table: pd.DataFrame          # quantity, measured, model, measured / model, note

    def __repr__(self) -> str:
        return self.table.to_string(index=False)

    def _repr_html_(self) -> str:
        return "<b>Beside the models</b> (zfs/models.py)" + self.table.to_html(index=False, na_rep="")


class Result:
    """One configuration measured: its rows, statistics, truth checks, figure and comparisons."""

    def __init__(self, sweep: Sweep, config: dict | None = None):
        self.sweep, self.config = sweep, dict(config or {})

    path = property(lambda self: self.sweep.path)
    rows = property(lambda self: self.sweep.results, doc="Every row of every run, flags included.")

    @cached_property
    def admissible(self) -> pd.DataFrame:
        """The rows the estimate uses: admissible first attempts (an invalidating flag excludes a run)."""
        return select_admissible(self.rows)

    @property
    def first(self) -> pd.Series:
        return self.rows.iloc[0]

    @property
    def metric(self) -> str:
        """The metric the workload is judged in (IOPS for random, bandwidth for sequential)."""
        return workload_metric(self.first.get("workload"), self.first.get("template"))

    def _said(self, column: str):
        """The first row's value of `column`, None where the rows do not say it (an imported run's pool)."""
        v = self.first.get(column)
        return None if v is None or (not isinstance(v, str) and pd.isna(v)) else v

    @property
    def label(self) -> str:
        block = self._said("volblocksize_bytes") or self._said("recordsize_bytes")
        bs, depth, model = self._said("bs_bytes"), self._said("iodepth"), self._said("disk_model")
        return (f"{self._said('layout_label') or self._said('layout') or 'layout not recorded'}, "
                + (f"{format_size(int(block))} volblocksize, " if block else "")
                + f"{self._said('workload')}" + (f" {format_size(int(bs))}" if bs else "")
                + (f" x{int(depth)}" if depth else "") + (f" on {model}" if model else ""))

    @property
    def short_label(self) -> str:
        block = self._said("volblocksize_bytes") or self._said("recordsize_bytes")
        return " ".join(str(x) for x in (self._said("layout_label") or self._said("layout"),
                                         format_size(int(block)) if block else None, self._said("workload"),
                                         self._said("disk_model")) if x is not None)

    @cached_property
    def stats(self) -> pd.DataFrame:
        """n, mean, SD and the 95% CI of the mean for IOPS and bandwidth (stats.summary, log scale)."""
        parts = [summary(self.admissible, m, ["direction"]).assign(metric=m) for m in ("iops", "bw_bytes_s")
                 if m in self.admissible and self.admissible[m].notna().any()]
        if not parts:
            return pd.DataFrame(columns=["direction", "metric", "n", "mean", "ci95_low", "ci95_high"])
        return pd.concat(parts, ignore_index=True)

    @cached_property
    def tails(self) -> pd.DataFrame:
        """p50 / p99 / p99.9 of a typical pool (each pool's own from its merged latency histogram bins, their
        geometric mean and its interval; `estimand` says so, methods §18), with their status and the pools that
        could not support them (`unsupported`)."""
        return cell_tails(self.admissible, self.sweep.histograms, by=["direction"])

    @cached_property
    def checks(self) -> pd.DataFrame:
        """Per truth check: raised, passed and not judged runs (flags.truth_summary)."""
        return truth_summary(self.rows)

    def estimate(self) -> tuple[float, float, float, int]:
        """(mean, CI low, CI high, n) of the judged metric, over the main direction."""
        s = self.stats[self.stats["metric"] == self.metric]
        if s.empty:
            return math.nan, math.nan, math.nan, 0
        row = s.sort_values("mean", ascending=False).iloc[0]
        scale = UNITS[self.metric][1]
        return row["mean"] / scale, row["ci95_low"] / scale, row["ci95_high"] / scale, int(row["n"])

    def p99_ms(self) -> float:
        t = self.tails
        t = t[(t["percentile"] == "p99") & (t["status"] == "judged")]
        return float(t["value_ns"].max()) / 1e6 if len(t) else math.nan

    def p99_text(self) -> str:
        """The p99 with its interval, or why it is not judged."""
        t = self.tails[self.tails["percentile"] == "p99"]
        judged = t[t["status"] == "judged"]
        if judged.empty:
            return t["status"].iloc[0] if len(t) else "not judged: no latency rows"
        row = judged.sort_values("value_ns").iloc[-1]
        ci = (f"95% CI {interval_text(row['ci_low_ns'] / 1e6, row['ci_high_ns'] / 1e6, int(row['n']))}"
              if math.isfinite(row["ci_low_ns"]) else row["interval"])
        own = "" if row["source"] == SOURCE_BINS else ", from its runs' own fio p99"
        return f"{row['value_ns'] / 1e6:.3g} ms ({ci}, {row['direction']}, {row['estimand']}{own})"

    def _check_counts(self) -> tuple[int, int, int, int]:
        """(runs, excluded, described, with a check not judged)."""
        c = self.checks.set_index("flag")
        runs = int(c.loc["flagged", "runs"]) if "flagged" in c.index else self.rows["run_id"].nunique()
        excluded = int(c.loc["flagged", "raised"]) if "flagged" in c.index else 0
        described = int(c.loc["described", "raised"]) if "described" in c.index else 0
        unjudged = int(c.loc["flagged", "not_judged"]) if "flagged" in c.index else 0
        return runs, excluded, described, unjudged

    def raised(self) -> pd.DataFrame:
        """The checks raised in some run, with their kind and meaning."""
        c = self.checks
        return c[(c["raised"] > 0) & c["flag"].str.startswith("flag_")][["flag", "kind", "raised", "runs", "meaning"]]

    def summary_lines(self) -> list[str]:
        mean, lo, hi, n = self.estimate()
        unit = UNITS[self.metric][0]
        runs, excluded, described, unjudged = self._check_counts()
        unit_of_n = "runs of one pool (the interval holds for that pool)" if n and self.pool_count < 2 else "pools"
        if self._said("imported"):           # an imported sweep does not say whether its runs shared a pool
            unit_of_n = "imported runs (whether they ran on one pool is not recorded)"
        raised = ", ".join(f"{r.flag[5:]} {r.raised}/{r.runs}" for r in self.raised().itertuples()) or "none"
        return [self.label,
                f"{unit}: {_fmt(mean)} (95% CI {interval_text(lo, hi, n, _fmt)}, n = {n} {unit_of_n})",
                # the wait from issue to completion, and the path it was measured on (issue 44)
                f"p99 latency: {self.p99_text()}" + (f"; {path}" if (path := io_path_line(self.rows)) else ""),
                f"truth checks: {runs} runs, {excluded} excluded, {described} described, "
                f"{unjudged} with a check not judged; raised: {raised}",
                *([imported] if (imported := import_line(self.rows)) else []),     # what an import cannot say
                f"store: {self.path}"]

    def __repr__(self) -> str:
        return "\n".join(self.summary_lines())

    def _repr_html_(self) -> str:
        lines = self.summary_lines()
        checks = self.checks[["flag", "kind", "raised", "passed", "not_judged", "runs", "not_judged_reasons"]]
        return (f"<div><b>{html.escape(lines[0])}</b><br>{html.escape(lines[1])}<br>{html.escape(lines[2])}"
                f"<details><summary>{html.escape(lines[3])}</summary>"
                f"{checks.to_html(index=False, na_rep='')}</details>"
                f"<small>{html.escape(lines[4])}</small></div>")

    def compare(self, other: "Result") -> Comparison:
        """This result's judged metric against `other`'s: ratio of means, 95% CI, p (log-ratio Welch test), and
        the verdict of the one decision rule (`Comparison.decision`)."""
        metric = self.metric
        # the units the estimates use: pool means when pools were replicated, else runs
        a, b = (to_units(r.admissible.dropna(subset=[metric]), metric, ["direction"], "auto")[0][metric]
                for r in (self, other))
        t = log_ratio_test(a, b)
        return Comparison(self.short_label, other.short_label, metric, t.ratio, t.low, t.high, t.p,
                          (self.pool_count, other.pool_count), se=t.se, df=t.df, units=(len(a), len(b)))

    @property
    def pool_count(self) -> int:
        """Pools with an admissible run: the units of the interval when two or more."""
        a = self.admissible
        return int(a["pool_replicate"].nunique()) if "pool_replicate" in a.columns and len(a) else (1 if len(a) else 0)

    def model(self) -> ModelCheck:
        """The measurement beside the space model and, for random reads, the IOPS model."""
        f, rows = self.first, []
        layout, width, vdevs = str(f.get("layout")), int(f.get("width")), int(f.get("vdevs"))
        block = int(f.get("volblocksize_bytes"))
        if has_model(layout, "space") and {"referenced_bytes", "logicalused_bytes"} <= set(self.rows):
            sc = space_check(self.rows).iloc[0]
            rows.append(("bytes charged per logical byte", sc["measured_used_ratio"], sc["predicted_used_ratio"],
                         "ZFS's charge (zfs_charged_bytes)"))
            rows.append(("logical / raw bytes allocated", math.nan, sc["space_efficiency"],
                         "allocation incl. parity and padding (space_efficiency)"))
        wl = workloads.find(str(f.get("template")))
        disk = f.get("disk_model_iops")
        mean = self.estimate()[0]
        if wl is not None and wl.direction == "read" and not wl.sequential and has_model(layout) and disk == disk:
            pred = predicted_random_read_iops(layout, width, vdevs, float(disk), block)
            rows.append(("random-read IOPS", mean, pred, f"from {float(disk):g} IOPS per disk"))
        else:
            rows.append((UNITS[self.metric][0], mean, math.nan,
                         "no model: zfs/models.py predicts random-read IOPS only"))
        t = pd.DataFrame(rows, columns=["quantity", "measured", "model", "note"])
        t.insert(3, "measured / model", t["measured"] / t["model"])
        return ModelCheck(t.round(3))

    def plot(self, *others: "Result"):
        """Each run's judged metric (dots) and the mean with its 95% CI, beside `others` (a plotly figure)."""
        import plotly.graph_objects as go
        metric, (unit, scale) = self.metric, UNITS[self.metric]
        fig = go.Figure()
        for i, r in enumerate((self, *others)):
            mean, lo, hi, n = r.estimate()
            name = r.label if len(r.label) < 60 else r.label[:57] + "..."
            y = r.admissible[metric].dropna() / scale
            fig.add_trace(go.Scatter(x=[name] * len(y), y=y, mode="markers", name="runs", showlegend=i == 0,
                                     marker=dict(color="grey", size=7, opacity=0.6)))
            fig.add_trace(go.Scatter(x=[name], y=[mean], mode="markers", name="mean, 95% CI", showlegend=i == 0,
                                     marker=dict(color="black", size=12, symbol="line-ew-open"),
                                     error_y=dict(type="data", symmetric=False, array=[hi - mean],
                                                  arrayminus=[mean - lo])))
        fig.update_layout(yaxis_title=unit, height=360, margin=dict(l=60, r=20, t=40, b=40),
                          title=f"{unit}: each run, and the mean with its 95% CI")
        return fig


def load_result(sweep_dir, config: dict | None = None, where: dict | None = None) -> Result:
    """The Result of one configuration of a finished sweep directory: a what-if's store, or one cell of a
    study picked by `where` (result columns and their values, e.g. ``{"layout": "raidz1", "width": 6,
    "volblocksize_bytes": 16384, "workload": "randread"}``).

    InvalidInput when the rows left hold more than one configuration: one figure pooled over several would
    carry the first one's label (issue 52).
    """
    sweep = load_sweep(Path(sweep_dir))
    rows = _selected(sweep.results, dict(where or {}))
    varying = {c: sorted({str(v) for v in rows[c].dropna()}) for c in _identifying(rows) if c in rows}
    varying = {c: vs for c, vs in varying.items() if len(vs) > 1}
    if varying:
        cells = len(rows.drop_duplicates(list(varying)))
        what = "; ".join(f"{c}: {', '.join(vs)}" for c, vs in varying.items())
        raise InvalidInput(f"{sweep_dir} holds {cells} configurations ({what}): pass where={{column: value}} "
                           f"to choose one")
    return Result(sweep._replace(results=rows.reset_index(drop=True)), config)


def _identifying(rows: pd.DataFrame) -> tuple:
    """What tells one configuration from another in a sweep's rows (a direction is a half of one run: not one)."""
    return tuple(c for c in config_columns(rows) if c != "direction")


def _selected(rows: pd.DataFrame, where: dict) -> pd.DataFrame:
    """The rows whose columns hold `where`'s values; InvalidInput naming what exists when none do."""
    for column, value in where.items():
        if column not in rows:
            raise InvalidInput(f"where: the results have no column {column!r}; configuration columns: "
                               + ", ".join(c for c in _identifying(rows) if c in rows))
        kept = rows[rows[column].astype(str) == str(value)]
        if kept.empty:
            have = ", ".join(sorted({str(v) for v in rows[column].dropna()}))
            raise InvalidInput(f"where: no run has {column} = {value!r}; it holds {have}")
        rows = kept
    return rows
