"""Where a lab run's time goes between its measurements: every remote command, timed and grouped.

    ZBENCH_TRACE_COMMANDS=/tmp/trace.jsonl zbench sweep run spec.yaml ...    (or a pytest -m lab run)
    python benchmarks/command_profile.py /tmp/trace.jsonl [--top 30]

Each line of the trace is one command a host ran (hosts/base.py `_trace`). A command is grouped by
its program and, for the tools that have them, its subcommand (`zpool create`, `zfs set`, `fio`), so
the table says how many round trips each kind costs and how long they took together, beside the
span of the trace (first start to last end) and the share fio's own runs had of it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

WITH_SUBCOMMAND = {"zpool", "zfs", "systemctl", "udevadm", "ip", "nbdkit", "targetcli", "iscsiadm", "python3"}
WRAPPERS = {"sudo", "-n", "--", "env", "timeout", "nice", "ionice"}


@dataclass
class Kind:
    count: int = 0
    seconds: float = 0.0
    longest: float = 0.0


def kind_of(argv: list[str]) -> str:
    """`zpool create`, `fio`, `sh -c <first word>`: what a command is, without its arguments."""
    words = [a for a in argv if a not in WRAPPERS and "=" not in a.split("/")[0]]
    if not words:
        return "?"
    prog = words[0].rsplit("/", 1)[-1]
    if prog in {"sh", "bash"} and len(words) > 2 and words[1] == "-c":
        return f"{prog} -c {words[2].split()[0] if words[2].split() else ''}"
    if prog in WITH_SUBCOMMAND and len(words) > 1:
        return f"{prog} {words[1]}"
    return prog


def profile(lines: list[dict]) -> tuple[dict[str, Kind], float]:
    kinds: dict[str, Kind] = defaultdict(Kind)
    for rec in lines:
        k = kinds[kind_of(rec["argv"])]
        k.count += 1
        k.seconds += rec["s"]
        k.longest = max(k.longest, rec["s"])
    span = max(r["end"] for r in lines) - min(r["end"] - r["s"] for r in lines)
    return kinds, span


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--host", help="only the commands of this host (its name as the trace gives it)")
    args = ap.parse_args(argv)
    lines = [json.loads(s) for s in args.trace.read_text().splitlines() if s.strip()]
    if args.host:
        lines = [r for r in lines if r["host"] == args.host]
    if not lines:
        print(f"{args.trace}: no command traced", file=sys.stderr)
        return 2
    kinds, span = profile(lines)
    total = sum(k.seconds for k in kinds.values())
    n = sum(k.count for k in kinds.values())
    print(f"{n} commands, {total:.0f} s in commands, over a span of {span:.0f} s")
    print(f"{'command':<28} {'n':>6} {'total s':>9} {'mean s':>8} {'max s':>8} {'share':>6}")
    for name, k in sorted(kinds.items(), key=lambda kv: -kv[1].seconds)[: args.top]:
        print(f"{name:<28} {k.count:>6} {k.seconds:>9.1f} {k.seconds / k.count:>8.3f} {k.longest:>8.1f} "
              f"{k.seconds / total:>6.1%}")
    short = [r["s"] for r in lines if r["s"] < 5]
    if short:
        print(f"commands under 5 s: {len(short)}, {sum(short):.0f} s together, "
              f"median {sorted(short)[len(short) // 2]:.3f} s (the round trip a batch would save)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
