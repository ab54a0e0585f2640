"""4k random writes, 16 outstanding (two per disk of an 8-disk pool): a throughput question."""

from zbench_lib.measure.workloads import Workload

WORKLOAD = Workload("randwrite", direction="write", sequential=False, metric="iops",
                    defaults=dict(bs="4k", iodepth=8, numjobs=2))
