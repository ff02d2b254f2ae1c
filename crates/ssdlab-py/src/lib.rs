//! PyO3 bindings for ssdlab-core: translation between Python and the core, nothing else.
//! Structured results cross as JSON strings; Python turns them into dicts and DataFrames.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use ssdlab_core::config::DriveConfig;
use ssdlab_core::workload::Job;

mod nbd;
mod sim;
use nbd::{crashtest, crypto_erase_store, NbdServer};
use sim::Simulation;

/// Parse and validate a drive configuration (TOML text). Returns the derived geometry as JSON.
#[pyfunction]
fn validate_config(toml_text: &str) -> PyResult<String> {
    let cfg = DriveConfig::from_toml_str(toml_text).map_err(PyValueError::new_err)?;
    let g = cfg
        .validate()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(serde_json::to_string(&g).expect("geometry serialises"))
}

/// Validate a drive configuration (TOML text) and describe it: geometry, capacities,
/// over-provisioning, link, NAND and bus ceilings, map DRAM (`ssdlab_core::describe`), as JSON.
#[pyfunction]
fn describe_config(toml_text: &str) -> PyResult<String> {
    let cfg = DriveConfig::from_toml_str(toml_text).map_err(PyValueError::new_err)?;
    let d = cfg
        .describe()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(serde_json::to_string(&d).expect("a description serialises"))
}

/// Every job field with its default (`ssdlab_core::workload::Job::default()`), as JSON: the
/// Python `Job` is checked against it.
#[pyfunction]
fn job_defaults() -> String {
    serde_json::to_string(&Job::default()).expect("a job serialises")
}

/// The job schema, the one table of job options: each field's name, kind, unit, accepted
/// values, doc, fio spellings (with how each is read), `ssdlab run` flag and default, in
/// order, as JSON.
#[pyfunction]
fn job_schema() -> String {
    let defaults = serde_json::to_value(Job::default()).expect("a job serialises");
    let fields: Vec<serde_json::Value> = ssdlab_core::workload::JOB_FIELDS
        .iter()
        .map(|f| {
            let mut row = serde_json::to_value(f).expect("a field serialises");
            row["default"] = defaults[f.name].clone();
            row
        })
        .collect();
    serde_json::to_string(&fields).expect("the schema serialises")
}

/// A fio size ("4k", "128KiB", "8g"; powers of 1024) in bytes: the one size parser.
#[pyfunction]
fn parse_size(text: &str) -> PyResult<u64> {
    ssdlab_core::workload::parse_size(text).map_err(PyValueError::new_err)
}

/// A victim policy the theory covers, by the name the configuration uses (serde's, one source):
/// fifo, greedy, d-choices.
fn theory_policy(name: &str) -> PyResult<ssdlab_core::config::GcPolicy> {
    use ssdlab_core::config::GcPolicy;
    let accepted = || format!("policy '{name}': accepted: fifo, greedy, d-choices");
    match serde_json::from_value(serde_json::Value::String(name.into())) {
        Ok(p @ (GcPolicy::Fifo | GcPolicy::Greedy | GcPolicy::DChoices)) => Ok(p),
        _ => Err(PyValueError::new_err(accepted())),
    }
}

/// Write amplification of the analytic or mean-field model: policy "fifo", "greedy" or
/// "d-choices" (with d).
#[pyfunction]
fn theory_waf(policy: &str, alpha: f64, pages_per_block: u32, d: u32) -> PyResult<f64> {
    use ssdlab_core::config::GcPolicy;
    use ssdlab_core::theory;
    if alpha <= 1.0 {
        return Err(PyValueError::new_err(format!("alpha {alpha}: must be > 1")));
    }
    Ok(match theory_policy(policy)? {
        GcPolicy::Fifo => theory::fifo_waf(alpha),
        GcPolicy::Greedy => theory::greedy_waf(alpha, pages_per_block),
        _ if d >= 1 => theory::d_choices_waf(alpha, pages_per_block, d),
        _ => {
            return Err(PyValueError::new_err(format!(
                "policy '{policy}' (d {d}): accepted: fifo, greedy, d-choices with d >= 1"
            )))
        }
    })
}

/// Simulated write amplification under uniform random single-unit overwrites (untimed).
#[pyfunction]
fn simulate_theory_waf(
    py: Python<'_>,
    policy: &str,
    alpha: f64,
    pages_per_block: u32,
    blocks: u32,
    d: u32,
    warmup: f64,
    measure: f64,
    seed: u64,
) -> PyResult<f64> {
    use ssdlab_core::theory;
    let p = theory_policy(policy)?;
    let cfg = theory::theory_config(pages_per_block, blocks, alpha, p, d);
    cfg.validate()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(py.allow_threads(|| theory::simulate_waf(&cfg, warmup, measure, seed)))
}

