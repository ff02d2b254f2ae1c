//! fio-like jobs: what to submit, how much, how deep ([`job`]: the options and their checks;
//! [`generator`]: the IOs in order); and the closed-loop runner that keeps `iodepth` commands
//! in flight and records what the host sees ([`run`]).

mod compile;
mod distribution;
mod fdp;
mod generator;
mod job;
mod pacing;
mod run;
mod summary;
mod zbd;

pub use compile::CompiledJob;
pub use job::{parse_size, FieldKind, Job, JobField, Reading, Spelling, SteadyState, JOB_FIELDS};
pub use run::{run_job, IoLog, JobResult, JobRun, JobSummary, ZonesSummary};
pub use zbd::ZbdOptions;

#[cfg(test)]
mod tests {
    use super::generator::Generator;
    use super::*;

    #[test]
    fn the_job_schema_names_every_field_of_the_job_in_order() {
        let json = serde_json::to_value(Job::default()).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        let mut names: Vec<&str> = JOB_FIELDS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
    }

    #[test]
    fn each_row_of_the_job_table_says_what_its_field_is_and_names_it_once() {
        let json = serde_json::to_value(Job::default()).unwrap();
        let mut spellings = std::collections::BTreeSet::new();
        let mut flags = std::collections::BTreeSet::new();
        for f in JOB_FIELDS {
            let default = &json[f.name];
            // The kind is the field's type: what Python declares and how text is read.
            let fits = |v: &serde_json::Value| match f.kind {
                FieldKind::Text => v.is_string(),
                FieldKind::Count => v.as_u64().is_some_and(|n| n <= u32::MAX as u64),
                FieldKind::Whole => v.is_u64(),
                FieldKind::Seconds => v.is_f64(),
                FieldKind::Flag => v.is_boolean(),
            };
            let sample = match f.kind {
                FieldKind::Text => serde_json::json!("x"),
                FieldKind::Count | FieldKind::Whole => serde_json::json!(3),
                FieldKind::Seconds => serde_json::json!(2.5),
                FieldKind::Flag => serde_json::json!(true),
            };
            assert!(
                default.is_null() || fits(default),
                "{}: default {default} is not {:?}",
                f.name,
                f.kind
            );
            let mut job = json.clone();
            job[f.name] = sample;
            assert!(
                serde_json::from_value::<Job>(job).is_ok(),
                "{}: a {:?} value does not deserialise",
                f.name,
                f.kind
            );
            if f.kind == FieldKind::Count {
                let mut job = json.clone();
                job[f.name] = serde_json::json!(u32::MAX as u64 + 1);
                assert!(
                    serde_json::from_value::<Job>(job).is_err(),
                    "{}: not a u32",
                    f.name
                );
            }
            assert!(
                !f.accepted.is_empty() && !f.doc.trim().is_empty(),
                "{}: undocumented",
                f.name
            );
            for s in f.fio {
                assert!(spellings.insert(s.name), "fio spelling {} twice", s.name);
            }
            if !f.flag.is_empty() {
                assert!(
                    f.flag.starts_with("--") && flags.insert(f.flag),
                    "flag {}",
                    f.flag
                );
            }
        }
        // The readings that are not the field's own are where fio's option differs.
        let rwmix = JOB_FIELDS.iter().find(|f| f.name == "rwmixread").unwrap();
        assert_eq!(rwmix.fio[1].name, "rwmixwrite");
        assert_eq!(rwmix.fio[1].reading, Reading::Complement);
    }

