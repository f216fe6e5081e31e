"""``python -m pypto_build.plugin.settings``: regenerate the schema file and the reference."""

from pypto_build.plugin.settings.regenerate import main

raise SystemExit(main())
