"""`python -m craps_streams.cli`: the same as `craps-streams`."""
import sys

from craps_streams.cli import main

sys.exit(main())
