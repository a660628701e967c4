#!/bin/sh
# First start: initdb into $PGDATA, the superuser's password from POSTGRES_PASSWORD or the file
# POSTGRES_PASSWORD_FILE names (a secret), the database POSTGRES_DB with pgvector and pg_trgm.
# Then PostgreSQL in the foreground, listening on every address with scram-sha-256 (trust only
# on its own socket). The variables are the official image's.
set -eu
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then
  password="$(cat "$POSTGRES_PASSWORD_FILE")"
else
  password="${POSTGRES_PASSWORD:-}"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "$password" ]; then
    echo "entrypoint: set POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE: the server listens beyond this container" >&2
    exit 1
  fi
  mkdir -p "$PGDATA"
  chmod 700 "$PGDATA"
  pwfile="$PGDATA.password"
  (umask 077 && printf '%s\n' "$password" > "$pwfile")
  initdb -D "$PGDATA" --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C --lc-ctype=C.UTF-8 --locale-provider=builtin --builtin-locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  printf 'host all all 0.0.0.0/0 scram-sha-256\nhost all all ::/0 scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/tmp" -w start >/dev/null
  if [ "$db" != "postgres" ]; then
    psql -h /tmp -U "$user" -d postgres -v ON_ERROR_STOP=1 -q -c "CREATE DATABASE \"$db\""
  fi
  psql -h /tmp -U "$user" -d "$db" -v ON_ERROR_STOP=1 -q \
    -c "CREATE EXTENSION IF NOT EXISTS vector" -c "CREATE EXTENSION IF NOT EXISTS pg_trgm"
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "entrypoint: initialized $PGDATA (database $db, user $user)" >&2
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp "$@"
