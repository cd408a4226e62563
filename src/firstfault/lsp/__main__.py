"""`python -m firstfault.lsp`: the same as `firstfault lsp`."""
import sys

from firstfault.cli import main

sys.exit(main(["lsp", *sys.argv[1:]]))
