//! Line parsers and writers for each format, and format detection.

use crate::{BlkparseArrival, OpKind, TraceFormat, TraceReader, TraceRecord};
use std::collections::BTreeMap;
use std::io::BufRead;

/// blkparse arrivals waiting for their completion, by (device, sector), in arrival order.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    by_sector: BTreeMap<(u32, u64), std::collections::VecDeque<TraceRecord>>,
    /// Arrival order, so records come out sorted by arrival: (arrival, device, sector).
    order: BTreeMap<(u64, u64), (u32, u64)>,
    sequence: u64,
}

impl Pending {
    fn add(&mut self, sector: u64, r: TraceRecord) {
        self.sequence += 1;
        self.by_sector
            .entry((r.device, sector))
            .or_default()
            .push_back(r);
        self.order
            .insert((r.arrival_ns, self.sequence), (r.device, sector));
    }

    /// The oldest pending arrival for (device, sector) completed at `t`.
    fn complete(&mut self, device: u32, sector: u64, t: u64) -> bool {
        let Some(q) = self.by_sector.get_mut(&(device, sector)) else {
            return false;
        };
        let Some(r) = q.front_mut() else {
            return false;
        };
        r.service_ns = Some(t.saturating_sub(r.arrival_ns));
        true
    }

    /// Records whose completion has been seen (or everything, at the end), oldest first.
    fn release(&mut self, out: &mut std::collections::VecDeque<TraceRecord>, all: bool) {
        while let Some((&key, &(device, sector))) = self.order.first_key_value() {
            let q = self.by_sector.get_mut(&(device, sector)).expect("indexed");
            let head = *q.front().expect("indexed");
            if head.service_ns.is_none() && !all {
                break;
            }
            // Only the head of this sector's queue can be released; it is the oldest by order.
            q.pop_front();
            if q.is_empty() {
                self.by_sector.remove(&(device, sector));
            }
            self.order.remove(&key);
            out.push_back(head);
        }
    }

    pub(crate) fn drain(&mut self) -> std::collections::VecDeque<TraceRecord> {
        let mut out = std::collections::VecDeque::new();
        self.release(&mut out, true);
        out
    }
}

fn field<'a>(fields: &[&'a str], i: usize, what: &str) -> Result<&'a str, String> {
    fields
        .get(i)
        .copied()
        .ok_or_else(|| format!("missing field {} ({what})", i + 1))
}

fn uint(text: &str, what: &str) -> Result<u64, String> {
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
fn decimal_ns(text: &str, unit_ns: f64, what: &str) -> Result<u64, String> {
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
    if unit_ns == 1e9 && frac.len() <= 9 {
        // Seconds with up to 9 decimals: exact.
        let i: u64 = int
            .parse()
            .map_err(|_| format!("{what} '{t}' is too large"))?;
        let f: u64 = if frac.is_empty() {
            0
        } else {
            format!("{frac:0<9}").parse().unwrap_or(0)
        };
        return i
            .checked_mul(1_000_000_000)
            .and_then(|x| x.checked_add(f))
            .ok_or_else(|| format!("{what} '{t}' is too large"));
    }
    if unit_ns == 1.0 && frac.is_empty() {
        return int
            .parse()
            .map_err(|_| format!("{what} '{t}' is too large"));
    }
    let v: f64 = t
        .parse()
        .map_err(|_| format!("{what} '{t}' is not a number"))?;
    Ok((v * unit_ns).round() as u64)
}

fn nonzero(length: u64) -> Result<u64, String> {
    if length == 0 {
        Err("size is 0; expected a positive number of bytes".into())
    } else {
        Ok(length)
    }
}

pub(crate) fn parse_line<R: BufRead>(r: &mut TraceReader<R>) -> Result<(), String> {
    let text = std::mem::take(&mut r.line);
    let result = parse_text(r, text.trim());
    r.line = text;
    result
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
            });
        }
        TraceFormat::DiskSim => {
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
            r.ready.push_back(TraceRecord {
                arrival_ns: decimal_ns(f[0], r.options.disksim_time_unit_ns, "arrival")?,
                device: uint(f[1], "device")? as u32,
                kind,
                offset_bytes: uint(f[2], "start_sector")?
                    .checked_mul(512)
                    .ok_or("start_sector too large")?,
                length_bytes: sectors.checked_mul(512).ok_or("size_sectors too large")?,
                service_ns: None,
            });
        }
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
            r.ready.push_back(TraceRecord {
                arrival_ns: time_us.checked_mul(1000).ok_or("timestamp too large")?,
                device: 0,
                kind,
                offset_bytes: uint(rest[2], "offset")?,
                length_bytes: nonzero(uint(rest[3], "length")?)?,
                service_ns: None,
            });
        }
        TraceFormat::Blkparse => parse_blkparse(r, line)?,
    }
    Ok(())
}

