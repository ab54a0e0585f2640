"""The environment as a person reads it: a dozen lines from the real provenance records."""

from pathlib import Path

from zbench_lib import analysis as A
from zbench_lib.analysis.report.env_summary import environment_html, environment_summary
from zbench_lib.analysis.data.synthetic import write_synthetic_sweep

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples"


def test_environment_summary_of_a_lab_sweep():
    sw = A.load_sweep(EXAMPLES / "volblocksize")
    lines = dict(environment_summary(sw.provenance, sw.results, "zvol"))
    assert 10 <= len(lines) <= 14
    assert list(lines)[:3] == ["OpenZFS", "Kernel", "fio"]
    assert lines["OpenZFS"].startswith("2.3.2 ")
    assert lines["Kernel"] == "6.1.0-50-amd64 (x86_64)" and lines["fio"] == "3.33"
    assert lines["CPU"] == "2 × QEMU Virtual CPU version 2.5+" and lines["RAM"] == "1.9 GiB"
    assert lines["Disks"].startswith("6 × 1 GiB")
    assert lines["Disk model"] == "custom:iops=100,bw=12M: 100 IOPS, 12 MiB/s per disk"
    assert lines["Pool layouts"].startswith("mirror 3x2; raidz1 1x6; raidz2 1x6")
    assert lines["ashift"] == "12 (4 KiB sectors)"
    assert "volblocksize 4K, 16K, 128K (varied)" in lines["Target"] and "primarycache metadata" in lines["Target"]
    assert "TCG" in lines["Host"]
    assert not any("e+" in v or "None" in v for v in lines.values())   # no raw floats, no nulls


def test_environment_html_keeps_the_full_record_behind_a_disclosure():
    sw = A.load_sweep(EXAMPLES / "scaling")
    html = environment_html(sw)
    assert html.count("<tr>") > 60 and "<details>" in html
    summary, details = html.split("<details>")
    assert summary.count("<tr>") == len(environment_summary(sw.provenance, sw.results, "zvol"))
    assert "lab_boot_s" in details and "lab_boot_s" not in summary


def test_synthetic_environment_says_so(tmp_path):
    sw = A.load_sweep(write_synthetic_sweep(tmp_path / "s", n_rows=60))
    lines = environment_summary(sw.provenance, sw.results)
    assert lines[0][0] == "Data" and "SYNTHETIC" in lines[0][1]


def test_sessions_on_two_openzfs_releases_are_both_named(tmp_path):
    import json
    import shutil
    src = Path(__file__).resolve().parent.parent / "data" / "examples" / "volblocksize"
    for name in ("spec.yaml", "results.parquet"):
        shutil.copy2(src / name, tmp_path / name)
    for stamp, user, kmod in (("20261124T000001Z", "zfs-2.1.11-1+deb12u1", "zfs-kmod-2.1.11-1+deb12u1"),
                              ("20261124T000101Z", "zfs-2.3.2-2~bpo12+2", "zfs-kmod-2.3.2-2~bpo12+2")):
        (tmp_path / f"host-provenance-{stamp}.json").write_text(json.dumps({"zfs_userland": user, "zfs_kmod": kmod}))
    sweep = A.load_sweep(tmp_path)
    line = dict(environment_summary(sweep.provenance, sweep.results))["OpenZFS"]
    assert line == ("2.1.11 (zfs-2.1.11-1+deb12u1, zfs-kmod-2.1.11-1+deb12u1); "
                    "2.3.2 (zfs-2.3.2-2~bpo12+2, zfs-kmod-2.3.2-2~bpo12+2) (one lab per release)")
    (tmp_path / "host-provenance-20261124T000001Z.json").unlink()     # one release: as before
    sweep = A.load_sweep(tmp_path)
    assert dict(environment_summary(sweep.provenance, sweep.results))["OpenZFS"] == \
        "2.3.2 (zfs-2.3.2-2~bpo12+2, zfs-kmod-2.3.2-2~bpo12+2)"


