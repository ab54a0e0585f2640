"""Where zbench keeps its cache (lab images) and state (running labs)."""

import os
from pathlib import Path


def cache_dir() -> Path:
    """User cache directory, honouring ZBENCH_CACHE and XDG_CACHE_HOME."""
    if os.environ.get("ZBENCH_CACHE"):
        return Path(os.environ["ZBENCH_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "zbench"


def labs_dir() -> Path:
    """Directory holding one sub-directory per running lab."""
    return cache_dir() / "labs"


def images_dir() -> Path:
    return cache_dir() / "images"


# The checkout: templates/, notebooks/ and data/examples/ are found from here.
REPO_ROOT = Path(__file__).resolve().parents[2]
