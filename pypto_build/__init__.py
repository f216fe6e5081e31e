"""pypto-build: build-system plugin and kernel packaging service for PyPTO model packages."""

__version__ = "0.1.0"
