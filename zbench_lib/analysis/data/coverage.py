"""What was planned against what could be judged: every planned cell, judged or not (docs/methods.md §8).

A cell whose runs were all excluded by the truth checks must not vanish: `cell_status`
gives each planned cell (from the sweep's plan.json, or the cells seen in the results)
its runs, admissible runs, the reasons of the exclusions (invalidating flags), the
describing flags its estimate's runs carry (`described`) and a plain status sentence.
Runs are first attempts: a run added to replace an excluded one is counted apart
(`replacements`) and stays out of the estimate (§7, §8). Where pools are replicated, the
pool is the unit (§6): the cells of one configuration's pool replicates are one cell,
judged when two of its pools have admissible runs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from zbench_lib.analysis.data.columns import config_columns
from zbench_lib.analysis.data.flags import admissible_mask, raised_by_kind, replacement_mask
from zbench_lib.measure.judging import DESCRIBES, INVALIDATES
from zbench_lib.analysis.data.replication import pool_frame
from zbench_lib.core.sizes import format_size

MIN_UNITS = 2          # a CI needs at least two values a side
_REPLICATE_SUFFIX = re.compile(r"-pr\d+$")      # sweeps/planning/blocks.replicate: cell "<base>-pr<k>" of pool k
_PER_POOL = ("pool_id", "target_id", "pool_replicate")   # differ between a configuration's pools
# What identifies a cell when there is no plan: its ids, then every configuration column (`columns`, where
# each factor of the registry has its column), so two cells differing only in a factor stay two.
_CELL_COLUMNS = ("sweep_id", "cell_id", "config_id", "pool_id", "workload", "template")


def _cell_columns(results: pd.DataFrame) -> tuple:
    """The ids, then every configuration column `results` can have (its user labels too)."""
    return tuple(dict.fromkeys((*_CELL_COLUMNS, *config_columns(results))))


def load_plan(path, sweep_id: str | None = None) -> pd.DataFrame:
    """The planned cells of a sweep directory's plan.json: one row per cell with its factors.

    Columns: sweep_id, cell_id, pool_id, target_id, the cell's factors (layout, width,
    workload, volblocksize_bytes...) and runs_planned (runs in the planned sequence).
    Empty when there is no plan.json or it holds no cells (old or synthetic sweeps).
    """
    p = Path(path) / "plan.json"
    if not p.exists():
        return pd.DataFrame()
    plan = json.loads(p.read_text())
    cells = plan.get("cells") or []
    if not cells:
        return pd.DataFrame()
    planned = pd.Series([r["cell_id"] for r in plan.get("runs", [])], dtype=object).value_counts()
    rows = [{"sweep_id": sweep_id or plan.get("sweep"), "cell_id": c["cell_id"], "pool_id": c.get("pool_id"),
             "target_id": c.get("target_id"), **c.get("factors", {}), "workload": c.get("workload"),
             "template": c.get("template"), "runs_planned": int(planned.get(c["cell_id"], 0))}
            for c in cells]
    return pd.DataFrame(rows)


def _directions(template) -> list[str]:
    t = str(template)
    if any(k in t for k in ("mix", "rw", "readwrite")):
        return ["read", "write"]
    return ["write"] if "write" in t or "fsync" in t else ["read"]


def _reasons(counts: dict) -> str:
    """'not_steady 3, cache_served 1' from {flag column: runs raised}, most frequent first."""
    hit = {c.removeprefix("flag_"): int(n) for c, n in counts.items() if n}
    return ", ".join(f"{k} {n}" for k, n in sorted(hit.items(), key=lambda kv: -kv[1]))


NOT_JUDGED = "not judged: "          # how every status, tail or verdict that is not judged begins


def bare_reason(status: str) -> str:
    """The reason of a 'not judged: ...' status, each fragment of a '; '-joined one without that prefix.

    For a sentence that says "not judged" itself (it would otherwise say it twice).

    Examples
    --------
    >>> bare_reason("not judged: 3000 I/Os, a p99.9 needs 10000")
    '3000 I/Os, a p99.9 needs 10000'
    >>> bare_reason("not judged: 1 run (a CI needs 2); 2 of 3 planned runs missing")
    '1 run (a CI needs 2); 2 of 3 planned runs missing'
    """
    return "; ".join(p.removeprefix(NOT_JUDGED) for p in str(status).split("; "))


def status_text(runs: int, admissible: int, excluded: int, reasons: str, planned: int | None = None,
                included: bool = False) -> str:
    """'judged: ...' or 'not judged: k of n runs excluded (reasons)'; planned runs missing are named.

    Examples
    --------
    >>> status_text(5, 0, 5, "not_steady 5")
    'not judged: 5 of 5 runs excluded (not_steady 5)'
    >>> status_text(3, 3, 0, "")
    'judged: 3 of 3 runs admissible'
    >>> status_text(2, 2, 0, "", planned=3)
    'judged: 2 of 2 runs admissible, 1 of 3 planned runs missing'
    """
    if runs == 0:
        return "not judged: no run recorded" + (f" ({planned} planned)" if planned else "")
    why = f" ({reasons})" if reasons else ""
    missing = _missing(runs, planned)
    if included:
        admissible, extra = runs, (f", {excluded} flagged run(s) included{why}" if excluded else "") + missing
    else:
        extra = (f", {excluded} excluded{why}" if excluded else "") + missing
    if admissible >= MIN_UNITS:
        return f"judged: {admissible} of {runs} runs admissible" + extra
    if included:
        return f"not judged: {runs} run (a CI needs {MIN_UNITS})" + extra
    text = f"not judged: {excluded} of {runs} runs excluded{why}"
    return text + (f", {admissible} admissible run (a CI needs {MIN_UNITS})" if admissible else "") + missing


def _missing(runs: int, planned: int | None) -> str:
    """A planned run absent from the results (its raw attempt torn, or its COMPLETE gone) is named."""
    return f", {planned - runs} of {planned} planned runs missing" if planned and runs < planned else ""


def pool_status_text(pools: int, pools_ok: int, runs: int, admissible: int, excluded: int, reasons: str,
                     planned: int | None = None, included: bool = False) -> str:
    """The status of a configuration whose pools were replicated: judged on its pools (§6).

    Examples
    --------
    >>> pool_status_text(3, 3, 3, 3, 0, "")
    'judged: 3 of 3 pools with admissible runs; 3 of 3 runs admissible'
    >>> pool_status_text(3, 1, 3, 1, 2, "not_steady 2")
    'not judged: 1 of 3 pools with admissible runs (a CI needs 2); 1 of 3 runs admissible, 2 excluded (not_steady 2)'
    """
    if runs == 0:
        return status_text(0, 0, 0, "", planned)
    why = f" ({reasons})" if reasons else ""
    if included:
        detail = f"{runs} runs" + (f", {excluded} flagged run(s) included{why}" if excluded else "")
    else:
        detail = f"{admissible} of {runs} runs admissible" + (f", {excluded} excluded{why}" if excluded else "")
    head = "judged" if pools_ok >= MIN_UNITS else "not judged"
    need = "" if pools_ok >= MIN_UNITS else f" (a CI needs {MIN_UNITS})"
    return f"{head}: {pools_ok} of {pools} pools with admissible runs{need}; {detail}{_missing(runs, planned)}"


def base_cell_id(cell_id):
    """The configuration's cell id of a pool replicate's cell: 'c4997fb-pr2' -> 'c4997fb'."""
    return _REPLICATE_SUFFIX.sub("", cell_id) if isinstance(cell_id, str) else cell_id


def _configurations(plan: pd.DataFrame, cid: str) -> pd.DataFrame:
    """One plan row per configuration: the cells of its pool replicates folded into one.

    `runs_planned` is summed over the pools, `pools_planned` counts them.
    """
    plan = plan.assign(**{cid: plan[cid].map(base_cell_id)})
    key = [k for k in ("sweep_id", cid) if k in plan]
    g = plan.groupby(key, sort=False, dropna=False)
    out = g.first().reset_index()           # the factors are the same in every pool
    out["pools_planned"] = g.size().to_numpy()
    if "runs_planned" in plan:
        out["runs_planned"] = g["runs_planned"].sum().to_numpy()
    return out


_DESC = "described:"         # prefix of the describing flags' columns inside cell_status


def _per_cell(d: pd.DataFrame, key: list, names: list, described: list, include_flagged: bool) -> pd.DataFrame:
    """Per cell × direction: first-attempt runs, excluded ones, invalidating flags raised, pools,
    pools with an admissible run, replacement runs, and the describing flags of the estimate's runs."""
    by = key + ["direction"]
    first = d[~d["_repl"]]
    first = first.assign(_ok_pool=first["_pool"].where(~first["_excl"]))     # an excluded run's pool is not counted
    agg = first.groupby(by, dropna=False).agg(
        runs=("_excl", "size"), excluded=("_excl", "sum"), pools=("_pool", "nunique"),
        pools_ok=("_ok_pool", "nunique"), **{c: (c, "sum") for c in names}).reset_index()
    estimate = first if include_flagged else first[~first["_excl"]]
    desc = estimate.groupby(by, dropna=False)[described].sum().reset_index() if described else None
    repl = d[d["_repl"]].groupby(by, dropna=False).size().rename("replacements").reset_index()
    for extra in (desc, repl):
        if extra is not None:
            agg = agg.merge(extra, on=by, how="outer")
    return agg


