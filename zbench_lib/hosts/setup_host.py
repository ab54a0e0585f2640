"""Install the host packages zbench needs (Debian/Ubuntu, apt-get as root)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys

from zbench_lib.core.errors import ZbenchError

# command on PATH -> Debian package that provides it
HOST_TOOLS = {
    "qemu-system-x86_64": "qemu-system-x86",
    "qemu-img": "qemu-utils",
    "debootstrap": "debootstrap",
    "mke2fs": "e2fsprogs",
    "fio": "fio",
    "ssh": "openssh-client",
    "ssh-keygen": "openssh-client",
    "scp": "openssh-client",
    # Modelled lab disks (mech: models) are served by nbdkit with zbench's Python plugin.
    "nbdkit": "nbdkit",
    "/usr/lib/*/nbdkit/plugins/nbdkit-python-plugin.so": "nbdkit-plugin-python",
}


# The LaTeX test (`make test`) compiles each example's summary.tex in a bare article with the preamble the
# export documents (analysis.report.pub_tables.LATEX_PREAMBLE; tests/test_tables_pub.py keeps the two in step):
# pdflatex, rotating and graphicx come with texlive-latex-base, booktabs with texlive-latex-recommended, which
# is all a bare article needs (no -extra, no fonts beyond texlive-base's Computer Modern).
TEXMF_LATEX = "/usr/share/texlive/texmf-dist/tex/latex"
LATEX_TOOLS = {
    "pdflatex": "texlive-latex-base",
    f"{TEXMF_LATEX}/*/booktabs.sty": "texlive-latex-recommended",
    f"{TEXMF_LATEX}/*/rotating.sty": "texlive-latex-base",
    f"{TEXMF_LATEX}/*/graphicx.sty": "texlive-latex-base",
}
# Only the test suite needs these: the report test renders pages in a real browser, the LaTeX test compiles.
TEST_TOOLS = {"chromium": "chromium", **LATEX_TOOLS}


def missing_packages(tools: dict = HOST_TOOLS) -> list[str]:
    extra_path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    def present(tool: str) -> bool:     # a command on PATH, or a file pattern (a plugin, a library)
        return bool(glob.glob(tool)) if tool.startswith("/") else bool(shutil.which(tool, path=extra_path))
    return sorted({pkg for tool, pkg in tools.items() if not present(tool)})


def ensure_host_packages(quiet: bool = False, tests: bool = False) -> list[str]:
    """Install what is missing; returns the packages installed."""
    missing = missing_packages({**HOST_TOOLS, **(TEST_TOOLS if tests else {})})
    if not missing:
        return []
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    if os.geteuid() != 0:
        raise ZbenchError("zbench needs these host packages: " + " ".join(missing) +
                          "\nInstall them as root:  sudo apt-get update && sudo " + " ".join(cmd))
    if not shutil.which("apt-get"):
        raise ZbenchError("missing host packages " + " ".join(missing) +
                          " and apt-get is not available: install them with your package manager")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    out = None if not quiet else subprocess.DEVNULL
    print(f"zbench setup: installing {' '.join(missing)}", file=sys.stderr, flush=True)
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=out)
    subprocess.run(cmd, check=True, env=env, stdout=out)
    return missing


if __name__ == "__main__":
    # Runs with the bare system python (no third-party packages needed), so the
    # Makefile can call it before the virtualenv exists.
    try:
        done = ensure_host_packages(tests="--tests" in sys.argv)
        print("host packages: " + ("installed " + " ".join(done) if done else "all present"))
    except ZbenchError as exc:
        print(f"zbench setup: {exc}", file=sys.stderr)
        sys.exit(2)
