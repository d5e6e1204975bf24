use crate::{io_error, locate_binaries, EmbeddedPgError, PgBinaries};
use std::ffi::CString;
use std::fs::{self, File};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The database role the cluster is created with.
pub const SUPERUSER: &str = "longtx";
/// Unix sockets are named `.s.PGSQL.<port>`; the directory is private, so
/// the default port never collides with another server.
pub const PORT: u16 = 5432;
/// Linux's limit on a unix socket path is 108 bytes including the NUL.
const MAX_SOCKET_PATH: usize = 100;

#[derive(Debug, Clone, Default)]
pub struct ClusterOptions {
    /// Extra `postgresql.conf` settings, e.g. `("fsync", "off")` for tests.
    pub settings: Vec<(String, String)>,
}

/// A running private cluster.
#[derive(Debug)]
pub struct EmbeddedPostgres {
    binaries: PgBinaries,
    cluster_dir: PathBuf,
    socket_dir: PathBuf,
    run_as: Option<RunAs>,
    ownership: Ownership,
}

/// Who answers for the cluster. One process owns it for its whole life (it
/// holds `pg.lock`, started the server if needed, and stops it at the end);
/// any other longtx process on the same data dir is a guest that uses the
/// running server and never stops it. Once the lock was released after the
/// server started, so `longtx doctor` on serve's data dir took the cluster
/// over and stopped serve's database on exit.
#[derive(Debug)]
enum Ownership {
    /// The open, locked `pg.lock` (with this process's pid in it).
    Owner(#[allow(dead_code)] File),
    Guest {
        owner_pid: Option<u32>,
    },
}

#[derive(Debug, Clone)]
struct RunAs {
    name: String,
    uid: u32,
    gid: u32,
}

impl EmbeddedPostgres {
    /// Creates the cluster under `root/pg` when it does not exist, starts it
    /// unless it is already running, and returns a handle that owns it for
    /// as long as it lives. When another process owns the cluster already,
    /// the handle is a guest's: it waits until the server answers and uses
    /// it, and never starts or stops it. Blocking: call it before the async
    /// runtime starts serving, or in `spawn_blocking`.
    pub fn start(root: &Path, options: &ClusterOptions) -> Result<Self, EmbeddedPgError> {
        let binaries = locate_binaries()?;
        fs::create_dir_all(root).map_err(io_error(format!("creating {}", root.display())))?;
        let root = root
            .canonicalize()
            .map_err(io_error(format!("resolving {}", root.display())))?;
        let mut lock = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(root.join("pg.lock"))
            .map_err(io_error("opening the cluster lock file"))?;
        let ownership = match lock.try_lock() {
            Ok(()) => {
                use std::io::{Seek, Write};
                lock.set_len(0)
                    .and_then(|()| lock.seek(std::io::SeekFrom::Start(0)))
                    .and_then(|_| write!(lock, "{}", std::process::id()))
                    .map_err(io_error("writing the cluster lock file"))?;
                Ownership::Owner(lock)
            }
            Err(fs::TryLockError::WouldBlock) => Ownership::Guest {
                owner_pid: fs::read_to_string(root.join("pg.lock"))
                    .ok()
                    .and_then(|text| text.trim().parse().ok()),
            },
            Err(fs::TryLockError::Error(e)) => {
                return Err(io_error("locking the cluster")(e));
            }
        };

        let run_as = if unsafe { libc::geteuid() } == 0 {
            Some(unprivileged_user()?)
        } else {
            None
        };
        let cluster_dir = root.join("pg");
        let socket_dir = socket_dir_for(&root);
        let pg = EmbeddedPostgres {
            binaries,
            cluster_dir,
            socket_dir,
            run_as,
            ownership,
        };
        if let Ownership::Guest { owner_pid } = &pg.ownership {
            // The owner may be starting the server right now.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while !pg.is_running() {
                if std::time::Instant::now() > deadline {
                    return Err(EmbeddedPgError::Command {
                        what: "waiting for the embedded PostgreSQL".into(),
                        status: "not running".into(),
                        output: format!(
                            "{} owns {} but its server did not start within 60 s",
                            describe_owner(*owner_pid),
                            root.display()
                        ),
                    });
                }
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            return Ok(pg);
        }
        pg.prepare_dirs()?;
        if !pg.cluster_dir.join("PG_VERSION").exists() {
            pg.initdb()?;
        }
        pg.write_settings(options)?;
        if !pg.is_running() {
            pg.pg_ctl(
                &["start", "-w", "-t", "60", "-l", &pg.log_path()],
                "pg_ctl start",
            )?;
        }
        Ok(pg)
    }

