"""The fault catalogue (the nemesis): WHAT breaks. One module per fault (or per family of
faults), each registering by name; ``harness.engine.registry`` finds the modules, so a new fault is
one new file here and nothing else."""

from harness.engine.faults.base import FAULTS, Fault, FaultContext, get_fault, known_faults

__all__ = ["FAULTS", "Fault", "FaultContext", "get_fault", "known_faults"]
