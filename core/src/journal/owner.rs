//! Lease owner ids that say which process holds a lease, so that a lease of
//! a process that died (e.g. `kill -9`) on this machine is free at once
//! instead of when it expires.

use std::sync::OnceLock;

/// The owner id of one call of this process: `{machine}/{pid}/{instance}/{call}`,
/// where `machine` names this host and PID namespace.
pub fn process_owner(instance: &str, call: u64) -> String {
    format!("{}/{}/{instance}/{call}", machine_id(), std::process::id())
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
    let Ok(pid) = pid.parse::<i32>() else {
        return false;
    };
    pid > 0 && process_is_gone(pid)
}

#[cfg(unix)]
fn process_is_gone(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    !alive && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn process_is_gone(_pid: i32) -> bool {
    false
}

/// This host and PID namespace, or empty when they cannot be told (then no
/// lease is ever taken as gone early).
fn machine_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
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

#[cfg(test)]
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
