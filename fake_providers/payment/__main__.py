"""Command line: `python -m fake_providers.payment --port P [--control-port C] [--db PATH]`
(plus `--key-ttl SECONDS`, `--lenient`, `--stop-on-stdin-eof`).

`--port` alone is enough: the control port is P+1 (any free port when that one is taken) and
the ledger is a fresh file in a temporary folder; a stderr line says where each one is."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .config import DAY_SECONDS, ProviderConfig
from .server import run


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m fake_providers.payment",
        description="Fake idempotent payment provider for n8n-chaos (binds 127.0.0.1 only). "
        'Prints `READY {"port":..,"control_port":..,"pid":..}` on stdout when serving.',
    )
    parser.add_argument("--port", type=int, required=True, help="public API port (0: any free)")
    parser.add_argument(
        "--control-port",
        type=int,
        default=None,
        help="control API port (0: any free; default: --port + 1, or any free one if taken)",
    )
    parser.add_argument(
        "--smtp-port",
        type=int,
        default=0,
        help="the mail fake's SMTP port (default 0: any free; READY reports it as smtp_port)",
    )
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        help="SQLite ledger file (default: a new file in a temporary folder)",
    )
    parser.add_argument(
        "--key-ttl",
        type=float,
        default=DAY_SECONDS,
        metavar="SECONDS",
        help="idempotency key lifetime after completion (default 24 h)",
    )
    parser.add_argument(
        "--lenient", action="store_true", help="process POST /v1/charges without an Idempotency-Key"
    )
    parser.add_argument(
        "--stop-on-stdin-eof",
        action="store_true",
        help="shut down when stdin closes (the launching process died)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    db_path: Path = args.db or default_db_path()
    config = ProviderConfig(db_path=db_path, key_ttl_seconds=args.key_ttl, lenient=args.lenient)
    run(
        config,
        args.port,
        args.control_port,
        stop_on_stdin_eof=args.stop_on_stdin_eof,
        smtp_port=args.smtp_port,
    )


def default_db_path() -> Path:
    """A fresh ledger per start: a hand-started provider never shares (or inherits) another
    run's commits."""
    return Path(tempfile.mkdtemp(prefix="n8n-chaos-provider-")) / "ledger.db"


if __name__ == "__main__":
    main()
