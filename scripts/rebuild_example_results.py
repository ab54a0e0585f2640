#!/usr/bin/env python3
"""Rebuild the derived tables of packed sweeps from their raw archives, in place, and their manifest.

Raw outputs are immutable; results.parquet and results.csv are derived from them. When
the derivation changes (a new truth check, a new column), a packed example's tables are
rebuilt here from its own raw.tar.xz, exactly as `zbench verify` rebuilds them, and
`zbench verify` then passes again. Nothing in raw.tar.xz or the other files changes: a
table is replaced only if the rebuilt one differs byte for byte.

SHA256SUMS (the pack's hash manifest) is checked first for every file but the two
tables, so an edit to spec.yaml, events.jsonl or the archive is refused, not blessed;
then it is written again over the files as they are. A pack made before manifests gets
its first one here (its results kept if they still rebuild byte-identical).

    python3 scripts/rebuild_example_results.py data/examples/scaling data/examples/volblocksize
"""

from __future__ import annotations

import filecmp
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from zbench_lib.sweeps.store.publish import check_manifest, rebuilt_copy, verify, write_manifest  # noqa: E402

TABLES = ("results.parquet", "results.csv")


def rebuild(packed: Path) -> str:
    before = check_manifest(packed, ignore=TABLES)       # raises naming any other edited file
    with rebuilt_copy(packed) as (copy, df):
        changed = [name for name in TABLES
                   if not (packed / name).is_file() or not filecmp.cmp(copy / name, packed / name, shallow=False)]
        for name in changed:
            shutil.copy2(copy / name, packed / name)
    write_manifest(packed)
    after = verify(packed).attrs["manifest"]
    return (f"{len(df)} rows rebuilt from raw, {', '.join(changed) + ' replaced' if changed else 'tables unchanged'}; "
            f"manifest before: {before}; now: {after}; verify passes")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(f"{arg}: {rebuild(Path(arg))}")
