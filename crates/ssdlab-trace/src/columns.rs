//! A user's column mapping for delimited traces in no known layout (`--columns`):
//!
//! `time=0:us,op=1,offset=2:bytes,size=3:sectors[,device=4][,service=5:us][,sep=comma][,skip=1]`
//!
//! Columns count from 0. Time units: ns, us, ms, s, ticks (100 ns). Offset and size units:
//! bytes, sectors (512 B), kib, 4k (4096 B blocks). `op` takes R/Read, W/Write, T/Trim or
//! D/Discard (any case) unless its tokens are given: `op=3:0/1` reads 0 as read and 1 as write
//! (`op=3:0/1/2` adds trim). `pid=COL` reads each write's FDP placement identifier (0 to 65534;
//! empty or `-`: none). Separators: comma, space (any run of whitespace), tab, semicolon;
//! the default is comma when the line has one, else whitespace. `skip=N` skips N header lines.

use crate::formats::{decimal_ns, nonzero, small, uint};
use crate::NO_PLACEMENT;
use crate::{time_unit_ns, OpKind, TraceRecord};

#[derive(Clone, Debug, PartialEq)]
pub struct ColumnSpec {
    time: (usize, f64),
    op: (usize, Option<Vec<String>>),
    offset: (usize, u64),
    size: (usize, u64),
    device: Option<usize>,
    service: Option<(usize, f64)>,
    placement: Option<usize>,
    sep: Option<char>,
    pub skip_lines: u64,
}

const ACCEPTED: &str = "time=COL[:ns|us|ms|s|ticks], op=COL[:READ/WRITE[/TRIM]], offset=COL[:bytes|sectors|kib|4k], size=COL[:bytes|sectors|kib|4k], device=COL, service=COL[:unit], pid=COL, sep=comma|space|tab|semicolon, skip=N";

fn byte_unit(name: &str) -> Option<u64> {
    Some(match name {
        "bytes" | "b" => 1,
        "sectors" | "512" => 512,
        "kib" | "k" => 1024,
        "4k" | "blocks" => 4096,
        _ => return None,
    })
}

/// A field as an error shows it: at most 24 characters.
fn shown(t: &str) -> String {
    match t.char_indices().nth(24) {
        Some((i, _)) => format!("{}...", &t[..i]),
        None => t.to_string(),
    }
}

/// A required key's value, or the error naming it.
fn need<T>(v: Option<T>, key: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("--columns: '{key}' is missing; needed: time, op, offset, size"))
}

/// `op=COL:READ/WRITE[/TRIM]`'s tokens.
fn op_tokens(u: &str) -> Result<Vec<String>, String> {
    let t: Vec<String> = u.split('/').map(|s| s.trim().to_string()).collect();
    if t.len() < 2 || t.len() > 3 || t.iter().any(|s| s.is_empty()) {
        return Err(format!(
            "--columns op: '{u}': expected READ/WRITE or READ/WRITE/TRIM tokens, e.g. op=3:0/1"
        ));
    }
    Ok(t)
}

/// `sep=`'s value as the character.
fn separator(value: &str) -> Result<char, String> {
    Ok(match value {
        "comma" | "," => ',',
        "space" | "whitespace" => ' ',
        "tab" => '\t',
        "semicolon" | ";" => ';',
        other => {
            return Err(format!(
                "--columns sep: '{other}' is not known; accepted: comma, space, tab, semicolon"
            ))
        }
    })
}

