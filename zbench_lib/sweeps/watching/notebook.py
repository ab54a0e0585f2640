"""Notebooks run headlessly: `zbench sweep SPEC` and every executed report notebook.

`execute_notebook` runs papermill with the kernel on IPC sockets (no "Kernel is running
over TCP without encryption" warning) and turns a failure into one line: the traceback
goes to a log file, the `NotebookFailed` message names the cell's error and that log.
`run_sweep_notebook` runs notebooks/sweep.ipynb, showing the terminal progress view
(`progress.ProgressView`) fed by the store's events.jsonl while it runs. Nothing here
imports a host (the report layer runs its notebooks through `execute_notebook` too).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import traceback
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from zbench_lib.core.errors import ConfigError, ZbenchError
from zbench_lib.core.paths import REPO_ROOT
from zbench_lib.sweeps.watching.kernel_signals import forward_to_kernel, register

NOTEBOOK = REPO_ROOT / "notebooks" / "sweep.ipynb"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class NotebookFailed(ZbenchError):
    """A notebook raised (or its kernel died); `log` holds the full traceback."""

    def __init__(self, name: str, error: str, log: Path, cell: int | None = None):
        self.name, self.error, self.log, self.cell = name, error, Path(log), cell
        where = f" in cell {cell}" if cell is not None else ""
        super().__init__(f"{name} failed{where}: {error} (full traceback: {log})")


class SweepInterrupted(ZbenchError):
    """The sweep was stopped by a signal after its teardown ran; exit with 128 + its number."""

    def __init__(self, signum: int, name: str, sweep_dir: Path, log: Path):
        self.exit_code = 128 + signum
        where = f"resume with: zbench sweep SPEC --resume {sweep_dir}" if sweep_dir.is_dir() \
            else "nothing was recorded"
        super().__init__(f"sweep stopped by {name} after tearing its pool down; {where} (log: {log})")


@lru_cache(maxsize=1)
def ipc_kernel_manager():
    """An AsyncKernelManager whose kernel talks over IPC sockets, not unencrypted TCP."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class IPCKernelManager(AsyncKernelManager):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            register(self)          # so `zbench sweep` can pass a Ctrl-C on to its kernel

        async def _async_pre_start_kernel(self, **kw):
            # The kernel's own stderr (ipykernel's log: "KeyboardInterrupt caught in kernel"
            # while nbclient shuts it down on a busy machine) goes to a log, not the terminal:
            # a failure stays one `zbench:` line. Cell output still arrives as messages.
            cmd, kw = await super()._async_pre_start_kernel(**kw)
            kw.setdefault("stderr", _kernel_log())
            return cmd, kw

        @default("transport")
        def _default_transport(self):
            return "ipc"

        @default("ip")
        def _default_ip(self):
            # The sockets' path prefix. jupyter_client's default, "kernel-ipc", is relative to the
            # working directory: a killed kernel left kernel-ipc-N sockets in the user's project.
            return _ipc_prefix()

    return IPCKernelManager


def _ipc_prefix() -> str:
    """kernel-<pid> in jupyter's runtime directory (private to the user), where connection files go."""
    from jupyter_core.paths import jupyter_runtime_dir
    runtime = Path(jupyter_runtime_dir())
    runtime.mkdir(parents=True, exist_ok=True, mode=0o700)
    return str(runtime / f"zbench-kernel-{os.getpid()}-ipc")


def _kernel_log():
    from zbench_lib.core.paths import cache_dir
    log = cache_dir() / "logs" / "kernel-stderr.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    return open(log, "a", encoding="utf-8")


def one_line(text: str, most: int = 300) -> str:
    line = " ".join(_ANSI.sub("", str(text)).split())
    return line if len(line) <= most else line[:most - 1] + "…"


def _write_log(log: Path, name: str, body: str) -> Path:
    log.parent.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"== {stamp} {name}\n{_ANSI.sub('', body).rstrip()}\n\n")
    return log