def _disk_model(model) -> str:
    """The "Disk model" line of a lab's provenance as the lab writes it (Lab.provenance: LabConfig.to_dict)."""
    from zbench_lib.hosts.disk_models import parse_model
    record = parse_model(model).to_dict() if isinstance(model, str) else model
    return dict(environment_summary({"lab_config": {"disks": 2, "disk_bytes": 2 ** 30, "model": record}}))["Disk model"]


def test_a_mechanism_models_parameters_and_source_are_in_the_environment():
    line = _disk_model("mech:hdd-7200,write_cache=off,queue_depth=1")
    assert line.startswith("mech:hdd-7200,write_cache=off,queue_depth=1 (mechanism model, served through nbdkit): "
                           "7200 rpm; seek 1 ms single-track, 8.5 ms average, 15 ms full stroke; media rate 150 MB/s "
                           "outer to 75 MB/s inner; command overhead 0.2 ms; no command queueing (depth 1); "
                           "write cache off; source: Hitachi Deskstar 7K1000.C")
    assert "NCQ depth 32; write cache on (16 MiB)" in _disk_model("mech:hdd-7200")
    ssd = _disk_model("mech:sata-ssd")
    assert "8 parallel units" in ssd and "300 MB/s past a 1.2% spare area" in ssd and "Samsung 850 EVO" in ssd
    assert _disk_model("mech:null").startswith("mech:null (mechanism model, served through nbdkit): no delay")


def test_the_environment_shows_the_recorded_parameters_never_the_presets_of_the_name():
    from zbench_lib.hosts.disk_models import parse_model
    record = parse_model("mech:hdd-7200").to_dict()
    record["mech_model"]["params"]["rpm"] = 5400          # as if the preset changed after the sweep ran
    assert "5400 rpm" in _disk_model(record)
    assert _disk_model("hdd") == "hdd: 150 IOPS, 180 MiB/s per disk"       # a throttle: its limits, as before
    older = {k: v for k, v in parse_model("mech:hdd-7200").to_dict().items() if k != "mech_model"}
    assert "its parameters are not recorded with this sweep" in _disk_model(older)
    assert "not recorded" in dict(environment_summary({"lab_disk_model": "mech:hdd-5400"}))["Disk model"]


def test_the_mechanism_prefix_is_the_hosts_one():
    from zbench_lib.analysis.data.columns import MECH_PREFIX
    from zbench_lib.hosts.mech_models import PREFIX
    assert MECH_PREFIX == PREFIX


# -- every disk model a sweep used (model factors by role) ------------------------------------------------
MODELS_STORE = Path(__file__).resolve().parent / "fixtures" / "stores" / "pool-models"   # README.md there


def _model_lines(sweep) -> list[tuple[str, str]]:
    from zbench_lib.analysis.data.sweep_data import read_events
    lines = environment_summary(sweep.provenance, sweep.results, "dataset", read_events(sweep.path))
    return [(k, v) for k, v in lines if k.startswith("Disk model")]


def test_a_sweep_with_model_factors_lists_each_model_it_used_with_its_roles():
    # The pools throttled the data disk to 300 IOPS / 80 MiB/s and the two log disks to 2000 IOPS / 200 MiB/s
    # (the events' read-back: 83886080 B/s = 80 MiB/s, 209715200 = 200 MiB/s); the cache and special devices
    # kept the lab's unthrottled extra disks. The lab booted its data disks at 400 IOPS: no run measured on it.
    sw = A.load_sweep(MODELS_STORE)
    assert _model_lines(sw) == [
        ("Disk model (data)", "custom:iops=300,bw=80M: 300 IOPS, 80 MiB/s per disk"),
        ("Disk model (log)", "custom:iops=2000,bw=200M: 2000 IOPS, 200 MiB/s per disk"),
        ("Disk model (cache, special)", "unthrottled")]
    assert "iops=400" not in str(environment_summary(sw.provenance, sw.results, "dataset"))
    html = environment_html(sw)
    assert "<th style='text-align:left'>Disk model (log)</th><td style='text-align:left'>custom:iops=2000,bw=200M: " \
           "2000 IOPS, 200 MiB/s per disk</td>" in html


