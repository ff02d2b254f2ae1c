//! Line parsers and writers for each format, and format detection.

use crate::blk::{Action, Event};
use crate::NO_PLACEMENT;
use crate::{OpKind, TraceFormat, TraceReader, TraceRecord};
use std::io::BufRead;

fn field<'a>(fields: &[&'a str], i: usize, what: &str) -> Result<&'a str, String> {
    fields
        .get(i)
        .copied()
        .ok_or_else(|| format!("missing field {} ({what})", i + 1))
}

pub(crate) fn uint(text: &str, what: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!(
            "{what} is negative ({t}); expected a non-negative integer"
        ));
    }
    t.parse::<u64>()
        .map_err(|_| format!("{what} '{t}' is not a non-negative integer"))
}

/// A non-negative decimal number of `unit_ns` nanoseconds, converted exactly where it can be.
pub(crate) fn decimal_ns(text: &str, unit_ns: f64, what: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("{what} is negative ({t})"));
    }
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let ok = !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit());
    if !ok {
        return Err(format!("{what} '{t}' is not a decimal number"));
    }
    if unit_ns.fract() == 0.0 && (1.0..=1e12).contains(&unit_ns) && frac.len() <= 18 {
        // Whole nanoseconds per unit: exact in integers (Unix microseconds and Windows ticks
        // are beyond f64's 53 bits once in nanoseconds).
        let unit = unit_ns as u128;
        let i: u128 = int
            .parse::<u64>()
            .map_err(|_| format!("{what} '{t}' is too large"))? as u128;
        let f: u128 = if frac.is_empty() {
            0
        } else {
            frac.parse::<u64>().unwrap_or(0) as u128
        };
        let ns = i * unit + f * unit / 10u128.pow(frac.len() as u32);
        return u64::try_from(ns).map_err(|_| format!("{what} '{t}' is too large"));
    }
    let v: f64 = t
        .parse()
        .map_err(|_| format!("{what} '{t}' is not a number"))?;
    Ok((v * unit_ns).round() as u64)
}

pub(crate) fn nonzero(length: u64) -> Result<u64, String> {
    if length == 0 {
        Err("size is 0; expected a positive number of bytes".into())
    } else {
        Ok(length)
    }
}

/// Parse the reader's current line (its bytes; decoded lossily only when not UTF-8).
pub(crate) fn parse_line<R: BufRead>(r: &mut TraceReader<R>) -> Result<(), String> {
    let bytes = std::mem::take(&mut r.bytes);
    let result = match std::str::from_utf8(&bytes) {
        Ok(text) => parse_text(r, first_line_text(r.line_number, text).trim()),
        Err(_) => {
            r.non_utf8_lines += 1;
            let text = String::from_utf8_lossy(&bytes);
            parse_text(r, first_line_text(r.line_number, &text).trim())
        }
    };
    r.bytes = bytes;
    result
}

/// A byte-order mark (Windows tools write one) is not part of the first field.
fn first_line_text(line_number: u64, text: &str) -> &str {
    if line_number == 1 {
        text.strip_prefix('\u{feff}').unwrap_or(text)
    } else {
        text
    }
}

