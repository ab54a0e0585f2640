"""A database's commits: four clients, each waiting for its 4k write to be stable (a latency question).

Its I/O path is a database's: buffered O_SYNC pwrites (psync, direct=0), so each write is copied into
the ARC and waits for the ZIL, which batches the concurrent commits of its writers. libaio with
direct=1 would model something else on a dataset: on OpenZFS 2.3 an O_DIRECT write sends its data
block to the pool and only a pointer to the log (measured in the lab on one 7200 rpm model disk:
sixteen writers got 2.3x the IOPS of one that way, 5.3x buffered; docs/methods.md §18.1)."""

from zbench_lib.measure.workloads import Workload

WORKLOAD = Workload("randwrite-sync", direction="write", sequential=False, metric="iops",
                    defaults=dict(bs="4k", iodepth=1, numjobs=4, sync=1, ioengine="psync", direct=0))
