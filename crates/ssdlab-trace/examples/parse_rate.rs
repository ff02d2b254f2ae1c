//! Parse rate per format: records per second on one core, from an in-memory trace of N
//! records written by this crate's writers (so every format holds the same requests), plus
//! blktrace's binary layout, a user column map, and gzip/zstd-compressed DiskSim text read
//! through `input::Records` from a file.
//! cargo run --release -p ssdlab-trace --example parse_rate -- [records]
use ssdlab_trace::blktrace::RawEvent;
use ssdlab_trace::NO_PLACEMENT;
use ssdlab_trace::*;

#[allow(clippy::disallowed_methods)]
fn rate<F: FnOnce() -> usize>(f: F) -> (usize, f64) {
    let t = std::time::Instant::now();
    let n = f();
    (n, n as f64 / t.elapsed().as_secs_f64())
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("records"))
        .unwrap_or(2_000_000);
    let mut x: u64 = 0x1234_5678;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let records: Vec<TraceRecord> = (0..n)
        .map(|i| TraceRecord {
            arrival_ns: i * 100_000,
            device: (next() % 4) as u32,
            kind: [OpKind::Write, OpKind::Read, OpKind::Read][(next() % 3) as usize],
            offset_bytes: (next() % (1 << 28)) * 512,
            length_bytes: 512 * (1 + next() % 256),
            service_ns: Some((next() % 10_000) * 1000),
            placement: NO_PLACEMENT,
        })
        .collect();
    let mut rows: Vec<String> = Vec::new();
    let mut disksim_text = String::new();
    for format in TraceFormat::ALL {
        let mut text = String::new();
        if let Some(h) = header(format) {
            text.push_str(h);
            text.push('\n');
        }
        for r in &records {
            let mut r = *r;
            if format == TraceFormat::Blkparse {
                // An issue and a completion line per request, at distinct sectors.
                r.offset_bytes += r.arrival_ns / 100 * 4096;
            }
            text.push_str(&write_record(format, &r));
            text.push('\n');
        }
        let opts = ReaderOptions {
            format,
            ..ReaderOptions::default()
        };
        let (count, per_s) = rate(|| {
            TraceReader::new(text.as_bytes(), opts)
                .filter(|r| r.is_ok())
                .count()
        });
        rows.push(format!(
            "\"{}\": {{\"records\": {count}, \"mb\": {:.1}, \"records_per_s\": {per_s:.0}}}",
            format.name(),
            text.len() as f64 / 1e6
        ));
        if format == TraceFormat::DiskSim {
            disksim_text = text;
        }
    }
    // A user column map over the DiskSim text (time, device, sector, sectors, type).
    let spec = ColumnSpec::parse_spec(
        "time=0,device=1,offset=2:sectors,size=3:sectors,op=4:1/0,sep=space",
    )
    .expect("spec");
    let opts = ReaderOptions {
        format: TraceFormat::Columns,
        columns: Some(spec),
        ..ReaderOptions::default()
    };
    let (count, per_s) = rate(|| {
        TraceReader::new(disksim_text.as_bytes(), opts)
            .filter(|r| r.is_ok())
            .count()
    });
    rows.push(format!(
        "\"columns\": {{\"records\": {count}, \"records_per_s\": {per_s:.0}}}"
    ));
    // blktrace binary: an issue and a completion per request, one CPU file.
    let dir = std::env::temp_dir().join(format!("ssdlab-parse-rate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut bin = Vec::with_capacity(records.len() * 96);
    for (i, r) in records.iter().enumerate() {
        let sector = r.offset_bytes / 512 + i as u64 * 8;
        let ev = |t, event| RawEvent {
            time_ns: t,
            sector,
            bytes: r.length_bytes as u32,
            action: RawEvent::action(event, r.kind),
            device: 8 << 20,
            cpu: 0,
        };
        bin.extend(ev(r.arrival_ns, RawEvent::ISSUE).encode(2 * i as u32));
        bin.extend(ev(r.arrival_ns + 1000, RawEvent::COMPLETE).encode(2 * i as u32 + 1));
    }
    let path = dir.join("x.blktrace.0");
    std::fs::write(&path, &bin).expect("write");
    let p = path.display().to_string();
    let (count, per_s) = rate(|| {
        input::Records::open(&p, ReaderOptions::default(), true)
            .expect("open")
            .filter(|r| r.is_ok())
            .count()
    });
    rows.push(format!(
        "\"blktrace\": {{\"records\": {count}, \"mb\": {:.1}, \"records_per_s\": {per_s:.0}}}",
        bin.len() as f64 / 1e6
    ));
    // Compressed DiskSim text from a file.
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(disksim_text.as_bytes()).expect("gzip");
    let compressed = [
        ("disksim+gzip", gz.finish().expect("gzip")),
        (
            "disksim+zstd",
            zstd::encode_all(disksim_text.as_bytes(), 3).expect("zstd"),
        ),
    ];
    for (name, bytes) in compressed {
        let path = dir.join(name);
        std::fs::write(&path, &bytes).expect("write");
        let p = path.display().to_string();
        let opts = ReaderOptions {
            format: TraceFormat::DiskSim,
            ..ReaderOptions::default()
        };
        let (count, per_s) = rate(|| {
            input::Records::open(&p, opts, false)
                .expect("open")
                .filter(|r| r.is_ok())
                .count()
        });
        rows.push(format!(
            "\"{name}\": {{\"records\": {count}, \"mb\": {:.1}, \"records_per_s\": {per_s:.0}}}",
            bytes.len() as f64 / 1e6
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("{{\n  {}\n}}", rows.join(",\n  "));
}