def cell_status(results: pd.DataFrame, plan: pd.DataFrame | None = None,
                include_flagged: bool = False) -> pd.DataFrame:
    """One row per planned cell × direction: runs, admissible, excluded, reasons, described, judged, status.

    `plan` is `Sweep.plan` (several sweeps' plans concatenated are fine); without one, the
    cells seen in `results` (by cell_id, else config_id) are taken as the plan. Runs are the
    cell's first attempts; `replacements` counts the runs added to replace excluded ones,
    which stay out of the estimate. Excluded runs are those with an invalidating flag
    raised (None, not judged, does not exclude; a describing flag does not either); with
    `include_flagged` they count as admissible and the status still names them. `described`
    counts the describing flags among the estimate's runs: "read_amplification 3 of 5 runs".

    Where pools are replicated (a configuration planned or run on two or more pools), a row
    is a configuration, its pool replicates' cells folded in (`cell_id` without `-pr<k>`);
    `unit` is "pool", `pools` / `pools_admissible` count its pools and those with an
    admissible run, and it is judged with two such pools (§6: pool means are the units).
    Otherwise `unit` is "run" and a cell is judged with two admissible runs. `units` is the
    count the CI would have.
    """
    cid = "cell_id" if "cell_id" in results else "config_id" if "config_id" in results else None
    if cid is None or results.empty:
        return pd.DataFrame()
    if "direction" not in results:
        results = results.assign(direction="all")
    results = results.assign(**{cid: results[cid].map(base_cell_id)})
    plan = None if plan is None or plan.empty else _configurations(plan.rename(columns={"cell_id": cid}), cid)
    key = [k for k in ("sweep_id", cid) if k in results and (plan is None or k in plan)]
    run = ["run_id"] if "run_id" in results else []
    flags = raised_by_kind(results, INVALIDATES)
    kept = raised_by_kind(results, DESCRIBES).add_prefix(_DESC)
    names, described = list(flags.columns), list(kept.columns)
    pools = pool_frame(results)
    d = pd.concat([results[key + run + ["direction"]], flags, kept], axis=1).assign(
        _excl=~admissible_mask(results), _repl=replacement_mask(results),
        _pool=pools["pool_id"] + "#" + pools["pool_replicate"].astype(str))
    if run:                                  # a run's rows (directions, jobs) are one run
        d = d.groupby(key + run + ["direction", "_pool"], dropna=False)[
            names + described + ["_excl", "_repl"]].any().reset_index()
    agg = _per_cell(d, key, names, described, include_flagged)
    if plan is None:
        cells = results.drop_duplicates(key + ["direction"])[[c for c in _cell_columns(results) if c in results]]
    else:
        seen = agg.groupby(key)["direction"].apply(list).to_dict()
        cells = pd.DataFrame([{**c, "direction": dr} for c in plan.to_dict("records")
                              for dr in seen.get(tuple(c[k] for k in key) if len(key) > 1 else c[key[0]],
                                                 _directions(c.get("template") or c.get("workload")))])
    counts = ["runs", "excluded", "pools", "pools_ok", "replacements"] + names + described
    out = cells.drop(columns=[c for c in counts if c in cells]).merge(agg, on=key + ["direction"], how="left")
    out[counts] = out[counts].fillna(0).astype(int)
    out = _with_extensions(_judge(out, names, described, include_flagged), results, key + run)
    if "host" in results and results["host"].notna().any():      # a fleet's sweep: which host ran the cell
        ran = results.dropna(subset=["host"]).groupby(key + ["direction"])["host"].agg(
            lambda h: ", ".join(sorted(set(h)))).rename("hosts").reset_index()
        out = out.merge(ran, on=key + ["direction"], how="left")
    return out


