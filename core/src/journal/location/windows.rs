//! The journal's files on Windows, where file modes do not exist: the
//! default location under `%LOCALAPPDATA%`, files and directories created
//! with an explicit, protected DACL that grants the current user alone (the
//! Unix 0600 and 0700), and the checks made when a journal is opened: a file
//! or directory whose DACL lets another account write is refused, one that
//! lets another account read the journal's data is a problem
//! [`Journal::check`](crate::journal::Journal::check) reports.
//!
//! SYSTEM and the Administrators group can take any file anyway (as root
//! can on Unix), so their entries are not "another account".

use std::ffi::{c_void, OsStr, OsString};
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use windows_sys::Win32::Foundation::{
    CloseHandle, LocalFree, ERROR_ALREADY_EXISTS, GENERIC_ALL, GENERIC_READ, GENERIC_WRITE, HANDLE,
    INVALID_HANDLE_VALUE,
};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, GetNamedSecurityInfoW, SE_FILE_OBJECT,
};
use windows_sys::Win32::Security::{
    AddAccessAllowedAceEx, EqualSid, GetAce, GetLengthSid, GetTokenInformation, InitializeAcl,
    InitializeSecurityDescriptor, IsWellKnownSid, SetSecurityDescriptorControl,
    SetSecurityDescriptorDacl, TokenUser, WinBuiltinAdministratorsSid, WinCreatorOwnerSid,
    WinLocalSystemSid, ACCESS_ALLOWED_ACE, ACE_HEADER, ACL, ACL_REVISION, CONTAINER_INHERIT_ACE,
    DACL_SECURITY_INFORMATION, INHERIT_ONLY_ACE, OBJECT_INHERIT_ACE, PSID, SECURITY_ATTRIBUTES,
    SECURITY_DESCRIPTOR, SE_DACL_PROTECTED, TOKEN_QUERY, TOKEN_USER,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateDirectoryW, CreateFileW, CREATE_NEW, DELETE, FILE_ADD_FILE, FILE_ADD_SUBDIRECTORY,
    FILE_ALL_ACCESS, FILE_ATTRIBUTE_NORMAL, FILE_DELETE_CHILD, FILE_READ_DATA,
    FILE_WRITE_ATTRIBUTES, FILE_WRITE_EA, WRITE_DAC, WRITE_OWNER,
};
use windows_sys::Win32::System::SystemServices::{
    ACCESS_ALLOWED_ACE_TYPE, SECURITY_DESCRIPTOR_REVISION,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

use super::{directory_of, DEFAULT_FILE, MEMORY_JOURNAL};
use crate::error::{Error, ErrorCode, Result};

/// Rights that let an account change a file or plant files in a directory.
const WRITE_RIGHTS: u32 = FILE_ADD_FILE
    | FILE_ADD_SUBDIRECTORY
    | FILE_WRITE_EA
    | FILE_DELETE_CHILD
    | FILE_WRITE_ATTRIBUTES
    | DELETE
    | WRITE_DAC
    | WRITE_OWNER
    | GENERIC_WRITE
    | GENERIC_ALL;

/// Rights that let an account read a file's data.
const READ_RIGHTS: u32 = FILE_READ_DATA | GENERIC_READ | GENERIC_ALL;

/// `%LOCALAPPDATA%\payidem\journal.sqlite3`, or `journal_error` when
/// `LOCALAPPDATA` is not an absolute path.
pub(super) fn default_path_from(local_app_data: Option<OsString>) -> Result<PathBuf> {
    match local_app_data
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        Some(dir) => Ok(dir.join("payidem").join(DEFAULT_FILE)),
        None => Err(Error::new(
            ErrorCode::Journal,
            "no default journal location: LOCALAPPDATA is not an absolute path; name a journal \
             file",
        )),
    }
}

