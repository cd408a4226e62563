"""What `pip install firstfault` brings: the fast engines where wheels exist, numpy with the lab."""
from __future__ import annotations

import platform
import sys

import pytest

from .conftest import REPO

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

packaging = pytest.importorskip("packaging.requirements")


def requirements(extra: str | None = None) -> dict:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    listed = project["optional-dependencies"][extra] if extra else project["dependencies"]
    return {packaging.Requirement(text).name: packaging.Requirement(text) for text in listed}


# Where PyPI has wheels (pip download --only-binary :all: --platform P --python-version V):
WHEELS = [
    ("linux", "x86_64", "3.10", True, True), ("linux", "x86_64", "3.14", True, True),
    ("linux", "aarch64", "3.13", True, True), ("linux", "aarch64", "3.14", False, True),
    ("darwin", "arm64", "3.14", True, True), ("darwin", "x86_64", "3.12", True, True),
    ("darwin", "x86_64", "3.13", False, False), ("win32", "AMD64", "3.12", True, True),
    ("linux", "ppc64le", "3.12", False, False),
]


@pytest.mark.parametrize("system,machine,python,hyperscan,isal", WHEELS)
def test_fast_engines_are_default_dependencies_where_wheels_exist(system, machine, python, hyperscan, isal):
    environment = {"sys_platform": system, "platform_machine": machine, "python_version": python}
    wanted = requirements()
    assert wanted["hyperscan"].marker.evaluate(environment) is hyperscan
    assert wanted["isal"].marker.evaluate(environment) is isal


def test_this_platform_got_them():
    environment = {"sys_platform": sys.platform, "platform_machine": platform.machine(),
                   "python_version": f"{sys.version_info.major}.{sys.version_info.minor}"}
    if requirements()["hyperscan"].marker.evaluate(environment):
        import hyperscan  # noqa: F401  (installed with the package)
        from firstfault.match.compiler import slow_matcher_warning

        assert slow_matcher_warning() is None


def test_the_lab_extra_has_numpy_and_the_readme_the_cpu_wheel():
    assert {"torch", "numpy"} <= set(requirements("lab"))
    readme = (REPO / "README.md").read_text()
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in readme


def test_a_wheel_ships_the_example_the_readme_runs(tmp_path):
    """A non-editable install has the example of the README's first command inside the package."""
    import subprocess
    import zipfile

    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path), str(REPO)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    wheel = next(tmp_path.glob("firstfault-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    readme = (REPO / "README.md").read_text()
    example = readme.split("firstfault diagnose ", 1)[1].split()[0]  # examples/<name>
    assert f"firstfault/{example}/console.log" in names
    assert "firstfault/kb/classes.yaml" in names
