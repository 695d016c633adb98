"""Judging a case from its saved evidence: the oracle and the verdict vocabulary.

Room 1 of 9 (the lowest). It imports no room, only the top-level harness.errors and
harness.loopback. tests/unit/test_rooms.py checks this.
"""