/// Creates the missing directories of `path`'s parent, each with the
/// owner-only DACL (inherited by the files created in them, such as
/// SQLite's `-wal` and `-shm`). Existing directories are left as they are.
pub(crate) fn create_private_dirs(path: &Path) -> Result<()> {
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    let fail = |e: io::Error| {
        Error::new(
            ErrorCode::Journal,
            format!(
                "journal {}: cannot create its directory: {e}",
                path.display()
            ),
        )
    };
    let missing: Vec<&Path> = dir.ancestors().take_while(|d| !d.exists()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let owner_only = OwnerOnly::new().map_err(fail)?;
    for d in missing.into_iter().rev() {
        let wide = wide(d.as_os_str());
        // SAFETY: a NUL-terminated path and security attributes that live
        // across the call.
        if unsafe { CreateDirectoryW(wide.as_ptr(), &owner_only.attributes()) } == 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(ERROR_ALREADY_EXISTS as i32) {
                return Err(fail(e));
            }
        }
    }
    Ok(())
}

/// Creates `path` empty with the owner-only DACL when it does not exist,
/// in the same call that creates it (no moment where it is open to
/// others). An existing file is left untouched.
pub(crate) fn create_private_file(path: &Path) {
    if path.as_os_str().is_empty() || path == Path::new(MEMORY_JOURNAL) {
        return;
    }
    // A missing directory or a refusal is left for SQLite to open or to
    // report in its own words.
    let Ok(owner_only) = OwnerOnly::new() else {
        return;
    };
    let wide = wide(path.as_os_str());
    // SAFETY: a NUL-terminated path and security attributes that live across
    // the call; a valid handle is closed at once.
    unsafe {
        let handle: HANDLE = CreateFileW(
            wide.as_ptr(),
            0,
            0,
            &owner_only.attributes(),
            CREATE_NEW,
            FILE_ATTRIBUTE_NORMAL,
            std::ptr::null_mut(),
        );
        if handle != INVALID_HANDLE_VALUE {
            CloseHandle(handle);
        }
    }
}

/// Refuses a journal location another account could tamper with: a
/// directory whose DACL lets another account create or delete files in it
/// (it could plant the journal, its `-wal` or `-shm` first, or replace
/// them), a file another account may write, or either without a DACL
/// (which grants everyone everything). Returns why, naming the directory or
/// file, the account and the fix; a location that cannot be examined is
/// left for SQLite to open or report.
pub(crate) fn check_private_location(path: &Path) -> std::result::Result<(), String> {
    if path.as_os_str().is_empty() || path == Path::new(MEMORY_JOURNAL) {
        return Ok(());
    }
    let dir = directory_of(path);
    if let Ok(Some(who)) = foreign_grant(dir, WRITE_RIGHTS, Applies::ToObject) {
        return Err(format!(
            "refused: its directory {} lets {who} create or delete files in it, so another \
             account could replace or plant the journal's files; keep the journal in a \
             directory only its owner can write, e.g. under %LOCALAPPDATA%",
            dir.display()
        ));
    }
    if path.is_file() {
        if let Ok(Some(who)) = foreign_grant(path, WRITE_RIGHTS, Applies::ToObject) {
            return Err(format!(
                "refused: the file lets {who} write it; remove every entry but its owner's from \
                 its ACL (icacls FILE /inheritance:r /grant:r %USERNAME%:F)"
            ));
        }
    }
    Ok(())
}

/// The problem [`Journal::check`](crate::journal::Journal::check) reports
/// for a journal other accounts can read: the file itself, or the `-wal`
/// and `-shm` files its directory's inheritable entries let them read.
pub(crate) fn exposure_problem(path: &Path) -> Option<String> {
    if !path.is_file() {
        return None;
    }
    let fix = "it holds request and response bodies: remove every entry but its owner's \
               (icacls PATH /inheritance:r /grant:r %USERNAME%:F)";
    if let Ok(Some(who)) = foreign_grant(path, READ_RIGHTS, Applies::ToObject) {
        return Some(format!(
            "the journal file {} is readable by {who}; {fix}",
            path.display()
        ));
    }
    let dir = directory_of(path);
    if let Ok(Some(who)) = foreign_grant(dir, READ_RIGHTS, Applies::ToNewFiles) {
        return Some(format!(
            "the journal's directory {} lets {who} read the files created in it (the \
             journal's -wal and -shm); {fix}",
            dir.display()
        ));
    }
    None
}

