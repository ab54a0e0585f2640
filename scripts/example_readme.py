"""The figures of data/examples/README.md, written from the packs so that none can go stale (issue 46 item 6).

Each example's section of the README holds one block between the markers

    <!-- zbench:figures NAME -->
    ...
    <!-- zbench:end -->

which this script writes from data/examples/NAME by the product's own code: the environment, the runs, pools,
sessions and lab time (plan.json, events.jsonl), the truth checks' counts and the first screen's question and
answer as `zbench report` prints them (`headline.study_headline`), then the classic claims. Outside the blocks
the README is prose, and prose is not checked against the data: a figure with a unit (IOPS, MiB/s, ms, s, x,
%), an interval or a count "k of n" written there fails --check, so every figure a reader meets is one this
script wrote.

    python scripts/example_readme.py [--check]

--check writes nothing; it exits 1 naming each stale block and each figure in the prose.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from zbench_lib.analysis.claims.classic_claims import classic_claims
from zbench_lib.analysis.data.coverage import cell_status
from zbench_lib.analysis.data.flags import select_admissible
from zbench_lib.analysis.data.sweep_data import Sweep, load_sweep, read_events
from zbench_lib.analysis.report.env_summary import environment_summary
from zbench_lib.analysis.report.headline import study_headline
from zbench_lib.analysis.report.notebook_sections import answer_markdown, truth_lead
from zbench_lib.core.paths import REPO_ROOT

README = REPO_ROOT / "data" / "examples" / "README.md"
BLOCK = re.compile(r"(<!-- zbench:figures (?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- zbench:end -->)", re.S)
# A figure the data gives, written by hand: a number with a measurement's unit, an interval, a count of a whole.
FIGURE = re.compile(r"\b\d[\d,.]*\s?(?:IOPS|[KMG]iB/s|MB/s|ms|µs|us|s|min|h|x|%)(?![\w/])"
                    r"|\b\d[\d,.]*\s?[-–]\s?\d[\d,.]*\b|\b\d+ of \d+\b")
SESSION_START = ("started", "resumed")
# Written by a resume about the run its predecessor left unfinished: not an event of the session before.
AT_RESUME = ("run discarded",)
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
ENVIRONMENT = ("OpenZFS", "Kernel", "fio", "Host", "Disk model", "Disks", "Pool layouts", "Target")


@dataclass(frozen=True)
class Session:
    """One session of a sweep's run: from its start (or resume) to its last event."""
    start: datetime
    end: datetime

    def text(self) -> str:
        day = self.start.strftime("%Y-%m-%d")
        return f"{day} {self.start:%H:%M}-{self.end:%H:%M} UTC"

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()


def _ts(event: dict) -> datetime:
    return datetime.fromisoformat(event["ts"].replace("Z", "+00:00"))


def sessions(events: list[dict]) -> list[Session]:
    """The sweep's sessions: a 'started' or 'resumed' event opens one, the last event before the next closes it."""
    out: list[list[datetime]] = []
    for e in events:
        if "ts" not in e or e.get("event") in AT_RESUME:
            continue
        if e.get("event") in SESSION_START or not out:
            out.append([_ts(e), _ts(e)])
        out[-1][1] = _ts(e)
    return [Session(a, b) for a, b in out]


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min"


def _pools(events: list[dict]) -> int:
    return len({e["pool_id"] for e in events if e.get("event") == "pool created"})


def design_line(sweep: Sweep, events: list[dict]) -> str:
    """Runs, pools, sessions and lab time, as the events recorded them."""
    df = sweep.results
    runs = df["run_id"].nunique() if "run_id" in df else len(df)
    planned = next((int(e["runs_planned"]) for e in events if e.get("event") == "started" and "runs_planned" in e), 0)
    seeds = df["randseed"].dropna().nunique() if "randseed" in df else 0
    seed_text = (f"{seeds} distinct fio randseeds over its runs" if seeds > 1 else
                 "every run replays one fio randseed" if seeds == 1 else "no randseed recorded")
    parts = sessions(events)
    lab = sum(s.seconds for s in parts)
    return (f"**Runs:** {runs} run ({planned} planned) on {_pools(events)} pools; {seed_text}. Lab time "
            f"{_minutes(lab)} in {len(parts)} session{'s' if len(parts) > 1 else ''}: "
            + "; ".join(s.text() for s in parts) + ".")


def environment_line(sweep: Sweep, events: list[dict]) -> str:
    rows = dict(environment_summary(sweep.provenance, sweep.results, sweep.spec.get("surface", ""), events))
    return "**Environment:** " + "; ".join(f"{k} {rows[k]}" for k in ENVIRONMENT if k in rows) + "."


def claims_lines(sweep: Sweep) -> list[str]:
    out = []
    for c in classic_claims(sweep.results, False):
        why = f" ({c['reason']})" if c.get("reason") else ""
        out.append(f"- *{c['claim']}* **{c['verdict']}**{why}. {c['evidence']}")
    return ["**Classic claims:**\n\n" + "\n".join(out)] if out else []


def example_block(path: Path) -> str:
    """The README block of one packed example: what `zbench report` would put on its first screen, and more."""
    sweep = load_sweep(path)
    events = read_events(sweep.path)
    adm = select_admissible(sweep.results, False)
    markdown, _ = answer_markdown(sweep, study_headline(sweep, adm, False), False)
    checks = truth_lead(sweep.results, cell_status(sweep.results, sweep.plan, False), False)
    parts = [environment_line(sweep, events), design_line(sweep, events), f"**Truth checks:** {checks}",
             markdown, *claims_lines(sweep)]
    return "\n\n".join(parts) + "\n"


def prose_figures(text: str) -> list[str]:
    """The figures written by hand outside the generated blocks: 'line N: figure'."""
    prose = DATE.sub("", BLOCK.sub(lambda m: "\n" * m.group(0).count("\n"), text))
    return [f"line {n}: {m.group(0)!r}" for n, line in enumerate(prose.splitlines(), 1)
            for m in FIGURE.finditer(line)]


def regenerate(text: str, examples: Path) -> tuple[str, list[str]]:
    """The README with every block rewritten from its pack, and the names of the blocks that changed."""
    stale = []

    def fill(m: re.Match) -> str:
        body = example_block(examples / m.group("name"))
        if body != m.group("body"):
            stale.append(m.group("name"))
        return m.group(1) + body + m.group(4)

    return BLOCK.sub(fill, text), stale


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a block or the prose is stale")
    ap.add_argument("--readme", type=Path, default=README)
    ap.add_argument("--examples", type=Path, default=None, help="the packs' directory (default: the README's)")
    args = ap.parse_args(argv)
    text = args.readme.read_text()
    new, stale = regenerate(text, args.examples or args.readme.parent)
    figures = prose_figures(text)
    for name in stale:
        print(f"{args.readme}: the block of {name} is not what its pack gives (python scripts/example_readme.py)")
    for f in figures:
        print(f"{args.readme}: a figure written by hand, outside a generated block: {f}")
    if not args.check and stale:
        args.readme.write_text(new)
    return 1 if figures or (stale and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())
