//! Reaching the TCP socket under a tiny_http request, which tiny_http does
//! not expose: the fault `drop_after_commit` and oversized bodies need to
//! end a connection without an HTTP answer or without reading what is left.
//!
//! The socket is found among the process's open descriptors by its local
//! port and its peer address; it is only shut down, never closed, so
//! tiny_http still owns (and later closes) the descriptor.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Which directions to shut down.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Direction {
    /// Further reads see end of file; nothing more is read from the peer.
    Read,
    /// Both directions: the peer sees the connection closed.
    Both,
}

fn to_socket_addr(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match i32::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::new(IpAddr::V4(ip), u16::from_be(a.sin_port)))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a = unsafe {
                &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
            };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(SocketAddr::new(IpAddr::V6(ip), u16::from_be(a.sin6_port)))
        }
        _ => None,
    }
}

fn addr_of(fd: libc::c_int, peer: bool) -> Option<SocketAddr> {
    // SAFETY: zeroed sockaddr_storage is a valid value; the length passed is
    // its size, and the kernel writes at most that many bytes.
    unsafe {
        let mut storage: libc::sockaddr_storage = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        let ptr = (&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr>();
        let rc = if peer {
            libc::getpeername(fd, ptr, &mut len)
        } else {
            libc::getsockname(fd, ptr, &mut len)
        };
        (rc == 0).then(|| to_socket_addr(&storage)).flatten()
    }
}

fn same(a: SocketAddr, b: SocketAddr) -> bool {
    let canon = |ip: IpAddr| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    a.port() == b.port() && canon(a.ip()) == canon(b.ip())
}

/// Shuts down the server-side socket whose local port is `local_port` and
/// whose peer is `peer`. Returns whether one was found.
pub(crate) fn shutdown_connection(local_port: u16, peer: SocketAddr, how: Direction) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return false;
    };
    let how = match how {
        Direction::Read => libc::SHUT_RD,
        Direction::Both => libc::SHUT_RDWR,
    };
    let mut found = false;
    for entry in entries.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<libc::c_int>().ok())
        else {
            continue;
        };
        let local_matches = addr_of(fd, false).is_some_and(|a| a.port() == local_port);
        if local_matches && addr_of(fd, true).is_some_and(|p| same(p, peer)) {
            // SAFETY: shutdown on a descriptor we do not close; a stale or
            // reused descriptor number at worst fails with an error code.
            unsafe { libc::shutdown(fd, how) };
            found = true;
        }
    }
    found
}

/// Sends `bytes` on the server-side socket of (`local_port`, `peer`), then
/// shuts it down both ways. Returns whether the socket was found.
pub(crate) fn send_and_close(local_port: u16, peer: SocketAddr, bytes: &[u8]) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return false;
    };
    for entry in entries.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<libc::c_int>().ok())
        else {
            continue;
        };
        let local_matches = addr_of(fd, false).is_some_and(|a| a.port() == local_port);
        if local_matches && addr_of(fd, true).is_some_and(|p| same(p, peer)) {
            let mut sent = 0;
            while sent < bytes.len() {
                // SAFETY: the pointer and length describe the unsent tail of
                // `bytes`; MSG_NOSIGNAL turns a closed peer into an error.
                let n = unsafe {
                    libc::send(
                        fd,
                        bytes[sent..].as_ptr().cast(),
                        bytes.len() - sent,
                        libc::MSG_NOSIGNAL,
                    )
                };
                if n <= 0 {
                    break;
                }
                sent += n as usize;
            }
            // SAFETY: as in `shutdown_connection`.
            unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
            return true;
        }
    }
    false
}
