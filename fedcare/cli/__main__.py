"""``python -m fedcare.cli``."""

import sys

from fedcare.cli.main import main

sys.exit(main())