/// Which entries of a DACL count.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Applies {
    /// Those that apply to the file or directory itself.
    ToObject,
    /// Those a directory passes on to the files created in it.
    ToNewFiles,
}

/// The first account other than the current user, SYSTEM, the
/// Administrators group and CREATOR OWNER that `path`'s DACL grants one of
/// `rights`: its SID in string form, or "every account" for a missing DACL.
/// `Ok(None)` when there is none; an error when the DACL cannot be read.
fn foreign_grant(path: &Path, rights: u32, applies: Applies) -> io::Result<Option<String>> {
    let user = CurrentUser::new()?;
    let descriptor = Descriptor::of(path)?;
    let Some(dacl) = descriptor.dacl() else {
        return Ok(Some("every account (it has no DACL)".to_owned()));
    };
    // SAFETY: `dacl` points into the descriptor, alive for this function;
    // GetAce is asked only for indexes below the ACL's count, and an
    // ACCESS_ALLOWED ACE holds its SID from `SidStart`.
    unsafe {
        for index in 0..u32::from((*dacl).AceCount) {
            let mut ace: *mut c_void = std::ptr::null_mut();
            if GetAce(dacl, index, &mut ace) == 0 {
                return Err(io::Error::last_os_error());
            }
            let header = &*(ace as *const ACE_HEADER);
            if u32::from(header.AceType) != ACCESS_ALLOWED_ACE_TYPE {
                continue;
            }
            let flags = u32::from(header.AceFlags);
            let counts = match applies {
                Applies::ToObject => flags & INHERIT_ONLY_ACE == 0,
                Applies::ToNewFiles => flags & OBJECT_INHERIT_ACE != 0,
            };
            let allowed = &*(ace as *const ACCESS_ALLOWED_ACE);
            if !counts || allowed.Mask & rights == 0 {
                continue;
            }
            let sid: PSID = (&allowed.SidStart as *const u32).cast_mut().cast();
            let trusted = EqualSid(sid, user.sid()) != 0
                || IsWellKnownSid(sid, WinLocalSystemSid) != 0
                || IsWellKnownSid(sid, WinBuiltinAdministratorsSid) != 0
                || IsWellKnownSid(sid, WinCreatorOwnerSid) != 0;
            if !trusted {
                return Ok(Some(sid_string(sid)));
            }
        }
    }
    Ok(None)
}

/// A security descriptor read with `GetNamedSecurityInfoW`, freed on drop.
struct Descriptor {
    raw: *mut c_void,
    dacl: *mut ACL,
}

impl Descriptor {
    fn of(path: &Path) -> io::Result<Descriptor> {
        let wide = wide(path.as_os_str());
        let mut raw: *mut c_void = std::ptr::null_mut();
        let mut dacl: *mut ACL = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path; the out pointers are valid; the
        // descriptor is freed with LocalFree on drop.
        let status = unsafe {
            GetNamedSecurityInfoW(
                wide.as_ptr(),
                SE_FILE_OBJECT,
                DACL_SECURITY_INFORMATION,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut dacl,
                std::ptr::null_mut(),
                &mut raw,
            )
        };
        if status != 0 {
            return Err(io::Error::from_raw_os_error(status as i32));
        }
        Ok(Descriptor { raw, dacl })
    }

    /// The DACL, `None` when the object has none (everyone may do anything).
    fn dacl(&self) -> Option<*const ACL> {
        (!self.dacl.is_null()).then_some(self.dacl.cast_const())
    }
}

impl Drop for Descriptor {
    fn drop(&mut self) {
        // SAFETY: allocated by GetNamedSecurityInfoW, freed once.
        unsafe { LocalFree(self.raw) };
    }
}

