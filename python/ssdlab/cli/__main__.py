"""`python -m ssdlab.cli`: the ssdlab command."""

import sys

from . import main

sys.exit(main())
