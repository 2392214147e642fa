"""``python -m promem_fast`` = the ``promem-fast`` command."""

import sys

from .cli import main

sys.exit(main())
