"""Interception of every outbound request of the n8n processes (mitmproxy, per run).

``launcher`` is the harness side (files, CA, process, env); ``server`` and ``addon`` run in
the proxy process; ``config`` and ``journal`` are read by both.
"""

from harness.stack.intercept.journal import JournalEntry, read_journal
from harness.stack.intercept.launcher import InterceptProxy

__all__ = ["InterceptProxy", "JournalEntry", "read_journal"]