def execute_notebook(src, dst, parameters: dict, *, log: Path, name: str | None = None, cwd=None,  # noqa: PLR0913 (papermill's keyword options)
                     kernel_name: str | None = None, timeout: float | None = None,
                     stdout=None, stderr=None) -> None:
    """papermill `src` -> `dst` over IPC; on failure append the traceback to `log`, raise NotebookFailed.

    `stdout`/`stderr` (file-like) receive the notebook's streams as it runs (None: kept
    in the executed notebook only).
    """
    import papermill as pm
    name = name or Path(src).stem
    try:
        pm.execute_notebook(str(src), str(dst), parameters=parameters, cwd=str(cwd or REPO_ROOT),
                            kernel_name=kernel_name, progress_bar=False, execution_timeout=timeout,
                            log_output=False, stdout_file=stdout, stderr_file=stderr,
                            kernel_manager_class=ipc_kernel_manager())
    except pm.PapermillExecutionError as exc:
        body = f"cell {exc.cell_index} (execution count {exc.exec_count}):\n{exc.source}\n\n" + \
               "\n".join(exc.traceback)
        _write_log(Path(log), name, body)
        raise NotebookFailed(name, one_line(f"{exc.ename}: {exc.evalue}"), log, exc.cell_index) from None
    except KeyboardInterrupt:
        raise
    except Exception as exc:                       # the kernel died, timed out, or did not start
        _write_log(Path(log), name, traceback.format_exc())
        raise NotebookFailed(name, one_line(f"{type(exc).__name__}: {exc}"), log) from None


def _execute_sweep(params: dict, executing: Path, log: Path, target: Path, plan, progress: bool) -> None:
    from zbench_lib.sweeps.watching.progress import LineWriter, ProgressView
    cwd = NOTEBOOK.parent.parent
    if not progress:
        execute_notebook(NOTEBOOK, executing, params, log=log, name="sweep", cwd=cwd,
                         stdout=sys.stdout, stderr=sys.stderr)
        return
    with ProgressView(target, plan=plan) as view:
        out_w, err_w = LineWriter(view.write), LineWriter(view.write_err)
        try:
            execute_notebook(NOTEBOOK, executing, params, log=log, name="sweep", cwd=cwd,
                             stdout=out_w, stderr=err_w)
        finally:
            out_w.flush()
            err_w.flush()


def run_sweep_notebook(spec: str, plan, out_root: str = "data/sweeps", *, resume_dir: str = "",
                       progress: bool = True) -> Path:
    """Execute notebooks/sweep.ipynb on `spec`; the executed copy lands in the sweep directory.

    `plan` is the spec's expanded Plan (the caller validated the spec with it; this module
    stays free of the plan's imports, so the analysis layer may use `execute_notebook`).
    With `progress`, the terminal shows runs done / planned, the current cell, the ETA and
    the last run's IOPS (read from events.jsonl), and the notebook's own bars are off.
    A failure leaves its traceback in <sweep dir>/sweep-error.log and raises NotebookFailed.
    """
    from zbench_lib.sweeps.store.store import new_sweep_id

    if not NOTEBOOK.exists():
        raise ConfigError(f"sweep notebook not found: {NOTEBOOK}")
    sweep_id = "" if resume_dir else new_sweep_id(plan.spec.name)
    out = Path(out_root)
    out.mkdir(parents=True, exist_ok=True)
    # papermill writes its output from the first cell on: keep it beside the sweep
    # directory (which the store must create itself) and move it in at the end.
    target = Path(resume_dir) if resume_dir else out / sweep_id
    executing = target.parent / f".{target.name}.executing.ipynb"
    params = {"spec": str(Path(spec).resolve()), "out_root": str(out.resolve()), "sweep_id": sweep_id,
              "resume_dir": str(resume_dir), "progress": False, "live": False,
              "measure": True}      # the notebook measures only when told (a Run All in JupyterLab shows the plan)
    log = target.parent / f".{target.name}.error.log"     # moved into the sweep directory if it exists
    with forward_to_kernel() as interrupted:
        try:
            _execute_sweep(params, executing, log, target, plan, progress)
        except NotebookFailed as exc:
            final = target / "sweep-error.log" if target.is_dir() else target.parent / f"{target.name}-error.log"
            with open(final, "a", encoding="utf-8") as fh:
                fh.write(exc.log.read_text(encoding="utf-8"))
            exc.log.unlink()
            if interrupted.signum:
                raise SweepInterrupted(interrupted.signum, interrupted.name, target, final) from None
            raise NotebookFailed(exc.name, exc.error, final, exc.cell) from None
        except KeyboardInterrupt:
            if interrupted.signum:
                raise SweepInterrupted(interrupted.signum, interrupted.name, target, log) from None
            raise
        finally:
            if target.is_dir() and executing.exists():
                n = len(list(target.glob("sweep*.ipynb")))
                shutil.move(str(executing), str(target / (f"sweep-{n + 1}.ipynb" if n else "sweep.ipynb")))
    print(f"sweep directory: {target}")
    return target