impl ColumnSpec {
    /// Parse `--columns`; the error names the key and what is accepted.
    pub fn parse_spec(text: &str) -> Result<ColumnSpec, String> {
        let mut time = None;
        let mut op = None;
        let mut offset = None;
        let mut size = None;
        let mut device = None;
        let mut service = None;
        let mut placement = None;
        let mut sep = None;
        let mut skip_lines = 0;
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = item.split_once('=').ok_or_else(|| {
                format!("--columns '{item}': expected KEY=VALUE; accepted: {ACCEPTED}")
            })?;
            let (col, unit) = match value.split_once(':') {
                Some((c, u)) => (c, Some(u)),
                None => (value, None),
            };
            let column = || {
                col.trim().parse::<usize>().map_err(|_| {
                    format!(
                        "--columns {key}: '{col}' is not a column number (columns count from 0)"
                    )
                })
            };
            let unit_err = |accepted: &str| {
                format!(
                    "--columns {key}: unit '{}' is not known; accepted: {accepted}",
                    unit.unwrap_or("")
                )
            };
            match key.trim() {
                "time" | "service" => {
                    let u = match unit {
                        None => 1.0,
                        Some(u) => {
                            time_unit_ns(u).ok_or_else(|| unit_err("ns, us, ms, s, ticks"))?
                        }
                    };
                    if key.trim() == "time" {
                        time = Some((column()?, u));
                    } else {
                        service = Some((column()?, u));
                    }
                }
                "offset" | "size" => {
                    let u = match unit {
                        None => 1,
                        Some(u) => {
                            byte_unit(u).ok_or_else(|| unit_err("bytes, sectors, kib, 4k"))?
                        }
                    };
                    if key.trim() == "offset" {
                        offset = Some((column()?, u));
                    } else {
                        size = Some((column()?, u));
                    }
                }
                "op" => op = Some((column()?, unit.map(op_tokens).transpose()?)),
                "device" => device = Some(column()?),
                "pid" => placement = Some(column()?),
                "sep" => sep = Some(separator(value)?),
                "skip" => {
                    skip_lines = value.parse().map_err(|_| {
                        format!("--columns skip: '{value}' is not a number of lines")
                    })?
                }
                other => {
                    return Err(format!(
                        "--columns: key '{other}' is not known; accepted: {ACCEPTED}"
                    ))
                }
            }
        }
        Ok(ColumnSpec {
            time: need(time, "time")?,
            op: need(op, "op")?,
            offset: need(offset, "offset")?,
            size: need(size, "size")?,
            device,
            service,
            placement,
            sep,
            skip_lines,
        })
    }

    /// One line as a record (`None`: an empty line).
    pub fn parse(&self, line: &str) -> Result<Option<TraceRecord>, String> {
        let f: Vec<&str> = match self
            .sep
            .unwrap_or(if line.contains(',') { ',' } else { ' ' })
        {
            ' ' => line.split_whitespace().collect(),
            c => line.split(c).map(str::trim).collect(),
        };
        if f.is_empty() {
            return Ok(None);
        }
        let get = |i: usize, what: &str| {
            f.get(i).copied().ok_or_else(|| {
                format!(
                    "{} fields; the mapping reads {what} from column {i}",
                    f.len()
                )
            })
        };
        let op_text = get(self.op.0, "op")?;
        let kind = match &self.op.1 {
            Some(t) => {
                if op_text == t[0] {
                    OpKind::Read
                } else if op_text == t[1] {
                    OpKind::Write
                } else if t.get(2).is_some_and(|x| x == op_text) {
                    OpKind::Trim
                } else {
                    return Err(format!("op '{op_text}'; expected one of {}", t.join(", ")));
                }
            }
            None => match op_text.to_ascii_lowercase().as_str() {
                "r" | "read" => OpKind::Read,
                "w" | "write" => OpKind::Write,
                "t" | "trim" | "d" | "discard" => OpKind::Trim,
                _ => return Err(format!("op '{op_text}'; expected R, W, T (or Read, Write, Trim, Discard), or give the tokens: op=COL:READ/WRITE")),
            },
        };
        let scaled = |col: (usize, u64), what: &str| -> Result<u64, String> {
            uint(get(col.0, what)?, what)?
                .checked_mul(col.1)
                .ok_or_else(|| format!("{what} is too large"))
        };
        Ok(Some(TraceRecord {
            arrival_ns: decimal_ns(get(self.time.0, "time")?, self.time.1, "time")?,
            device: match self.device {
                Some(c) => small(uint(get(c, "device")?, "device")?, "device")?,
                None => 0,
            },
            kind,
            offset_bytes: scaled(self.offset, "offset")?,
            length_bytes: nonzero(scaled(self.size, "size")?)?,
            service_ns: match self.service {
                Some((c, u)) => Some(decimal_ns(get(c, "service")?, u, "service")?),
                None => None,
            },
            placement: match self.placement {
                Some(c) => match get(c, "pid")? {
                    "" | "-" => NO_PLACEMENT,
                    t => match t.parse::<u16>() {
                        Ok(p) if p != NO_PLACEMENT => p,
                        _ => {
                            return Err(format!(
                            "pid '{}'; expected a placement identifier 0 to 65534, or - for none",
                            shown(t)
                        ))
                        }
                    },
                },
                None => NO_PLACEMENT,
            },
        }))
    }
}
