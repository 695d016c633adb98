"""concurrent_operator_retry: as ``operator_retry``, but two operators press "retry" on the
same failed execution at the same instant (their public API calls are released on one
barrier), as when two people on call see the same alert.

Proof: n8n's answers to both calls. n8n accepts both and starts two retry executions. When
they run the workflow (an origin marked ``crashed``, probe ``concurrent_operator_retry``, or a
node's failure) each charges again; only a workflow whose effect is keyed by the business event
is safe. When the stall sweep gave the origin up, both end at once with its error (see
``operator_retry``) and the re-send by hand follows.
"""

from __future__ import annotations

from harness.engine.deliveries.base import register
from harness.engine.deliveries.operator_retry import OperatorRetry


@register("concurrent_operator_retry")
class ConcurrentOperatorRetry(OperatorRetry):
    operators = 2

    def proof(self) -> str | None:
        # Both calls must have reached n8n: one answered call is a plain operator retry.
        answered = (self.fact or "").count("n8n started") + (self.fact or "").count("refused")
        return self.fact if answered >= self.operators else None
