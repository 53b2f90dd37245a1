"""``python -m webshepherd.daemon.cli``: the ``webshepherd`` command."""

import sys

from webshepherd.daemon.cli import main

sys.exit(main())
