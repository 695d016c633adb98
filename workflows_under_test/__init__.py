"""The bundled workflows under test, shipped as package data: one folder per workflow with
its manifest.json, workflow.json and optional ledger.sql; ``_ledgers/`` holds the ledger
schemas several workflows share, each making its own tables with its manifest's
``ledger.prefix``. Nothing here runs; the harness finds the folders through
``importlib.resources.files("workflows_under_test")``."""