fn parse_text<R: BufRead>(r: &mut TraceReader<R>, line: &str) -> Result<(), String> {
    if line.is_empty() || line.starts_with('#') {
        return Ok(());
    }
    match r.options.format {
        TraceFormat::MsrCsv => {
            if r.line_number == 1 && line.starts_with("Timestamp") {
                return Ok(());
            }
            let f: Vec<&str> = line.split(',').collect();
            if f.len() != 7 {
                return Err(format!("{} fields; expected 7: Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime", f.len()));
            }
            let ticks = uint(f[0], "Timestamp")?;
            let kind = match f[3].trim().to_ascii_lowercase().as_str() {
                "read" => OpKind::Read,
                "write" => OpKind::Write,
                other => return Err(format!("Type '{other}'; expected Read or Write")),
            };
            r.ready.push_back(TraceRecord {
                arrival_ns: ticks.checked_mul(100).ok_or("Timestamp too large")?,
                device: uint(f[2], "DiskNumber")? as u32,
                kind,
                offset_bytes: uint(f[4], "Offset")?,
                length_bytes: nonzero(uint(f[5], "Size")?)?,
                service_ns: Some(uint(f[6], "ResponseTime")?.saturating_mul(100)),
                placement: NO_PLACEMENT,
            });
        }
        TraceFormat::Spc => {
            let f: Vec<&str> = line.split(',').collect();
            if f.len() < 5 {
                return Err(format!(
                    "{} fields; expected at least 5: ASU,LBA,Size,Opcode,Timestamp",
                    f.len()
                ));
            }
            let kind = match f[3].trim() {
                "r" | "R" => OpKind::Read,
                "w" | "W" => OpKind::Write,
                other => return Err(format!("Opcode '{other}'; expected r or w")),
            };
            let lba = uint(f[1], "LBA")?;
            r.ready.push_back(TraceRecord {
                arrival_ns: decimal_ns(f[4], 1e9, "Timestamp")?,
                device: uint(f[0], "ASU")? as u32,
                kind,
                offset_bytes: lba.checked_mul(512).ok_or("LBA too large")?,
                length_bytes: nonzero(uint(f[2], "Size")?)?,
                service_ns: None,
                placement: NO_PLACEMENT,
            });
        }
        TraceFormat::DiskSim => parse_disksim(r, line)?,
        TraceFormat::FioIolog => {
            if r.fio_version == 0 {
                return match line {
                    "fio version 2 iolog" => {
                        r.fio_version = 2;
                        Ok(())
                    }
                    "fio version 3 iolog" => {
                        r.fio_version = 3;
                        Ok(())
                    }
                    _ => Err(
                        "expected the header 'fio version 2 iolog' or 'fio version 3 iolog'".into(),
                    ),
                };
            }
            let f: Vec<&str> = line.split_whitespace().collect();
            // v3 puts a timestamp first; file actions (add, open, close) may come without one.
            let timestamped = r.fio_version == 3 && f.len() != 2;
            let (time_us, rest) = if timestamped {
                (uint(field(&f, 0, "timestamp")?, "timestamp")?, &f[1..])
            } else {
                (0, &f[..])
            };
            let action = field(rest, 1, "action")?;
            if action == "wait" && r.fio_version == 2 {
                // fio v2: wait until OFFSET milliseconds after the job started (fio's iolog.c,
                // read_iolog2: ipo->delay = offset; the replay sleeps until mtime_since_genesis).
                let n = uint(field(rest, 2, "wait time")?, "wait time")?;
                r.fio_wait_ns = if r.options.fio_wait_relative {
                    // fio's manual: N microseconds after the previous wait; under 100 dropped.
                    let step = if n < 100 {
                        0
                    } else {
                        n.checked_mul(1_000).ok_or("wait time too large")?
                    };
                    r.fio_wait_ns
                        .checked_add(step)
                        .ok_or("wait time too large")?
                } else {
                    r.fio_wait_ns
                        .max(n.checked_mul(1_000_000).ok_or("wait time too large")?)
                };
                r.fio_waits += 1;
                return Ok(());
            }
            let kind = match action {
                "add" | "open" | "close" | "sync" | "datasync" | "wait" => return Ok(()),
                "read" => OpKind::Read,
                "write" => OpKind::Write,
                "trim" => OpKind::Trim,
                other => return Err(format!("action '{other}'; expected add, open, close, read, write, trim, sync or datasync")),
            };
            if rest.len() != 4 {
                return Err(format!(
                    "{} fields after the timestamp; expected 4: filename action offset length",
                    rest.len()
                ));
            }
            let arrival_ns = if timestamped {
                time_us.checked_mul(1000).ok_or("timestamp too large")?
            } else {
                r.fio_wait_ns
            };
            r.ready.push_back(TraceRecord {
                arrival_ns,
                device: 0,
                kind,
                offset_bytes: uint(rest[2], "offset")?,
                length_bytes: nonzero(uint(rest[3], "length")?)?,
                service_ns: None,
                placement: NO_PLACEMENT,
            });
        }
        TraceFormat::Blkparse => parse_blkparse(r, line)?,
        TraceFormat::Alibaba => {
            let f: Vec<&str> = line.split(',').collect();
            if f.len() != 5 {
                return Err(format!(
                    "{} fields; expected 5: device_id,opcode,offset,length,timestamp",
                    f.len()
                ));
            }
            if r.line_number == 1 && f[0].trim() == "device_id" {
                return Ok(());
            }
            let kind = match f[1].trim() {
                "R" | "r" => OpKind::Read,
                "W" | "w" => OpKind::Write,
                other => return Err(format!("opcode '{other}'; expected R or W")),
            };
            r.ready.push_back(TraceRecord {
                arrival_ns: decimal_ns(f[4], 1e3, "timestamp (us)")?,
                device: small(uint(f[0], "device_id")?, "device_id")?,
                kind,
                offset_bytes: uint(f[2], "offset")?,
                length_bytes: nonzero(uint(f[3], "length")?)?,
                service_ns: None,
                placement: NO_PLACEMENT,
            });
        }
        TraceFormat::Tencent => {
            let f: Vec<&str> = line.split(',').collect();
            if f.len() != 5 {
                return Err(format!(
                    "{} fields; expected 5: Timestamp,Offset,Size,IOType,VolumeID",
                    f.len()
                ));
            }
            if r.line_number == 1 && f[0].trim() == "Timestamp" {
                return Ok(());
            }
            let kind = match f[3].trim() {
                "0" => OpKind::Read,
                "1" => OpKind::Write,
                other => return Err(format!("IOType '{other}'; expected 0 (read) or 1 (write)")),
            };
            r.ready.push_back(TraceRecord {
                arrival_ns: decimal_ns(f[0], 1e9, "Timestamp (s)")?,
                device: small(uint(f[4], "VolumeID")?, "VolumeID")?,
                kind,
                offset_bytes: sectors_to_bytes(uint(f[1], "Offset")?, "Offset")?,
                length_bytes: sectors_to_bytes(nonzero(uint(f[2], "Size")?)?, "Size")?,
                service_ns: None,
                placement: NO_PLACEMENT,
            });
        }
        TraceFormat::Fiu => {
            // The process name is free text (it may hold spaces): fields are counted from
            // both ends.
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 9 {
                return Err(format!(
                    "{} fields; expected 9: ts_ns pid process lba size_blocks W|R major minor md5",
                    f.len()
                ));
            }
            let n = f.len();
            let kind = match f[n - 4] {
                "R" | "r" => OpKind::Read,
                "W" | "w" => OpKind::Write,
                other => return Err(format!("operation '{other}'; expected W or R")),
            };
            let (major, minor) = (uint(f[n - 3], "major")?, uint(f[n - 2], "minor")?);
            r.ready.push_back(TraceRecord {
                arrival_ns: uint(f[0], "ts (ns)")?,
                device: small((major << 20) | (minor & 0xF_FFFF), "major/minor")?,
                kind,
                offset_bytes: sectors_to_bytes(uint(f[n - 6], "lba")?, "lba")?,
                length_bytes: sectors_to_bytes(nonzero(uint(f[n - 5], "size")?)?, "size")?,
                service_ns: None,
                placement: NO_PLACEMENT,
            });
        }
        TraceFormat::MsProd => parse_msprod(r, line)?,
        TraceFormat::Columns => {
            let spec = r
                .options
                .columns
                .as_ref()
                .ok_or("the columns format needs a column mapping (--columns)")?;
            if r.line_number <= spec.skip_lines {
                return Ok(());
            }
            if let Some(rec) = spec.parse(line)? {
                r.ready.push_back(rec);
            }
        }
        TraceFormat::Blktrace => {
            return Err(
                "blktrace files are binary; they are read with ssdlab_trace::blktrace".into(),
            )
        }
    }
    Ok(())
}

