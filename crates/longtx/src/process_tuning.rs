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
/// holds 512 sockets and the database pool and git need descriptors too,
/// while many systems start processes with a soft limit of 1024.
pub fn raise_open_files_limit() {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit read and write the struct given.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0
                && limit.rlim_cur < limit.rlim_max
            {
                limit.rlim_cur = limit.rlim_max;
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
        }
    }
}
