"""`python -m firstfault ...`: the same command line as `firstfault ...`."""
import sys

from .cli import main

sys.exit(main())
