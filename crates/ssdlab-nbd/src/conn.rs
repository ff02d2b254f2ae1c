//! One client connection: the fixed newstyle handshake, then requests in and replies out.
//! The handshake and the request reader work on any `Read`/`Write`, so the fuzz tests drive
//! them with bytes in memory.

use crate::engine::{Cmd, Reply, Request};
use crate::proto::*;
use std::io::{self, Read, Write};

/// What the server exports (one export: the drive).
#[derive(Clone, Debug)]
pub struct Export {
    pub name: String,
    pub description: String,
    pub size: u64,
    /// Preferred block size: the drive's mapping unit.
    pub preferred_block: u32,
    /// Largest request accepted.
    pub max_request: u32,
    /// Refuse WRITE, TRIM and WRITE_ZEROES (EPERM) and say so in the export's flags.
    pub read_only: bool,
}

impl Export {
    pub fn transmission_flags(&self) -> u16 {
        let ro = if self.read_only { FLAG_READ_ONLY } else { 0 };
        ro | FLAG_HAS_FLAGS
            | FLAG_SEND_FLUSH
            | FLAG_SEND_FUA
            | FLAG_SEND_TRIM
            | FLAG_SEND_WRITE_ZEROES
            | FLAG_CAN_MULTI_CONN
    }

    fn knows(&self, name: &str) -> bool {
        name.is_empty() || name == self.name
    }
}

/// What the client and server agreed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Session {
    pub structured: bool,
}

/// Why a connection ended early.
#[derive(Debug)]
pub enum ConnError {
    Io(io::Error),
    Protocol(ProtocolError),
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                f.write_str("client closed the connection mid-message")
            }
            ConnError::Io(e) => write!(f, "{e}"),
            ConnError::Protocol(e) => write!(f, "{e}"),
        }
    }
}

impl From<io::Error> for ConnError {
    fn from(e: io::Error) -> Self {
        ConnError::Io(e)
    }
}

fn protocol(msg: impl Into<String>) -> ConnError {
    ConnError::Protocol(ProtocolError(msg.into()))
}