/// One line of a DiskSim (or MQSim) ASCII trace: arrival device start_sector size_sectors type.
fn parse_disksim<R: BufRead>(r: &mut TraceReader<R>, line: &str) -> Result<(), String> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() != 5 {
        return Err(format!(
            "{} fields; expected 5: arrival device start_sector size_sectors type",
            f.len()
        ));
    }
    let kind = match uint(f[4], "type")? & 1 {
        1 => OpKind::Read,
        _ => OpKind::Write,
    };
    let sectors = nonzero(uint(f[3], "size_sectors")?)?;
    let unit = match r.disksim_unit_ns {
        Some(u) => u,
        None => {
            // DiskSim's ASCII traces give milliseconds with decimals (DiskSim 4.0
            // manual, 4.4.1 "ASCII"); MQSim's give integer nanoseconds.
            let (u, why) = if f[0].contains('.') {
                (1e6, "ms (DiskSim's unit: the times have decimals)")
            } else {
                (1.0, "ns (MQSim's unit: the times are integers)")
            };
            r.notes.push(format!("DiskSim/MQSim arrival times read as {why}; give --time-unit ns|us|ms|s if that is wrong"));
            r.disksim_unit_ns = Some(u);
            u
        }
    };
    r.ready.push_back(TraceRecord {
        arrival_ns: decimal_ns(f[0], unit, "arrival")?,
        device: uint(f[1], "device")? as u32,
        kind,
        offset_bytes: uint(f[2], "start_sector")?
            .checked_mul(512)
            .ok_or("start_sector too large")?,
        length_bytes: sectors.checked_mul(512).ok_or("size_sectors too large")?,
        service_ns: None,
        placement: NO_PLACEMENT,
    });
    Ok(())
}

