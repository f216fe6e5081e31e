"""The one root of every error pypto-build reports to a user.

A front end (the ``pypto-build`` command, the hatchling hook, the CMake command, the host APIs)
must tell a failure of the user's input or machine, which it prints as a message and an exit
status, from a bug, which keeps its traceback. It does so with one ``except PyptoError``: every
user-facing exception derives from :class:`PyptoError` and knows its exit status and how it
reads. This module imports nothing of the package, so the leaf ``builtins`` and every other part
can raise errors from it.
"""

from __future__ import annotations

import enum
from typing import ClassVar


class ExitCode(enum.IntEnum):
    """The process exit status of every command, as ``docs/cli.md`` documents it."""

    OK = 0
    PROGRAM_ERROR = 1
    USAGE_ERROR = 2
    INTERNAL_ERROR = 3


class PyptoError(Exception):
    """A failure of what the user gave or has (a program, a setting, a toolkit, a file), as
    opposed to a bug of pypto-build.

    ``exit_code`` is the status a command exits with; :meth:`render` is the text it prints
    (a located diagnostic renders its source line and caret; most errors are their message).
    """

    exit_code: ClassVar[ExitCode] = ExitCode.PROGRAM_ERROR

    def render(self) -> str:
        """The message a user reads, without the program-name prefix a front end adds."""
        return str(self)

    def report(self, prog: str) -> str:
        """The whole text the command ``prog`` prints: ``<prog>: error: <render()>`` (a
        located diagnostic, which names its own place, overrides this)."""
        return f"{prog}: error: {self.render()}"


class PyptoUsageError(PyptoError):
    """The request itself is wrong (an unknown setting, a file or class that does not exist)
    rather than what a program says."""

    exit_code: ClassVar[ExitCode] = ExitCode.USAGE_ERROR


def describe_os_error(err: OSError) -> str:
    """An operating-system failure as a user reads it: the path and the reason."""
    reason = err.strerror or str(err)
    return f"{err.filename}: {reason}" if err.filename is not None else reason


class PyptoOSError(PyptoUsageError, OSError):
    """A path the user named that cannot be read, written or created; still an
    :class:`OSError`, so code that handles those handles it, and rendered as every other one
    is (:func:`describe_os_error`)."""

    def render(self) -> str:
        return describe_os_error(self)