/// Run the handshake. Ok(None): the client aborted (NBD_OPT_ABORT) or only listed exports.
pub fn negotiate<S: Read + Write>(
    s: &mut S,
    export: &Export,
) -> Result<Option<Session>, ConnError> {
    let mut hello = Vec::with_capacity(18);
    hello.extend_from_slice(&NBDMAGIC.to_be_bytes());
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    s.write_all(&hello)?;
    s.flush()?;
    let mut cf = [0u8; 4];
    s.read_exact(&mut cf)?;
    let client_flags = u32::from_be_bytes(cf);
    if client_flags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
        return Err(protocol(format!(
            "unknown client flags {client_flags:#x} (known: FIXED_NEWSTYLE, NO_ZEROES)"
        )));
    }
    let no_zeroes = client_flags & FLAG_C_NO_ZEROES != 0;
    let mut structured = false;
    loop {
        let mut hdr = [0u8; 16];
        s.read_exact(&mut hdr)?;
        let (option, len) = parse_option_header(&hdr).map_err(ConnError::Protocol)?;
        if len > MAX_OPTION_DATA {
            return Err(protocol(format!(
                "option {option} carries {len} bytes (at most {MAX_OPTION_DATA})"
            )));
        }
        let mut data = vec![0u8; len as usize];
        s.read_exact(&mut data)?;
        match option {
            OPT_EXPORT_NAME => {
                let name = String::from_utf8_lossy(&data);
                if !export.knows(&name) {
                    // No way to send an error here: the protocol says close.
                    return Err(protocol(format!("unknown export {name:?}")));
                }
                let mut b = Vec::with_capacity(134);
                b.extend_from_slice(&export.size.to_be_bytes());
                b.extend_from_slice(&export.transmission_flags().to_be_bytes());
                if !no_zeroes {
                    b.extend_from_slice(&[0u8; 124]);
                }
                s.write_all(&b)?;
                s.flush()?;
                return Ok(Some(Session { structured }));
            }
            OPT_ABORT => {
                let _ = s.write_all(&option_reply(option, REP_ACK, &[]));
                let _ = s.flush();
                return Ok(None);
            }
            OPT_LIST => {
                if !data.is_empty() {
                    s.write_all(&option_reply(
                        option,
                        REP_ERR_INVALID,
                        b"LIST takes no data",
                    ))?;
                } else {
                    let mut d = (export.name.len() as u32).to_be_bytes().to_vec();
                    d.extend_from_slice(export.name.as_bytes());
                    d.extend_from_slice(export.description.as_bytes());
                    s.write_all(&option_reply(option, REP_SERVER, &d))?;
                    s.write_all(&option_reply(option, REP_ACK, &[]))?;
                }
            }
            OPT_STRUCTURED_REPLY => {
                if data.is_empty() {
                    structured = true;
                    s.write_all(&option_reply(option, REP_ACK, &[]))?;
                } else {
                    s.write_all(&option_reply(
                        option,
                        REP_ERR_INVALID,
                        b"STRUCTURED_REPLY takes no data",
                    ))?;
                }
            }
            OPT_INFO | OPT_GO => match parse_info_request(&data) {
                Err(e) => {
                    s.write_all(&option_reply(option, REP_ERR_INVALID, e.0.as_bytes()))?;
                }
                Ok((name, _)) if !export.knows(&name) => {
                    let msg = format!("no export {name:?}; this server exports {:?}", export.name);
                    s.write_all(&option_reply(option, REP_ERR_UNKNOWN, msg.as_bytes()))?;
                }
                Ok((_, infos)) => {
                    let mut d = INFO_EXPORT.to_be_bytes().to_vec();
                    d.extend_from_slice(&export.size.to_be_bytes());
                    d.extend_from_slice(&export.transmission_flags().to_be_bytes());
                    s.write_all(&option_reply(option, REP_INFO, &d))?;
                    // Block sizes are always sent: any byte granularity works (partial units
                    // are read, merged and rewritten), the mapping unit is preferred.
                    let mut d = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
                    d.extend_from_slice(&1u32.to_be_bytes());
                    d.extend_from_slice(&export.preferred_block.to_be_bytes());
                    d.extend_from_slice(&export.max_request.to_be_bytes());
                    s.write_all(&option_reply(option, REP_INFO, &d))?;
                    if infos.contains(&INFO_NAME) {
                        let mut d = INFO_NAME.to_be_bytes().to_vec();
                        d.extend_from_slice(export.name.as_bytes());
                        s.write_all(&option_reply(option, REP_INFO, &d))?;
                    }
                    if infos.contains(&INFO_DESCRIPTION) {
                        let mut d = INFO_DESCRIPTION.to_be_bytes().to_vec();
                        d.extend_from_slice(export.description.as_bytes());
                        s.write_all(&option_reply(option, REP_INFO, &d))?;
                    }
                    s.write_all(&option_reply(option, REP_ACK, &[]))?;
                    if option == OPT_GO {
                        s.flush()?;
                        return Ok(Some(Session { structured }));
                    }
                }
            },
            _ => {
                let msg = format!("option {option} is not supported");
                s.write_all(&option_reply(option, REP_ERR_UNSUP, msg.as_bytes()))?;
            }
        }
        s.flush()?;
    }
}

/// One request as read off the wire.
pub(crate) enum Incoming {
    Request(Request),
    /// Answer with this error, do not submit.
    Refused {
        handle: u64,
        error: u32,
        is_read: bool,
        why: String,
    },
    Disconnect,
    /// The client closed the connection between requests.
    Eof,
}