/// The current process's user, from its token.
struct CurrentUser {
    /// The TOKEN_USER structure and the SID it points into; u64 for its
    /// alignment.
    buffer: Vec<u64>,
}

impl CurrentUser {
    fn new() -> io::Result<CurrentUser> {
        // SAFETY: the token handle is closed on every path; the buffer is as
        // large as GetTokenInformation asked for.
        unsafe {
            let mut token: HANDLE = std::ptr::null_mut();
            if OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) == 0 {
                return Err(io::Error::last_os_error());
            }
            let mut len = 0u32;
            GetTokenInformation(token, TokenUser, std::ptr::null_mut(), 0, &mut len);
            let mut buffer = vec![0u64; (len as usize).div_ceil(8).max(1)];
            let ok = GetTokenInformation(
                token,
                TokenUser,
                buffer.as_mut_ptr().cast(),
                (buffer.len() * 8) as u32,
                &mut len,
            );
            let error = io::Error::last_os_error();
            CloseHandle(token);
            if ok == 0 {
                return Err(error);
            }
            Ok(CurrentUser { buffer })
        }
    }

    fn sid(&self) -> PSID {
        // SAFETY: the buffer holds the TOKEN_USER that GetTokenInformation
        // wrote.
        unsafe { (*(self.buffer.as_ptr() as *const TOKEN_USER)).User.Sid }
    }
}

/// A security descriptor whose protected DACL grants the current user full
/// access and nobody else anything, inherited by files and directories
/// created inside a directory that carries it.
struct OwnerOnly {
    _user: CurrentUser,
    _acl: Vec<u64>,
    descriptor: Box<SECURITY_DESCRIPTOR>,
}

impl OwnerOnly {
    fn new() -> io::Result<OwnerOnly> {
        let user = CurrentUser::new()?;
        let mut acl = build_acl(&[(
            user.sid(),
            FILE_ALL_ACCESS,
            OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE,
        )])?;
        // SAFETY: the descriptor points at the ACL; both live in the
        // returned value for as long as the descriptor is used.
        unsafe {
            let mut descriptor: Box<SECURITY_DESCRIPTOR> = Box::new(std::mem::zeroed());
            let sd: *mut c_void = (&mut *descriptor as *mut SECURITY_DESCRIPTOR).cast();
            check(InitializeSecurityDescriptor(
                sd,
                SECURITY_DESCRIPTOR_REVISION,
            ))?;
            check(SetSecurityDescriptorDacl(sd, 1, acl.as_mut_ptr().cast(), 0))?;
            check(SetSecurityDescriptorControl(
                sd,
                SE_DACL_PROTECTED,
                SE_DACL_PROTECTED,
            ))?;
            Ok(OwnerOnly {
                _user: user,
                _acl: acl,
                descriptor,
            })
        }
    }

    /// Attributes for CreateFileW and CreateDirectoryW; valid while `self` is.
    fn attributes(&self) -> SECURITY_ATTRIBUTES {
        SECURITY_ATTRIBUTES {
            nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
            lpSecurityDescriptor: (&*self.descriptor as *const SECURITY_DESCRIPTOR)
                .cast_mut()
                .cast(),
            bInheritHandle: 0,
        }
    }
}

/// An ACL (in a buffer aligned for it) that allows each `(sid, rights,
/// ace flags)` entry, in order.
fn build_acl(entries: &[(PSID, u32, u32)]) -> io::Result<Vec<u64>> {
    // SAFETY: the SIDs are valid; the buffer is as large as the ACL header
    // and one ACCESS_ALLOWED ACE per entry with its SID need.
    unsafe {
        let len = std::mem::size_of::<ACL>()
            + entries
                .iter()
                .map(|&(sid, _, _)| {
                    std::mem::size_of::<ACCESS_ALLOWED_ACE>() - std::mem::size_of::<u32>()
                        + GetLengthSid(sid) as usize
                })
                .sum::<usize>();
        let mut acl = vec![0u64; len.div_ceil(8)];
        let acl_ptr: *mut ACL = acl.as_mut_ptr().cast();
        check(InitializeAcl(acl_ptr, (acl.len() * 8) as u32, ACL_REVISION))?;
        for &(sid, rights, flags) in entries {
            check(AddAccessAllowedAceEx(
                acl_ptr,
                ACL_REVISION,
                flags,
                rights,
                sid,
            ))?;
        }
        Ok(acl)
    }
}

