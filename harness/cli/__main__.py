"""`python -m harness.cli`: the fslab command line."""

import sys

from harness.cli.main import main

sys.exit(main())
