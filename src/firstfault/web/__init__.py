"""The web interface (`firstfault serve`): FastAPI pages and a JSON API over the library.

Needs the `web` extra; importing this package does not, so the CLI can say what to install.
"""
from __future__ import annotations

WEB_REQUIREMENTS = ("fastapi", "uvicorn", "multipart", "jinja2", "platformdirs")
INSTALL_HINT = "pip install -e '.[web]' in a checkout, or pip install 'firstfault[web]'"


def missing_requirements() -> list[str]:
    """The modules of the web extra that cannot be imported here."""
    import importlib.util

    return [name for name in WEB_REQUIREMENTS if importlib.util.find_spec(name) is None]


def create_app(*args, **kwargs):
    """See firstfault.web.app.create_app."""
    from .app import create_app as _create_app

    return _create_app(*args, **kwargs)
