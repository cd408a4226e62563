"""`python -m firstfault ...`: the same command line as `firstfault ...`."""
from .cli import console

console()
