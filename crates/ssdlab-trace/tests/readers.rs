use proptest::prelude::*;
use ssdlab_trace::NO_PLACEMENT;
use ssdlab_trace::*;

fn read_all(text: &str, format: TraceFormat) -> Result<Vec<TraceRecord>, TraceError> {
    let opts = ReaderOptions {
        format,
        ..ReaderOptions::default()
    };
    TraceReader::new(text.as_bytes(), opts).collect()
}

fn write_all(format: TraceFormat, recs: &[TraceRecord]) -> String {
    let mut s = String::new();
    if let Some(h) = header(format) {
        s.push_str(h);
        s.push('\n');
    }
    for r in recs {
        s.push_str(&write_record(format, r));
        s.push('\n');
    }
    s
}

/// Records each format can hold exactly.
fn record(format: TraceFormat) -> impl Strategy<Value = TraceRecord> {
    let kinds = match format {
        TraceFormat::FioIolog | TraceFormat::Blkparse => {
            prop_oneof![Just(OpKind::Read), Just(OpKind::Write), Just(OpKind::Trim)].boxed()
        }
        _ => prop_oneof![Just(OpKind::Read), Just(OpKind::Write)].boxed(),
    };
    (
        0u64..1u64 << 40,
        0u32..16,
        kinds,
        0u64..1u64 << 31,
        1u64..4096,
        0u64..1u64 << 24,
    )
        .prop_map(move |(t, dev, kind, sector, sectors, svc)| {
            let arrival_ns = match format {
                TraceFormat::MsrCsv => t * 100,
                TraceFormat::FioIolog => t * 1000,
                _ => t,
            };
            TraceRecord {
                arrival_ns,
                device: if format == TraceFormat::FioIolog {
                    0
                } else {
                    dev
                },
                kind,
                offset_bytes: sector * 512,
                length_bytes: sectors * 512,
                service_ns: match format {
                    TraceFormat::MsrCsv => Some(svc * 100),
                    TraceFormat::Blkparse => Some(svc),
                    _ => None,
                },
                placement: NO_PLACEMENT,
            }
        })
}

fn sorted_records(format: TraceFormat) -> impl Strategy<Value = Vec<TraceRecord>> {
    proptest::collection::vec(record(format), 1..60).prop_map(|mut v| {
        v.sort_by_key(|r| r.arrival_ns);
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn msr_round_trip(recs in sorted_records(TraceFormat::MsrCsv)) {
        prop_assert_eq!(read_all(&write_all(TraceFormat::MsrCsv, &recs), TraceFormat::MsrCsv).unwrap(), recs);
    }

    #[test]
    fn spc_round_trip(recs in sorted_records(TraceFormat::Spc)) {
        prop_assert_eq!(read_all(&write_all(TraceFormat::Spc, &recs), TraceFormat::Spc).unwrap(), recs);
    }

    #[test]
    fn disksim_round_trip(recs in sorted_records(TraceFormat::DiskSim)) {
        prop_assert_eq!(read_all(&write_all(TraceFormat::DiskSim, &recs), TraceFormat::DiskSim).unwrap(), recs);
    }

    #[test]
    fn fio_iolog_round_trip(recs in sorted_records(TraceFormat::FioIolog)) {
        prop_assert_eq!(read_all(&write_all(TraceFormat::FioIolog, &recs), TraceFormat::FioIolog).unwrap(), recs);
    }

    #[test]
    fn blkparse_round_trip(recs in sorted_records(TraceFormat::Blkparse)) {
        // Distinct sectors per device, so completions pair unambiguously.
        let mut seen = std::collections::BTreeSet::new();
        let recs: Vec<_> = recs.into_iter().filter(|r| seen.insert((r.device, r.offset_bytes))).collect();
        prop_assert_eq!(read_all(&write_all(TraceFormat::Blkparse, &recs), TraceFormat::Blkparse).unwrap(), recs);
    }

    #[test]
    fn detection_finds_the_writer_format(recs in sorted_records(TraceFormat::DiskSim)) {
        for format in [TraceFormat::MsrCsv, TraceFormat::Spc, TraceFormat::DiskSim, TraceFormat::FioIolog] {
            let mut r = recs.clone();
            if format == TraceFormat::MsrCsv { r.iter_mut().for_each(|x| { x.arrival_ns -= x.arrival_ns % 100; x.service_ns = Some(0) }); }
            let text = write_all(format, &r);
            let lines: Vec<&str> = text.lines().take(20).collect();
            prop_assert_eq!(detect(&lines), Some(format));
        }
    }

    /// Fuzz: any bytes give records or a clear error, never a panic, in every format.
    #[test]
    fn arbitrary_input_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        for format in TraceFormat::ALL {
            for r in TraceReader::new(text.as_bytes(), ReaderOptions { format, ..ReaderOptions::default() }) {
                if let Err(e) = r {
                    prop_assert!(e.line_number > 0);
                    break;
                }
            }
        }
        let lines: Vec<&str> = text.lines().collect();
        let _ = detect(&lines);
    }
}

#[test]
fn errors_give_line_and_expectation() {
    let e = read_all("0 1 2048 8 1\n5 1 -4 8 1\n", TraceFormat::DiskSim).unwrap_err();
    assert_eq!(e.line_number, 2);
    assert!(e.message.contains("start_sector is negative"), "{e}");
    assert!(e.to_string().contains("5 1 -4 8 1"));
    let e = read_all("0,100,0,w,0.1\n", TraceFormat::Spc).unwrap_err();
    assert!(e.message.contains("size is 0"), "{e}");
    let e = read_all(
        "128166372003061629,hm,0,Flush,0,4096,10\n",
        TraceFormat::MsrCsv,
    )
    .unwrap_err();
    assert!(e.message.contains("expected Read or Write"), "{e}");
    let e = read_all("dev read 0 4096\n", TraceFormat::FioIolog).unwrap_err();
    assert!(e.message.contains("fio version 2 iolog"), "{e}");
    assert_eq!(read_all("", TraceFormat::DiskSim).unwrap(), vec![]);
}

#[test]
fn skip_bad_lines_counts_them() {
    let text = "0 1 2048 8 1\ngarbage\n10 1 4096 8 0\n1 2 3\n";
    let opts = ReaderOptions {
        format: TraceFormat::DiskSim,
        skip_bad_lines: true,
        ..ReaderOptions::default()
    };
    let mut reader = TraceReader::new(text.as_bytes(), opts);
    let recs: Vec<_> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(recs.len(), 2);
    assert_eq!(reader.bad_lines, 2);
}

#[test]
fn blkparse_pairs_issue_and_complete() {
    let text = "\
  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]
  8,0    3        2     0.000010000   697  D   W 223490 + 8 [kjournald]
  8,0    3        3     0.000020000   697  D   R 1000 + 16 [cat]
  8,0    3        4     0.000500000     0  C   R 1000 + 16 [0]
  8,0    3        5     0.000900000     0  C   W 223490 + 8 [0]
  8,0    1        6     0.001000000   700  D   DS 5000 + 2048 [fstrim]
CPU3 (8,0):
 Reads Queued:           0,        0KiB	 Writes Queued:           1,        4KiB
";
    let recs = read_all(text, TraceFormat::Blkparse).unwrap();
    assert_eq!(recs.len(), 3);
    assert_eq!(
        (recs[0].kind, recs[0].arrival_ns, recs[0].service_ns),
        (OpKind::Write, 10_000, Some(890_000))
    );
    assert_eq!(
        (recs[1].kind, recs[1].offset_bytes, recs[1].service_ns),
        (OpKind::Read, 512_000, Some(480_000))
    );
    assert_eq!(
        (recs[2].kind, recs[2].length_bytes, recs[2].service_ns),
        (OpKind::Trim, 2048 * 512, None)
    );
    // Queue events as arrivals instead.
    let opts = ReaderOptions {
        format: TraceFormat::Blkparse,
        blkparse_arrival: BlkparseArrival::Queue,
        ..ReaderOptions::default()
    };
    let q: Vec<_> = TraceReader::new(text.as_bytes(), opts)
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        (q.len(), q[0].arrival_ns, q[0].service_ns),
        (1, 0, Some(900_000))
    );
}

