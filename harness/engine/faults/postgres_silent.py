"""The Postgres link of the worker running the execution goes silent (sockets kept) while a
committed answer is held: its queries (the ledger update, the execution's own result) hang
with no error. Held for the stack's stall detection time; the heal closes the held
connections, so those queries fail and the pool connects anew (see ``toxic_link``).
"""

from harness.engine.faults.base import register
from harness.engine.faults.toxic_link import ToxicLink, silent

register("postgres_silent", lambda: ToxicLink(("target_postgres",), silent()))
