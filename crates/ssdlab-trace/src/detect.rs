//! Which format a trace is in, from its first lines.

use crate::TraceFormat;

/// Recognise the format from the first non-empty lines of a trace.
pub fn detect(lines: &[&str]) -> Option<TraceFormat> {
    detect_lines(lines, false)
}

/// [`detect()`], tolerating a few malformed lines among the first ones (`--skip-bad-lines`:
/// a format whose pattern fits at least three in four of them, used to be refused for one
/// bad byte; issue 25, item 22).
pub fn detect_tolerant(lines: &[&str]) -> Option<TraceFormat> {
    detect_lines(lines, true)
}

fn detect_lines(lines: &[&str], tolerant: bool) -> Option<TraceFormat> {
    let lines: Vec<&str> = lines
        .iter()
        .map(|l| l.trim_start_matches('\u{feff}').trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let first = *lines.first()?;
    if first.starts_with("BeginHeader")
        || lines
            .iter()
            .take(20)
            .any(|l| l.starts_with("DiskRead,") || l.starts_with("DiskWrite,"))
    {
        return Some(TraceFormat::MsProd);
    }
    if first.replace(' ', "") == "device_id,opcode,offset,length,timestamp" {
        return Some(TraceFormat::Alibaba);
    }
    if first.replace(' ', "") == "Timestamp,Offset,Size,IOType,VolumeID" {
        return Some(TraceFormat::Tencent);
    }
    if first.starts_with("fio version 2 iolog") || first.starts_with("fio version 3 iolog") {
        return Some(TraceFormat::FioIolog);
    }
    if first.starts_with("Timestamp,Hostname") {
        return Some(TraceFormat::MsrCsv);
    }
    let all = |p: &dyn Fn(&str) -> bool| {
        let head = &lines[..lines.len().min(20)];
        let fit = head.iter().filter(|l| p(l)).count();
        if tolerant {
            fit > 0 && 4 * fit >= 3 * head.len()
        } else {
            fit == head.len()
        }
    };
    // MSR Cambridge's shape. A Type damaged by a byte that is not UTF-8 (read as U+FFFD) keeps
    // the shape: the file is still MSR, and the parser names that line (issue 73 item 11).
    let msr_type = |t: &str| {
        matches!(t.trim().to_ascii_lowercase().as_str(), "read" | "write") || t.contains('\u{fffd}')
    };
    if all(&|l| {
        let f: Vec<&str> = l.split(',').collect();
        f.len() == 7 && f[0].trim().parse::<u64>().is_ok() && msr_type(f[3])
    }) && lines
        .iter()
        .take(20)
        .any(|l| l.split(',').nth(3).is_some_and(|t| !t.contains('\u{fffd}')))
    {
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
    let int = |x: &str| x.trim().parse::<u64>().is_ok();
    if all(&|l| {
        let f: Vec<&str> = l.split(',').collect();
        f.len() == 5
            && int(f[0])
            && matches!(f[1].trim(), "R" | "W" | "r" | "w")
            && int(f[2])
            && int(f[3])
            && int(f[4])
    }) {
        return Some(TraceFormat::Alibaba);
    }
    if all(&|l| {
        let f: Vec<&str> = l.split(',').collect();
        f.len() == 5
            && f[0].trim().parse::<f64>().is_ok()
            && int(f[1])
            && int(f[2])
            && matches!(f[3].trim(), "0" | "1")
            && int(f[4])
    }) {
        return Some(TraceFormat::Tencent);
    }
    if all(&|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let n = f.len();
        n >= 9
            && int(f[0])
            && int(f[1])
            && int(f[n - 6])
            && int(f[n - 5])
            && matches!(f[n - 4], "R" | "W")
            && f[n - 1].len() >= 16
            && f[n - 1].bytes().all(|b| b.is_ascii_hexdigit())
    }) {
        return Some(TraceFormat::Fiu);
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
