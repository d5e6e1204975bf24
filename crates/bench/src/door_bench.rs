//! door-bench: `longtx serve` (the release binary, as a child process)
//! under a hostile network, measured from outside.
//!
//! 1. Slow clients: `--slow-header` connections that send half their
//!    headers and then a header line a second, and `--slow-body`
//!    connections that send a forged GitHub delivery's headers (a
//!    well-formed signature, so longtx must read the body to refuse it)
//!    and then a byte of body every half second. Each reconnects as soon
//!    as longtx closes it. Alongside, authorised Alertmanager alerts at
//!    `--rate` per second for `--seconds`: every one must be answered 200,
//!    with p99 under 100 ms.
//! 2. Large bodies: `--large` connections at once, each a forged GitHub
//!    delivery of `--large-mib` MiB sent at full speed. longtx's resident
//!    memory must grow by less than 100 MB at the peak and come back
//!    within 16 MiB of where it started within 60 s.
//!
//! 3. Starvation: `--starving` forged deliveries each declaring 5 MiB and
//!    sending 6 kB/s (as long as the request deadline lets them), beside
//!    genuine signed GitHub pings at 10/s: every ping answered, p99 under
//!    100 ms (they once took 8.5-10 s, at GitHub's delivery timeout,
//!    because the forged ones reserved the body budget by their declared
//!    size).
//! 4. After the slow clients (still connected), a new alert's job must be
//!    dispatched (a dry run: no GitHub) within 5 s: the dispatcher lives on
//!    when descriptors ran out.
//!
//! `--nofile N` starts longtx with an open-files limit of N (soft and
//! hard), as `ulimit -n N` would: at 1024 with 2,000 slow clients it runs
//! out of descriptors, and must still answer every authorised alert.
//!
//! Run: `cargo build --release -p longtx -p longtx-bench && target/release/door-bench`
//! (defaults: the sizes of issue 29; `--small` for CI's smaller run).

mod help;
use anyhow::{bail, Context};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOKEN: &str = "door-bench-token";
const SECRET: &str = "door-bench-secret";
const MIB: usize = 1024 * 1024;

struct Settings {
    slow_header: usize,
    slow_body: usize,
    rate: u64,
    seconds: u64,
    large: usize,
    large_mib: usize,
    longtx: Option<PathBuf>,
    nofile: Option<u64>,
    starving: usize,
}

fn parse_args() -> anyhow::Result<Settings> {
    let mut s = Settings {
        slow_header: 600,
        slow_body: 600,
        rate: 50,
        seconds: 20,
        large: 300,
        large_mib: 5,
        longtx: None,
        nofile: None,
        starving: 60,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--small" {
            (s.slow_header, s.slow_body, s.seconds, s.large, s.starving) = (100, 100, 5, 40, 20);
            continue;
        }
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--slow-header" => s.slow_header = value.parse()?,
            "--slow-body" => s.slow_body = value.parse()?,
            "--rate" => s.rate = value.parse()?,
            "--seconds" => s.seconds = value.parse()?,
            "--large" => s.large = value.parse()?,
            "--large-mib" => s.large_mib = value.parse()?,
            "--longtx" => s.longtx = Some(value.into()),
            "--nofile" => s.nofile = Some(value.parse()?),
            "--starving" => s.starving = value.parse()?,
            other => bail!("unknown flag {other}; see the comment at the top of door_bench.rs"),
        }
    }
    Ok(s)
}

/// The `longtx` binary built beside this one, unless `--longtx` names one.
fn longtx_binary(s: &Settings) -> anyhow::Result<PathBuf> {
    let path = match &s.longtx {
        Some(path) => path.clone(),
        None => std::env::current_exe()?.with_file_name("longtx"),
    };
    if !path.exists() {
        bail!(
            "{} is missing: build it first (cargo build --release -p longtx)",
            path.display()
        );
    }
    Ok(path)
}

/// `longtx serve` on a free port with its private database; stopped and
/// its data removed when dropped.
struct Service {
    child: Child,
    pid: u32,
    data: PathBuf,
    base: String,
}