def _with_extensions(out: pd.DataFrame, results: pd.DataFrame, key: list) -> pd.DataFrame:
    """`extended` per cell x direction where runs were measured until steady (methods §12.1):
    "3 of 5 runs in 2-4 windows (at most 5)", also said at the end of the status; "" elsewhere.
    Only where the results have `windows`: other sweeps' tables are as they were."""
    if "windows" not in results or out.empty:
        return out
    by = [k for k in key if k != "run_id" and k in out] + ["direction"]
    per_run = results.assign(_w=pd.to_numeric(results["windows"], errors="coerce"),
                             _m=pd.to_numeric(results.get("windows_max", results["windows"]), errors="coerce"))
    per_run = per_run.groupby(key + ["direction"], dropna=False)[["_w", "_m"]].max().reset_index()
    text = per_run.groupby(by, dropna=False).apply(_extension_text, include_groups=False).rename("extended")
    out = out.merge(text.reset_index(), on=by, how="left")
    out["extended"] = out["extended"].fillna("")
    out["status"] += [f", runs measured until steady: {t}" if t else "" for t in out["extended"]]
    return out


def _extension_text(g: pd.DataFrame) -> str:
    """'3 of 5 runs in 2-4 windows (at most 5)' of a cell's runs (`_w` windows, `_m` their maximum)."""
    w = g["_w"].dropna()
    hit = w[w > 1]
    if hit.empty:
        return ""
    span = f"{int(hit.min())}" if hit.min() == hit.max() else f"{int(hit.min())}-{int(hit.max())}"
    return f"{len(hit)} of {len(w)} runs in {span} windows (at most {int(g['_m'].max())})"



