"""The `zbench` command line. Library code raises; only this module exits."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from zbench_lib.core.errors import ConfigError, ZbenchError


def _lab_config(args):
    from zbench_lib.hosts.disk_models import parse_model
    from zbench_lib.hosts.lab import LabConfig
    from zbench_lib.core.sizes import parse_size
    return LabConfig(disks=args.disks, disk_bytes=parse_size(args.disk_size), model=parse_model(args.model),
                     extra_disks=args.extra_disks, memory_mib=args.memory, cpus=args.cpus,
                     accel=args.accel, name=args.name, zfs=args.zfs)


def cmd_setup(args):
    from zbench_lib.hosts.setup_host import ensure_host_packages
    installed = ensure_host_packages()
    print("host packages: " + ("installed " + " ".join(installed) if installed else "all present"))


def cmd_lab_build(args):
    from zbench_lib.hosts.lab_image import ZFS_RELEASES, build_images
    releases = sorted(ZFS_RELEASES, reverse=True) if args.all else [args.zfs]
    for path in build_images(releases, force=args.force):
        print(path)


def cmd_lab_up(args):
    from zbench_lib.hosts.lab import Lab
    lab = Lab(_lab_config(args), detach=True).up()
    how = "restored from its saved VM state" if lab.start_kind == "restored" else "booted cold"
    print(f"lab {args.name!r} up in {lab.boot_s:.1f} s ({how}, {lab.accel}), ssh port {lab.port}, "
          f"{args.disks} x {args.disk_size} disks, model {lab.cfg.model.name}")
    if lab.start_note:
        print(f"  {lab.start_note}")
    for p in lab.data_disks + lab.extra_disks:
        print(f"  {p}")
    lab.host.close()


def cmd_lab_down(args):
    from zbench_lib.hosts.lab_state import stop_lab
    print("lab stopped" if stop_lab(args.name) else f"no lab named {args.name!r} was running")


def cmd_lab_status(args):
    from zbench_lib.hosts.lab_state import read_state
    from zbench_lib.hosts.lab_image import cached_image, recipe_key
    st = read_state(args.name)
    for zfs in ("2.3", "2.1"):
        img = cached_image(zfs)
        print(f"image {recipe_key(zfs)} (OpenZFS {zfs}): {'cached at ' + str(img) if img else 'not built'}")
    if st is None:
        print(f"lab {args.name!r}: not running")
        return 1
    print(json.dumps(st, indent=2))
    return 0


def cmd_lab_ssh(args):
    from zbench_lib.hosts.lab_state import connect_lab
    if not args.command:
        raise ZbenchError("give a command after --, e.g. zbench lab ssh -- zfs version")
    host = connect_lab(args.name)
    res = host.run(args.command, check=False, timeout=args.timeout)
    sys.stdout.write(res.stdout)
    sys.stderr.write(res.stderr)
    return res.returncode


def bytes_written_note(spec) -> str:
    """What the dry run's "bytes written" is, with the disks' capacity beside it: "5338 GiB written" to
    16 GB of disks read as an error (issue 31); it is the writes the disks receive over the whole sweep."""
    from zbench_lib.core.sizes import format_size
    data, _ = spec.available_disks
    size = spec.disk_bytes
    cap = (f"; the host's {data} data disks hold {format_size(data * size)} in all" if size else
           f"; the sweep uses {data} data disks of the host")
    return ("  bytes written = device writes: what fio and the prefill write to the pools' disks, summed over "
            "every run, pool and repetition (each target is rewritten many times), not the space in use at "
            f"any moment{cap}")


def cmd_sweep(args):
    from zbench_lib.sweeps.watching.notebook import run_sweep_notebook
    from zbench_lib.sweeps.planning.plan import expand
    from zbench_lib.sweeps.spec.sweep_spec import load_spec
    spec = load_spec(args.spec)
    plan = expand(spec)                        # validates before anything starts
    if args.dry_run:
        from zbench_lib.analysis.report.plan_advice import design_lines
        print("\n".join([plan.describe(), *design_lines(plan)]))
        print(bytes_written_note(spec))
    # Hosts are checked before anything is created (a real host's devices, every host's lock): a refusal
    # is one line, and --out stays as it was.
    if spec.host_count > 1:      # a fleet: each host reached, checked and not locked, one fleet together
        from zbench_lib.sweeps.running.fleet_open import preflight_fleet
        from zbench_lib.sweeps.running.pool_request import pool_requests
        found = preflight_fleet(spec, blocks=len(pool_requests(plan)))
        if args.dry_run:
            print("\n".join(found))
    elif spec.host != "lab":   # and its lock: another sweep's host is refused in one line naming its holder
        from zbench_lib.sweeps.running.doctor import preflight_spec
        findings = preflight_spec(spec)
        if args.dry_run:
            print(f"host {spec.host}:\n" + "\n".join("  " + f.line() for f in findings))
    else:                      # a running lab the sweep would use, held by another sweep: the same line
        from zbench_lib.sweeps.running.sweep_host import check_labs_free
        check_labs_free(spec, plan)
    if args.dry_run:
        return 0
    if args.scheduler:
        # The sweep runs in a notebook's kernel, which inherits this process's environment.
        from zbench_lib.sweeps.running.fleet import SCHEDULER_ENV
        os.environ[SCHEDULER_ENV] = args.scheduler
    args.log_hint = Path(args.out) / "zbench-sweep-error.log"
    sweep_dir = run_sweep_notebook(args.spec, plan, args.out, resume_dir=args.resume or "",
                                   progress=not args.no_progress)
    _say_quality(sweep_dir)
    return 0


def _say_quality(sweep_dir, include_flagged: bool = False) -> None:
    """What the sweep lost and how to measure it again (`data_quality`), its paths as this shell gives them."""
    from zbench_lib.analysis.report.data_quality import sweep_quality_text
    text = sweep_quality_text(sweep_dir, include_flagged, base=Path.cwd())
    if text:
        print(text)


def cmd_report(args):
    from zbench_lib.analysis.report.report import ReportOptions, parse_param, render_report
    from zbench_lib.analysis.figures.figures_static import FORMATS
    params: dict = {}
    for text in args.param:
        nb, key, value = parse_param(text)
        params.setdefault(nb, {})[key] = value
    figures = tuple(f.strip().lower() for f in (args.figures or "").split(",") if f.strip())
    bad = [f for f in figures if f not in FORMATS]
    if bad:
        raise ConfigError(f"--figures takes {','.join(FORMATS)} (comma-separated), not {','.join(bad)}")
    opts = ReportOptions(notebooks=[n for n in args.notebooks.split(",") if n] or None,
                         include_flagged=args.include_flagged, parameters=params, compare=args.compare,
                         timeline=args.timeline, figures=figures, single_file=args.single_file,
                         show_code=args.show_code)
    args.log_hint = Path(args.sweep_dir) / "report" / "report-errors.log"
    index = render_report(args.sweep_dir, options=opts,
                          progress=None if args.quiet else lambda text: print(text, file=sys.stderr, flush=True))
    _say_quality(args.sweep_dir, args.include_flagged)
    print(index)
    if args.single_file:
        print(index.with_name("report.html"))
    return 0


def cmd_table(args):
    from zbench_lib.analysis.report.pub_tables import export_table, summary_table
    from zbench_lib.analysis.report.stamp import caveat_line, zbench_stamp
    from zbench_lib.analysis.data.sweep_data import load_sweep
    sweep = load_sweep(args.sweep_dir)
    sid = str(sweep.results["sweep_id"].iloc[0]) if len(sweep.results) else sweep.path.name
    note = (f"Sweep {sid}. Mean over n admissible first attempts; 95% CI of the mean in the metric each "
            "workload is judged in (MiB/s sequential, IOPS random; methods §9); "
            + ("flagged runs included." if args.include_flagged else
               "runs invalidated by a truth check excluded; runs with describing flags kept.")
            + f" {caveat_line(sweep.results)} {zbench_stamp()}.")
    text = export_table(summary_table(sweep.results, args.include_flagged, hist=sweep.histograms), args.format,
                        title=f"zbench summary: {sid}", source_note=note)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(args.out)
    else:
        sys.stdout.write(text)
    return 0


def cmd_plan_advice(args):
    from zbench_lib.analysis.report.plan_advice import plan_advice, render
    print(render(plan_advice(args.sweep_dir, wall_min=args.wall, metric=args.metric)))
    return 0


def cmd_catalog(args):
    import pandas as pd
    from zbench_lib.analysis.data.catalog import catalog, query, sweep_dirs
    roots = args.dirs or None
    t = query(args.sql, sweep_dirs(roots)) if args.sql else catalog(roots)
    if args.format == "csv":
        sys.stdout.write(t.to_csv(index=False))
    else:
        shown = t.drop(columns=["question"], errors="ignore") if args.format == "table" else t
        with pd.option_context("display.width", 200, "display.max_columns", None, "display.max_colwidth", 40):
            print(shown.to_string(index=False) if len(shown) else "no sweeps")
    return 0


def cmd_pools(args):
    from zbench_lib.hosts.resolve import parse_host
    from zbench_lib.zfs.pools import find_leftovers, remove_leftovers
    host = parse_host(args.host)
    left = find_leftovers(host)
    if args.action == "cleanup":
        if not args.yes:
            print(f"would destroy {left or 'nothing'}; add --yes to destroy them")
            return 1 if left else 0
        print("destroyed: " + (", ".join(remove_leftovers(host, left)) or "nothing"))
    else:
        print("\n".join(left) if left else "no zbench pools")
    return 0


def cmd_doctor(args):
    from zbench_lib.hosts.resolve import parse_host
    from zbench_lib.sweeps.running.doctor import doctor
    host = parse_host(args.host)
    try:
        findings = doctor(host, devices=args.device, overrides=args.allow_signatures)
    finally:
        host.close()
    for f in findings:
        print(f.line())
    return 1 if any(f.ok is False for f in findings) else 0


def cmd_pack(args):
    from zbench_lib.sweeps.store.publish import pack, verify
    dest = pack(args.sweep_dir, args.dest)
    rows = verify(dest)
    print(f"packed {args.sweep_dir} -> {dest}; results rebuilt from raw.tar.xz match ({len(rows)} rows); "
          f"manifest {rows.attrs['manifest']}")


def _key_values(items, what: str) -> dict:
    out = {}
    for text in items:
        key, eq, value = text.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"{what} {text!r}: write KEY=VALUE, e.g. zfs=2.2.2")
        out[key.strip()] = value.strip()
    return out


def cmd_import(args):
    from zbench_lib.sweeps.importing.import_store import ImportOptions, import_fio
    opts = ImportOptions(path_pattern=args.path_pattern, map_path=args.map, question=args.question,
                         environment=_key_values(args.env, "--env"), surface=args.surface, set_aside=args.set_aside)
    result = import_fio(args.src, args.out, opts, dry_run=args.dry_run)
    print(result.summary)
    if result.path is not None:
        print(f"imported {len(result.plan.runs)} runs into {result.path} in {result.seconds:.1f} s "
              f"({result.rows} rows); next: zbench verify {result.path}, zbench report {result.path}")
    return 0


def cmd_verify(args):
    from zbench_lib.sweeps.store.publish import verify
    if not Path(args.packed_dir).is_dir():         # before verify's manifest warning and its exception name
        raise ConfigError(f"{args.packed_dir}: no such directory (give a packed sweep, e.g. data/examples/scaling)")
    rows = verify(args.packed_dir)
    print(f"{args.packed_dir}: results.parquet matches its raw files ({len(rows)} rows); "
          f"manifest {rows.attrs['manifest']}")


def cmd_demo(args):
    from zbench_lib.demo import run_demo
    return run_demo()


def _subparsers(parent) -> argparse._SubParsersAction:
    """Subcommands whose --help says what they do (the help line as description) and every default."""
    sub = parent.add_subparsers(dest=f"{parent.prog.split()[-1]}_cmd" if parent.prog != "zbench" else "cmd",
                                required=True)
    plain = sub.add_parser

    def add_parser(name, **kw):
        kw.setdefault("description", kw.get("help"))
        kw.setdefault("formatter_class", argparse.ArgumentDefaultsHelpFormatter)
        return plain(name, **kw)
    sub.add_parser = add_parser
    return sub


def build_parser() -> argparse.ArgumentParser:  # noqa: PLR0915 (one statement per subcommand and option)
    p = argparse.ArgumentParser(prog="zbench", description="Benchmark ZFS layouts on real OpenZFS.")
    sub = _subparsers(p)
    sub.add_parser("setup", help="install missing host packages (apt-get, as root)").set_defaults(
        func=cmd_setup)

    sub.add_parser("demo", help="the main job end to end in the lab").set_defaults(func=cmd_demo)

    sw = sub.add_parser("sweep", help="run a sweep spec (papermill; executed notebook kept)")
    sw.add_argument("spec", help="sweep spec YAML, e.g. templates/sweeps/demo.yaml")
    sw.add_argument("--out", default="data/sweeps", help="where sweep directories go")
    sw.add_argument("--resume", help="complete an interrupted sweep directory")
    sw.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    sw.add_argument("--scheduler", metavar="ADDRESS",
                    help="a fleet spec: join this Dask scheduler (one worker per host, each with resource "
                         "host-NAME=1) instead of starting workers on this machine")
    sw.add_argument("--no-progress", action="store_true",
                    help="no progress view (the notebook's output is passed through as it comes)")
    sw.set_defaults(func=cmd_sweep)
    cat = sub.add_parser("catalog", help="list the sweeps under directories (DuckDB over their parquet files)")
    cat.add_argument("dirs", nargs="*", help="directories holding sweeps (default: data/examples data/sweeps)")
    cat.add_argument("--sql", help="a DuckDB query over the view `results` (every row of every sweep, "
                                   "with sweep_dir), printed instead of the list")
    cat.add_argument("--format", default="table", choices=["table", "wide", "csv"],
                     help="table (default), wide (with each sweep's question) or csv")
    cat.set_defaults(func=cmd_catalog)
    rp = sub.add_parser("report", help="render the HTML report of a sweep directory",
                        description="Run the analysis notebooks on a sweep and write <sweep>/report/index.html.")
    rp.add_argument("sweep_dir", help="sweep directory (spec.yaml, provenance.json, results.parquet)")
    rp.add_argument("--notebooks", default="", metavar="A,B",
                    help="comma-separated subset of scaling,volblocksize,compare (default: those that apply)")
    rp.add_argument("--compare", metavar="OTHER_SWEEP", help="compare with another sweep (analysis-compare)")
    rp.add_argument("--timeline", metavar="RUN", help="run_id drawn layer by layer (default: a typical run)")
    rp.add_argument("--param", action="append", default=[], metavar="NOTEBOOK:KEY=VALUE",
                    help="a notebook parameter, e.g. scaling:metric=bw_bytes_s (repeatable)")
    rp.add_argument("--include-flagged", action="store_true",
                    help="analyse flagged runs (invalidated by a truth check) too")
    rp.add_argument("--figures", metavar="png,svg", default="",
                    help="also write every figure as static files into report/figures/")
    rp.add_argument("--single-file", action="store_true", help="also write report/report.html, self-contained")
    rp.add_argument("--show-code", action="store_true", help="keep the code cells in the HTML")
    rp.add_argument("--quiet", action="store_true", help="no progress lines on standard error")
    rp.set_defaults(func=cmd_report)
    tb = sub.add_parser("table", help="the summary table of a sweep as Markdown, CSV, LaTeX or HTML")
    tb.add_argument("sweep_dir", help="sweep directory (results.parquet)")
    tb.add_argument("--format", choices=["md", "csv", "latex", "html"], default="md",
                    help="md, csv (units in the headers, the note a last column), latex (floats for one- or "
                         "two-column papers: see summary-preamble.tex) or html")
    tb.add_argument("--include-flagged", action="store_true",
                    help="count flagged runs (invalidated by a truth check) too")
    tb.add_argument("--out", metavar="FILE", help="write to FILE instead of standard output")
    tb.set_defaults(func=cmd_table)
    pa = sub.add_parser("plan-advice", help="variance components of a sweep (pool to pool, run to run), its "
                        "costs, and how many pools × runs to plan (methods §22)")
    pa.add_argument("sweep_dir", help="sweep directory (results.parquet, events.jsonl)")
    pa.add_argument("--wall", type=float, metavar="MINUTES",
                    help="wall-time budget per cell (default: what the sweep's own design cost a cell)")
    pa.add_argument("--metric", default="iops", help="the results column the components are of")
    pa.set_defaults(func=cmd_plan_advice)
    im = sub.add_parser("import", help="read fio JSON results measured elsewhere into a new sweep store",
                        description="Read fio JSON / json+ files (any fio release, one job or several, client/server "
                                    "output) into a new sweep store the analysis, reports and catalogue read.")
    im.add_argument("src", help="a fio JSON file, or a directory whose *.json files are read")
    im.add_argument("--out", required=True, help="the new sweep store (must not exist), e.g. data/sweeps/my-import")
    im.add_argument("--path-pattern", metavar="PATTERN",
                    help="the files' path below SRC with {field} where a factor or label stands, e.g. "
                         "'{layout}/{disks}-disks/vbs-{volblocksize}/run-{rep}/fio.json'")
    im.add_argument("--map", metavar="FILE", help="a CSV (a 'file' column) or YAML map from file to its fields")
    im.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="the environment the files were measured in, as known (zfs=2.2.2, host=bench1, "
                         "kernel=6.1.0); repeatable; anything not given is 'not recorded'")
    im.add_argument("--question", help="the question the sweep answers (the report's first line)")
    im.add_argument("--surface", choices=["zvol", "dataset", "fs-on-zvol", "raw"],
                    help="what fio ran on, if known (else 'not recorded')")
    im.add_argument("--set-aside", action="store_true",
                    help="import the files that can be and name the others, instead of refusing the import")
    im.add_argument("--dry-run", action="store_true", help="print the summary (files, cells, factors) and exit")
    im.set_defaults(func=cmd_import)
    pk = sub.add_parser("pack", help="pack a finished sweep for publication (raw/ as one xz archive)")
    pk.add_argument("sweep_dir", help="a finished sweep directory")
    pk.add_argument("dest", help="new directory, e.g. data/examples/my-study")
    pk.set_defaults(func=cmd_pack)
    vf = sub.add_parser("verify", help="rebuild a packed sweep's results from its raw files and compare")
    vf.add_argument("packed_dir", help="a packed sweep directory (SHA256SUMS, raw.tar.xz)")
    vf.set_defaults(func=cmd_verify)
    po = sub.add_parser("pools", help="list or clean up zbench pools left by a crash")
    po.add_argument("action", choices=["list", "cleanup"], help="list the leftovers, or destroy them")
    po.add_argument("--host", default="lab", help="lab, local or ssh://host")
    po.add_argument("--yes", action="store_true", help="really destroy the leftovers")
    po.set_defaults(func=cmd_pools)

    dr = sub.add_parser("doctor", help="can HOST run a sweep? versions, privilege, devices, leftovers, load")
    dr.add_argument("host", help="lab, local or ssh://[user@]host[:port]")
    dr.add_argument("--device", action="append", default=[], metavar="PATH",
                    help="a device the sweep would use (repeatable; prefer /dev/disk/by-id)")
    dr.add_argument("--allow-signatures", action="append", default=[], metavar="PATH",
                    help="a listed device whose signature you accept overwriting")
    dr.set_defaults(func=cmd_doctor)

    lab = sub.add_parser("lab", help="the lab VM: real OpenZFS on modelled disks")
    lsub = _subparsers(lab)
    b = lsub.add_parser("build", help="build (or reuse) the lab image")
    b.add_argument("--force", action="store_true", help="rebuild even if cached")
    b.add_argument("--all", action="store_true", help="the image of every OpenZFS release, built side by side")
    b.set_defaults(func=cmd_lab_build)

    up = lsub.add_parser("up", help="boot a lab in the background")
    up.add_argument("--disks", type=int, default=4, help="number of data disks")
    up.add_argument("--disk-size", default="2G", help="size of each sparse data disk")
    up.add_argument("--model", default="hdd",
                    help="disk model: hdd, hdd-slow, sata-ssd, nvme, unthrottled or custom:iops=N,bw=SIZE")
    up.add_argument("--extra-disks", type=int, default=0, help="unthrottled disks for log/cache/special")
    up.add_argument("--memory", type=int, default=2048, help="guest memory in MiB")
    up.add_argument("--cpus", type=int, default=2, help="guest CPUs")
    up.add_argument("--accel", default="auto", choices=["auto", "kvm", "tcg"],
                    help="QEMU accelerator (auto chooses)")
    up.set_defaults(func=cmd_lab_up)

    for name, func, helptext in (("down", cmd_lab_down, "stop the lab and remove its files"),
                                 ("status", cmd_lab_status, "show the image and the running lab"),
                                 ("ssh", cmd_lab_ssh, "run a command in the lab: zbench lab ssh -- CMD")):
        sp = lsub.add_parser(name, help=helptext)
        if name == "ssh":
            sp.add_argument("--timeout", type=float, default=3600, help="seconds before the command is stopped")
            sp.add_argument("command", nargs=argparse.REMAINDER)
        sp.set_defaults(func=func)
    for sp in (up, b) + tuple(lsub.choices[n] for n in ("down", "status", "ssh")):
        sp.add_argument("--name", default="default", help="lab name (several labs can run)")
    for sp in (up, b):
        sp.add_argument("--zfs", default="2.3", choices=["2.3", "2.1"],
                        help="OpenZFS release of the image (2.1 is Debian 12's own)")
    return p


def _internal_error(args, exc: BaseException) -> int:
    """An unexpected exception: the traceback to a log, one line on the terminal."""
    import traceback
    from datetime import datetime, timezone
    from zbench_lib.core.paths import cache_dir
    hint = getattr(args, "log_hint", None)
    log = Path(hint) if hint and Path(hint).parent.parent.is_dir() else \
        cache_dir() / "logs" / f"zbench-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as fh:
        fh.write("".join(traceback.format_exception(exc)))
    first = " ".join(str(exc).split())[:300]
    print(f"zbench: {type(exc).__name__}: {first} (full traceback: {log})", file=sys.stderr)
    return 1


def main(argv=None) -> int:
    from zbench_lib.core.signals import exit_on_termination
    exit_on_termination()             # 128 + n for a signal at any point, even during start-up
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        return 130
    if getattr(args, "command", None) and args.command[:1] == ["--"]:
        args.command = args.command[1:]
    try:
        rc = args.func(args)
    except ZbenchError as exc:
        print(f"zbench: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 2)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        return _internal_error(args, exc)
    return rc or 0


if __name__ == "__main__":
    sys.exit(main())
