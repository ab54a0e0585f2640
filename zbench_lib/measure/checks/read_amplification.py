"""read_amplification: the disks read more than block size and parity explain (`read_amp.py`)."""

from zbench_lib.measure.judging import DESCRIBES, Column, TruthCheck
from zbench_lib.measure.read_amp import read_amplification

CHECK = TruthCheck("read_amplification", read_amplification, DESCRIBES,
                   "the disks read far more bytes than fio asked for, beyond what block size and parity explain",
                   rank=80, columns=(Column("read_amplification", "value"),
                                     Column("read_amplification_expected", "expected")), columns_rank=20,
                   regime=True)
