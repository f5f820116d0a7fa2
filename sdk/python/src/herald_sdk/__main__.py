"""``python -m herald_sdk``: the SDK's command line (see :mod:`herald_sdk.build`)."""

import sys

from herald_sdk.build import main

sys.exit(main())
