"""firstfault: tells ML engineers why their training run died."""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "diagnose", "install"]


def diagnose(paths, **options):
    """Diagnose log files, folders, globs or '-' (stdin); returns a Diagnosis."""
    from .pipeline import diagnose_paths

    return diagnose_paths(paths, **options)


def install(error_dir=None):
    """Write a structured per-rank error record when this process dies of an uncaught exception."""
    from .hook import install as install_hook

    return install_hook(error_dir)
