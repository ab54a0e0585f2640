"""The sweep's event vocabulary: every line of a store's events.jsonl names one `Event`.

events.jsonl is append-only JSON lines, ``{"event": <name>, "ts": <UTC>, **payload}``
(``sweeps.store.Store.record`` writes them, fsynced; it refuses a name that is not a
member here). Readers match on the members: an `Event` is a ``str`` whose value is the
name as written, so ``e.get("event") == Event.RUN_STARTED`` holds for a line read back
as plain JSON, ``json.dumps`` writes ``"run started"`` and ``str``/``format`` give the
name too. The names are the file format: never rename a value (shipped and published
sweeps hold them); add a member instead. Each member's comment says who writes it, when,
and its payload keys (beside ``event`` and ``ts``).

It lives in `core` because the sweep writes events (`sweeps`) and the analysis and
the live views read them (`analysis`, `sweeps`), and other machines will too.
"""

from __future__ import annotations

from enum import Enum


class UnknownEvent(ValueError):
    """An event name outside the vocabulary: a programming error, never a run's."""


class Event(str, Enum):
    """An events.jsonl event name; equal to, hashed as and serialised as its plain string."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    # -- the sweep's life (sweeps/store/store.py, sweeps/running/executor.py, the cli) -----------------
    # Store.create, once: runs_planned, cells
    STARTED = "started"
    # Store.resume, each resumed session: completed, discarded, invalid, remaining, provenance
    RESUMED = "resumed"
    # executor, each session: measure.provenance.collect()'s record without its zfs_param* keys
    PROVENANCE = "provenance"
    # sweep_host.check_release, on the lab of each OpenZFS release: release, version, host
    OPENZFS_RELEASE = "openzfs release"
    # executor, zbench pools an earlier crash left on the host (not removed): pools
    LEFTOVERS_FOUND = "leftovers found"
    # executor, this sweep's own crash leftovers (named by its pool creating events) destroyed: pools
    LEFTOVERS_REMOVED = "leftovers removed"
    # executor, at a session's end: wall_s, measure_s, measure_share (a fleet's: per host, and hosts)
    TIMING = "timing"
    # Store.finish, the sweep done: completed and the caller's fields (the executor: rows)
    FINISHED = "finished"

    # -- a fleet (sweeps/running/fleet.py; every event a host's worker staged carries its `host` too) --
    # each host at a session's start: host, kind, address and hosts.fleet.Fingerprint's fields
    HOST_FINGERPRINT = "host fingerprint"
    # a pool replicate sent to a host's worker: pool_id, host, block, dispatch (1 first, 2 after a loss...)
    POOL_DISPATCHED = "pool dispatched"
    # the worker returned it, its staged work committed: pool_id, host, wall_s, measure_s
    POOL_RETURNED = "pool returned"
    # its host was lost mid-pool (worker killed, ssh gone): pool_id, host, reason, requeued, discarded_runs
    POOL_LOST = "pool lost"

    # -- runs and attempts (sweeps/store/store.py, sweeps/running/run_loop.py) -------------------------
    # Store.begin_attempt, the attempt directory made (an import: each run Store.file_attempt filed): run_id,
    # attempt
    RUN_STARTED = "run started"
    # Store.complete_attempt, COMPLETE written (an import: likewise, with the run filed): run_id, attempt
    RUN_COMPLETED = "run completed"
    # run_loop.measured_run, the rows derived: run_id, attempt, invalidating_flags, described_flags
    # (before flag kinds, issue 27: truth_flags)
    RUN_JUDGED = "run judged"
    # run_loop.measured_run, a window of a run measured until steady (until_steady) judged not steady
    # or not judged, its files filed under windows/<window>/ and another window next: run_id, attempt,
    # window, max_windows, not_steady, slope_pct, reason, t_start, t_end
    RUN_EXTENDED = "run extended"
    # run_loop.measured_run (sweeps/running/open_loop.py), a cell's saturation probe measured before the
    # first run whose load is a fraction of it (a resume reuses it): probe_id, run_id, attempt, path
    # (its fio files, under the attempt), iops (all directions), runtime_s, ramp_time_s; a fleet's is committed
    # with the store's attempt and path, its files copied in first, and host (sweeps/running/staging.py)
    LOAD_PROBED = "load probed"
    # Store.discard_incomplete on resume, an attempt without COMPLETE: run_id, attempt, path, reason
    RUN_DISCARDED = "run discarded"
    # Store.set_aside_invalid, a COMPLETE attempt whose files do not parse: run_id, attempt, path, reason
    ATTEMPT_INVALID = "attempt invalid"

    # -- an import of fio results (sweeps/importing/import_store.py) ------------------------------------
    # the import's files filed, once, before the runs: source, path_pattern, map, files, runs, cells, set_aside
    FIO_IMPORTED = "fio imported"
    # a file of the source left out of the import: file (relative to the source), reason
    IMPORT_SET_ASIDE = "import set aside"

    # -- the repetition rule (sweeps/planning/schedule.py, recorded by run_loop.flush) -----------------
    # Stein's pilot judged, once a cell: cell_id, design, metric, Stein's numbers, reason
    REPETITIONS_DECIDED = "repetitions decided"
    # runs queued beyond the plan: cell_id, why ("replace ..." or Stein's), when, reps, run_ids, needed,
    # admissible, excluded, queue_positions, queue_length_before, interleave_seed, randomised, reason
    RUNS_ADDED = "runs added"
    # a cell has its admissible runs, once: cell_id, design, admissible, needed, excluded, attempts,
    # max_attempts, excluded_runs, reason
    REPETITIONS_DONE = "repetitions done"
    # a cell reached max_attempts short of them, once: the keys of repetitions done
    REPETITIONS_GAVE_UP = "repetitions gave up"

    # -- pools, targets and surfaces (sweeps/running/zfs_surfaces.py, raw_surface.py, warmup.py) ---------
    # before zpool create (a crash's leftover is then known to be this sweep's): pool_id, pool
    POOL_CREATING = "pool creating"
    # the pool made: pool_id, pool, layout, topology, pool_replicate, block
    POOL_CREATED = "pool created"
    # the pool's targets done, before it is destroyed: pool_id, pool
    POOL_TEARDOWN = "pool teardown"
    # a target (or raw disks' region) written before its runs: target_id and the prefill's record
    PREFILLED = "prefilled"
    # a filesystem made and mounted on a zvol: target_id and FsOnZvol.readback() (fs, device, mountpoint, ...)
    FILESYSTEM_MADE = "filesystem made"
    # a dataset exported and mounted back over NFS: target_id and NfsDatastore.readback(); mounted by client
    # VMs (issue 30, client_surface): also clients (their labels), fio (their fio release) and
    # SharedNfsDatastore.readback() (export_options, export_to, server_path, mount_options per client)
    NFS_DATASTORE_MOUNTED = "nfs datastore mounted"
    # a zvol served over iSCSI and logged in to by the sweep's client VMs (issue 30, client_surface):
    # target_id, clients, fio and IscsiDatastore.readback() (iqn, portal, write cache, each client's LUN size)
    ISCSI_DATASTORE_LOGGED_IN = "iscsi datastore logged in"
    # the declared L2ARC warm-up done: target_id and warm_l2arc's record
    L2ARC_WARMED = "l2arc warmed"

    # -- raw disks (sweeps/running/raw_surface.py) ------------------------------------------------------
    # before the disks' safety check: pool_id, devices, work_dir (removed on resume if left)
    RAW_DEVICES_CHECKING = "raw devices checking"
    # checked and read back: pool_id, layout, devices, throttles, pool_replicate, block
    RAW_DEVICES_CHECKED = "raw devices checked"
    # their runs done, their signatures wiped: pool_id, devices
    RAW_DEVICES_WIPED = "raw devices wiped"

    # -- pool settings (sweeps/running/pool_setup.py) ---------------------------------------------------
    # lab disks given the pool's disk models: pool_id, models, throttles, and served (disk -> the model its
    # nbdkit serves as read back: seq, model, kind, params) when nbdkit serves any of them
    DISK_MODELS_SET = "disk models set"
    # a disk's throttle (or the model its nbdkit served) could not be put back: device, error
    DISK_MODEL_RESTORE_FAILED = "disk model restore failed"
    # the pool's module parameters written: pool_id, params (name -> its before and after values)
    MODULE_PARAMETERS_SET = "module parameters set"
    # put back (after its pool, or on resume with after_interruption): pool_id, params (name -> before)
    MODULE_PARAMETERS_RESTORED = "module parameters restored"

    # -- faults and resilvers (sweeps/running/faults.py, sweeps/running/resilver_timing.py) -------------
    # a lab disk pulled or slowed mid-run: pool_id, pool, run_id, device, kind, at_epoch, took_s
    FAULT_INJECTED = "fault injected"
    # the injection raised: pool_id, run_id, device, kind, error
    FAULT_FAILED = "fault failed"
    # a slowed disk's model back (pool_id, run_id, device, kind) or a pulled disk plugged back (device, kind)
    FAULT_UNDONE = "fault undone"
    # a timed resilver: pool_id, pool, layout, fill, device, replacement, order, seconds, resilvered,
    # resilvered_bytes, allocated_bytes, capacity_pct, state_before, health_after, under_load, load,
    # load_read_iops, load_write_iops, load_runtime_s
    RESILVER = "resilver"
    # a resilver that could not be timed: pool_id, pool, device, error
    RESILVER_FAILED = "resilver failed"


def event_name(event: Event | str) -> Event:
    """The `Event` named `event` (a member or its string); `UnknownEvent` for any other name."""
    try:
        return Event(event)
    except ValueError:
        raise UnknownEvent(f"unknown event {str(event)!r}: every event written to events.jsonl is a member "
                           "of zbench_lib.core.events.Event (add it there, with when it is written and "
                           "its payload)") from None
