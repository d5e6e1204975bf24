//! Process-wide settings the server's limits rely on, made once at start
//! before any thread is spawned.

/// Large buffers go to `mmap` and back to the system when freed.
///
/// glibc serves allocations above `M_MMAP_THRESHOLD` with their own
/// mapping, returned at `free`, but by default it raises that threshold to
/// the size of each such block freed (up to 32 MiB). After one 5 MiB body
/// was freed, the next ones came from the heap arenas, which keep freed
/// memory: a burst of large bodies left the process at its peak. Fixing
/// the threshold at 128 KiB keeps request-sized buffers (read into one
/// allocation of the declared size) out of the arenas, so RSS falls back
/// once they are dropped. A different allocator would do the same at the
/// cost of another C build on 2-core machines.
pub fn return_large_buffers_to_the_system() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is called from
    // main before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// Raises the open-files limit to its hard maximum: the connection table
/// and the database pool, git and GitHub calls all need descriptors, while
/// many systems start processes with a soft limit of 1024.
pub fn raise_open_files_limit() {
    #[cfg(unix)]
    if let Some(mut limit) = nofile() {
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            // SAFETY: setrlimit reads the struct given.
            unsafe {
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
        }
    }
}

/// The open-files limit in force (the soft one); `None` where the system
/// does not say.
pub fn open_files_limit() -> Option<u64> {
    #[cfg(unix)]
    return nofile().map(|limit| limit.rlim_cur as u64);
    #[cfg(not(unix))]
    None
}

#[cfg(unix)]
fn nofile() -> Option<libc::rlimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct given.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0).then_some(limit)
}

/// Descriptors kept out of the connection table: the database pool, the
/// embedded server's clients, git and the mirror, GitHub and Devin calls,
/// files, the runtime's own.
pub const RESERVED_DESCRIPTORS: u64 = 256;

/// The connection table's size under an open-files limit of `soft`: what
/// the limit leaves past [`RESERVED_DESCRIPTORS`] and the pool, at most
/// `wanted` and at least 64.
pub fn connection_slots(soft: Option<u64>, pool: u32, wanted: usize) -> usize {
    let Some(soft) = soft else {
        return wanted;
    };
    let left = soft.saturating_sub(RESERVED_DESCRIPTORS + pool as u64);
    (left as usize).clamp(64, wanted)
}

#[cfg(test)]
mod tests {
    use super::connection_slots;

    #[test]
    fn the_table_stays_below_the_descriptor_limit() {
        assert_eq!(connection_slots(Some(1024), 10, 4096), 758);
        assert_eq!(connection_slots(Some(1 << 20), 10, 4096), 4096);
        assert_eq!(connection_slots(Some(200), 10, 4096), 64);
        assert_eq!(connection_slots(None, 10, 4096), 4096);
    }
}
