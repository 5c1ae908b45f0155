#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests and CI: a new cluster in a temporary folder, listening on a
# free loopback port only (unix sockets in the folder, never the system's), stopped and removed
# at the end.
#
#   eval "$(Tests/support/postgres.sh start)"   # starts it; prints the exports below
#   Tests/support/postgres.sh url               # the URL again (needs RECEIPTDASH_PG_DIR)
#   Tests/support/postgres.sh restart           # a fast restart on the same port (connection loss)
#   Tests/support/postgres.sh down | up         # an outage: stop the server, keep its folder; start it again
#   Tests/support/postgres.sh stop              # stops it and removes the folder
#
# `start` prints, for eval:
#   RECEIPTDASH_PG_DIR             the folder (cluster, sockets, log, pgpass)
#   RECEIPTDASH_TEST_POSTGRES_URL  postgres://receiptdash@127.0.0.1:PORT/receiptdash_test
#   PGPASSFILE                     a 0600 pgpass file in the folder holding the test user's password
#   RECEIPTDASH_TEST_POSTGRES_CA   a throwaway CA (PEM) whose certificate the server presents
#                                  for TLS, made for the name `localhost` only (not 127.0.0.1,
#                                  so a host-name mismatch can be tested); set when openssl exists
# The password is random, never in the URL nor on a command line. The test user `receiptdash`
# owns `receiptdash_test` and may create databases (each test makes its own). Authentication
# over TCP is scram-sha-256; fsync is left on (the durability the store promises is real).
#
# initdb refuses to run as root: as root the cluster belongs to the `postgres` user (runuser).
set -euo pipefail

pg_bin() {
  if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return; fi
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  if [ -n "$found" ] && [ -x "$found/initdb" ]; then echo "$found"; return; fi
  if command -v initdb >/dev/null; then dirname "$(command -v initdb)"; return; fi
  echo "postgres.sh: no PostgreSQL server found (apt-get install -y postgresql)" >&2
  exit 1
}

# Runs a server program as the cluster's owner.
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  if command -v python3 >/dev/null; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
    return
  fi
  local port
  for _ in $(seq 1 200); do
    port=$((20000 + RANDOM % 30000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
  done
  echo "postgres.sh: no free port found" >&2
  exit 1
}

need_dir() {
  if [ -z "${RECEIPTDASH_PG_DIR:-}" ] || [ ! -d "$RECEIPTDASH_PG_DIR/data" ]; then
    echo "postgres.sh: RECEIPTDASH_PG_DIR does not name a running test server (eval \"\$($0 start)\" first)" >&2
    exit 1
  fi
}

url_of() { echo "postgres://receiptdash@127.0.0.1:$(cat "$1/port")/receiptdash_test"; }

start() {
  local bin dir port password pwfile
  bin=$(pg_bin)
  dir=$(mktemp -d "${TMPDIR:-/tmp}/receiptdash-pg.XXXXXX")
  chmod 0711 "$dir"  # the owner of the cluster must reach data/ and sockets/
  mkdir "$dir/data" "$dir/sockets"
  password=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  pwfile="$dir/data.pw"
  (umask 077 && printf '%s\n' "$password" >"$pwfile")
  if [ "$(id -u)" = 0 ]; then chown postgres: "$dir/data" "$dir/sockets" "$pwfile"; fi
  chmod 0700 "$dir/data"

  # The superuser is `receiptdash` itself: the tests create and drop a database each.
  as_owner "$bin/initdb" -D "$dir/data" -U receiptdash --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    exit 1
  }
  rm -f "$pwfile"

  port=$(free_port)
  echo "$port" >"$dir/port"
  # TLS beside plain text: a CA made for this server, its certificate for `localhost`.
  local tls=""
  if command -v openssl >/dev/null; then
    mkdir "$dir/tls"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=receiptdash test CA" \
      -keyout "$dir/tls/ca.key" -out "$dir/tls/ca.pem" >/dev/null 2>&1
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
      -keyout "$dir/tls/server.key" -out "$dir/tls/server.csr" >/dev/null 2>&1
    printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$dir/tls/ext"
    openssl x509 -req -in "$dir/tls/server.csr" -CA "$dir/tls/ca.pem" -CAkey "$dir/tls/ca.key" -CAcreateserial -days 2 \
      -extfile "$dir/tls/ext" -out "$dir/tls/server.pem" >/dev/null 2>&1
    rm -f "$dir/tls/ca.key" "$dir/tls/server.csr"
    chmod 0600 "$dir/tls/server.key"
    chmod 0755 "$dir/tls"
    chmod 0644 "$dir/tls/ca.pem" "$dir/tls/server.pem"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$dir/tls/server.key" "$dir/tls/server.pem"; fi
    tls="ssl = on
ssl_cert_file = '$dir/tls/server.pem'
ssl_key_file = '$dir/tls/server.key'"
  fi
  cat >>"$dir/data/postgresql.conf" <<EOF
# receiptdash test server
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir/sockets'
max_connections = 400
fsync = on
synchronous_commit = on
log_min_messages = warning
$tls
EOF
  touch "$dir/server.log"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$dir/server.log"; fi
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null || {
    cat "$dir/server.log" >&2
    exit 1
  }
  as_owner "$bin/psql" -h "$dir/sockets" -p "$port" -U receiptdash -d postgres -v ON_ERROR_STOP=1 -qAt \
    -c "CREATE DATABASE receiptdash_test OWNER receiptdash" >/dev/null

  # The password for the tests, where libpq (and receiptdash) look: a 0600 pgpass file.
  (umask 077 && printf '127.0.0.1:%s:*:receiptdash:%s\nlocalhost:%s:*:receiptdash:%s\n' "$port" "$password" "$port" "$password" >"$dir/pgpass")
  echo "export RECEIPTDASH_PG_DIR='$dir'"
  echo "export RECEIPTDASH_TEST_POSTGRES_URL='$(url_of "$dir")'"
  echo "export PGPASSFILE='$dir/pgpass'"
  if [ -n "$tls" ]; then echo "export RECEIPTDASH_TEST_POSTGRES_CA='$dir/tls/ca.pem'"; fi
  echo "postgres.sh: PostgreSQL $("$bin/postgres" --version | awk "{print \$3}") at $(url_of "$dir") ($dir)" >&2
}

stop() {
  local dir=${1:-${RECEIPTDASH_PG_DIR:-}}
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then return 0; fi
  case "$dir" in
    */receiptdash-pg.*) ;;
    *) echo "postgres.sh: $dir is not a folder this script made" >&2; exit 1 ;;
  esac
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$(pg_bin)/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null || true
  fi
  rm -rf "$dir"
}

restart() {
  need_dir
  as_owner "$(pg_bin)/pg_ctl" -D "$RECEIPTDASH_PG_DIR/data" -l "$RECEIPTDASH_PG_DIR/server.log" -m fast -w -t 60 restart >/dev/null
}

# Stops the server but keeps its folder (an outage), and starts it again on the same port.
down() {
  need_dir
  as_owner "$(pg_bin)/pg_ctl" -D "$RECEIPTDASH_PG_DIR/data" -m fast -w -t 60 stop >/dev/null
}

up() {
  need_dir
  as_owner "$(pg_bin)/pg_ctl" -D "$RECEIPTDASH_PG_DIR/data" -l "$RECEIPTDASH_PG_DIR/server.log" -w -t 60 start >/dev/null
}

case "${1:-}" in
  start) start ;;
  down) down ;;
  up) up ;;
  stop) stop "${2:-}" ;;
  restart) restart ;;
  url) need_dir; url_of "$RECEIPTDASH_PG_DIR" ;;
  *)
    echo "usage: $0 start|stop [DIR]|restart|down|up|url" >&2
    exit 2
    ;;
esac