def _judge(out: pd.DataFrame, names: list, described: list, include_flagged: bool) -> pd.DataFrame:
    """admissible, reasons, described, unit, units, judged and status of each row of `cell_status`."""
    planned_pools = out["pools_planned"] if "pools_planned" in out else out["pools"]
    replicated = bool((out["pools"] >= 2).any() or (planned_pools >= 2).any())
    out["admissible"] = out["runs"] - (0 if include_flagged else out["excluded"])
    out["pools_admissible"] = out["pools"] if include_flagged else out["pools_ok"]
    out["pools"] = out["pools"].where(out["pools"] >= planned_pools, planned_pools).astype(int)
    out["reasons"] = [_reasons(r) for r in out[names].to_dict("records")]
    out["described"] = [described_text(r, n) for r, n in zip(
        out[described].rename(columns=lambda c: c.removeprefix(_DESC)).to_dict("records"), out["admissible"])]
    out["unit"] = "pool" if replicated else "run"
    out["units"] = out["pools_admissible"] if replicated else out["admissible"]
    out["judged"] = out["units"] >= MIN_UNITS
    planned = [int(p) if pd.notna(p) else None for p in out.get("runs_planned", pd.Series(None, index=out.index))]
    if replicated:
        out["status"] = [pool_status_text(n, k, r, a, e, why, p, include_flagged) for n, k, r, a, e, why, p
                         in zip(out["pools"], out["pools_admissible"], out["runs"], out["admissible"],
                                out["excluded"], out["reasons"], planned)]
    else:
        out["status"] = [status_text(r, a, e, why, p, include_flagged) for r, a, e, why, p
                         in zip(out["runs"], out["admissible"], out["excluded"], out["reasons"], planned)]
    out["status"] += [_left_out(k) for k in out["replacements"]]
    drop = names + described + ["pools_ok"] + (list(_PER_POOL) if replicated else [])
    return out.drop(columns=[c for c in drop if c in out])


def _left_out(replacements: int) -> str:
    """The end of a status that names the runs added to replace excluded ones (they stay out of the estimate)."""
    k = int(replacements)
    return f", {k} replacement run{'s' * (k > 1)} left out of the estimate" if k else ""


def described_text(counts: dict, runs: int) -> str:
    """'read_amplification 3 of 5 runs' from {flag column: runs raised} among `runs` kept runs.

    Examples
    --------
    >>> described_text({"flag_read_amplification": 3, "flag_not_steady": 0, "flag_slow_device": 1}, 5)
    'read_amplification 3 of 5 runs, slow_device 1 of 5 runs'
    """
    hit = {c.removeprefix("flag_"): int(n) for c, n in counts.items() if n}
    return ", ".join(f"{k} {n} of {runs} runs" for k, n in sorted(hit.items(), key=lambda kv: -kv[1]))


