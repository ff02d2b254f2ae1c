//! `Simulation`: a drive in the model, with a job or a replay running on it, for Python.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use ssdlab_core::config::DriveConfig;
use ssdlab_core::device::Device;
use ssdlab_core::replay::{ReplayMode, ReplayRun};
use ssdlab_core::time::{SimDuration, SimTime, NS_PER_S};
use ssdlab_core::workload::{Job, JobRun};
use std::sync::{Arc, Mutex};

/// A simulated drive and, while a job runs, that job.
#[pyclass(module = "ssdlab._ssdlab")]
pub(crate) struct Simulation {
    dev: Device,
    run: Option<JobRun>,
    replay: Option<(
        ReplayRun<ssdlab_trace::replay::TraceRequests>,
        Arc<Mutex<ssdlab_trace::replay::Outcome>>,
    )>,
    seed: u64,
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(toml_text: &str, seed: u64) -> PyResult<Self> {
        let cfg = DriveConfig::from_toml_str(toml_text).map_err(PyValueError::new_err)?;
        let dev = Device::new(&cfg, seed).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(Simulation {
            dev,
            run: None,
            replay: None,
            seed,
        })
    }

    fn geometry_json(&self) -> String {
        serde_json::to_string(&self.dev.geometry).expect("geometry serialises")
    }

    fn user_bytes(&self) -> u64 {
        self.dev.user_bytes()
    }

    /// The namespace's bytes (a zoned one's: every zone's whole size).
    fn namespace_bytes(&self) -> u64 {
        self.dev.namespace_bytes()
    }

    fn now_s(&self) -> f64 {
        self.dev.now().seconds_f64()
    }

    /// Untimed uniform random writes of `writes` units over first..first+span.
    fn random_writes_untimed(
        &mut self,
        py: Python<'_>,
        first_unit: u32,
        span: u32,
        writes: u64,
        seed: u64,
    ) -> PyResult<()> {
        self.idle_check()?;
        if span == 0 || first_unit as u64 + span as u64 > self.dev.geometry.logical_units {
            return Err(PyValueError::new_err(format!(
                "random writes: units {first_unit}..{} beyond the drive's {}",
                first_unit as u64 + span as u64,
                self.dev.geometry.logical_units
            )));
        }
        let dev = &mut self.dev;
        py.allow_threads(|| dev.random_writes_untimed(first_unit, span, writes, seed));
        Ok(())
    }

    fn secure_erase(&mut self) -> PyResult<()> {
        self.idle_check()?;
        self.dev.secure_erase();
        Ok(())
    }

    /// Most of the drive is about to be written in order: allocate the map's pages meanwhile,
    /// on another thread (changes no result).
    fn expect_sequential_fill(&self) {
        self.dev.expect_sequential_fill();
    }

    /// Untimed sequential fill of logical units first..first+count.
    fn fill_untimed(&mut self, py: Python<'_>, first_unit: u32, count: u32) -> PyResult<()> {
        self.idle_check()?;
        let end = first_unit as u64 + count as u64;
        if end > self.dev.geometry.logical_units {
            return Err(PyValueError::new_err(format!(
                "fill: units {first_unit}..{end} beyond the drive's {}",
                self.dev.geometry.logical_units
            )));
        }
        let dev = &mut self.dev;
        py.allow_threads(|| dev.fill_untimed(first_unit, count));
        Ok(())
    }

    /// Let the drive sit idle for `seconds` (background garbage collection may run).
    fn idle(&mut self, seconds: f64) -> PyResult<()> {
        self.idle_check()?;
        let until = self.dev.now() + SimDuration::from_secs_f64(seconds);
        ssdlab_core::session::idle(&mut self.dev, until);
        Ok(())
    }

    /// One host FLUSH, waited for: returns the simulated seconds it took.
    fn flush(&mut self) -> PyResult<f64> {
        self.idle_check()?;
        let from = self.dev.now();
        let done = ssdlab_core::session::flush(&mut self.dev);
        Ok((done - from).secs_f64())
    }

