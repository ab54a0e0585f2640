"""A database's commits: four clients, each waiting for its 4k write to be stable (a latency question)."""

from zbench_lib.measure.workloads import Workload

WORKLOAD = Workload("randwrite-sync", direction="write", sequential=False, metric="iops",
                    defaults=dict(bs="4k", iodepth=1, numjobs=4, sync=1))
