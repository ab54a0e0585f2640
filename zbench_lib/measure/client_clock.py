"""Each client's clock against the storage node's (several clients on one datastore, issue 30).

A client stamps its own start (fio's stamped iops log, `fio_client_json.log_starts`) on its own
wall clock; the counters are sampled on the storage node's. To place the clients' shared window
on the storage node's clock, each client's clock is read between two readings of the storage
node's, one command after another from the controller (``date +%s.%N``):

    storage_before <= (the client's reading, on the storage clock) <= storage_after

so the client's offset is its reading minus the midpoint of the two, within half the round trip
(`ClockReading.uncertainty_s`), whatever the network's asymmetry. It is read at the start and at
the end of every run; the window uses their mean (a clock that drifts linearly is then right at
the run's middle), and both readings, raw, are kept in the attempt (clients/clocks.json).

Pure: readings in, offsets out; the readings are taken by `runner.read_clocks` (the analysis reads
this module through the rows, and never a host).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

DATE = ["date", "+%s.%N"]        # the command each reading runs (runner.read_clocks)


@dataclass(frozen=True)
class ClockReading:
    """One client's clock read between two readings of the storage node's (epoch seconds)."""
    label: str
    storage_before: float
    client: float
    storage_after: float

    @property
    def offset_s(self) -> float:
        """The client's clock minus the storage node's: positive when the client runs ahead."""
        return self.client - (self.storage_before + self.storage_after) / 2

    @property
    def uncertainty_s(self) -> float:
        """Half the round trip: the offset is exact to within this, whatever the path's asymmetry."""
        return (self.storage_after - self.storage_before) / 2

    def to_record(self) -> dict:
        return asdict(self)

    @classmethod
    def from_record(cls, d: dict) -> ClockReading:
        return cls(str(d["label"]), float(d["storage_before"]), float(d["client"]), float(d["storage_after"]))


@dataclass(frozen=True)
class ClientClock:
    """A client's offset over a run: read at its start and at its end."""
    label: str
    start: ClockReading
    end: ClockReading | None        # None when the run failed before the end was read

    @property
    def offset_s(self) -> float:
        """The offset the run's window uses: the mean of both readings (the start's alone without an end)."""
        return self.start.offset_s if self.end is None else (self.start.offset_s + self.end.offset_s) / 2

    @property
    def drift_s(self) -> float | None:
        """How far the offset moved over the run (end - start), None without an end reading."""
        return None if self.end is None else self.end.offset_s - self.start.offset_s

    @property
    def uncertainty_s(self) -> float:
        return max(r.uncertainty_s for r in (self.start, self.end) if r is not None)

    @property
    def placement_s(self) -> float:
        """How closely a time near the run's start or end is placed on the storage clock: the readings'
        uncertainty, plus half the drift (the mean offset is right at the run's middle, off by up to half
        the drift at its ends)."""
        return self.uncertainty_s + abs(self.drift_s or 0.0) / 2


def to_storage_ms(client_ms: float, offset_s: float) -> float:
    """A time on a client's clock (ms) on the storage node's clock."""
    return client_ms - offset_s * 1000.0


def clocks_from_record(record: dict) -> dict[str, ClientClock]:
    """{label: ClientClock} from clients/clocks.json's {"start": [...], "end": [...]}."""
    start = {d["label"]: ClockReading.from_record(d) for d in record.get("start", [])}
    end = {d["label"]: ClockReading.from_record(d) for d in record.get("end", [])}
    return {label: ClientClock(label, r, end.get(label)) for label, r in start.items()}
