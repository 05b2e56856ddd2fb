"""`python -m craps_streams.cli`: the same as `craps-streams`."""
from craps_streams.cli import console

console()
