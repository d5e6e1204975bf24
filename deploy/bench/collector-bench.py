#!/usr/bin/env python3
"""Load generator and bench for the MySQL/MariaDB lock-holder query of
`longtx collect` (crates/collector/src/mysql.rs, HOLDERS_SQL), side by side
with the reference operation's query (the same joins, order left to the
optimizer, as longtx shipped them first).

Starts a private MariaDB on 127.0.0.1 and a unix socket in a temporary
directory (as deploy/e2e/collector-e2e.sh does: performance_schema ON, the
MDL instrument and the events_statements_current consumer enabled), creates
T tables, opens N sessions of which M hold an open transaction whose
statement carries a Rails Query Logs comment (the rest idle), then polls
each query variant (--variants, default old,new) on its own `collector`
session (PROCESS + SELECT on performance_schema, READ ONLY, over TCP, the
statement server-side prepared with `?` bound, as sqlx runs it) and prints
per variant: median / max / min poll time over --polls polls, the server's
CPU time per poll, Handler_read*/Rows_read deltas per poll; and whether every
poll returned exactly the holders opened (multiset of (table, statement),
durations within 2 s) and the same rows as the first variant. Exit status 1
when a check fails or a poll errors.

Bounded: --deadline (default 900 s) ends the run with SIGALRM; the server
is started with PR_SET_PDEATHSIG, so it dies with this process even on
SIGKILL; the temp dir is removed at exit (unless --keep).

    python3 deploy/bench/collector-bench.py --sessions 1000 --holders 300 --tables 200 \
        --longtx target/release/longtx

(`pymysql` from PyPI or Debian's python3-pymysql.) With --longtx, the real
`longtx collect --once` also polls the same state, and its holders are
checked against the sessions opened.

Needs mariadb-server (mariadbd, mysql_install_db) on PATH, run as root or as
an ordinary user (the server runs as the current user).
"""

import argparse
import ctypes
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter

import pymysql

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from collect_once import collect_once, describe, open_waiters  # noqa: E402

DDL_IN_PROGRESS = "ddl_in_progress"

# The reference operation's query: the joins as longtx shipped them first
# (crates/collector/src/mysql.rs before STRAIGHT_JOIN), order left to the
# optimizer.
OLD_SQL = (
    "SELECT "
    "CAST(CASE WHEN ml.OBJECT_NAME LIKE '#sql-%' THEN ? ELSE ml.OBJECT_NAME END AS CHAR) AS table_name, "
    "CAST(COALESCE(esc.SQL_TEXT, it.trx_query, '') AS CHAR) AS statement, "
    "CAST(TIMESTAMPDIFF(SECOND, it.trx_started, NOW()) AS SIGNED) AS seconds "
    "FROM performance_schema.metadata_locks ml "
    "JOIN performance_schema.threads th ON ml.OWNER_THREAD_ID = th.THREAD_ID "
    "JOIN information_schema.innodb_trx it ON th.PROCESSLIST_ID = it.trx_mysql_thread_id "
    "LEFT JOIN performance_schema.events_statements_current esc ON th.THREAD_ID = esc.THREAD_ID "
    "WHERE ml.OBJECT_TYPE = 'TABLE' AND ml.LOCK_STATUS = 'GRANTED' "
    "AND ml.OBJECT_SCHEMA NOT IN ('information_schema', 'performance_schema', 'mysql', 'sys') "
    "LIMIT 10000"
)


def shipped_sql(name):
    """A query of crates/collector/src/mysql.rs as it is now (`HOLDERS_SQL`,
    or `WAITING_SQL`, which longtx collect runs after the holders), so the
    bench always measures what ships."""
    here = os.path.dirname(os.path.abspath(__file__))
    source = open(os.path.join(here, "../../crates/collector/src/mysql.rs")).read()
    body = re.search(rf'const {name}: &str = "(.*?)";', source, re.S).group(1)
    return re.sub(r"\\\n\s*", "", body)


NEW_SQL = shipped_sql("HOLDERS_SQL")
WAITING_SQL = shipped_sql("WAITING_SQL")

