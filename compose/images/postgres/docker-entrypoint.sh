#!/bin/sh
# The subset of postgres:17's entrypoint the stack relies on.
set -eu
: "${PGDATA:=/var/lib/postgresql/data}"
if [ "${1#-}" != "$1" ]; then
  set -- postgres "$@"
fi
if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA"
  chown -R postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "Error: database is uninitialized and POSTGRES_PASSWORD is not set (as postgres:17)" >&2
    exit 1
  fi
  user="${POSTGRES_USER:-postgres}"
  pwfile="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth=scram-sha-256 -E UTF8 \
    --locale=C --no-sync >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.auto.conf"
  db="${POSTGRES_DB:-$user}"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\";" | postgres --single -D "$PGDATA" -j postgres >/dev/null
  fi
  echo "PostgreSQL init process complete; ready for start up."
fi
exec "$@"