    /// The host's link power management from now on: none, hipm, dipm, hipm+dipm, devsleep.
    fn set_link_power(&mut self, policy: &str) -> PyResult<()> {
        let p = ssdlab_core::power::LinkPolicy::parse(policy).ok_or_else(|| {
            PyValueError::new_err(format!(
                "link_power: '{policy}' is not a policy; accepted: {}",
                ssdlab_core::power::LinkPolicy::NAMES
            ))
        })?;
        self.dev.set_link_policy(p);
        Ok(())
    }

    /// Leave the drive idle for `seconds` under link power policy `policy` and return its
    /// average power over them, watts (None without a power model). The policy stays set.
    fn idle_power_w(&mut self, policy: &str, seconds: f64) -> PyResult<Option<f64>> {
        self.set_link_power(policy)?;
        self.idle_check()?;
        if !(seconds > 0.0 && seconds.is_finite()) {
            return Err(PyValueError::new_err(
                "seconds: accepted: a positive number",
            ));
        }
        let from = self.dev.now();
        let until = from + SimDuration::from_secs_f64(seconds);
        let e0 = self.dev.energy_j(from);
        ssdlab_core::session::idle(&mut self.dev, until);
        let e1 = self.dev.energy_j(until);
        Ok(self
            .dev
            .has_power_model()
            .then(|| (e1 - e0) / (until - from).secs_f64()))
    }

    /// Crypto erase (self-encrypting drives): returns the simulated seconds it took.
    fn crypto_erase(&mut self) -> PyResult<f64> {
        self.idle_check()?;
        self.dev
            .crypto_erase()
            .map(|d| d.secs_f64())
            .map_err(PyValueError::new_err)
    }

    /// The drive's energy since power-on, joules (None without a power model).
    fn energy_j(&self) -> Option<f64> {
        self.dev
            .has_power_model()
            .then(|| self.dev.energy_j(self.dev.now()))
    }

