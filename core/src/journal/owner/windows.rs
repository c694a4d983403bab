//! Lease owners on Windows: a process is named by its PID and its creation
//! time (a PID is reused by later processes; the pair is not), and the
//! machine by its installation's `MachineGuid` and its DNS name.

use std::io;

use windows_sys::Win32::Foundation::{
    CloseHandle, ERROR_INVALID_PARAMETER, FILETIME, HANDLE, WAIT_OBJECT_0,
};
use windows_sys::Win32::Storage::FileSystem::SYNCHRONIZE;
use windows_sys::Win32::System::Registry::{
    RegGetValueW, HKEY_LOCAL_MACHINE, RRF_RT_REG_SZ, RRF_SUBKEY_WOW6464KEY,
};
use windows_sys::Win32::System::SystemInformation::{
    ComputerNameDnsFullyQualified, GetComputerNameExW,
};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetProcessTimes, OpenProcess, WaitForSingleObject,
    PROCESS_QUERY_LIMITED_INFORMATION,
};

/// This process as `{pid}.{creation time}` (100 ns units since 1601), or
/// `{pid}` alone when its creation time cannot be read (a lease of such an
/// owner is then never taken as gone early).
pub(super) fn this_process() -> String {
    let pid = std::process::id();
    // SAFETY: the pseudo-handle of the current process needs no closing.
    match unsafe { creation_time(GetCurrentProcess()) } {
        Some(created) => format!("{pid}.{created}"),
        None => pid.to_string(),
    }
}

/// Whether the process named `{pid}.{creation time}` has exited: no
/// process has that PID any more, the one that has it has exited, or it is
/// another process (created at another time). Any doubt (another form, a
/// process this user may not query) answers `false`.
pub(super) fn process_is_gone(process: &str) -> bool {
    let Some((pid, created)) = process.split_once('.') else {
        return false;
    };
    let (Ok(pid), Ok(created)) = (pid.parse::<u32>(), created.parse::<u64>()) else {
        return false;
    };
    if pid == 0 {
        return false;
    }
    // SAFETY: the handle is checked and closed; a zero timeout only polls.
    unsafe {
        let handle = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | SYNCHRONIZE, 0, pid);
        if handle.is_null() {
            return io::Error::last_os_error().raw_os_error()
                == Some(ERROR_INVALID_PARAMETER as i32);
        }
        let exited = WaitForSingleObject(handle, 0) == WAIT_OBJECT_0;
        let now = creation_time(handle);
        CloseHandle(handle);
        exited || now.is_some_and(|t| t != created)
    }
}

/// The creation time of the process behind `handle`.
///
/// # Safety
/// `handle` is a process handle with query rights.
unsafe fn creation_time(handle: HANDLE) -> Option<u64> {
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    if GetProcessTimes(handle, &mut created, &mut exited, &mut kernel, &mut user) == 0 {
        return None;
    }
    Some(u64::from(created.dwHighDateTime) << 32 | u64::from(created.dwLowDateTime))
}

/// `win.{MachineGuid}.{DNS name}`, or empty when either cannot be read.
pub(super) fn machine_id() -> String {
    let (Some(guid), Some(name)) = (machine_guid(), computer_name()) else {
        return String::new();
    };
    if guid.is_empty() || name.is_empty() || guid.contains('/') || name.contains('/') {
        return String::new();
    }
    format!("win.{guid}.{name}")
}

/// `HKLM\SOFTWARE\Microsoft\Cryptography\MachineGuid`, made when Windows
/// is installed.
fn machine_guid() -> Option<String> {
    let key = wide("SOFTWARE\\Microsoft\\Cryptography");
    let value = wide("MachineGuid");
    let mut buffer = [0u16; 128];
    let mut len = std::mem::size_of_val(&buffer) as u32;
    // SAFETY: NUL-terminated names, a buffer of `len` bytes.
    let status = unsafe {
        RegGetValueW(
            HKEY_LOCAL_MACHINE,
            key.as_ptr(),
            value.as_ptr(),
            RRF_RT_REG_SZ | RRF_SUBKEY_WOW6464KEY,
            std::ptr::null_mut(),
            buffer.as_mut_ptr().cast(),
            &mut len,
        )
    };
    (status == 0).then(|| utf16_until_nul(&buffer))
}

/// The computer's fully qualified DNS name.
fn computer_name() -> Option<String> {
    let mut buffer = [0u16; 256];
    let mut len = buffer.len() as u32;
    // SAFETY: a buffer of `len` characters.
    let ok =
        unsafe { GetComputerNameExW(ComputerNameDnsFullyQualified, buffer.as_mut_ptr(), &mut len) };
    (ok != 0).then(|| utf16_until_nul(&buffer))
}

fn utf16_until_nul(buffer: &[u16]) -> String {
    let end = buffer.iter().position(|&c| c == 0).unwrap_or(buffer.len());
    String::from_utf16_lossy(&buffer[..end])
}

fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(std::iter::once(0)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::{machine_id as this_machine, owner_is_gone, process_owner};
    use super::*;
    use std::process::{Command, Stdio};

    /// The owner id of a call of the process with this PID.
    fn owner_of(pid: u32) -> String {
        // SAFETY: the handle is checked and closed.
        let created = unsafe {
            let handle = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
            assert!(!handle.is_null(), "process {pid} opens");
            let created = creation_time(handle).expect("its creation time");
            CloseHandle(handle);
            created
        };
        format!("{}/{pid}.{created}/i/1", this_machine())
    }

    #[test]
    fn live_processes_hold_and_exited_or_replaced_ones_are_gone() {
        assert!(this_machine().starts_with("win."), "{}", this_machine());
        let me = process_owner("i", 1);
        assert_eq!(me, owner_of(std::process::id()));
        assert!(!owner_is_gone(&me));

        // A child waiting on its standard input is alive.
        let mut child = Command::new("cmd")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cmd starts");
        let pid = child.id();
        let owner = owner_of(pid);
        assert!(!owner_is_gone(&owner), "{owner}");
        // The same PID created at another time is another process.
        let replaced = format!("{}/{pid}.1/i/1", this_machine());
        assert!(owner_is_gone(&replaced), "{replaced}");

        child.kill().unwrap();
        child.wait().unwrap();
        // Exited while a handle still holds the process object…
        assert!(owner_is_gone(&owner), "{owner}");
        drop(child);
        // …and once the PID names no process.
        assert!(owner_is_gone(&owner), "{owner}");

        assert!(!owner_is_gone(&format!("another-machine/{pid}.1/i/1")));
        assert!(!owner_is_gone(&format!("{}/{pid}/i/1", this_machine())));
        assert!(!owner_is_gone("pid123-abc-1"));
        assert!(!owner_is_gone(""));
    }
}