    #[test]
    fn sizes_parse_like_fio() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("128KiB"), Ok(131072));
        assert_eq!(parse_size("8g"), Ok(8 << 30));
        assert_eq!(parse_size("512"), Ok(512));
        assert!(parse_size("4q")
            .unwrap_err()
            .contains("unknown size suffix"));
        assert!(parse_size("k").is_err());
    }

    #[test]
    fn compile_rejects_bad_options() {
        let j = |f: &dyn Fn(&mut Job)| {
            let mut job = Job::default();
            f(&mut job);
            job.compile(1 << 30).unwrap_err()
        };
        assert!(j(&|x| x.rw = "randomwrite".into()).starts_with("rw:"));
        assert!(j(&|x| x.iodepth = 0).starts_with("iodepth:"));
        assert!(j(&|x| x.bssplit = Some("4k/50:8k/40".into())).contains("add up to 90"));
        assert!(j(&|x| x.size = Some("2g".into())).starts_with("size:"));
        assert!(j(&|x| x.random_distribution = "gauss".into()).starts_with("random_distribution:"));
        assert!(j(&|x| x.bs = "1000".into()).starts_with("bs:"));
    }

    #[test]
    fn zipf_is_skewed_and_in_range() {
        let job = Job {
            rw: "randread".into(),
            random_distribution: "zipf:1.2".into(),
            number_ios: Some(1),
            ..Job::default()
        };
        let c = job.compile(1 << 30).unwrap();
        let mut g = Generator::new(&c, 1, 0);
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..100_000 {
            let (_, off, len) = g.next(&c);
            assert!(off + len <= 1 << 30);
            *counts.entry(off).or_insert(0u32) += 1;
        }
        let mut v: Vec<u32> = counts.into_values().collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        let top: u32 = v.iter().take(100).sum();
        assert!(
            top > 30_000,
            "top 100 of 262144 blocks took {top} of 100000 IOs"
        );
    }

    fn ios(job: Job, n: usize) -> Vec<(crate::device::IoKind, u64, u64)> {
        let c = job.compile(1 << 30).unwrap();
        let mut g = Generator::new(&c, 1, 0);
        (0..n).map(|_| g.next(&c)).collect()
    }

    /// Issue 25 item 10: fio's zoned distribution (examples/rand-zones.fio): 50% of the IOs to
    /// the first 5% of the span, 30% to the next 15%, 20% to the rest.
    #[test]
    fn zoned_distributions_send_each_share_of_ios_to_its_zone() {
        let job = Job {
            rw: "randread".into(),
            random_distribution: "zoned:50/5:30/15:20/".into(),
            number_ios: Some(1),
            ..Job::default()
        };
        let span = 1u64 << 30;
        let v = ios(job, 100_000);
        let share = |lo: f64, hi: f64| {
            v.iter()
                .filter(|&&(_, o, _)| {
                    (o as f64) >= lo * span as f64 && (o as f64) < hi * span as f64
                })
                .count() as f64
                / v.len() as f64
        };
        assert!((share(0.0, 0.05) - 0.5).abs() < 0.01);
        assert!((share(0.05, 0.20) - 0.3).abs() < 0.01);
        assert!((share(0.20, 1.0) - 0.2).abs() < 0.01);
        // zoned_abs, with its own list for writes: reads in the first 64 MiB, writes beyond.
        let job = Job {
            rw: "randrw".into(),
            random_distribution: "zoned_abs:100/64m,0/64m:100/".into(),
            number_ios: Some(1),
            ..Job::default()
        };
        for (kind, o, _) in ios(job, 10_000) {
            match kind {
                crate::device::IoKind::Read => assert!(o < 64 << 20),
                _ => assert!(o >= 64 << 20),
            }
        }
        let bad = |d: &str| {
            Job {
                rw: "randread".into(),
                random_distribution: d.into(),
                ..Job::default()
            }
            .compile(1 << 30)
            .unwrap_err()
        };
        assert!(
            bad("zoned:50/5:30/15").contains("add up to 80"),
            "{}",
            bad("zoned:50/5:30/15")
        );
        assert!(bad("zoned_abs:50/1g:50/1g").contains("more than the job's span"));
        assert!(bad("zoned:50/x:50/").contains("not a percentage"));
    }

    /// bsrange draws sizes across the range in multiples of its smallest; blockalign aligns
    /// random offsets (fio's jesd219.fio: 512-byte IOs on 4k boundaries).
    #[test]
    fn bsrange_and_blockalign_shape_sizes_and_offsets() {
        let randwrite = |bsrange: Option<&str>, bssplit: Option<&str>, blockalign: Option<&str>| {
            let job = Job {
                rw: "randwrite".into(),
                bsrange: bsrange.map(Into::into),
                bssplit: bssplit.map(Into::into),
                blockalign: blockalign.map(Into::into),
                number_ios: Some(1),
                ..Job::default()
            };
            ios(job, 10_000)
        };
        let v = randwrite(Some("512-8k"), None, None);
        let sizes: std::collections::BTreeSet<u64> = v.iter().map(|x| x.2).collect();
        // fio's draw: MIN + uniform(0..=MAX-MIN), rounded down to a multiple of MIN (MAX itself
        // comes up once in MAX-MIN+1 draws).
        assert!(sizes
            .iter()
            .all(|s| s % 512 == 0 && (512..=8192).contains(s)));
        assert!((1..16).all(|k| sizes.contains(&(k * 512))), "{sizes:?}");
        let v = randwrite(None, Some("512/50:4k/50"), Some("4k"));
        assert!(v.iter().all(|x| x.1 % 4096 == 0));
        let unaligned = randwrite(None, Some("512/50:4k/50"), None);
        assert!(unaligned.iter().any(|x| x.1 % 4096 != 0));
    }

    /// fio's bssplit with a list per direction (examples/cmdprio-bssplit.fio:
    /// `64k/40:1024k/60,1024k/100`) and blank percentages sharing what is left evenly.
    #[test]
    fn bssplit_lists_per_direction_and_blank_shares() {
        let split = |rw: &str, bssplit: &str| {
            let job = Job {
                rw: rw.into(),
                bssplit: Some(bssplit.into()),
                number_ios: Some(1),
                ..Job::default()
            };
            ios(job, 20_000)
        };
        let v = split("randrw", "64k/40:1024k/60,1024k/100");
        let reads: Vec<u64> = v
            .iter()
            .filter(|x| x.0 == crate::device::IoKind::Read)
            .map(|x| x.2)
            .collect();
        assert!(v
            .iter()
            .filter(|x| x.0 == crate::device::IoKind::Write)
            .all(|x| x.2 == 1 << 20));
        let small = reads.iter().filter(|&&b| b == 64 << 10).count() as f64 / reads.len() as f64;
        assert!((small - 0.4).abs() < 0.02, "{small}");
        // fio's own example: 4k/50:1k/:32k/ gives 25% each to 1k and 32k.
        let v = split("randread", "4k/50:1k/:32k/");
        let share = |b: u64| v.iter().filter(|x| x.2 == b).count() as f64 / v.len() as f64;
        assert!((share(1024) - 0.25).abs() < 0.02 && (share(32 << 10) - 0.25).abs() < 0.02);
        let bad = |split: &str| {
            Job {
                bssplit: Some(split.into()),
                ..Job::default()
            }
            .compile(1 << 30)
            .unwrap_err()
        };
        assert!(bad("4k/60:8k/60").contains("add up to 120"));
        assert!(bad("4k/50,8k/50,4k/50,8k/50").contains("has 4 lists"));
    }

    /// fio's zonemode=strided (examples/disk-zone-profile.fio): zonesize bytes in each zone,
    /// then on by zonerange + zoneskip; the skipped bytes count toward the job's size.
    #[test]
    fn strided_zones_read_a_share_of_each_stride() {
        let mib = 1u64 << 20;
        let job = Job {
            rw: "read".into(),
            bs: "64k".into(),
            zonesize: Some("1m".into()),
            zoneskip: Some("7m".into()),
            ..Job::default()
        };
        let c = job.clone().compile(1 << 30).unwrap();
        // 1 GiB in strides of 8 MiB, 1 MiB read in each: 128 MiB.
        assert_eq!(c.io_bytes_max, Some(128 * mib));
        let v = ios(job, 40);
        assert!(v[..16]
            .iter()
            .enumerate()
            .all(|(i, x)| x.1 == i as u64 * 65536));
        assert_eq!(v[16].1, 8 * mib);
        assert_eq!(v[32].1, 16 * mib);
        // Random IO stays in the zone's range.
        let job = Job {
            rw: "randread".into(),
            zonesize: Some("1m".into()),
            zonerange: Some("2m".into()),
            zoneskip: Some("6m".into()),
            number_ios: Some(1),
            ..Job::default()
        };
        for (i, x) in ios(job, 1024).iter().enumerate() {
            let zone = (i as u64 * 4096) / mib;
            assert!(
                (zone * 8 * mib..zone * 8 * mib + 2 * mib).contains(&x.1),
                "{i}: {}",
                x.1
            );
        }
        let err = Job {
            zoneskip: Some("1m".into()),
            ..Job::default()
        }
        .compile(1 << 30)
        .unwrap_err();
        assert!(err.contains("only with zonesize"), "{err}");
    }

    /// fio's `rw=...:nr`: holes and backwards reads (examples/backwards-read.fio), and runs of
    /// nr sequential IOs from each random offset.
    #[test]
    fn rw_offset_modifiers_as_fio_reads_them() {
        let offsets = |rw: &str, n: usize| -> Vec<u64> {
            ios(
                Job {
                    rw: rw.into(),
                    number_ios: Some(1),
                    ..Job::default()
                },
                n,
            )
            .iter()
            .map(|x| x.1)
            .collect()
        };
        assert_eq!(offsets("write:4k", 3), vec![0, 8192, 16384]);
        let back = offsets("read:-8k", 4);
        let end = (1u64 << 30) - 4096;
        assert_eq!(back, vec![0, end, end - 4096, end - 8192]);
        let runs = offsets("randread:8", 64);
        for chunk in runs.chunks(8) {
            assert!(
                chunk.windows(2).all(|w| w[1] == w[0] + 4096 || w[1] == 0),
                "{chunk:?}"
            );
        }
        assert_ne!(runs[8], runs[7] + 4096);
        assert!(Job {
            rw: "randread:x".into(),
            ..Job::default()
        }
        .compile(1 << 30)
        .unwrap_err()
        .starts_with("rw:"));
    }
}