impl Service {
    async fn start(binary: &PathBuf, nofile: Option<u64>) -> anyhow::Result<Service> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let data = std::env::temp_dir().join(format!("longtx-door-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data);
        let mut command = Command::new(binary);
        if let Some(n) = nofile {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit is async-signal-safe; it runs in the child
            // between fork and exec.
            unsafe {
                command.pre_exec(move || {
                    let limit = libc::rlimit {
                        rlim_cur: n,
                        rlim_max: n,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        let child = command
            .arg("serve")
            .env_remove("DATABASE_URL")
            .env_remove("GITHUB_TOKEN")
            .env_remove("LONGTX_GITHUB_TOKEN")
            .env_remove("LONGTX_GITHUB_APP_ID")
            .env_remove("LONGTX_CONFIG")
            .env("LONGTX_LISTEN", format!("127.0.0.1:{port}"))
            .env("LONGTX_DATA_DIR", &data)
            .env("LONGTX_WEBHOOK_TOKEN", TOKEN)
            .env("LONGTX_GITHUB_WEBHOOK_SECRET", SECRET)
            .env("LONGTX_GITHUB_REPO", "acme/monolith")
            // Dry runs end at once; the daily cap must not hold the job
            // the bench sends after the load.
            .env("LONGTX_MAX_DISPATCHES_PER_DAY", "100000")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let service = Service {
            pid: child.id(),
            child,
            data,
            base: format!("127.0.0.1:{port}"),
        };
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let up = client
                .get(format!("http://{}/readyz", service.base))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if up {
                return Ok(service);
            }
            if Instant::now() > deadline {
                bail!("longtx serve was not ready (/readyz) within 120 s");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Resident memory in bytes (`VmRSS` of /proc/<pid>/status).
    fn rss(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        // SIGTERM lets it stop its private PostgreSQL.
        unsafe {
            libc::kill(self.pid as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data);
    }
}

/// Headers of a forged GitHub delivery: the signature is well-formed, so
/// only the body can show it is wrong.
fn forged_github_headers(length: usize) -> String {
    format!(
        "POST /webhooks/github HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         X-GitHub-Event: pull_request\r\nX-GitHub-Delivery: forged\r\n\
         X-Hub-Signature-256: sha256={}\r\nContent-Length: {length}\r\n\r\n",
        "0".repeat(64)
    )
}

/// One slow client, reconnecting whenever longtx closes it, until `stop`.
async fn slow_client(addr: String, body: bool, stop: Arc<AtomicBool>, cut: Arc<AtomicU64>) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut stream) = TcpStream::connect(&addr).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let (opening, every, drip): (String, Duration, &[u8]) = if body {
            (
                forged_github_headers(5 * MIB),
                Duration::from_millis(500),
                b"{",
            )
        } else {
            (
                "POST /webhooks/alertmanager HTTP/1.1\r\nHost: localhost\r\n".into(),
                Duration::from_secs(1),
                b"X-Slow: 1\r\n",
            )
        };
        if stream.write_all(opening.as_bytes()).await.is_err() {
            continue;
        }
        let mut answer = [0u8; 512];
        loop {
            tokio::select! {
                _ = stream.read(&mut answer) => break,
                _ = tokio::time::sleep(every) => {
                    if stop.load(Ordering::Relaxed) || stream.write_all(drip).await.is_err() {
                        break;
                    }
                }
            }
        }
        cut.fetch_add(1, Ordering::Relaxed);
    }
}

/// A forged GitHub delivery declaring 5 MiB and sending 600 bytes every
/// 100 ms (6 kB/s), reconnecting whenever it is cut off.
async fn starving_client(addr: String, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut stream) = TcpStream::connect(&addr).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        if stream
            .write_all(forged_github_headers(5 * MIB).as_bytes())
            .await
            .is_err()
        {
            continue;
        }
        let chunk = [b' '; 600];
        let mut answer = [0u8; 512];
        loop {
            tokio::select! {
                _ = stream.read(&mut answer) => break,
                _ = tokio::time::sleep(Duration::from_millis(100)) => {
                    if stop.load(Ordering::Relaxed) || stream.write_all(&chunk).await.is_err() {
                        break;
                    }
                }
            }
        }
    }
}

/// Genuine signed GitHub pings at 10/s for `seconds`, beside `--starving`
/// forged slow deliveries: every ping must be answered, p99 under 100 ms.
async fn starvation_phase(s: &Settings, service: &Service) -> anyhow::Result<bool> {
    let stop = Arc::new(AtomicBool::new(false));
    let starving: Vec<_> = (0..s.starving)
        .map(|_| tokio::spawn(starving_client(service.base.clone(), stop.clone())))
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let client = reqwest::Client::new();
    let url = format!("http://{}/webhooks/github", service.base);
    let body = r#"{"zen":"Keep it logically awesome.","hook_id":1}"#;
    let signature = longtx_testkit::github_events::sign(SECRET, body.as_bytes());
    let mut sent = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let until = Instant::now() + Duration::from_secs(s.seconds);
    let mut n = 0u64;
    while Instant::now() < until {
        tick.tick().await;
        n += 1;
        let request = client
            .post(&url)
            .header("content-type", "application/json")
            .header("x-github-event", "ping")
            .header("x-github-delivery", format!("door-bench-ping-{n}"))
            .header("x-hub-signature-256", &signature)
            .body(body)
            .timeout(Duration::from_secs(10));
        sent.push(tokio::spawn(async move {
            let started = Instant::now();
            let ok = request.send().await.is_ok_and(|r| r.status().is_success());
            (ok, started.elapsed())
        }));
    }
    let mut latencies = Vec::new();
    let mut failures = 0;
    for handle in sent {
        let (ok, took) = handle.await?;
        if !ok {
            failures += 1;
        }
        latencies.push(took);
    }
    stop.store(true, Ordering::Relaxed);
    for c in starving {
        c.abort();
    }
    latencies.sort();
    let p99 = percentile(&latencies, 0.99);
    println!(
        "starvation: {} forged deliveries declaring 5 MiB at 6 kB/s; signed pings at 10/s for {} s: {} sent, {} failed, p50 {:.1} ms, p99 {:.1} ms",
        s.starving,
        s.seconds,
        latencies.len(),
        failures,
        ms(percentile(&latencies, 0.5)),
        ms(p99)
    );
    let met = failures == 0 && p99 < Duration::from_millis(100);
    println!(
        "  goal every ping answered, p99 < 100 ms: {}",
        if met { "met" } else { "NOT met" }
    );
    Ok(met)
}

/// An authorised alert, one of 20 sources, as Alertmanager sends it.
fn alert(n: u64) -> String {
    use longtx_testkit::payloads::{AmAlert, AmWebhook};
    let source = format!("bench/door#alert_{}", n % 20);
    AmWebhook::with(AmAlert::firing(&source).table("orders").value(150.0))
        .to_json()
        .to_string()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

async fn slow_clients_phase(s: &Settings, service: &Service) -> anyhow::Result<bool> {
    let stop = Arc::new(AtomicBool::new(false));
    let cut = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    for i in 0..s.slow_header + s.slow_body {
        let body = i >= s.slow_header;
        clients.push(tokio::spawn(slow_client(
            service.base.clone(),
            body,
            stop.clone(),
            cut.clone(),
        )));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let client = reqwest::Client::new();
    let url = format!("http://{}/webhooks/alertmanager", service.base);
    let mut sent = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / s.rate.max(1)));
    let until = Instant::now() + Duration::from_secs(s.seconds);
    let mut n = 0;
    while Instant::now() < until {
        tick.tick().await;
        let request = client
            .post(&url)
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(alert(n))
            .timeout(Duration::from_secs(10));
        n += 1;
        sent.push(tokio::spawn(async move {
            let started = Instant::now();
            let outcome = match request.send().await {
                Ok(r) if r.status() == 200 => None,
                Ok(r) => Some(format!("status {}", r.status())),
                Err(e) => Some(format!("{e:?}").chars().take(160).collect()),
            };
            (outcome, started.elapsed())
        }));
    }
    let mut latencies = Vec::new();
    let mut failures = 0;
    let mut first_failure = None;
    for handle in sent {
        let (failed, took) = handle.await?;
        if let Some(why) = failed {
            failures += 1;
            first_failure.get_or_insert(why);
        }
        latencies.push(took);
    }
    if let Some(why) = first_failure {
        println!("  first failure: {why}");
    }
    // The slow clients still hold their connections: a new job must still
    // be dispatched (dry run) in its usual time.
    let dispatched = job_dispatched_within(service, Duration::from_secs(5)).await;
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.abort();
    }
    latencies.sort();
    let p99 = percentile(&latencies, 0.99);
    println!(
        "slow clients: {} slow-header + {} slow-body connections (cut off and reconnected {} times)",
        s.slow_header,
        s.slow_body,
        cut.load(Ordering::Relaxed)
    );
    println!(
        "  authorised alerts at {}/s for {} s: {} sent, {} failed, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        s.rate,
        s.seconds,
        latencies.len(),
        failures,
        ms(percentile(&latencies, 0.5)),
        ms(p99),
        ms(latencies.last().copied().unwrap_or_default())
    );
    match &dispatched {
        Ok(took) => println!(
            "  a new job under the load was dispatched (dry run) in {:.0} ms",
            ms(*took)
        ),
        Err(why) => println!("  a new job under the load was NOT dispatched: {why}"),
    }
    let met = failures == 0 && p99 < Duration::from_millis(100) && dispatched.is_ok();
    println!(
        "  goal 0 failures, p99 < 100 ms and the job dispatched within 5 s: {}",
        if met { "met" } else { "NOT met" }
    );
    Ok(met)
}

/// Fires an alert for a new source and waits until its job has been
/// dispatched (in dry run, `dry_run` at once); how long that took.
async fn job_dispatched_within(service: &Service, limit: Duration) -> Result<Duration, String> {
    let client = reqwest::Client::new();
    let started = Instant::now();
    let body = serde_json::json!({"version": "4", "status": "firing", "alerts": [{"status": "firing",
        "labels": {"alertname": "LongTransaction", "query_source": "AfterTheLoad::Worker", "table": "orders"},
        "annotations": {"value": "150"}}]});
    let answer: serde_json::Value = client
        .post(format!("http://{}/webhooks/alertmanager", service.base))
        .bearer_auth(TOKEN)
        .json(&body)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .map_err(|e| e.to_string())?
        .json()
        .await
        .map_err(|e| e.to_string())?;
    let job = answer["results"][0]["job_id"]
        .as_i64()
        .ok_or(format!("no job: {answer}"))?;
    loop {
        let row: serde_json::Value = client
            .get(format!("http://{}/api/jobs/{job}", service.base))
            .bearer_auth(TOKEN)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        if row["job"]["state"] == "dry_run" {
            return Ok(started.elapsed());
        }
        if started.elapsed() > limit {
            return Err(format!(
                "job {job} still {} after {limit:?}",
                row["job"]["state"]
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn large_bodies_phase(s: &Settings, service: &Service) -> anyhow::Result<bool> {
    tokio::time::sleep(Duration::from_secs(2)).await;
    let baseline = service.rss();
    let body = Arc::new(vec![b' '; s.large_mib * MIB]);
    let mut senders = Vec::new();
    for _ in 0..s.large {
        let (addr, body) = (service.base.clone(), body.clone());
        senders.push(tokio::spawn(async move {
            let mut stream = TcpStream::connect(&addr).await.ok()?;
            stream
                .write_all(forged_github_headers(body.len()).as_bytes())
                .await
                .ok()?;
            let _ = stream.write_all(&body).await;
            let mut answer = vec![0u8; 64];
            let n = stream.read(&mut answer).await.ok()?;
            Some(
                String::from_utf8_lossy(&answer[..n])
                    .chars()
                    .skip(9)
                    .take(3)
                    .collect::<String>(),
            )
        }));
    }
    let mut peak = baseline;
    while senders.iter().any(|h| !h.is_finished()) {
        peak = peak.max(service.rss());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut statuses = std::collections::BTreeMap::<String, usize>::new();
    for h in senders {
        let status = h.await?.unwrap_or_else(|| "closed".into());
        *statuses.entry(status).or_default() += 1;
    }
    let ended = Instant::now();
    let mut back = None;
    while ended.elapsed() < Duration::from_secs(60) {
        let now = service.rss();
        peak = peak.max(now);
        if now <= baseline + 16 * MIB as u64 {
            back = Some(ended.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let growth = peak.saturating_sub(baseline);
    println!(
        "large bodies: {} forged GitHub deliveries of {} MiB at once; answers {:?}",
        s.large, s.large_mib, statuses
    );
    println!(
        "  RSS {:.1} MB before, peak {:.1} MB (+{:.1} MB), {}",
        baseline as f64 / 1e6,
        peak as f64 / 1e6,
        growth as f64 / 1e6,
        match back {
            Some(t) => format!(
                "back within 16 MiB of the start {:.1} s after the last answer",
                t.as_secs_f64()
            ),
            None => format!("still {:.1} MB after 60 s", service.rss() as f64 / 1e6),
        }
    );
    let met = growth < 100_000_000 && back.is_some();
    println!(
        "  goal growth < 100 MB and back within 60 s: {}",
        if met { "met" } else { "NOT met" }
    );
    Ok(met)
}

fn raise_open_files_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

const USAGE: &str = "door-bench: `longtx serve` (the release binary) under a hostile network, measured from outside.

Usage: door-bench [--small] [--seconds N] [--rate N] [--slow-header N] [--slow-body N]
                  [--large N] [--large-mib N] [--nofile N] [--starving N] [--longtx PATH]
  --small  the smaller run CI makes
Build first: cargo build --release -p longtx -p longtx-bench";

fn main() -> anyhow::Result<()> {
    help::answer_help(USAGE);
    let settings = parse_args()?;
    let binary = longtx_binary(&settings)?;
    raise_open_files_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let met = runtime.block_on(async {
        let service = Service::start(&binary, settings.nofile).await?;
        let slow = slow_clients_phase(&settings, &service).await?;
        let starved = starvation_phase(&settings, &service).await?;
        let large = large_bodies_phase(&settings, &service).await?;
        anyhow::Ok(slow && starved && large)
    })?;
    if !met {
        bail!("a goal was not met");
    }
    Ok(())
}