# MariaDB only (MySQL 8 has no such variable and hash-joins by itself):
# lets the optimizer use hash joins (BNLH) on these index-less tables.
# The collector runs it once per connection, in its `mariadb` branch.
MARIADB_SESSION = ["SET SESSION join_cache_level = 4"]

# name -> (SQL, extra session statements on MariaDB). Each variant polls on
# its own collector connection, set up as mysql.rs does plus the extras.
VARIANTS = {
    "reference": (OLD_SQL, []),
    "straight": (NEW_SQL, []),
    "longtx": (NEW_SQL, MARIADB_SESSION),
    # The second query of a longtx poll: the sessions waiting behind holders.
    "waiting": (WAITING_SQL, MARIADB_SESSION),
}

# Rails Query Logs comments, in the formats crates/core/src/query_logs.rs reads.
COMMENTS = [
    "/*action='create',controller='api/v1/rubygems'*/",
    "/*namespaced_controller='Api::V1::RubygemsController',action='create'*/",
    "/*application:Shop,namespaced_controller:admin/orders,action:update*/",
    "/*controller='x',action='y'*/",
    "/*sidekiq_worker:Billing::InvoiceSyncWorker,application:Shop*/",
    "/*action='update',namespaced_controller='admin%2Fusers'*/",
]

STATUS_KEYS = (
    "Handler_read_first", "Handler_read_key", "Handler_read_next", "Handler_read_rnd",
    "Handler_read_rnd_next", "Handler_tmp_write", "Handler_tmp_update", "Rows_read",
    "Rows_tmp_read", "Created_tmp_tables",
)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def die_with_parent():
    # PR_SET_PDEATHSIG = 1: the server gets SIGKILL when this process dies.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)
    os.setpgrp()


