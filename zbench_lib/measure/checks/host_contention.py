"""host_contention: the controller was busy with more than the lab's QEMU (`host_load.py`)."""

from zbench_lib.measure.host_load import host_contention
from zbench_lib.measure.judging import INVALIDATES, Column, TruthCheck

CHECK = TruthCheck("host_contention", host_contention, INVALIDATES,
                   "other processes on the lab's host took CPU from the emulation during the run", rank=90,
                   columns=(Column("host_other_cores", "other_cores"), Column("host_qemu_cores", "qemu_cores"),
                            Column("host_other_qemus", "other_qemus")), columns_rank=50)
