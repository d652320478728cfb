"""python -m slimtensor.bench: the same as `slimtensor bench`."""

import sys

from . import main

sys.exit(main())
