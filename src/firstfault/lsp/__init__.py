"""The editor server (`firstfault lsp`): the Language Server Protocol over stdio, built on pygls.

Needs the `lsp` extra; importing this package does not, so the CLI can say what to install.
`python -m firstfault.lsp` runs the server too (for editors that start it with an interpreter).
"""
from __future__ import annotations

LSP_REQUIREMENTS = ("pygls", "lsprotocol")
INSTALL_HINT = "pip install 'firstfault[lsp]' (in a checkout: pip install -e '.[lsp]')"


def missing_requirements() -> list[str]:
    """The modules of the lsp extra that cannot be imported here."""
    import importlib

    missing = []
    for name in LSP_REQUIREMENTS:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing
