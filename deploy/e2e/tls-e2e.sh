#!/usr/bin/env bash
# TLS to both databases, as on RDS (rds.force_ssl=1) and Aurora MySQL
# (require_secure_transport=ON): a local PostgreSQL and MariaDB that refuse
# plain connections, with a server certificate from a test CA. For each:
# - a verified connection (sslmode=verify-full / ssl-mode=VERIFY_IDENTITY
#   with the right CA) works: `longtx migrate` and `longtx collect --once`;
# - the wrong CA is refused, and the error names the CA setting;
# - a plain connection is refused by the server, and the error names the
#   mode setting.
# Needs openssl, postgresql and mariadb-server (.ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

name=tls
# shellcheck source=deploy/e2e/lib.sh
source "$repo/deploy/e2e/lib.sh"
# Runs longtx, expecting success ("ok") or failure with text ("fail TEXT...").
expect() {
    local want=$1 text=$2; shift 2
    local out status=0
    out=$("$@" 2>&1) || status=$?
    if [ "$want" = ok ] && [ "$status" -ne 0 ]; then
        echo "tls: expected success: $*" >&2; echo "$out" >&2; return 1
    fi
    if [ "$want" = fail ]; then
        if [ "$status" -eq 0 ]; then echo "tls: expected a refusal: $*" >&2; echo "$out" >&2; return 1; fi
        if ! grep -qF -- "$text" <<<"$out"; then
            echo "tls: the error does not say \"$text\": $*" >&2; echo "$out" >&2; return 1
        fi
    fi
    echo "tls:   $want${text:+ ($text)}"
}

step "making a test CA, a server certificate for localhost, and a second CA"
cd "$work"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=longtx test CA" \
    -keyout ca.key -out ca.pem 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=someone else's CA" \
    -keyout other-ca.key -out other-ca.pem 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile server.ext -out server.pem 2>/dev/null
cd "$repo"

step "building longtx"
cargo build --quiet --locked -p longtx
longtx=${CARGO_TARGET_DIR:-$repo/target}/debug/longtx

read -r pg_port my_port < <(ports 2)

step "PostgreSQL with TLS required on 127.0.0.1:$pg_port"
mkdir -p "$work/pg" "$work/pgsock" "$work/pgtls"
cp "$work/server.pem" "$work/server.key" "$work/pgtls/"
chmod 600 "$work/pgtls/server.key"
touch "$work/postgres.log"
if [ "$(id -u)" = 0 ]; then chown -R postgres "$work/pg" "$work/pgsock" "$work/pgtls" "$work/postgres.log"; fi
as_postgres "$pg_bin/initdb" -D "$work/pg" -U app -A trust > "$work/pg-initdb.log" 2>&1
cat > "$work/pg/pg_hba.conf" <<EOF
local     all all                trust
hostssl   all all 127.0.0.1/32   trust
hostnossl all all 127.0.0.1/32   reject
EOF
as_postgres "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/postgres.log" -w \
    -o "-p $pg_port -k $work/pgsock -c listen_addresses=127.0.0.1 -c ssl=on -c ssl_cert_file=$work/pgtls/server.pem -c ssl_key_file=$work/pgtls/server.key" \
    start > /dev/null

pg_url="postgres://app@localhost:$pg_port/postgres"
step "longtx migrate (serve's DATABASE_URL)"
expect ok "" env DATABASE_URL="$pg_url?sslmode=verify-full&sslrootcert=$work/ca.pem" "$longtx" migrate
expect fail "sslrootcert" env DATABASE_URL="$pg_url?sslmode=verify-full&sslrootcert=$work/other-ca.pem" "$longtx" migrate
expect fail "requires TLS" env DATABASE_URL="$pg_url?sslmode=disable" "$longtx" migrate
step "longtx collect --once on PostgreSQL"
expect ok "" "$longtx" collect --once --dsn "$pg_url?sslmode=verify-full&sslrootcert=$work/ca.pem"
expect fail "sslrootcert" "$longtx" collect --once --dsn "$pg_url?sslmode=verify-full&sslrootcert=$work/other-ca.pem"
expect fail "requires TLS" "$longtx" collect --once --dsn "$pg_url?sslmode=disable"

step "MariaDB with require_secure_transport on 127.0.0.1:$my_port"
start_mariadb "$my_port" --ssl-ca="$work/ca.pem" --ssl-cert="$work/server.pem" --ssl-key="$work/server.key" \
    --require-secure-transport=ON
my <<'SQL'
CREATE USER 'collector'@'127.0.0.1' IDENTIFIED BY 'collector-pw';
GRANT PROCESS ON *.* TO 'collector'@'127.0.0.1';
GRANT SELECT ON performance_schema.* TO 'collector'@'127.0.0.1';
SQL
my_url="mysql://collector:collector-pw@localhost:$my_port/"
step "longtx collect --once on MariaDB"
expect ok "" "$longtx" collect --once --dsn "$my_url?ssl-mode=VERIFY_IDENTITY&ssl-ca=$work/ca.pem"
expect fail "ssl-ca" "$longtx" collect --once --dsn "$my_url?ssl-mode=VERIFY_IDENTITY&ssl-ca=$work/other-ca.pem"
# MariaDB answers "Access denied" here (MySQL 8: error 3159); either way the
# error names the setting.
expect fail "require_secure_transport" "$longtx" collect --once --dsn "$my_url?ssl-mode=DISABLED"
step "passed"