class Server:
    def __init__(self, work, max_connections):
        self.work = work
        self.sock = os.path.join(work, "mysql.sock")
        self.port = free_port()
        self.proc = None
        self.max_connections = max_connections
        # mysql_install_db --user=X makes X@localhost with socket
        # authentication, which admits only the OS user X: connect as the
        # current user (root, or a CI runner's user), never as root.
        self.user = subprocess.check_output(["id", "-un"], text=True).strip()

    def start(self):
        user = self.user
        datadir = os.path.join(self.work, "data")
        with open(os.path.join(self.work, "install.log"), "w") as out:
            subprocess.run(
                ["mysql_install_db", "--no-defaults", f"--user={user}", f"--datadir={datadir}",
                 "--auth-root-authentication-method=socket", "--skip-test-db"],
                stdout=out, stderr=subprocess.STDOUT, check=True, timeout=120)
        self.log = open(os.path.join(self.work, "mariadb.log"), "w")
        self.proc = subprocess.Popen(
            ["mariadbd", "--no-defaults", f"--user={user}", f"--datadir={datadir}",
             f"--socket={self.sock}", f"--port={self.port}", "--bind-address=127.0.0.1",
             "--skip-name-resolve", f"--pid-file={self.work}/mysql.pid",
             "--performance-schema=ON",
             "--performance-schema-instrument=wait/lock/metadata/sql/mdl=ON",
             "--performance-schema-consumer-events-statements-current=ON",
             f"--max-connections={self.max_connections}",
             "--innodb-buffer-pool-size=128M", "--skip-log-bin",
             # A client killed mid-run cannot leave sessions behind for long.
             "--wait-timeout=1800"],
            stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        deadline = time.time() + 60
        while True:
            try:
                self.root().close()
                return
            except pymysql.err.OperationalError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("MariaDB did not start; see " + self.log.name)
                time.sleep(0.3)

    def root(self, db=None):
        return pymysql.connect(unix_socket=self.sock, user=self.user, database=db,
                               autocommit=True, connect_timeout=10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def setup_schema(server, tables, decoys):
    c = server.root()
    cur = c.cursor()
    cur.execute("CREATE DATABASE app")
    for k in range(tables):
        cur.execute(f"CREATE TABLE app.t_{k} (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
        cur.execute(f"INSERT INTO app.t_{k} VALUES (1, 1), (2, 2), (3, 3)")
    if decoys:
        cur.execute("CREATE TABLE app.m_decoy (id INT PRIMARY KEY) ENGINE=MyISAM")
        cur.execute("INSERT INTO app.m_decoy VALUES (1)")
    # What the collector needs, and nothing more (as in the e2e test).
    cur.execute("CREATE USER 'collector'@'127.0.0.1' IDENTIFIED BY 'collector-pw'")
    cur.execute("GRANT PROCESS ON *.* TO 'collector'@'127.0.0.1'")
    cur.execute("GRANT SELECT ON performance_schema.* TO 'collector'@'127.0.0.1'")
    c.close()


def open_sessions(server, sessions, holders, tables, decoys, tables_per_holder, spread):
    """M holders (BEGIN; SELECT ... /*comment*/ left open), `decoys` sessions
    holding an MDL on a MyISAM table without an InnoDB transaction (must not
    be reported), the rest idle. Holders start `spread` seconds apart in
    total so their durations differ. Returns the connections and what the
    holders query must return: (table, statement, started) per held table lock."""
    conns = []
    expected = []
    for i in range(sessions):
        c = pymysql.connect(unix_socket=server.sock, user=server.user, database="app",
                            autocommit=True, connect_timeout=10)
        cur = c.cursor()
        if i < holders:
            cur.execute("BEGIN")
            started = time.time()  # InnoDB starts the transaction at the first read
            held = []
            for j in range(tables_per_holder):
                k = (i + j * 97) % tables
                comment = COMMENTS[(i + j) % len(COMMENTS)]
                # Shared row locks (compatible between holders of one table).
                locking = " LOCK IN SHARE MODE" if i % 2 else ""
                sql = f"SELECT id, v FROM t_{k} WHERE id = 1 OR v = {i}{locking} {comment}"
                cur.execute(sql)
                cur.fetchall()
                held.append(f"t_{k}")
            # events_statements_current shows the last statement; every table
            # this holder locked is reported with it.
            expected += [(t, sql, started) for t in dict.fromkeys(held)]
            if spread and holders > 1:
                time.sleep(spread / holders)
        elif i < holders + decoys:
            cur.execute("BEGIN")
            cur.execute("SELECT id FROM m_decoy /*controller='decoy',action='myisam'*/")
            cur.fetchall()
        else:
            cur.execute("SELECT 1 /* idle */")
            cur.fetchall()
        conns.append(c)
        if (i + 1) % 250 == 0:
            log(f"  {i + 1} sessions open")
    return conns, expected


def collector(server, statement_timeout, extra):
    """A polling session as mysql.rs sets it up (over TCP, as the collector
    user), plus the variant's extra statements."""
    c = pymysql.connect(host="127.0.0.1", port=server.port, user="collector",
                        password="collector-pw", autocommit=True, connect_timeout=10,
                        read_timeout=max(60, int(statement_timeout) + 30))
    cur = c.cursor()
    for statement in [f"SET SESSION max_statement_time = {statement_timeout}",
                      "SET SESSION TRANSACTION READ ONLY",
                      "SET SESSION lock_wait_timeout = 5"] + extra:
        cur.execute(statement)
    cur.execute("SET @ddl = %s", (DDL_IN_PROGRESS,))
    return c


def status(cur):
    cur.execute("SHOW SESSION STATUS WHERE Variable_name IN (%s)" % ",".join(["%s"] * len(STATUS_KEYS)),
                STATUS_KEYS)
    return {k: int(v) for k, v in cur.fetchall()}


def run_poll(server, cur):
    """One poll: the prepared statement `q` executed with `?` bound, as sqlx
    runs it. Returns (rows, seconds, server CPU seconds, status deltas, error,
    wall-clock start)."""
    before = status(cur)
    cpu0 = server.cpu_seconds()
    start = time.time()
    t0 = time.perf_counter()
    try:
        cur.execute("EXECUTE q USING @ddl" if cur.uses_ddl else "EXECUTE q")
        rows = cur.fetchall()
        err = None
    except pymysql.err.MySQLError as e:
        rows, err = None, e
    elapsed = time.perf_counter() - t0
    cpu = server.cpu_seconds() - cpu0
    after = status(cur)
    delta = {k: after[k] - before.get(k, 0) for k in after}
    return rows, elapsed, cpu, delta, err, start


def compare(a_poll, b_poll):
    """Same multiset of (table, statement); each matched pair's seconds equal
    once the gap between the two polls' starts is taken off (+-1 s for
    TIMESTAMPDIFF's whole seconds)."""
    a_rows, b_rows = a_poll[0], b_poll[0]
    shift = a_poll[5] - b_poll[5]
    a = sorted(a_rows, key=lambda r: (r[0], r[1], r[2]))
    b = sorted(b_rows, key=lambda r: (r[0], r[1], r[2]))
    ka, kb = Counter((r[0], r[1]) for r in a), Counter((r[0], r[1]) for r in b)
    if ka != kb:
        return False, f"only in one: {list((ka - kb).items())[:3]} / {list((kb - ka).items())[:3]}"
    worst = max((abs((x[2] - y[2]) - shift) for x, y in zip(a, b)), default=0)
    if worst > 1.5:
        return False, f"seconds differ by {worst:.1f} s beyond the polls' gap"
    return True, f"{len(a)} rows equal"


def expected_check(poll, expected):
    """The rows are exactly the holders opened (tables and statements), with
    the durations they have had (+-2 s)."""
    rows, start = poll[0], poll[5]
    got = Counter((r[0], r[1]) for r in rows)
    want = Counter((t, s) for t, s, _ in expected)
    if got != want:
        return False, (f"vs the holders opened: {sum((want - got).values())} missing, "
                       f"{sum((got - want).values())} extra, e.g. {list((want - got))[:2]} / {list((got - want))[:2]}")
    started = {(t, s): st for t, s, st in expected}
    worst = max((abs(r[2] - (start - started[(r[0], r[1])])) for r in rows), default=0)
    if worst > 2:
        return False, f"a duration is off by {worst:.1f} s"
    return True, f"{len(rows)} rows = the {len(expected)} held table locks opened"


def explain(cur, sql, path):
    lit = sql.replace("?", f"'{DDL_IN_PROGRESS}'", 1)
    out = {}
    cur.execute("EXPLAIN " + lit)
    cols = [d[0] for d in cur.description]
    out["explain"] = [dict(zip(cols, r)) for r in cur.fetchall()]
    t0 = time.perf_counter()
    cur.execute("ANALYZE FORMAT=JSON " + lit)
    out["analyze_seconds"] = time.perf_counter() - t0
    out["analyze"] = json.loads(cur.fetchall()[0][0])
    with open(path, "w") as f:
        json.dump(out, f, indent=1, default=str)
    return out["explain"]


def summary(label, results):
    times = [r[1] for r in results]
    cpus = [r[2] for r in results]
    errs = [r[4] for r in results if r[4] is not None]
    med = {k: statistics.median(r[3].get(k, 0) for r in results) for k in STATUS_KEYS}
    nrows = next((len(r[0]) for r in results if r[0] is not None), "ERR")
    line = (f"{label:<9} median {statistics.median(times) * 1000:8.1f} ms  max {max(times) * 1000:8.1f} ms"
            f"  min {min(times) * 1000:8.1f} ms  server CPU/poll median {statistics.median(cpus) * 1000:6.0f} ms"
            f"  rows {nrows}  errors {len(errs)}{(' (' + str(errs[0]) + ')') if errs else ''}")
    handlers = "          per poll: " + ", ".join(f"{k}={int(v)}" for k, v in med.items() if v)
    return line, handlers, med


def check_binary(binary, server, expected):
    """`longtx collect --once` on the same state: its tables are those the
    opened holders lock, and it says how long its poll took."""
    ran, tables, poll, wall, stderr = collect_once(binary, f"mysql://collector:collector-pw@127.0.0.1:{server.port}/")
    if not ran:
        return (False, f"longtx collect --once failed: {stderr[-500:]}")
    want = {t for (t, _stmt, _started) in expected}
    print(describe(poll, wall, tables))
    # At most 500 tables are reported (the rest fold into `other`).
    ok = tables == want if len(want) <= 500 else len(tables) == 500
    return (ok, f"tables {len(tables)} vs {len(want)} opened" + ("" if ok else f"; missing {sorted(want - tables)[:5]}"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=1000, help="sessions in all (holders + decoys + idle)")
    p.add_argument("--holders", type=int, default=300, help="sessions holding an open transaction")
    p.add_argument("--tables", type=int, default=200)
    p.add_argument("--tables-per-holder", type=int, default=1)
    p.add_argument("--decoys", type=int, default=0,
                   help="sessions holding an MDL on a MyISAM table, without an InnoDB transaction")
    p.add_argument("--waiters", type=int, default=0,
                   help="more sessions, blocked behind the holders: an ALTER TABLE, then reads queued behind it")
    p.add_argument("--polls", type=int, default=20)
    p.add_argument("--spread", type=float, default=3.0, help="seconds over which holders start")
    p.add_argument("--statement-timeout", type=float, default=60.0,
                   help="max_statement_time of the polling sessions, s (the collector uses 5)")
    p.add_argument("--variants", default="reference,longtx",
                   help="comma-separated, of: " + ", ".join(VARIANTS) +
                   " (reference = the reference operation's joins; straight = longtx's query"
                   " without the hash-join setting; longtx = the query and session longtx uses)")
    p.add_argument("--longtx", metavar="BINARY",
                   help="also run `BINARY collect --once` on the same state and check its holders")
    p.add_argument("--explain", metavar="DIR", help="write EXPLAIN + ANALYZE FORMAT=JSON of each variant there")
    p.add_argument("--deadline", type=float, default=900.0, help="the whole run stops after this many seconds")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (server log)")
    p.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    args = p.parse_args()
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    if not names or any(n not in VARIANTS for n in names):
        p.error(f"--variants: choose from {', '.join(VARIANTS)}")
    if args.holders + args.decoys > args.sessions:
        p.error("--holders + --decoys must be <= --sessions")

    def on_alarm(*_):
        raise TimeoutError(f"deadline of {args.deadline} s reached")
    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.alarm(int(args.deadline))

    work = tempfile.mkdtemp(prefix="longtx-mdl-bench.")
    os.chmod(work, 0o755)
    server = Server(work, args.sessions + args.waiters + 50)
    conns = []
    ok = True
    try:
        t0 = time.time()
        server.start()
        root = server.root()
        rc = root.cursor()
        rc.execute("SELECT VERSION()")
        version = rc.fetchone()[0]
        log(f"MariaDB {version} on 127.0.0.1:{server.port} in {work} ({time.time() - t0:.1f} s)")
        setup_schema(server, args.tables, args.decoys)
        t1 = time.time()
        conns, expected = open_sessions(server, args.sessions, args.holders, args.tables,
                                        args.decoys, args.tables_per_holder, args.spread)
        log(f"{len(conns)} sessions open ({args.holders} holders, {args.decoys} decoys) in {time.time() - t1:.1f} s")
        if args.waiters:
            conns += open_waiters(
                lambda: pymysql.connect(unix_socket=server.sock, user=server.user, database="app",
                                        autocommit=True, connect_timeout=10),
                args.waiters, args.holders, args.tables,
                lambda w, table: f"ALTER TABLE {table} ADD COLUMN w{w} INT")
            deadline = time.time() + 60
            while True:
                rc.execute("SELECT COUNT(*) FROM performance_schema.metadata_locks WHERE LOCK_STATUS = 'PENDING'")
                pending = rc.fetchone()[0]
                if pending >= args.waiters or time.time() > deadline:
                    break
                time.sleep(0.2)
            log(f"{args.waiters} waiters opened, {pending} pending metadata locks")
        rc.execute("SELECT (SELECT COUNT(*) FROM performance_schema.metadata_locks),"
                   " (SELECT COUNT(*) FROM performance_schema.threads),"
                   " (SELECT COUNT(*) FROM performance_schema.events_statements_current),"
                   " (SELECT COUNT(*) FROM information_schema.innodb_trx)")
        counts = dict(zip(["metadata_locks", "threads", "events_statements_current", "innodb_trx"], rc.fetchone()))
        rc.execute("SHOW GLOBAL STATUS LIKE 'Performance_schema%lost'")
        lost = {k: int(v) for k, v in rc.fetchall() if int(v)}
        log(f"table sizes: {counts}; performance_schema lost: {lost or 'none'}")
        if lost:
            log("WARNING: performance_schema lost instruments: results may be incomplete")

        curs = {}
        for n in names:
            sql, extra = VARIANTS[n]
            c = collector(server, args.statement_timeout, extra)
            conns.append(c)
            curs[n] = c.cursor()
            curs[n].uses_ddl = "?" in sql
            curs[n].execute("PREPARE q FROM %s", (sql,))
        if args.explain:
            os.makedirs(args.explain, exist_ok=True)
            for n in names:
                plan = explain(curs[n], VARIANTS[n][0], os.path.join(args.explain, f"{n}-{args.sessions}-{args.holders}.json"))
                log(f"EXPLAIN {n}:")
                for r in plan:
                    log(f"   {r['table']:<6} type={r['type']:<8} rows={r['rows']!s:<6} {r['Extra'] or ''}")
        results = {n: [] for n in names}
        checks = []
        for i in range(args.polls):
            got = {}
            order = names if i % 2 == 0 else names[::-1]  # alternate who goes first
            for n in order:
                got[n] = run_poll(server, curs[n])
                results[n].append(got[n])
            for n in names:
                if n == "waiting":
                    if got[n][0] is not None:
                        seen = len(got[n][0])
                        checks.append((n, "vs opened", seen == args.waiters,
                                       f"{seen} waiting rows, {args.waiters} waiters opened"))
                    continue
                if got[n][0] is not None:
                    checks.append((n, "vs opened") + expected_check(got[n], expected))
                    if n != names[0] and names[0] != "waiting" and got[names[0]][0] is not None:
                        checks.append((n, "vs " + names[0]) + compare(got[names[0]], got[n]))
            log(f"  poll {i + 1}: " + "  ".join(f"{n} {got[n][1] * 1000:.0f} ms" for n in names))

        print(f"MariaDB {version}: {args.sessions} sessions, {args.holders} holders, {args.decoys} decoys, "
              f"{args.tables} tables, {args.tables_per_holder} table(s) per holder, {args.polls} polls")
        print(f"  sizes: {counts}")
        figures = {"version": version, "args": vars(args), "counts": counts, "lost": lost}
        for n in names:
            line, handlers, med = summary(f"  {n}", results[n])
            print(line)
            print(handlers)
            figures[n] = {"median_s": statistics.median(r[1] for r in results[n]),
                          "max_s": max(r[1] for r in results[n]),
                          "times_s": [r[1] for r in results[n]],
                          "cpu_s": [r[2] for r in results[n]],
                          "errors": [str(r[4]) for r in results[n] if r[4] is not None],
                          "status_delta_median": med}
        if "longtx" in names and "waiting" in names:
            whole = [a[1] + b[1] for a, b in zip(results["longtx"], results["waiting"])]
            print(f"  a whole longtx poll (holders + waiting): median {statistics.median(whole) * 1000:.1f} ms, "
                  f"max {max(whole) * 1000:.1f} ms")
            figures["whole_poll_median_s"] = statistics.median(whole)
        if args.longtx:
            checks.append(("longtx collect --once", "vs opened") + check_binary(args.longtx, server, expected))
        bad = [c for c in checks if not c[2]]
        ok = not bad and all(r[4] is None for rs in results.values() for r in rs)
        print(f"  equality: {len(checks) - len(bad)}/{len(checks)} checks passed"
              + (f"; first failure: {bad[0]}" if bad else
                 f" (each poll of each variant = the holders opened; each variant = {names[0]})"))
        figures["checks"] = len(checks)
        figures["checks_failed"] = [list(c) for c in bad]
        if args.json:
            with open(args.json, "w") as f:
                json.dump(figures, f, indent=1)
    finally:
        signal.alarm(0)
        for c in conns:
            try:
                c.close()
            except Exception:
                pass
        server.stop()
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