/// Read one request (and a WRITE's payload). A malformed header ends the connection; a
/// well-formed request the drive cannot take is `Refused`. `reserve(bytes)` is called for an
/// accepted request before its payload is read (the connection's in-flight budget: it may
/// wait, so that a client that sends faster than it is answered stops being read). A read
/// timeout between requests is an idle client and is waited out; within a request it is an
/// error (a client that stalls mid-request is dropped).
pub(crate) fn read_request<R: Read>(
    r: &mut R,
    export: &Export,
    mut reserve: impl FnMut(u64) -> io::Result<()>,
) -> Result<Incoming, ConnError> {
    let mut hdr = [0u8; REQUEST_HEADER_LEN];
    // EOF before the first byte of a header is a clean close.
    let mut got = 0;
    while got < hdr.len() {
        match r.read(&mut hdr[got..]) {
            Ok(0) if got == 0 => return Ok(Incoming::Eof),
            Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if got == 0
                    && matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let h = parse_request_header(&hdr).map_err(ConnError::Protocol)?;
    let refuse = |error: u32, why: String| Incoming::Refused {
        handle: h.handle,
        error,
        is_read: h.command == CMD_READ,
        why,
    };
    let in_range = h
        .offset
        .checked_add(h.length as u64)
        .is_some_and(|end| end <= export.size);
    let range = || {
        format!(
            "{} offset {} length {} beyond the export's {} bytes",
            command_name(h.command),
            h.offset,
            h.length,
            export.size
        )
    };
    let writes = matches!(h.command, CMD_WRITE | CMD_TRIM | CMD_WRITE_ZEROES);
    if writes && export.read_only {
        if h.command == CMD_WRITE {
            // The payload must still be consumed to stay in step with the client.
            io::copy(&mut r.take(h.length as u64), &mut io::sink())?;
        }
        return Ok(refuse(
            EPERM,
            format!("{} on a read-only export", command_name(h.command)),
        ));
    }
    let cmd = match h.command {
        CMD_READ => Cmd::Read,
        CMD_WRITE => {
            if h.length > export.max_request || !in_range {
                io::copy(&mut r.take(h.length as u64), &mut io::sink())?;
                return Ok(if in_range {
                    refuse(
                        EINVAL,
                        format!("WRITE of {} bytes (at most {})", h.length, export.max_request),
                    )
                } else {
                    refuse(ENOSPC, range())
                });
            }
            reserve(h.length as u64)?;
            let mut data = vec![0u8; h.length as usize];
            r.read_exact(&mut data)?;
            return Ok(Incoming::Request(Request {
                handle: h.handle,
                cmd: Cmd::Write,
                offset: h.offset,
                length: h.length as u64,
                fua: h.flags & CMD_FLAG_FUA != 0,
                data: Some(data),
                arrived: crate::engine::wall_now(),
                cost: h.length as u64,
            }));
        }
        CMD_DISC => return Ok(Incoming::Disconnect),
        CMD_FLUSH => Cmd::Flush,
        CMD_TRIM => Cmd::Trim,
        CMD_WRITE_ZEROES => Cmd::WriteZeroes,
        other => {
            return Ok(refuse(
                EINVAL,
                format!("command {other} is not supported (READ, WRITE, DISC, FLUSH, TRIM, WRITE_ZEROES are)"),
            ))
        }
    };
    if cmd == Cmd::Read && h.length > export.max_request {
        return Ok(refuse(
            EINVAL,
            format!(
                "READ of {} bytes (at most {})",
                h.length, export.max_request
            ),
        ));
    }
    if cmd != Cmd::Flush && !in_range {
        let error = if cmd == Cmd::Read { EINVAL } else { ENOSPC };
        return Ok(refuse(error, range()));
    }
    let cost = if cmd == Cmd::Read { h.length as u64 } else { 0 };
    reserve(cost)?;
    Ok(Incoming::Request(Request {
        handle: h.handle,
        cmd,
        offset: if cmd == Cmd::Flush { 0 } else { h.offset },
        length: if cmd == Cmd::Flush {
            0
        } else {
            h.length as u64
        },
        fua: h.flags & CMD_FLAG_FUA != 0,
        data: None,
        arrived: crate::engine::wall_now(),
        cost,
    }))
}

/// Write one reply: simple, or structured when negotiated (READ must then be structured).
pub(crate) fn write_reply<W: Write>(w: &mut W, r: &Reply, session: Session) -> io::Result<()> {
    if session.structured && r.is_read {
        if r.error != 0 {
            let msg = b"";
            w.write_all(&structured_reply_header(
                REPLY_FLAG_DONE,
                REPLY_TYPE_ERROR,
                r.handle,
                6 + msg.len() as u32,
            ))?;
            w.write_all(&r.error.to_be_bytes())?;
            w.write_all(&(msg.len() as u16).to_be_bytes())?;
            return Ok(());
        }
        match &r.read {
            Some((offset, data)) if !data.is_empty() => {
                w.write_all(&structured_reply_header(
                    REPLY_FLAG_DONE,
                    REPLY_TYPE_OFFSET_DATA,
                    r.handle,
                    8 + data.len() as u32,
                ))?;
                w.write_all(&offset.to_be_bytes())?;
                w.write_all(data)
            }
            _ => w.write_all(&structured_reply_header(
                REPLY_FLAG_DONE,
                REPLY_TYPE_NONE,
                r.handle,
                0,
            )),
        }
    } else {
        w.write_all(&simple_reply_header(r.error, r.handle))?;
        match &r.read {
            Some((_, data)) if r.error == 0 => w.write_all(data),
            _ => Ok(()),
        }
    }
}