    /// The directory holding the server's unix socket (`host` for clients).
    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    pub fn port(&self) -> u16 {
        PORT
    }

    pub fn user(&self) -> &str {
        SUPERUSER
    }

    pub fn cluster_dir(&self) -> &Path {
        &self.cluster_dir
    }

    /// True when this process owns the cluster (and stops it at the end).
    pub fn is_owner(&self) -> bool {
        matches!(self.ownership, Ownership::Owner(_))
    }

    /// The process that owns the cluster, in a sentence (`longtx (pid 42)`);
    /// `None` when this process is the owner.
    pub fn owner(&self) -> Option<String> {
        match &self.ownership {
            Ownership::Owner(_) => None,
            Ownership::Guest { owner_pid } => Some(describe_owner(*owner_pid)),
        }
    }

    /// Stops the server, letting it finish what it is doing first; a guest
    /// leaves it to its owner.
    pub fn stop(&self) -> Result<(), EmbeddedPgError> {
        if self.is_owner() && self.is_running() {
            self.pg_ctl(&["stop", "-w", "-m", "fast"], "pg_ctl stop")?;
        }
        Ok(())
    }

    pub fn is_running(&self) -> bool {
        self.command(&self.binaries.pg_ctl)
            .arg("status")
            .arg("-D")
            .arg(&self.cluster_dir)
            .output()
            .is_ok_and(|o| o.status.success())
    }

    fn log_path(&self) -> String {
        self.cluster_dir.join("server.log").display().to_string()
    }

    fn prepare_dirs(&self) -> Result<(), EmbeddedPgError> {
        for dir in [&self.cluster_dir, &self.socket_dir] {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io_error(format!("creating {}", dir.display())))?;
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                .map_err(io_error(format!("restricting {}", dir.display())))?;
            if let Some(user) = &self.run_as {
                std::os::unix::fs::chown(dir, Some(user.uid), Some(user.gid)).map_err(io_error(
                    format!("handing {} to {}", dir.display(), user.name),
                ))?;
                check_reachable(dir, user)?;
            }
        }
        Ok(())
    }

