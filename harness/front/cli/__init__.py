"""Internal: the ``n8n-chaos`` command: install the real parts, bring a stack up or down, run cases.

One module per job: ``stack_commands`` (install, up, down), ``run_command`` (run, and
``stack_count``: how many stacks), ``offline`` (list, schema, report, show, recheck: they
start nothing), ``findings_command`` (findings, diff). The options a stack run shares with
pytest are declared in harness.front.options.
"""

from __future__ import annotations

import click

from harness.front.cli.explore_command import explore
from harness.front.cli.findings_command import diff, findings
from harness.front.cli.offline import list_cases, recheck, report, schema, show
from harness.front.cli.run_command import run
from harness.front.cli.stack_commands import down, install, up

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Chaos and fault-injection tests for n8n workflows in queue mode.

    Brings up a real n8n (main, workers, optional webhook processor) with PostgreSQL 17,
    Redis 7 and Toxiproxy on 127.0.0.1, then kills workers, drops responses and redelivers
    events to check that every business effect happened exactly once.

    \b
    Typical use:
      n8n-chaos install                 put n8n, Node, Postgres, Toxiproxy, mitmproxy in the cache
      n8n-chaos run                     the crash matrix on the bundled workflows
      n8n-chaos run -k payment_naive-retry-worker_kill-after_commit   one case by name
      n8n-chaos list                    every case and its expected verdicts
      n8n-chaos show CASE_ID            one saved case: verdict, why, proofs, timeline
      n8n-chaos recheck RUN_DIR         re-judge saved evidence with today's oracle
      n8n-chaos explore --workflows DIR find each workflow's crash windows, by node
      n8n-chaos explore --workflows DIR --changed-since origin/main   only the changed ones
      n8n-chaos up --workers 3          run a stack until Ctrl-C (prints its addresses)
      n8n-chaos down                    end the stacks started by `up`
      n8n-chaos findings                what n8n itself does under faults (probes, per version)
      n8n-chaos diff RUN_A RUN_B        probes' answers / cases' verdicts that differ
    Runs, logs and evidence: ./.n8n-chaos/runs/<run id>/ (kept after every run).
    Environment: N8N_CHAOS_CACHE (install cache), N8N_CHAOS_RUNS (run directories).
    """


for _command in (
    *(install, up, down, list_cases, schema, run, report, show, recheck),
    *(explore, findings, diff),
):
    main.add_command(_command)
