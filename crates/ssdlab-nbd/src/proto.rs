//! The NBD wire format (fixed newstyle handshake, simple and structured replies), as
//! described in the protocol document of the NetworkBlockDevice/nbd project (doc/proto.md).
//! Pure functions over bytes: nothing here touches a socket, so the parser can be fuzzed.

/// "NBDMAGIC", the first word the server sends.
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// "IHAVEOPT": newstyle negotiation; also the magic of every option the client sends.
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
pub const OPTION_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

// Handshake flags (server) and client flags.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1;
pub const FLAG_NO_ZEROES: u16 = 2;
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1;
pub const FLAG_C_NO_ZEROES: u32 = 2;

// Transmission flags.
pub const FLAG_HAS_FLAGS: u16 = 1 << 0;
pub const FLAG_READ_ONLY: u16 = 1 << 1;
pub const FLAG_SEND_FLUSH: u16 = 1 << 2;
pub const FLAG_SEND_FUA: u16 = 1 << 3;
pub const FLAG_SEND_TRIM: u16 = 1 << 5;
pub const FLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
pub const FLAG_CAN_MULTI_CONN: u16 = 1 << 8;

// Options.
pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;
pub const OPT_STRUCTURED_REPLY: u32 = 8;

// Option replies.
pub const REP_ACK: u32 = 1;
pub const REP_SERVER: u32 = 2;
pub const REP_INFO: u32 = 3;
pub const REP_ERR_UNSUP: u32 = (1 << 31) + 1;
pub const REP_ERR_INVALID: u32 = (1 << 31) + 3;
pub const REP_ERR_UNKNOWN: u32 = (1 << 31) + 6;
pub const REP_ERR_SHUTDOWN: u32 = (1 << 31) + 7;

// NBD_INFO types.
pub const INFO_EXPORT: u16 = 0;
pub const INFO_NAME: u16 = 1;
pub const INFO_DESCRIPTION: u16 = 2;
pub const INFO_BLOCK_SIZE: u16 = 3;

// Commands and command flags.
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_WRITE_ZEROES: u16 = 6;
pub const CMD_FLAG_FUA: u16 = 1 << 0;

// Structured reply chunk types and flags.
pub const REPLY_FLAG_DONE: u16 = 1;
pub const REPLY_TYPE_NONE: u16 = 0;
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
pub const REPLY_TYPE_ERROR: u16 = (1 << 15) + 1;

// Errors (errno values the protocol fixes).
pub const EPERM: u32 = 1;
pub const EIO: u32 = 5;
pub const EINVAL: u32 = 22;
pub const ENOSPC: u32 = 28;
pub const EOVERFLOW: u32 = 75;
pub const ESHUTDOWN: u32 = 108;

/// Names longer than this are refused (the protocol's limit on strings).
pub const MAX_STRING: u32 = 4096;
/// Option payloads longer than this are refused without reading them.
pub const MAX_OPTION_DATA: u32 = 64 * 1024;

pub const REQUEST_HEADER_LEN: usize = 28;

/// A transmission-phase request header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestHeader {
    pub flags: u16,
    pub command: u16,
    pub handle: u64,
    pub offset: u64,
    pub length: u32,
}

/// Why bytes could not be understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn be_u16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}
fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}
fn be_u64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().expect("8 bytes"))
}

pub fn parse_request_header(b: &[u8; REQUEST_HEADER_LEN]) -> Result<RequestHeader, ProtocolError> {
    let magic = be_u32(&b[0..4]);
    if magic != REQUEST_MAGIC {
        return Err(ProtocolError(format!(
            "request magic {magic:#010x}, expected {REQUEST_MAGIC:#010x}"
        )));
    }
    Ok(RequestHeader {
        flags: be_u16(&b[4..6]),
        command: be_u16(&b[6..8]),
        handle: be_u64(&b[8..16]),
        offset: be_u64(&b[16..24]),
        length: be_u32(&b[24..28]),
    })
}

pub fn request_header_bytes(h: &RequestHeader) -> [u8; REQUEST_HEADER_LEN] {
    let mut b = [0u8; REQUEST_HEADER_LEN];
    b[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&h.flags.to_be_bytes());
    b[6..8].copy_from_slice(&h.command.to_be_bytes());
    b[8..16].copy_from_slice(&h.handle.to_be_bytes());
    b[16..24].copy_from_slice(&h.offset.to_be_bytes());
    b[24..28].copy_from_slice(&h.length.to_be_bytes());
    b
}

