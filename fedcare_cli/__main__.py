"""``python -m fedcare_cli``."""

import sys

from fedcare_cli.main import main

sys.exit(main())