def _two_levels(tmp_path, log: int = 2) -> Path:
    """The store with `model: [hdd, hdd-slow]`, `log_model: [hdd]` and the lab's extra disks on mech:sata-ssd."""
    import json
    import shutil

    import pandas as pd

    from zbench_lib.hosts.disk_models import parse_model
    store = tmp_path / "two-levels"
    shutil.copytree(MODELS_STORE, store)
    rows = pd.read_csv(store / "results.csv")
    rows = pd.concat([rows.assign(model=m, disk_model=m, log_model="hdd", log=log, cache=log // 2,
                                  special=rows["special"] * (log // 2),
                                  run_id=rows["run_id"] + m, cell_id=rows["cell_id"] + m)
                      for m in ("hdd", "hdd-slow")])
    rows.to_csv(store / "results.csv", index=False)
    events = [{"event": "disk models set", "pool_id": pool, "models": {"zbdata00": m, "zbextra00": "hdd"},
               "throttles": {"zbdata00": {"iops": iops, "iops_rd": 0, "iops_wr": 0, "bps": bps, "bps_rd": 0,
                                          "bps_wr": 0},
                             "zbextra00": {"iops": 150, "iops_rd": 0, "iops_wr": 0, "bps": 188743680, "bps_rd": 0,
                                           "bps_wr": 0}}}
              for pool, m, iops, bps in (("p01", "hdd", 150, 188743680), ("p02", "hdd-slow", 100, 104857600))]
    (store / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (host,) = store.glob("host-provenance-*.json")
    record = json.loads(host.read_text())
    record["lab_config"]["extra_model"] = parse_model("mech:sata-ssd").to_dict()
    host.write_text(json.dumps(record))
    return store


def test_each_model_is_listed_once_with_every_role_it_served(tmp_path):
    # hdd served the data disks (one level) and the log; hdd-slow the data disks (the other level); the
    # cache and special devices were the lab's mech:sata-ssd extra disks: its parameters and source from the
    # lab's record (188743680 B/s = 180 MiB/s, 104857600 = 100 MiB/s)
    lines = _model_lines(A.load_sweep(_two_levels(tmp_path)))
    assert lines[:2] == [("Disk model (data, log)", "hdd: 150 IOPS, 180 MiB/s per disk"),
                         ("Disk model (data)", "hdd-slow: 100 IOPS, 100 MiB/s per disk")]
    item, ssd = lines[2]
    assert item == "Disk model (cache, special)" and len(lines) == 3
    assert ssd.startswith("mech:sata-ssd (mechanism model, served through nbdkit): 8 parallel units; page read 82 µs, "
                          "program 7 µs (medians), overhead 10 µs; 540/520 MB/s read/write; writes at 300 MB/s past "
                          "a 1.2% spare area; flush 50 µs; source: Samsung 850 EVO 1 TB")


def test_a_data_models_levels_are_numbered_when_nothing_else_tells_them_apart(tmp_path):
    lines = _model_lines(A.load_sweep(_two_levels(tmp_path, log=0)))      # no log, cache or special device
    assert lines == [("Disk model (data, 1 of 2)", "hdd: 150 IOPS, 180 MiB/s per disk"),
                     ("Disk model (data, 2 of 2)", "hdd-slow: 100 IOPS, 100 MiB/s per disk")]


def test_the_report_index_lists_the_models_of_the_events(tmp_path):
    from zbench_lib.analysis.report.report import ReportOptions, _index_extras
    sw = A.load_sweep(MODELS_STORE)
    lines = _index_extras(sw, tmp_path, ReportOptions(), "s")["environment_lines"]   # the index page's table
    assert ("Disk model (log)", "custom:iops=2000,bw=200M: 2000 IOPS, 200 MiB/s per disk") in lines