def group_status(results: pd.DataFrame, by: list, include_flagged: bool = False) -> pd.DataFrame:
    """`by` and `status` of each group of `results` (the summary table's rows: configuration x factors x
    workload x direction), in `status_text`'s words: its first attempts, the excluded ones with the flags that
    excluded them, and the replacement runs left out of the estimate. A run's rows (its jobs) count once.

    Examples
    --------
    >>> runs = pd.DataFrame({"layout": "mirror", "run_id": ["a", "b", "c"], "flag_host_contention": [True, True, False],
    ...                      "replacement": [False, False, True]})
    >>> group_status(runs, ["layout"])["status"].tolist()
    ['not judged: 2 of 2 runs excluded (host_contention 2), 1 replacement run left out of the estimate']
    """
    run = results["run_id"] if "run_id" in results else pd.Series(results.index.astype(str), index=results.index)
    flags = raised_by_kind(results, INVALIDATES)
    d = pd.concat([results[by], flags], axis=1).assign(
        _run=run, _excl=~admissible_mask(results), _repl=replacement_mask(results))
    rows = []
    for key, g in d.groupby(by, dropna=False, sort=False):
        first = g[~g["_repl"]]
        runs, excluded = first["_run"].nunique(), first.loc[first["_excl"], "_run"].nunique()
        why = _reasons({c: first.loc[first[c], "_run"].nunique() for c in flags.columns})
        status = status_text(runs, runs - excluded, excluded, why, included=include_flagged)
        status += _left_out(g.loc[g["_repl"], "_run"].nunique())
        rows.append({**dict(zip(by, key if isinstance(key, tuple) else (key,))), "status": status})
    return pd.DataFrame(rows, columns=[*by, "status"])


def _side(cells: pd.DataFrame, cols: list, key: tuple) -> pd.DataFrame:
    m = pd.Series(True, index=cells.index)
    for c, v in zip(cols, key):
        m &= (cells[c] == v) | (cells[c].isna() & pd.isna(v))
    return cells[m]


def planned_comparisons(out: pd.DataFrame, cells: pd.DataFrame, factor: str, baseline, by: list,
                        name: str, metric_for) -> pd.DataFrame:
    """`out` with a `note` and `described` per comparison, and a "not judged" row for each planned
    one it lacks.

    A planned comparison is a group of `cells` (over the `by` columns they have) holding the
    baseline level of `factor` and another level. A side whose cells are not judged gives
    the comparison its status: "not judged: k of n runs excluded (reasons)". `described`
    names the describing flags each side's estimate keeps: "4K: read_amplification 3 of 5 runs".
    `metric_for(workload, template)` names the metric of a missing row.
    """
    if factor not in cells:
        return out
    cols = [c for c in by if c in cells]
    out = out.copy()
    for col in ("note", "described"):
        if col not in out:
            out[col] = ""
    rows = []
    units = "units" if "units" in cells else "admissible"      # pools where pools are replicated
    for key, g in cells.groupby(cols, dropna=False) if cols else [((), cells)]:
        key = key if isinstance(key, tuple) else (key,)
        if not (g[factor] == baseline).any():
            continue
        base = g[g[factor] == baseline]
        for level, lv in g[g[factor] != baseline].groupby(factor, dropna=False):
            have = _side(out, cols + ["level"], key + (level,)) if len(out) else out
            bad = [f"{s} {_label(factor, v)}: {st}" for s, v, c in (("level", level, lv), ("baseline", baseline, base))
                   for st in c["status"] if not st.startswith("judged")]
            described = "; ".join(f"{_label(factor, v)}: {text}" for v, c in ((level, lv), (baseline, base))
                                  for text in c.get("described", pd.Series(dtype=str)) if text)
            if len(have):
                idx = have.index
                out.loc[idx, "note"] = ["; ".join([n] + bad if n else bad) for n in out.loc[idx, "note"]]
                out.loc[idx, "described"] = described
                continue
            first = lv.iloc[0]
            rows.append({**dict(zip(cols, key)), "factor": factor, "level": level, "baseline": baseline,
                         "metric": metric_for(first.get("workload"), first.get("template")),
                         "n_level": int(lv[units].sum()), "n_baseline": int(base[units].sum()),
                         "runs_level": int(lv["runs"].sum()), "runs_baseline": int(base["runs"].sum()),
                         "verdict": "not judged", "significant": False, "equivalent": False,
                         "comparison": name, "note": "; ".join(bad) or "not judged: no comparison could be made",
                         "described": described})
    if rows:
        out = pd.concat([out, pd.DataFrame(rows)], ignore_index=True) if len(out) else pd.DataFrame(rows)
        order = [c for c in cols if c in out]
        out = out.sort_values(order + ["level"], kind="stable") if order else out
    return out


def _label(factor: str, v) -> str:
    return format_size(int(v)) if factor.endswith("_bytes") and pd.notna(v) else str(v)