    /// Check a job (JSON of the Job fields) against this drive; raise ValueError naming the option.
    fn check_job(&self, job_json: &str) -> PyResult<()> {
        let job: Job =
            serde_json::from_str(job_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
        job.compile(self.dev.namespace_bytes())
            .map_err(PyValueError::new_err)?;
        Ok(())
    }

    /// Start jobs that run together (fio's jobs between two stonewalls): JSON of the Job
    /// fields each, and for each the index of an earlier job whose end it waits for (fio's
    /// wait_for) or None. ValueError naming the job and option.
    #[pyo3(signature = (jobs_json, after, io_log=false))]
    fn start_jobs(
        &mut self,
        jobs_json: Vec<String>,
        after: Vec<Option<usize>>,
        io_log: bool,
    ) -> PyResult<()> {
        self.idle_check()?;
        let mut compiled = Vec::with_capacity(jobs_json.len());
        for text in &jobs_json {
            let job: Job =
                serde_json::from_str(text).map_err(|e| PyValueError::new_err(e.to_string()))?;
            compiled.push(
                job.compile(self.dev.namespace_bytes())
                    .map_err(PyValueError::new_err)?,
            );
        }
        let run = JobRun::group(&mut self.dev, &compiled, &after, self.seed)
            .map_err(PyValueError::new_err)?;
        self.run = Some(if io_log { run.with_io_log() } else { run });
        Ok(())
    }

    /// The current jobs' completions since the last call (with `io_log`), one row each, as
    /// little-endian column bytes: (stream as u32; time_ns, latency_ns as u64; op as u8;
    /// length_bytes, offset_bytes as u64).
    fn take_io_log<'py>(&mut self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let run = self
            .run
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("no job running"))?;
        let log = run.take_io_log();
        let col = |v: &[u64]| le_column(py, v.iter().map(|x| x.to_le_bytes()));
        Ok(vec![
            le_column(py, log.stream.iter().map(|x| x.to_le_bytes())),
            col(&log.time_ns),
            col(&log.latency_ns),
            PyBytes::new(py, &log.op),
            col(&log.length_bytes),
            col(&log.offset_bytes),
        ])
    }

    /// Run the current job for up to `seconds` more simulated time. True when it is done.
    fn advance(&mut self, py: Python<'_>, seconds: f64) -> PyResult<bool> {
        let run = self
            .run
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("no job running"))?;
        let dev = &mut self.dev;
        // From the run's clock, not the device's: an event more than one slice ahead (the
        // transfer of a 500 MiB read) must still be reached (issue 25, item 13).
        let until = slice_end(run.now(dev), seconds);
        Ok(py.allow_threads(|| run.advance(dev, until)))
    }

    /// (simulated seconds elapsed, IOs completed, fraction done) of the current job.
    fn progress(&self) -> PyResult<(f64, u64, f64)> {
        let run = self
            .run
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("no job running"))?;
        Ok(run.progress(&self.dev))
    }

    /// End the current jobs: (summary JSON, interval series JSON) of each, in order.
    fn finish_job(&mut self) -> PyResult<Vec<(String, String)>> {
        let run = self
            .run
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("no job running"))?;
        Ok(run
            .finish(&self.dev)
            .iter()
            .map(|r| {
                (
                    serde_json::to_string(&r.summary).expect("summary serialises"),
                    serde_json::to_string(&r.series).expect("series serialises"),
                )
            })
            .collect())
    }

    /// Start replaying trace files (merged in time order). Returns the formats used.
    #[pyo3(signature = (paths, mode, scale, depth, format=None, columns=None, device=None, wrap=false, skip_bad_lines=false, time_unit_ns=None, blkparse_queue_arrivals=false, sort=false, per_request=false, interval_s=1.0, fio_wait_relative=false, align_starts=false))]
    fn start_replay(
        &mut self,
        paths: Vec<String>,
        mode: &str,
        scale: f64,
        depth: u32,
        format: Option<String>,
        columns: Option<String>,
        device: Option<u32>,
        wrap: bool,
        skip_bad_lines: bool,
        time_unit_ns: Option<f64>,
        blkparse_queue_arrivals: bool,
        sort: bool,
        per_request: bool,
        interval_s: f64,
        fio_wait_relative: bool,
        align_starts: bool,
    ) -> PyResult<Vec<String>> {
        self.idle_check()?;
        let mode = match mode {
            "afap" => ReplayMode::Afap {
                max_outstanding: depth,
            },
            "timed" if scale > 0.0 && scale.is_finite() => ReplayMode::Timed { scale },
            "timed" => {
                return Err(PyValueError::new_err(format!(
                    "--scale {scale}: must be a positive number"
                )))
            }
            "qd" if depth > 0 => ReplayMode::QueueDepth { depth },
            "qd" => ReplayMode::RecordedDepth,
            other => {
                return Err(PyValueError::new_err(format!(
                    "--mode '{other}' is not known; accepted: afap, timed, qd"
                )))
            }
        };
        if time_unit_ns.is_some_and(|u| u.is_nan() || u <= 0.0) {
            return Err(PyValueError::new_err("--time-unit must be positive"));
        }
        if !(interval_s > 0.0 && interval_s.is_finite()) {
            return Err(PyValueError::new_err(
                "interval_s must be a positive number of seconds",
            ));
        }
        let options = ssdlab_trace::replay::TraceOptions {
            format,
            columns,
            device,
            wrap,
            skip_bad_lines,
            time_unit_ns,
            blkparse_queue_arrivals,
            sort,
            fio_wait_relative,
            align_starts,
        };
        let (requests, formats) =
            ssdlab_trace::replay::TraceRequests::open(&paths, options, self.dev.user_bytes())
                .map_err(PyValueError::new_err)?;
        let spread = requests.start_spread_ns();
        if matches!(mode, ReplayMode::Timed { .. })
            && spread > ssdlab_trace::replay::START_SPREAD_NOTED_NS
        {
            // Issue 25 item 21: a timed replay of files whose clocks differ by centuries never
            // got anywhere.
            return Err(PyValueError::new_err(format!(
                "the files' first requests are {:.1} days apart (clocks of different origins?): a timed replay would wait that long between them; --align-starts counts each file from its own first request (or --mode afap removes idle time)",
                spread as f64 / ssdlab_trace::replay::START_SPREAD_NOTED_NS as f64
            )));
        }
        let outcome = requests.outcome.clone();
        let interval_ns = (interval_s * NS_PER_S as f64) as u64;
        let mut run = ReplayRun::new(&self.dev, requests, mode, interval_ns.max(1));
        if per_request {
            run = run.with_request_log();
        }
        self.replay = Some((run, outcome));
        Ok(formats)
    }

    /// Replay for up to `seconds` more simulated time (idle gaps included). True when done.
    fn advance_replay(&mut self, py: Python<'_>, seconds: f64) -> PyResult<bool> {
        let (run, _) = self
            .replay
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("no replay running"))?;
        let dev = &mut self.dev;
        let until = slice_end(run.now(dev), seconds);
        Ok(py.allow_threads(|| run.advance(dev, until)))
    }

    /// (simulated seconds elapsed, requests submitted) of the current replay.
    fn replay_progress(&self) -> PyResult<(f64, u64)> {
        let (run, _) = self
            .replay
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("no replay running"))?;
        Ok(run.progress(&self.dev))
    }

    /// Requests completed since the last call, one row each, as little-endian column bytes:
    /// (arrival_ns as i64; submit_ns, complete_ns, offset_bytes, length_bytes as u64; op as u8).
    fn take_request_log<'py>(&mut self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let (run, _) = self
            .replay
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("no replay running"))?;
        let log = run.take_log();
        let col = |v: &[u64]| le_column(py, v.iter().map(|x| x.to_le_bytes()));
        Ok(vec![
            le_column(py, log.arrival_ns.iter().map(|x| x.to_le_bytes())),
            col(&log.submit_ns),
            col(&log.complete_ns),
            col(&log.offset_bytes),
            col(&log.length_bytes),
            PyBytes::new(py, &log.op),
        ])
    }

    /// End the replay: (summary JSON, series JSON, outcome JSON: records read, bad lines,
    /// mapping counts, notes). Raises ValueError if the trace had an error.
    fn finish_replay(&mut self) -> PyResult<(String, String, String)> {
        let (run, outcome) = self
            .replay
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("no replay running"))?;
        let mode = run.mode();
        let (summary, series) = run.finish(&self.dev);
        let o = outcome.lock().expect("not poisoned");
        if let Some(e) = &o.error {
            return Err(PyValueError::new_err(e.clone()));
        }
        if matches!(mode, ReplayMode::RecordedDepth) && o.counts.without_service_time > 0 {
            return Err(PyValueError::new_err(format!(
                "--mode qd without --qd keeps the recorded queue depth, which needs recorded service times; {} requests have none (formats with them: msr, blkparse, blktrace, msprod); give --qd N",
                o.counts.without_service_time
            )));
        }
        let outcome = serde_json::json!({
            "records": o.records,
            "bad_lines_skipped": o.bad_lines,
            "mapping": o.counts,
            "notes": o.notes,
            "devices_seen": o.devices_seen,
        });
        Ok((
            serde_json::to_string(&summary).expect("summary serialises"),
            serde_json::to_string(&series).expect("series serialises"),
            outcome.to_string(),
        ))
    }

    /// NVMe FDP's RUH Update of the handle `pid` names (between runs).
    fn ruh_update(&mut self, pid: u16) -> PyResult<()> {
        self.idle_check()?;
        self.dev.ruh_update(pid).map_err(PyValueError::new_err)
    }

    /// FDP's logs (statistics per drive and handle, RUH status, events) as JSON; "null"
    /// without placement.
    fn placement_json(&self) -> String {
        serde_json::to_string(&self.dev.ftl.placement_report()).expect("placement serialises")
    }

    /// A zoned namespace's zones (Zone Management Receive) from `first`, at most `count`, as
    /// JSON; "[]" for a conventional namespace.
    fn zone_report_json(&self, first: u32, count: u32) -> String {
        serde_json::to_string(&self.dev.zone_report(first, count)).expect("zones serialise")
    }

    /// The zoned namespace's summary (zones by state, resets, refusals) as JSON; "null" for a
    /// conventional one.
    fn zones_json(&self) -> String {
        serde_json::to_string(&ssdlab_core::workload::ZonesSummary::of(&self.dev))
            .expect("zones serialise")
    }

    /// Zone Management Send: `action` (open, close, finish, reset) to zone `zone`, between
    /// runs. ValueError with the status's name when refused.
    fn zone_manage(&mut self, zone: u32, action: &str) -> PyResult<()> {
        use ssdlab_core::zones::ZoneAction;
        self.idle_check()?;
        let a = match action {
            "open" => ZoneAction::Open,
            "close" => ZoneAction::Close,
            "finish" => ZoneAction::Finish,
            "reset" => ZoneAction::Reset,
            other => {
                return Err(PyValueError::new_err(format!(
                    "zone action '{other}'; accepted: open, close, finish, reset"
                )))
            }
        };
        self.dev
            .zone_manage(zone, a)
            .map_err(|s| PyValueError::new_err(format!("zone {zone}: {action}: {}", s.name())))
    }

    /// The statistics log of the drive (host and media bytes written, media bytes erased) as
    /// JSON: every drive keeps it.
    fn media_statistics_json(&self) -> String {
        serde_json::to_string(&self.dev.ftl.media_statistics()).expect("statistics serialise")
    }

    /// Lifetime counters of the FTL and the NAND, as JSON.
    fn counters_json(&self) -> String {
        format!(
            "{{\"ftl\": {}, \"nand\": {}, \"faults\": {}, \"free_blocks\": {}, \"mapped_units\": {}}}",
            serde_json::to_string(&self.dev.ftl.counters).expect("counters serialise"),
            serde_json::to_string(&self.dev.nand().counters).expect("counters serialise"),
            serde_json::to_string(&self.dev.fault_counters()).expect("counters serialise"),
            self.dev.ftl.free_blocks_total(),
            self.dev.ftl.mapped_units()
        )
    }

    fn erase_counts(&self) -> Vec<u32> {
        self.dev.ftl.erase_counts().to_vec()
    }

    /// Check every FTL invariant; raises RuntimeError naming the broken one.
    fn verify(&self) -> PyResult<()> {
        self.dev.ftl.verify().map_err(PyRuntimeError::new_err)
    }

    fn state_digest(&self) -> u64 {
        self.dev.ftl.state_digest()
    }
}

impl Simulation {
    fn idle_check(&self) -> PyResult<()> {
        if self.run.is_some() || self.replay.is_some() {
            return Err(PyRuntimeError::new_err("a job is running; finish it first"));
        }
        Ok(())
    }
}

/// A column of numbers as the little-endian bytes Python's numpy.frombuffer reads.
fn le_column<'py, const N: usize>(
    py: Python<'py>,
    values: impl Iterator<Item = [u8; N]>,
) -> Bound<'py, PyBytes> {
    let bytes: Vec<u8> = values.flatten().collect();
    PyBytes::new(py, &bytes)
}

/// The end of a slice of `seconds` of simulated time from `now` (saturating).
fn slice_end(now: SimTime, seconds: f64) -> SimTime {
    SimTime(now.ns().saturating_add((seconds * NS_PER_S as f64) as u64))
}