pub(crate) fn small(v: u64, what: &str) -> Result<u32, String> {
    u32::try_from(v).map_err(|_| format!("{what} {v} is beyond 2^32"))
}

pub(crate) fn sectors_to_bytes(v: u64, what: &str) -> Result<u64, String> {
    v.checked_mul(512)
        .ok_or_else(|| format!("{what} {v} is too large"))
}

/// A hex (`0x...`) or decimal unsigned integer.
pub(crate) fn hex_or_uint(text: &str, what: &str) -> Result<u64, String> {
    let t = text.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => {
            u64::from_str_radix(h, 16).map_err(|_| format!("{what} '{t}' is not a hex number"))
        }
        None => uint(t, what),
    }
}

/// `DiskWrite, 1234567, sqlservr.exe (1234), 5678, 0xfffffa8003f4d010, 0x3b8b1000, 0x1000, 241, 3, ...`
fn parse_msprod<R: BufRead>(r: &mut TraceReader<R>, line: &str) -> Result<(), String> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    let kind = match f[0] {
        "DiskRead" => OpKind::Read,
        "DiskWrite" => OpKind::Write,
        _ => return Ok(()), // headers, other events (file, process, thread, flush...)
    };
    if f.get(1) == Some(&"TimeStamp") {
        return Ok(()); // the event's header line
    }
    // The process name is free text and may hold commas: the fields after it are found from
    // the IRP pointer, the first hex field after the thread id.
    let irp = (3..f.len())
        .find(|&i| f[i].starts_with("0x") && i >= 4)
        .ok_or("no IrpPtr field (0x...); expected DiskRead|DiskWrite, TimeStamp, Process Name ( PID), ThreadID, IrpPtr, ByteOffset, IOSize, ElapsedTime, DiskNum, ...")?;
    if f.len() < irp + 5 {
        return Err(format!(
            "{} fields; expected ByteOffset, IOSize, ElapsedTime, DiskNum after IrpPtr",
            f.len()
        ));
    }
    r.ready.push_back(TraceRecord {
        arrival_ns: decimal_ns(f[1], 1e3, "TimeStamp (us)")?,
        device: small(uint(f[irp + 4], "DiskNum")?, "DiskNum")?,
        kind,
        offset_bytes: hex_or_uint(f[irp + 1], "ByteOffset")?,
        length_bytes: nonzero(hex_or_uint(f[irp + 2], "IOSize")?)?,
        service_ns: Some(uint(f[irp + 3], "ElapsedTime (us)")?.saturating_mul(1000)),
        placement: NO_PLACEMENT,
    });
    Ok(())
}