/// An option header: magic, option, length (16 bytes).
pub fn parse_option_header(b: &[u8; 16]) -> Result<(u32, u32), ProtocolError> {
    let magic = be_u64(&b[0..8]);
    if magic != IHAVEOPT {
        return Err(ProtocolError(format!(
            "option magic {magic:#018x}, expected IHAVEOPT"
        )));
    }
    Ok((be_u32(&b[8..12]), be_u32(&b[12..16])))
}

/// The data of NBD_OPT_INFO / NBD_OPT_GO: the export name and the info types asked for.
pub fn parse_info_request(data: &[u8]) -> Result<(String, Vec<u16>), ProtocolError> {
    let bad = |what: &str| ProtocolError(format!("NBD_OPT_INFO/GO data: {what}"));
    if data.len() < 4 {
        return Err(bad("shorter than the name length field"));
    }
    let name_len = be_u32(&data[0..4]) as usize;
    if name_len > MAX_STRING as usize || 4 + name_len + 2 > data.len() {
        return Err(bad("name length exceeds the option data"));
    }
    let name = std::str::from_utf8(&data[4..4 + name_len])
        .map_err(|_| bad("export name is not UTF-8"))?
        .to_string();
    let rest = &data[4 + name_len..];
    let count = be_u16(&rest[0..2]) as usize;
    if rest.len() != 2 + 2 * count {
        return Err(bad("info request count disagrees with the option length"));
    }
    let infos = (0..count).map(|i| be_u16(&rest[2 + 2 * i..])).collect();
    Ok((name, infos))
}

/// An option reply: magic, option, reply type, length, data.
pub fn option_reply(option: u32, reply: u32, data: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(20 + data.len());
    b.extend_from_slice(&OPTION_REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&reply.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    b
}

/// A simple reply header (data, if any, follows).
pub fn simple_reply_header(error: u32, handle: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&error.to_be_bytes());
    b[8..16].copy_from_slice(&handle.to_be_bytes());
    b
}

/// A structured reply chunk header (payload of `length` bytes follows).
pub fn structured_reply_header(flags: u16, kind: u16, handle: u64, length: u32) -> [u8; 20] {
    let mut b = [0u8; 20];
    b[0..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&flags.to_be_bytes());
    b[6..8].copy_from_slice(&kind.to_be_bytes());
    b[8..16].copy_from_slice(&handle.to_be_bytes());
    b[16..20].copy_from_slice(&length.to_be_bytes());
    b
}

/// The name of a command, for log lines.
pub fn command_name(command: u16) -> &'static str {
    match command {
        CMD_READ => "READ",
        CMD_WRITE => "WRITE",
        CMD_DISC => "DISC",
        CMD_FLUSH => "FLUSH",
        CMD_TRIM => "TRIM",
        CMD_WRITE_ZEROES => "WRITE_ZEROES",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_header_round_trip() {
        let h = RequestHeader {
            flags: CMD_FLAG_FUA,
            command: CMD_WRITE,
            handle: 0x0102_0304_0506_0708,
            offset: 4096 * 77,
            length: 8192,
        };
        assert_eq!(parse_request_header(&request_header_bytes(&h)), Ok(h));
        let mut b = request_header_bytes(&h);
        b[0] ^= 1;
        assert!(parse_request_header(&b).is_err());
    }

    #[test]
    fn info_request_parses_and_rejects_inconsistent_lengths() {
        let mut d = Vec::new();
        d.extend_from_slice(&3u32.to_be_bytes());
        d.extend_from_slice(b"abc");
        d.extend_from_slice(&2u16.to_be_bytes());
        d.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        d.extend_from_slice(&INFO_NAME.to_be_bytes());
        assert_eq!(
            parse_info_request(&d),
            Ok(("abc".to_string(), vec![INFO_BLOCK_SIZE, INFO_NAME]))
        );
        assert!(parse_info_request(&d[..d.len() - 1]).is_err());
        let mut long = d.clone();
        long[3] = 200;
        assert!(parse_info_request(&long).is_err());
    }
}