    fn initdb(&self) -> Result<(), EmbeddedPgError> {
        let output = self
            .command(&self.binaries.initdb)
            .arg("-D")
            .arg(&self.cluster_dir)
            .args([
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .output()
            .map_err(io_error("running initdb"))?;
        check(output, "initdb")?;
        // Settings longtx owns live in their own file, rewritten each start.
        let conf = self.cluster_dir.join("postgresql.conf");
        let mut text = fs::read_to_string(&conf).map_err(io_error("reading postgresql.conf"))?;
        text.push_str("\ninclude_if_exists = 'longtx.conf'\n");
        fs::write(&conf, text).map_err(io_error("writing postgresql.conf"))
    }

    fn write_settings(&self, options: &ClusterOptions) -> Result<(), EmbeddedPgError> {
        let mut text = format!(
            "# Written by longtx at every start; edit ClusterOptions instead.\n\
             listen_addresses = ''\n\
             port = {PORT}\n\
             unix_socket_directories = '{}'\n\
             unix_socket_permissions = 0700\n",
            self.socket_dir.display()
        );
        for (key, value) in &options.settings {
            text.push_str(&format!("{key} = '{}'\n", value.replace('\'', "''")));
        }
        let path = self.cluster_dir.join("longtx.conf");
        fs::write(&path, text).map_err(io_error("writing longtx.conf"))?;
        if let Some(user) = &self.run_as {
            std::os::unix::fs::chown(&path, Some(user.uid), Some(user.gid))
                .map_err(io_error("handing longtx.conf to the server user"))?;
        }
        Ok(())
    }

    fn pg_ctl(&self, args: &[&str], what: &str) -> Result<(), EmbeddedPgError> {
        let output = self
            .command(&self.binaries.pg_ctl)
            .arg("-D")
            .arg(&self.cluster_dir)
            .args(args)
            .output()
            .map_err(io_error(format!("running {what}")))?;
        check(output, what)
    }

    fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("LC_ALL", "C").env_remove("PGDATA");
        if let Some(user) = &self.run_as {
            // std drops root's supplementary groups before setuid.
            cmd.uid(user.uid).gid(user.gid).env("HOME", "/tmp");
        }
        cmd
    }
}

/// The owner of a cluster, named for a person: its pid and, where
/// `/proc` says, its command line.
fn describe_owner(pid: Option<u32>) -> String {
    let Some(pid) = pid else {
        return "another process".to_owned();
    };
    let command = fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .map(|raw| {
            raw.split(|b| *b == 0)
                .filter(|part| !part.is_empty())
                .map(|part| String::from_utf8_lossy(part).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|c| !c.is_empty());
    match command {
        Some(command) => format!(
            "`{}` (pid {pid})",
            command.chars().take(120).collect::<String>()
        ),
        None => format!("process {pid}"),
    }
}

fn check(output: std::process::Output, what: &str) -> Result<(), EmbeddedPgError> {
    if output.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stdout));
    Err(EmbeddedPgError::Command {
        what: what.to_owned(),
        status: output.status.to_string(),
        output: text.trim().chars().take(2000).collect(),
    })
}

/// `root/pg-socket` when short enough for a socket path, else a directory
/// under the system temp dir named after `root`.
fn socket_dir_for(root: &Path) -> PathBuf {
    let preferred = root.join("pg-socket");
    if preferred.as_os_str().len() + ".s.PGSQL.5432".len() < MAX_SOCKET_PATH {
        return preferred;
    }
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    root.hash(&mut hasher);
    std::env::temp_dir().join(format!("longtx-pg-{:016x}", hasher.finish()))
}

fn unprivileged_user() -> Result<RunAs, EmbeddedPgError> {
    for name in ["postgres", "nobody"] {
        let cname = CString::new(name).expect("no NUL in a literal");
        // getpwnam is not thread-safe; this runs once, before serving.
        let pw = unsafe { libc::getpwnam(cname.as_ptr()) };
        if !pw.is_null() {
            let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
            return Ok(RunAs {
                name: name.to_owned(),
                uid,
                gid,
            });
        }
    }
    Err(EmbeddedPgError::Unreachable {
        user: "(none)".into(),
        path: "-".into(),
        hint: "running as root, and neither a postgres nor a nobody user exists".into(),
    })
}

/// Every ancestor of `dir` must be searchable by the server's user.
fn check_reachable(dir: &Path, user: &RunAs) -> Result<(), EmbeddedPgError> {
    for ancestor in dir.ancestors().skip(1) {
        let Ok(meta) = fs::metadata(ancestor) else {
            continue;
        };
        let mode = meta.mode();
        let searchable = mode & 0o001 != 0
            || (meta.uid() == user.uid && mode & 0o100 != 0)
            || (meta.gid() == user.gid && mode & 0o010 != 0);
        if !searchable {
            return Err(EmbeddedPgError::Unreachable {
                user: user.name.clone(),
                path: dir.display().to_string(),
                hint: format!(
                    "{} is not searchable by others; set LONGTX_DATA_DIR to a directory it can reach (for example /var/tmp/longtx)",
                    ancestor.display()
                ),
            });
        }
    }
    Ok(())
}
