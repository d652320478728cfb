"""python -m slimtensor: the same as the `slimtensor` command."""

import sys

from .cli import main

sys.exit(main())
