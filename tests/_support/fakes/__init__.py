"""Test doubles for tools the test machine does not have (clearly named as fakes)."""
