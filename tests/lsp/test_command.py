"""`firstfault lsp` as a command: without the extra it says what to install (exit 2, no traceback)."""
from __future__ import annotations

import subprocess
import sys

HIDE_PYGLS = "import sys; sys.modules['pygls'] = None; from firstfault.cli import main; sys.exit(main(['lsp']))"


def test_without_the_lsp_extra_it_names_the_install_command():
    result = subprocess.run([sys.executable, "-c", HIDE_PYGLS], capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert result.stderr == ("firstfault: error: the editor server needs pygls\n"
                             "hint: pip install 'firstfault[lsp]' (in a checkout: pip install -e '.[lsp]')\n")
    assert result.stdout == ""


def test_help_names_the_transport_and_the_readme_section():
    result = subprocess.run([sys.executable, "-m", "firstfault.cli", "lsp", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert "stdin/stdout" in result.stdout and "In the editor" in result.stdout
