"""``python -m nord``: the ``nord`` command."""
import sys

from nord.app.cli import main

sys.exit(main())
