"""A WAL: one writer, pwrite + fsync each 8k record, through the ARC/ZIL (no O_DIRECT).

It streams (each job its own region, as the sequential workloads) but asks how many commits
a second the pool takes: judged in IOPS."""

from zbench_lib.measure.workloads import Workload

WORKLOAD = Workload("fsync-heavy", direction="write", sequential=True, metric="iops",
                    defaults=dict(bs="8k", iodepth=1, numjobs=1, fsync=1, ioengine="psync", direct=0))