#[test]
fn reads_the_mqsim_tpcc_trace() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/traces/mqsim-tpcc-small.trace");
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("skipped: {} not found", path.display());
        return;
    };
    let lines: Vec<&str> = text.lines().take(20).collect();
    assert_eq!(detect(&lines), Some(TraceFormat::DiskSim));
    let recs = read_all(&text, TraceFormat::DiskSim).unwrap();
    assert_eq!(
        recs.len(),
        text.lines().filter(|l| !l.trim().is_empty()).count()
    );
    assert_eq!(
        recs[0],
        TraceRecord {
            arrival_ns: 938_513_000,
            device: 4,
            kind: OpKind::Write,
            offset_bytes: 264_719_034 * 512,
            length_bytes: 16 * 512,
            service_ns: None,
            placement: NO_PLACEMENT,
        }
    );
    assert!(recs.windows(2).all(|w| w[0].arrival_ns <= w[1].arrival_ns));
}

/// Fuzz, structure-aware: valid traces of every format with random edits (byte flips,
/// deletions, inserted signs, separators and digits). Every reader either yields records or
/// stops with an error that names a line; none panics. Bounded by the case count, so it runs
/// in CI (cargo-fuzz would need a nightly toolchain).
#[test]
fn fuzz_mutated_traces_of_every_format() {
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 400,
        ..ProptestConfig::default()
    });
    for format in TraceFormat::ALL {
        let strategy = (
            sorted_records(format),
            proptest::collection::vec((any::<u16>(), 0u8..4, any::<u8>()), 1..12),
        );
        runner
            .run(&strategy, |(recs, edits)| {
                let mut bytes = write_all(format, &recs).into_bytes();
                for (pos, op, b) in edits {
                    if bytes.is_empty() {
                        break;
                    }
                    let i = pos as usize % bytes.len();
                    match op {
                        0 => bytes[i] ^= 1 << (b % 8),
                        1 => {
                            bytes.remove(i);
                        }
                        2 => bytes.insert(i, b"-,. 9\n"[b as usize % 6]),
                        _ => bytes.truncate(i),
                    }
                }
                let text = String::from_utf8_lossy(&bytes).into_owned();
                for detected in [
                    Some(format),
                    detect(&text.lines().take(20).collect::<Vec<_>>()),
                ]
                .into_iter()
                .flatten()
                {
                    let opts = ReaderOptions {
                        format: detected,
                        ..ReaderOptions::default()
                    };
                    for r in TraceReader::new(text.as_bytes(), opts) {
                        if let Err(e) = r {
                            prop_assert!(e.line_number > 0, "{e}");
                            break;
                        }
                    }
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{}: {e}", format.name()));
    }
}
