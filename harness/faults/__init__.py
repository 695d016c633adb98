"""The fault catalogue. Each module registers its faults by name; importing this package
loads them all. A new fault is one new module here plus its line below."""

from harness.faults import (  # noqa: F401 - imported for their registrations
    delivery_faults,
    link_outage,
    main_kill,
    no_fault,
    operator_retry,
    provider_fault,
    response_drop,
    worker_kill,
    worker_pause,
)
from harness.faults.base import Fault, FaultContext, get_fault, known_faults

__all__ = ["Fault", "FaultContext", "get_fault", "known_faults"]
