"""The fault catalogue (the nemesis). Each module registers its faults by name; importing this
package loads them all. A new fault is one new module here plus its line below."""

from harness.faults import (  # noqa: F401 - imported for their registrations
    link_outage,
    main_kill,
    no_fault,
    provider_fault,
    worker_kill,
    worker_pause,
)
from harness.faults.base import FAULTS, Fault, FaultContext, get_fault, known_faults

__all__ = ["FAULTS", "Fault", "FaultContext", "get_fault", "known_faults"]
