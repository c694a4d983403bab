//! Lease owner ids that say which process holds a lease, so that a lease of
//! a process that died (e.g. `kill -9`) on this machine is free at once
//! instead of when it expires.

use std::sync::OnceLock;

#[cfg(windows)]
mod windows;

/// The owner id of one call of this process: `{machine}/{pid}/{instance}/{call}`,
/// where `machine` names this host and PID namespace. On Windows the
/// process part is `{pid}.{creation time}`, so that a PID the system gave
/// to another process since is told apart.
pub fn process_owner(instance: &str, call: u64) -> String {
    format!("{}/{}/{instance}/{call}", machine_id(), this_process())
}

#[cfg(not(windows))]
fn this_process() -> String {
    std::process::id().to_string()
}

#[cfg(windows)]
fn this_process() -> String {
    windows::this_process()
}

/// Whether `owner` names a process of this host and PID namespace that no
/// longer exists. Any doubt (another machine, an id of another form, a PID
/// now used by another process) answers `false`: the lease then holds until
/// it expires.
pub(super) fn owner_is_gone(owner: &str) -> bool {
    let mut parts = owner.splitn(4, '/');
    let (Some(machine), Some(pid), Some(_), Some(_)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    if machine.is_empty() || machine != machine_id() {
        return false;
    }
    process_is_gone(pid)
}

#[cfg(unix)]
fn process_is_gone(pid: &str) -> bool {
    let Some(pid) = pid.parse::<i32>().ok().filter(|&p| p > 0) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    !alive && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

#[cfg(windows)]
fn process_is_gone(process: &str) -> bool {
    windows::process_is_gone(process)
}

#[cfg(not(any(unix, windows)))]
fn process_is_gone(_process: &str) -> bool {
    false
}

/// This host and PID namespace, or empty when they cannot be told (then no
/// lease is ever taken as gone early).
fn machine_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    #[cfg(windows)]
    return ID.get_or_init(windows::machine_id);
    #[cfg(not(windows))]
    ID.get_or_init(|| {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
        let pid_ns = std::fs::read_link("/proc/self/ns/pid")
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (boot, pid_ns) = (
            boot.trim(),
            pid_ns.trim_start_matches("pid:[").trim_end_matches(']'),
        );
        if boot.is_empty() || pid_ns.is_empty() {
            String::new()
        } else {
            format!("{boot}.{pid_ns}")
        }
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_alive_and_a_reaped_child_is_gone() {
        let me = process_owner("i", 1);
        assert!(!owner_is_gone(&me));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let dead = format!("{}/{pid}/i/1", machine_id());
        #[cfg(target_os = "linux")]
        {
            assert!(
                !machine_id().is_empty(),
                "Linux always tells its boot id and PID namespace"
            );
            assert!(owner_is_gone(&dead));
        }
        #[cfg(not(target_os = "linux"))]
        let _ = dead;
        assert!(!owner_is_gone(&format!("another-machine/{pid}/i/1")));
        assert!(!owner_is_gone("pid123-abc-1"));
        assert!(!owner_is_gone(""));
    }
}
