//! Parse rate per format: records per second on one core, from an in-memory trace of N
//! records written by this crate's writers (so every format holds the same requests).
//! cargo run --release -p ssdlab-trace --example parse_rate -- [records]
use ssdlab_trace::*;

#[allow(clippy::disallowed_methods)]
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
            kind: if next() % 3 == 0 {
                OpKind::Write
            } else {
                OpKind::Read
            },
            offset_bytes: (next() % (1 << 28)) * 512,
            length_bytes: 512 * (1 + next() % 256),
            service_ns: Some((next() % 10_000) * 100),
        })
        .collect();
    println!("{{");
    for (k, format) in TraceFormat::ALL.into_iter().enumerate() {
        let mut text = String::new();
        if let Some(h) = header(format) {
            text.push_str(h);
            text.push('\n');
        }
        for r in &records {
            let mut r = *r;
            if format == TraceFormat::Blkparse {
                r.service_ns = None; // arrivals only: pairing is measured by the round-trip tests
                r.offset_bytes += r.arrival_ns / 100 * 4096; // distinct sectors
            }
            text.push_str(&write_record(format, &r));
            text.push('\n');
        }
        let t = std::time::Instant::now();
        let opts = ReaderOptions {
            format,
            ..ReaderOptions::default()
        };
        let count = TraceReader::new(text.as_bytes(), opts)
            .filter(|r| r.is_ok())
            .count();
        let secs = t.elapsed().as_secs_f64();
        let comma = if k + 1 < TraceFormat::ALL.len() {
            ","
        } else {
            ""
        };
        println!(
            "  \"{}\": {{\"records\": {count}, \"mb\": {:.1}, \"records_per_s\": {:.0}}}{comma}",
            format.name(),
            text.len() as f64 / 1e6,
            count as f64 / secs
        );
    }
    println!("}}");
}
