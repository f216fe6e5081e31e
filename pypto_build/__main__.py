"""``python -m pypto_build``: the same command line as the ``pypto-build`` script."""

from pypto_build.plugin.console import main

raise SystemExit(main())
