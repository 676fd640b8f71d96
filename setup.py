"""Packaging's one computed part: every package under the four rooms, found by walking
them, named under `gradshard.` and mapped to its directory (pyproject.toml holds the rest).
tests/test_packaging.py builds the wheel and checks that every module is in it."""

from setuptools import find_packages, setup

ROOMS = ("pipeline", "cache", "service", "templates")
PACKAGES = find_packages(include=[f"{room}*" for room in ROOMS])

setup(packages=[f"gradshard.{p}" for p in PACKAGES],
      package_dir={f"gradshard.{room}": room for room in ROOMS})
