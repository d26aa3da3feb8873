//! Whom a daemon and its clients trust, and why.
//!
//! Anyone can listen on a path they can write, and a directory under `/tmp` can be
//! created first by another user. A client that trusted any listener would hand that
//! user its program's name and pid, and its program would wait stopped for as long as
//! that user liked; a daemon that listened in a directory others can write could have
//! its socket replaced under it. So both ends apply one rule to the socket's
//! directory ([`socket_dir`]), and a client also checks who the daemon is ([`daemon`])
//! before it sends a byte.

use hetsched_core::{Error, PathContext, Result};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::Path;

/// Whether `dir` may hold the socket of a daemon of uid `daemon`: it belongs to that uid
/// and no one else may write it.
pub fn socket_dir(dir: &Path, daemon: u32) -> Result<()> {
    let meta = std::fs::metadata(dir).at(dir)?;
    if meta.uid() != daemon || meta.mode() & 0o022 != 0 {
        return Err(Error::Input(format!(
            "{}: the socket directory belongs to uid {} with mode {:o}; it must belong to the \
             daemon's uid {daemon} and be writable by no one else (another user could \
             replace the socket)",
            dir.display(),
            meta.uid(),
            meta.mode() & 0o7777
        )));
    }
    Ok(())
}

/// Whether the daemon that accepted `stream` at `path` may be trusted: it runs as root or
/// as this user, and the socket's directory passes [`socket_dir`] for it.
pub fn daemon(stream: &UnixStream, path: &Path) -> Result<()> {
    let cred = nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
        .map_err(|e| {
            Error::runtime(format!("{}: the daemon's credentials: {e}", path.display()))
        })?;
    let me = nix::unistd::geteuid().as_raw();
    let daemon = cred.uid();
    if daemon != 0 && daemon != me {
        return Err(Error::Input(format!(
            "{}: the daemon listening there runs as uid {daemon}, neither root nor you (uid \
             {me}); refusing it (another user may have taken the socket's place)",
            path.display()
        )));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    socket_dir(dir, daemon)
}