/// `  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]`
fn parse_blkparse<R: BufRead>(r: &mut TraceReader<R>, line: &str) -> Result<(), String> {
    let mut f = [""; 10];
    let mut count = 0;
    for (slot, word) in f.iter_mut().zip(line.split_whitespace()) {
        *slot = word;
        count += 1;
    }
    let f = &f[..count];
    // Summary and message lines do not start with "maj,min".
    let Some((maj, min)) = f.first().and_then(|d| d.split_once(',')) else {
        return Ok(());
    };
    let (Ok(maj), Ok(min)) = (maj.parse::<u32>(), min.parse::<u32>()) else {
        return Ok(());
    };
    if f.len() < 6 {
        return Err(format!(
            "{} fields; expected dev cpu seq time pid action ...",
            f.len()
        ));
    }
    let device = (maj << 20) | (min & 0xF_FFFF);
    let action = match f[5] {
        "Q" => Action::Queue,
        "D" => Action::Issue,
        "R" => Action::Requeue,
        "C" => Action::Complete,
        _ => Action::Other,
    };
    if action == Action::Other || f.len() < 10 || f[8] != "+" {
        // Other events, and requests without a sector range (flushes, notes).
        return Ok(());
    }
    let rwbs = f[6];
    let kind = if rwbs.contains('D') {
        OpKind::Trim
    } else if rwbs.contains('W') {
        OpKind::Write
    } else if rwbs.contains('R') {
        OpKind::Read
    } else {
        return Ok(()); // flush-only (F/N) requests
    };
    let event = Event {
        time_ns: decimal_ns(f[3], 1e9, "time")?,
        device,
        action,
        kind,
        sector: uint(f[7], "sector")?,
        sectors: uint(f[9], "sector count")?,
    };
    r.blk.event(event, &mut r.ready);
    Ok(())
}

