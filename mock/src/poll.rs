//! What the I/O thread needs from the operating system beyond std, with
//! one meaning on every platform: socket readiness (`poll(2)` on Unix,
//! `WSAPoll` on Windows), the socket pair that wakes it, the listen
//! backlog, and which `accept()` errors mean resources ran out.

use std::io;
use std::net::TcpListener;

/// Readiness flags of one [`PollFd`].
pub(crate) type Events = i16;

#[cfg(unix)]
mod sys {
    use std::io;
    use std::net::TcpListener;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    pub(crate) use std::os::fd::AsRawFd as Pollable;

    pub(crate) type PollFd = libc::pollfd;
    pub(crate) type WakeEnd = UnixStream;

    pub(crate) const READABLE: super::Events = libc::POLLIN;
    pub(crate) const WRITABLE: super::Events = libc::POLLOUT;
    pub(crate) const INVALID: super::Events = libc::POLLNVAL;

    pub(crate) fn entry<S: Pollable>(socket: &S, events: super::Events) -> PollFd {
        libc::pollfd {
            fd: socket.as_raw_fd(),
            events,
            revents: 0,
        }
    }

    pub(crate) fn revents(fd: &PollFd) -> super::Events {
        fd.revents
    }

    pub(crate) fn poll(fds: &mut [PollFd], timeout_ms: i32) -> io::Result<usize> {
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs that
        // lives across the call.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if ready < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(ready as usize)
        }
    }

    pub(crate) fn wake_pair() -> io::Result<(WakeEnd, WakeEnd)> {
        UnixStream::pair()
    }

    pub(crate) fn raise_backlog(listener: &TcpListener) {
        // std listens with a backlog of 128; a burst of connections (600
        // idle ones at once) would overflow it and stall connects for a
        // second. Listening again only raises the backlog.
        // SAFETY: listen(2) on a socket the caller owns.
        unsafe { libc::listen(listener.as_raw_fd(), 1024) };
    }

    pub(crate) fn is_resource_exhaustion(e: &io::Error) -> bool {
        matches!(
            e.raw_os_error(),
            Some(libc::EMFILE) | Some(libc::ENFILE) | Some(libc::ENOBUFS) | Some(libc::ENOMEM)
        )
    }
}

#[cfg(windows)]
mod sys {
    use std::io;
    use std::net::{Ipv4Addr, TcpListener, TcpStream};

    use windows_sys::Win32::Networking::WinSock::{
        WSAGetLastError, WSAPoll, POLLIN, POLLNVAL, POLLOUT, SOCKET, WSAEMFILE, WSAENOBUFS,
        WSAPOLLFD,
    };

    pub(crate) use std::os::windows::io::AsRawSocket as Pollable;

    pub(crate) type PollFd = WSAPOLLFD;
    pub(crate) type WakeEnd = TcpStream;

    pub(crate) const READABLE: super::Events = POLLIN;
    pub(crate) const WRITABLE: super::Events = POLLOUT;
    pub(crate) const INVALID: super::Events = POLLNVAL;

    pub(crate) fn entry<S: Pollable>(socket: &S, events: super::Events) -> PollFd {
        WSAPOLLFD {
            fd: socket.as_raw_socket() as SOCKET,
            events,
            revents: 0,
        }
    }

    pub(crate) fn revents(fd: &PollFd) -> super::Events {
        fd.revents
    }

    /// WSAPoll refuses entries that wait for nothing, which poll(2) takes
    /// (the socket is then only watched for errors): those are left out of
    /// the call and keep no readiness.
    pub(crate) fn poll(fds: &mut [PollFd], timeout_ms: i32) -> io::Result<usize> {
        let mut asked: Vec<WSAPOLLFD> = fds.iter().filter(|f| f.events != 0).copied().collect();
        // SAFETY: `asked` is a valid array of `asked.len()` WSAPOLLFD
        // structs that lives across the call.
        let ready = unsafe { WSAPoll(asked.as_mut_ptr(), asked.len() as u32, timeout_ms) };
        if ready < 0 {
            // SAFETY: no precondition.
            return Err(io::Error::from_raw_os_error(unsafe { WSAGetLastError() }));
        }
        let mut answers = asked.iter();
        for fd in fds.iter_mut() {
            fd.revents = 0;
            if fd.events != 0 {
                if let Some(answer) = answers.next() {
                    fd.revents = answer.revents;
                }
            }
        }
        Ok(ready as usize)
    }

    /// Two connected loopback sockets (Windows has no socketpair): the
    /// accepted end is checked to be the one this function connected.
    pub(crate) fn wake_pair() -> io::Result<(WakeEnd, WakeEnd)> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let tx = TcpStream::connect(listener.local_addr()?)?;
        loop {
            let (rx, peer) = listener.accept()?;
            if peer == tx.local_addr()? {
                let _ = tx.set_nodelay(true);
                return Ok((rx, tx));
            }
        }
    }

    /// Windows ignores a second listen on a listening socket: the backlog
    /// stays std's.
    pub(crate) fn raise_backlog(_listener: &TcpListener) {}

    pub(crate) fn is_resource_exhaustion(e: &io::Error) -> bool {
        matches!(e.raw_os_error(), Some(WSAEMFILE) | Some(WSAENOBUFS))
    }
}

pub(crate) use sys::{entry, revents, wake_pair, PollFd, WakeEnd, INVALID, READABLE, WRITABLE};

/// Waits up to `timeout_ms` for the readiness `fds` ask for; returns how
/// many entries have some.
pub(crate) fn poll(fds: &mut [PollFd], timeout_ms: i32) -> io::Result<usize> {
    sys::poll(fds, timeout_ms)
}

/// Raises `listener`'s backlog where the platform allows it.
pub(crate) fn raise_backlog(listener: &TcpListener) {
    sys::raise_backlog(listener)
}

/// Whether a failed `accept()` means descriptors or buffers ran out.
pub(crate) fn is_resource_exhaustion(e: &io::Error) -> bool {
    sys::is_resource_exhaustion(e)
}
