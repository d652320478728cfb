"""Tests of slimtensor-core (a package, so that test module names never clash with other suites)."""