/// One record as a line of `format` (no newline). Lossless for records the format can hold
/// (MSR: times in 100 ns ticks; sector formats: 512 B multiples; fio v3: whole microseconds).
pub fn write_record(format: TraceFormat, r: &TraceRecord) -> String {
    let rw =
        |read: &'static str, write: &'static str| if r.kind == OpKind::Read { read } else { write };
    match format {
        TraceFormat::MsrCsv => format!(
            "{},ssdlab,{},{},{},{},{}",
            r.arrival_ns / 100,
            r.device,
            rw("Read", "Write"),
            r.offset_bytes,
            r.length_bytes,
            r.service_ns.unwrap_or(0) / 100
        ),
        TraceFormat::Spc => format!(
            "{},{},{},{},{}.{:09}",
            r.device,
            r.offset_bytes / 512,
            r.length_bytes,
            rw("r", "w"),
            r.arrival_ns / 1_000_000_000,
            r.arrival_ns % 1_000_000_000
        ),
        TraceFormat::DiskSim => format!(
            "{} {} {} {} {}",
            r.arrival_ns,
            r.device,
            r.offset_bytes / 512,
            r.length_bytes / 512,
            rw("1", "0")
        ),
        TraceFormat::FioIolog => {
            let action = match r.kind {
                OpKind::Read => "read",
                OpKind::Write => "write",
                OpKind::Trim => "trim",
            };
            format!(
                "{} ssdlab.dat {} {} {}",
                r.arrival_ns / 1000,
                action,
                r.offset_bytes,
                r.length_bytes
            )
        }
        TraceFormat::Blkparse => {
            let rwbs = match r.kind {
                OpKind::Read => "R",
                OpKind::Write => "W",
                OpKind::Trim => "D",
            };
            let (maj, min) = (r.device >> 20, r.device & 0xFFFFF);
            let t = |ns: u64| format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
            let sector = r.offset_bytes / 512;
            let n = r.length_bytes / 512;
            let mut s = format!(
                "{maj:>3},{min:<3} 0 1 {} 1 D {rwbs} {sector} + {n} [ssdlab]",
                t(r.arrival_ns)
            );
            if let Some(svc) = r.service_ns {
                s.push_str(&format!(
                    "\n{maj:>3},{min:<3} 0 2 {} 0 C {rwbs} {sector} + {n} [0]",
                    t(r.arrival_ns + svc)
                ));
            }
            s
        }
        TraceFormat::Alibaba => format!(
            "{},{},{},{},{}",
            r.device,
            rw("R", "W"),
            r.offset_bytes,
            r.length_bytes,
            r.arrival_ns / 1000
        ),
        TraceFormat::Tencent => format!(
            "{}.{:09},{},{},{},{}",
            r.arrival_ns / 1_000_000_000,
            r.arrival_ns % 1_000_000_000,
            r.offset_bytes / 512,
            r.length_bytes / 512,
            rw("0", "1"),
            r.device
        ),
        TraceFormat::Fiu => format!(
            "{} 4242 ssdlab {} {} {} {} {} 0123456789abcdef0123456789abcdef",
            r.arrival_ns,
            r.offset_bytes / 512,
            r.length_bytes / 512,
            rw("R", "W"),
            r.device >> 20,
            r.device & 0xF_FFFF
        ),
        TraceFormat::MsProd => {
            let svc_us = r.service_ns.unwrap_or(0) / 1000;
            format!(
                "{}, {}, ssdlab.exe ( 4242), 17, 0xfffffa8003f4d010, 0x{:016x}, 0x{:08x}, {svc_us}, {}, 0x00060043, {svc_us}, Normal, 0x0, 0xfffffa80054c3320, \"C:\\ssdlab.dat\"",
                rw("DiskRead", "DiskWrite"),
                r.arrival_ns / 1000,
                r.offset_bytes,
                r.length_bytes,
                r.device
            )
        }
        TraceFormat::Columns | TraceFormat::Blktrace => {
            unreachable!("{} has no text writer", format.name())
        }
    }
}

/// The header line a format needs before its records, if any.
pub fn header(format: TraceFormat) -> Option<&'static str> {
    match format {
        TraceFormat::FioIolog => Some("fio version 3 iolog\n0 ssdlab.dat add\n0 ssdlab.dat open"),
        TraceFormat::MsrCsv => Some("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"),
        TraceFormat::MsProd => Some(concat!(
            "BeginHeader\n",
            "DiskRead, TimeStamp, Process Name ( PID), ThreadID, IrpPtr, ByteOffset, IOSize, ElapsedTime, DiskNum, IrpFlags, DiskSvcTime, I/O Pri, VolSnap, FileObject, FileName\n",
            "DiskWrite, TimeStamp, Process Name ( PID), ThreadID, IrpPtr, ByteOffset, IOSize, ElapsedTime, DiskNum, IrpFlags, DiskSvcTime, I/O Pri, VolSnap, FileObject, FileName\n",
            "EndHeader"
        )),
        _ => None,
    }
}