/// A Win32 BOOL result as an `io::Result`, with the thread's last error.
fn check(ok: i32) -> io::Result<()> {
    if ok == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A SID as `S-1-5-…`, or "another account" when it cannot be converted.
fn sid_string(sid: PSID) -> String {
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: on success `text` is a NUL-terminated string that LocalFree
    // releases.
    unsafe {
        if ConvertSidToStringSidW(sid, &mut text) == 0 || text.is_null() {
            return "another account".to_owned();
        }
        let len = (0..).take_while(|&i| *text.add(i) != 0).count();
        let s = String::from_utf16_lossy(std::slice::from_raw_parts(text, len));
        LocalFree(text.cast());
        format!("the account {s}")
    }
}

/// `s` as a NUL-terminated UTF-16 string.
fn wide(s: &OsStr) -> Vec<u16> {
    s.encode_wide().chain(std::iter::once(0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_under_local_app_data_and_needs_it_absolute() {
        let p = default_path_from(Some(r"C:\Users\u\AppData\Local".into())).unwrap();
        assert_eq!(
            p,
            PathBuf::from(r"C:\Users\u\AppData\Local\payidem\journal.sqlite3")
        );
        for v in [None, Some(OsString::from(r"relative\dir")), Some("".into())] {
            let e = default_path_from(v).unwrap_err();
            assert_eq!(e.code(), ErrorCode::Journal);
            assert!(e.message().contains("LOCALAPPDATA"), "{}", e.message());
        }
        let local = std::env::var_os("LOCALAPPDATA").expect("LOCALAPPDATA is set");
        assert_eq!(
            crate::journal::default_journal_path().unwrap(),
            Path::new(&local).join("payidem").join("journal.sqlite3")
        );
    }

    #[test]
    fn created_directories_and_files_grant_their_owner_alone() {
        let top = tempfile::tempdir().unwrap();
        let file = top.path().join("a").join("b").join("j.sqlite3");
        create_private_dirs(&file).unwrap();
        create_private_file(&file);
        assert!(file.is_file());
        for (path, applies) in [
            (file.parent().unwrap(), Applies::ToObject),
            (file.parent().unwrap(), Applies::ToNewFiles),
            (file.parent().unwrap().parent().unwrap(), Applies::ToObject),
            (file.as_path(), Applies::ToObject),
        ] {
            assert_eq!(
                foreign_grant(path, WRITE_RIGHTS | READ_RIGHTS, applies).unwrap(),
                None,
                "{}",
                path.display()
            );
            // The user has everything; nobody else anything (Wine adds
            // SYSTEM to a directory's DACL as it reads it back).
            let me = sid_string(CurrentUser::new().unwrap().sid());
            let entries = entries(path);
            assert!(
                entries
                    .iter()
                    .any(|(sid, _, _, rights)| *sid == me
                        && rights & FILE_ALL_ACCESS == FILE_ALL_ACCESS),
                "{}: {entries:?}",
                path.display()
            );
            for (sid, ace_type, _, _) in &entries {
                assert_eq!(*ace_type, ACCESS_ALLOWED_ACE_TYPE, "{}", path.display());
                assert!(
                    *sid == me || *sid == "the account S-1-5-18",
                    "{}: {entries:?}",
                    path.display()
                );
            }
        }
        assert!(check_private_location(&file).is_ok());
        assert!(exposure_problem(&file).is_none());
        // An existing file is left as it is.
        std::fs::write(&file, b"kept").unwrap();
        create_private_file(&file);
        assert_eq!(std::fs::read(&file).unwrap(), b"kept");
    }

    /// Every entry of `path`'s DACL: its SID, type, flags and rights.
    fn entries(path: &Path) -> Vec<(String, u32, u32, u32)> {
        let descriptor = Descriptor::of(path).unwrap();
        let dacl = descriptor.dacl().expect("an explicit DACL");
        let mut all = Vec::new();
        // SAFETY: as in foreign_grant.
        unsafe {
            for index in 0..u32::from((*dacl).AceCount) {
                let mut ace: *mut c_void = std::ptr::null_mut();
                check(GetAce(dacl, index, &mut ace)).unwrap();
                let allowed = &*(ace as *const ACCESS_ALLOWED_ACE);
                let sid: PSID = (&allowed.SidStart as *const u32).cast_mut().cast();
                all.push((
                    sid_string(sid),
                    u32::from(allowed.Header.AceType),
                    u32::from(allowed.Header.AceFlags),
                    allowed.Mask,
                ));
            }
        }
        all
    }

    /// Gives `path` a protected DACL granting its owner everything and
    /// Everyone (S-1-1-0) `rights` with `flags`.
    fn grant_everyone(path: &Path, rights: u32, flags: u32) {
        use windows_sys::Win32::Security::Authorization::SetNamedSecurityInfoW;
        use windows_sys::Win32::Security::{
            CreateWellKnownSid, WinWorldSid, PROTECTED_DACL_SECURITY_INFORMATION,
            SECURITY_MAX_SID_SIZE,
        };
        let user = CurrentUser::new().unwrap();
        let mut everyone = [0u64; SECURITY_MAX_SID_SIZE.div_ceil(8) as usize];
        let mut len = SECURITY_MAX_SID_SIZE;
        let world: PSID = everyone.as_mut_ptr().cast();
        // SAFETY: a buffer of the largest SID size; SetNamedSecurityInfoW
        // copies the ACL.
        unsafe {
            check(CreateWellKnownSid(
                WinWorldSid,
                std::ptr::null_mut(),
                world,
                &mut len,
            ))
            .unwrap();
            let mut acl =
                build_acl(&[(user.sid(), FILE_ALL_ACCESS, 0), (world, rights, flags)]).unwrap();
            let wide = wide(path.as_os_str());
            let status = SetNamedSecurityInfoW(
                wide.as_ptr(),
                SE_FILE_OBJECT,
                DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                acl.as_mut_ptr().cast(),
                std::ptr::null_mut(),
            );
            assert_eq!(status, 0, "SetNamedSecurityInfoW {}", path.display());
        }
    }

    #[test]
    fn a_location_everyone_may_write_is_refused_and_one_everyone_may_read_is_reported() {
        let top = tempfile::tempdir().unwrap();
        let private = top.path().join("private").join("j.sqlite3");
        create_private_dirs(&private).unwrap();
        create_private_file(&private);
        let dir = private.parent().unwrap();
        // Everyone may read the file: opened, but reported.
        grant_everyone(&private, FILE_READ_DATA, 0);
        assert!(check_private_location(&private).is_ok());
        let why = exposure_problem(&private).expect("reported");
        assert!(why.contains("S-1-1-0"), "{why}");
        // Everyone may write the file: refused.
        grant_everyone(&private, FILE_ALL_ACCESS, 0);
        let why = check_private_location(&private).unwrap_err();
        assert!(why.contains("S-1-1-0") && why.contains("icacls"), "{why}");
        // Everyone may create files in the directory: refused, naming it.
        grant_everyone(&private, 0, 0);
        grant_everyone(dir, FILE_ADD_FILE, 0);
        let why = check_private_location(&private).unwrap_err();
        assert!(why.contains(&dir.display().to_string()), "{why}");
        assert!(why.contains("create or delete files"), "{why}");
        // Everyone may read the files the directory will hold: reported.
        grant_everyone(dir, READ_RIGHTS, OBJECT_INHERIT_ACE | INHERIT_ONLY_ACE);
        assert!(check_private_location(&private).is_ok());
        let why = exposure_problem(&private).expect("reported");
        assert!(why.contains("-wal"), "{why}");
    }
}
