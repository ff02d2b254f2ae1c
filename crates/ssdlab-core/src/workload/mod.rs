//! fio-like jobs: what to submit, how much, how deep ([`job`]: the options and their checks;
//! [`generator`]: the IOs in order); and the closed-loop runner that keeps `iodepth` commands
//! in flight and records what the host sees ([`run`]).

mod generator;
mod job;
mod run;

pub use job::{parse_size, CompiledJob, Job, JobField, SteadyState, JOB_FIELDS};
pub use run::{run_job, JobResult, JobRun, JobSummary};

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
}
