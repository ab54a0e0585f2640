"""4k random reads, 16 outstanding (two per disk of an 8-disk pool): a throughput question.

Outstanding I/O beyond what keeps every disk busy measures queueing, not devices: 128 I/Os
against a few hundred IOPS gave p99s of 0.5-2 s; the latency-vs-depth trade itself is the
iodepth-curve spec's question."""

from zbench_lib.measure.workloads import Workload

WORKLOAD = Workload("randread", direction="read", sequential=False, metric="iops",
                    defaults=dict(bs="4k", iodepth=8, numjobs=2))
