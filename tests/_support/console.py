"""Running the ``pypto-build`` command line in-process, as every CLI test does."""

from __future__ import annotations

import pytest

from pypto_build.plugin.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``pypto-build <argv>``: its exit code and what it printed on stdout and stderr."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