/// Placement's theory setting (`theory::simulate_placement_waf`): the write amplification of
/// a sequential and of a uniform random stream, each on its own persistently isolated handle.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn simulate_placement_waf(
    py: Python<'_>,
    pages_per_block: u32,
    blocks: u32,
    alpha: f64,
    seq_share: f64,
    seq_writes: f64,
    warmup: f64,
    measure: f64,
    seed: u64,
) -> PyResult<(f64, f64)> {
    if !(alpha > 1.0 && (0.0..1.0).contains(&seq_share) && (0.0..=1.0).contains(&seq_writes)) {
        return Err(PyValueError::new_err(format!(
            "alpha {alpha}, seq_share {seq_share}, seq_writes {seq_writes}: accepted: alpha > 1, seq_share in [0, 1), seq_writes in [0, 1]"
        )));
    }
    let setting = ssdlab_core::theory::PlacementSetting {
        pages_per_block,
        blocks,
        alpha,
        seq_share,
        seq_writes,
        warmup,
        measure,
        seed,
    };
    Ok(py.allow_threads(|| ssdlab_core::theory::simulate_placement_waf(&setting)))
}

/// What trace files hold (`ssdlab trace stats`), as JSON.
#[pyfunction]
#[pyo3(signature = (paths, format=None, columns=None, device=None, skip_bad_lines=false, time_unit_ns=None, blkparse_queue_arrivals=false, fio_wait_relative=false, align_starts=false))]
fn trace_stats(
    py: Python<'_>,
    paths: Vec<String>,
    format: Option<String>,
    columns: Option<String>,
    device: Option<u32>,
    skip_bad_lines: bool,
    time_unit_ns: Option<f64>,
    blkparse_queue_arrivals: bool,
    fio_wait_relative: bool,
    align_starts: bool,
) -> PyResult<String> {
    let options = ssdlab_trace::replay::TraceOptions {
        format,
        columns,
        device,
        wrap: true,
        skip_bad_lines,
        time_unit_ns,
        blkparse_queue_arrivals,
        sort: false,
        fio_wait_relative,
        align_starts,
    };
    py.allow_threads(|| ssdlab_trace::replay::stats_json(&paths, options))
        .map_err(PyValueError::new_err)
}

/// A `--faults` spec as the `[faults]` table it stands for (JSON); ValueError says what is
/// wrong and what is accepted.
#[pyfunction]
fn parse_faults(spec: &str) -> PyResult<String> {
    let f = ssdlab_core::faults::FaultConfig::parse(spec).map_err(PyValueError::new_err)?;
    Ok(serde_json::to_string(&f).expect("faults serialise"))
}

/// The `[placement]` table a drive without one takes when a job asks for FDP (JSON).
#[pyfunction]
fn default_placement() -> String {
    serde_json::to_string(&ssdlab_core::config::PlacementConfig::default_fdp())
        .expect("placement serialises")
}

/// The `[placement]` table a drive without one takes when a `zonemode=zbd` job asks for
/// zones of `zone_bytes` (JSON): their capacity the whole erase blocks that fit in one (or
/// `capacity_bytes`), at most `max_open_zones` open and active.
#[pyfunction]
fn default_zoned_placement(zone_bytes: u64, max_open_zones: u32, capacity_bytes: u64) -> String {
    let mut p = ssdlab_core::config::PlacementConfig::default_zns(zone_bytes, max_open_zones);
    p.zone_capacity_bytes = capacity_bytes;
    serde_json::to_string(&p).expect("placement serialises")
}

#[pymodule]
fn _ssdlab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add_class::<NbdServer>()?;
    m.add_function(wrap_pyfunction!(theory_waf, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_theory_waf, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_placement_waf, m)?)?;
    m.add_function(wrap_pyfunction!(validate_config, m)?)?;
    m.add_function(wrap_pyfunction!(describe_config, m)?)?;
    m.add_function(wrap_pyfunction!(job_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(job_schema, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(crashtest, m)?)?;
    m.add_function(wrap_pyfunction!(crypto_erase_store, m)?)?;
    m.add_function(wrap_pyfunction!(parse_faults, m)?)?;
    m.add_function(wrap_pyfunction!(default_placement, m)?)?;
    m.add_function(wrap_pyfunction!(default_zoned_placement, m)?)?;
    m.add_function(wrap_pyfunction!(trace_stats, m)?)?;
    // How this build was optimised (tools/build/ssdlab_build.py sets SSDLAB_BUILD_PGO), so a
    // benchmark's figures say which build they measured.
    let build = match option_env!("SSDLAB_BUILD_PGO") {
        Some("1") => "profile-guided",
        _ => "plain",
    };
    m.add("BUILD", build)?;
    Ok(())
}