/// `  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]`
fn parse_blkparse<R: BufRead>(r: &mut TraceReader<R>, line: &str) -> Result<(), String> {
    let f: Vec<&str> = line.split_whitespace().collect();
    // Summary and message lines do not start with "maj,min".
    let Some((maj, min)) = f.first().and_then(|d| d.split_once(',')) else {
        return Ok(());
    };
    if maj.parse::<u32>().is_err() || min.parse::<u32>().is_err() {
        return Ok(());
    }
    if f.len() < 6 {
        return Err(format!(
            "{} fields; expected dev cpu seq time pid action ...",
            f.len()
        ));
    }
    let device = (maj.parse::<u32>().unwrap() << 20) | min.parse::<u32>().unwrap();
    let time_ns = decimal_ns(f[3], 1e9, "time")?;
    let action = f[5];
    let arrival_action = match r.options.blkparse_arrival {
        BlkparseArrival::Queue => "Q",
        BlkparseArrival::Issue => "D",
    };
    if action != arrival_action && action != "C" {
        return Ok(());
    }
    if f.len() < 10 || f[8] != "+" {
        // Requests without a sector range (flushes, notes): nothing to replay.
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
    let sector = uint(f[7], "sector")?;
    let sectors = uint(f[9], "sector count")?;
    if action == "C" {
        if r.pending.complete(device, sector, time_ns) {
            r.pending.release(&mut r.ready, false);
        }
        return Ok(());
    }
    if sectors == 0 {
        return Ok(());
    }
    r.pending.add(
        sector,
        TraceRecord {
            arrival_ns: time_ns,
            device,
            kind,
            offset_bytes: sector * 512,
            length_bytes: sectors * 512,
            service_ns: None,
        },
    );
    // Bound memory: arrivals whose completion never shows up are released once far behind.
    const PENDING_MAX: usize = 1 << 16;
    if r.pending.order.len() > PENDING_MAX {
        let (&key, &(d, s)) = r.pending.order.first_key_value().expect("non-empty");
        let q = r.pending.by_sector.get_mut(&(d, s)).expect("indexed");
        let head = q.pop_front().expect("indexed");
        if q.is_empty() {
            r.pending.by_sector.remove(&(d, s));
        }
        r.pending.order.remove(&key);
        r.ready.push_back(head);
        r.pending.release(&mut r.ready, false);
    }
    Ok(())
}

/// Recognise the format from the first non-empty lines of a trace.
pub fn detect(lines: &[&str]) -> Option<TraceFormat> {
    let lines: Vec<&str> = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let first = *lines.first()?;
    if first.starts_with("fio version 2 iolog") || first.starts_with("fio version 3 iolog") {
        return Some(TraceFormat::FioIolog);
    }
    if first.starts_with("Timestamp,Hostname") {
        return Some(TraceFormat::MsrCsv);
    }
    let all = |p: &dyn Fn(&str) -> bool| lines.iter().take(20).all(|l| p(l));
    if all(&|l| {
        let f: Vec<&str> = l.split(',').collect();
        f.len() == 7
            && f[0].trim().parse::<u64>().is_ok()
            && matches!(f[3].trim().to_ascii_lowercase().as_str(), "read" | "write")
    }) {
        return Some(TraceFormat::MsrCsv);
    }
    if all(&|l| {
        let f: Vec<&str> = l.split(',').collect();
        f.len() >= 5
            && f[0].trim().parse::<u64>().is_ok()
            && matches!(f[3].trim(), "r" | "R" | "w" | "W")
    }) {
        return Some(TraceFormat::Spc);
    }
    let blk = lines.iter().take(20).filter(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() >= 7
            && f[0]
                .split_once(',')
                .is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok())
    });
    if blk.count() * 2 > lines.len().min(20) {
        return Some(TraceFormat::Blkparse);
    }
    if all(&|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() == 5 && f.iter().all(|x| x.parse::<f64>().is_ok())
    }) {
        return Some(TraceFormat::DiskSim);
    }
    None
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
    }
}

/// The header line a format needs before its records, if any.
pub fn header(format: TraceFormat) -> Option<&'static str> {
    match format {
        TraceFormat::FioIolog => Some("fio version 3 iolog\n0 ssdlab.dat add\n0 ssdlab.dat open"),
        TraceFormat::MsrCsv => Some("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"),
        _ => None,
    }
}
