"""What the tests share: builders, fakes at process boundaries, servers on loopback, cases.

Tests import these as ``_support.<module>``: pytest runs in importlib mode with ``tests`` on the
import path (``pyproject.toml``), so no test folder's name (``plugin``, ``sim``, ``chip_build``,
the package's own subpackage names) ever becomes a top-level module that could shadow another.
"""
