"""`python -m seance` — same as the `seance` console script."""

import sys

from seance.cli import main

sys.exit(main())
