//! A disk that stops taking writes, for tests of journal failures: the
//! process's file-size limit drops to 0, so every write(2) to a regular file
//! fails with `EFBIG`, as on a full or failing disk. The limit is per
//! process: a test that uses it runs in a test binary of its own.

/// Makes every later write to a regular file fail (`true`), or restores the
/// hard limit (`false`). The first call also ignores `SIGXFSZ`, which would
/// otherwise kill the process at the first refused write.
pub fn fail_writes(fail: bool) {
    let mut current = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a local struct; SIG_IGN is a valid handler.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        assert_eq!(libc::getrlimit(libc::RLIMIT_FSIZE, &mut current), 0);
        current.rlim_cur = if fail { 0 } else { current.rlim_max };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &current), 0);
    }
}
