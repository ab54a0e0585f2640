"""The index page's caveats: only what the results contain, sync=disabled named for what it gives up."""

import pandas as pd

from zbench_lib.analysis.claims.caveats import caveats


def test_sync_disabled_says_what_it_gives_up_with_the_txg_window():
    df = pd.DataFrame({"sync": ["standard", "disabled"], "txg_timeout_s": [5, 5]})
    (text,) = caveats(df)
    assert "sync=disabled" in text and "lost" in text and "about 5 s, zfs_txg_timeout" in text


def test_nfs_and_ext4_rows_get_their_own_sentence_and_nothing_else_does():
    assert caveats(pd.DataFrame({"sync": ["standard", "always"], "iops": [1, 2]})) == []
    both = caveats(pd.DataFrame({"access": ["local", "nfs"], "fs": ["none", "ext4"]}))
    assert len(both) == 2 and "loopback" in both[0] and "ext4" in both[1]
