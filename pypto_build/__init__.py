"""pypto-build: build-system plugin and kernel packaging service for PyPTO model packages."""

__version__ = "0.1.0"
#: The command's name, as it names itself in messages and in ``--version``.
PROG = "pypto-build"
