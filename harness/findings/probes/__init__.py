"""The probes: one module each, registered by name with ``harness.findings.base.register``."""
