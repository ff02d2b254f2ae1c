//! `NbdServer`, the crash test and crypto erase of a store: the emulator (ssdlab-nbd) for Python.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use ssdlab_core::config::DriveConfig;

/// A modelled drive served over NBD (see ssdlab-nbd). The server runs on its own threads;
/// the methods only start, query and stop it.
#[pyclass(module = "ssdlab._ssdlab")]
pub(crate) struct NbdServer {
    server: Option<ssdlab_nbd::Server>,
    /// How the store was opened (None: data in memory).
    mount: Option<ssdlab_nbd::disk::Mount>,
}

/// The server's numeric limits, each with what is accepted.
fn check_limits(time_scale: u32, transport_us: f64, io_timeout_s: f64) -> PyResult<()> {
    if !(1..=1000).contains(&time_scale) {
        return Err(PyValueError::new_err(format!(
            "time scale {time_scale}: accepted: a whole number from 1 to 1000"
        )));
    }
    if !(0.0..=10_000.0).contains(&transport_us) {
        return Err(PyValueError::new_err(format!(
            "transport {transport_us} us: accepted: 0 to 10000"
        )));
    }
    if !(0.001..=86_400.0).contains(&io_timeout_s) {
        return Err(PyValueError::new_err(format!(
            "io timeout {io_timeout_s} s: accepted: 0.001 to 86400"
        )));
    }
    Ok(())
}

#[pymethods]
impl NbdServer {
    #[new]
    #[pyo3(signature = (toml_text, seed, precondition, pace, export_name, description, socket=None, port=None, bind=None, log=true, store=None, read_only=false, max_connections=ssdlab_nbd::MAX_CONNECTIONS, io_timeout_s=ssdlab_nbd::IO_TIMEOUT.as_secs_f64(), power_cut_after=None, transport_us=0.0, link_power="none", time_scale=1))]
    fn new(
        py: Python<'_>,
        toml_text: &str,
        seed: u64,
        precondition: &str,
        pace: &str,
        export_name: String,
        description: String,
        socket: Option<String>,
        port: Option<u16>,
        bind: Option<String>,
        log: bool,
        store: Option<String>,
        read_only: bool,
        max_connections: usize,
        io_timeout_s: f64,
        power_cut_after: Option<u64>,
        transport_us: f64,
        link_power: &str,
        time_scale: u32,
    ) -> PyResult<Self> {
        check_limits(time_scale, transport_us, io_timeout_s)?;
        let cfg = DriveConfig::from_toml_str(toml_text).map_err(PyValueError::new_err)?;
        let mut dev = ssdlab_nbd::device(&cfg, seed).map_err(PyValueError::new_err)?;
        let policy = ssdlab_core::power::LinkPolicy::parse(link_power).ok_or_else(|| {
            PyValueError::new_err(format!(
                "link_power '{link_power}': accepted: {}",
                ssdlab_core::power::LinkPolicy::NAMES
            ))
        })?;
        dev.set_link_policy(policy);
        match precondition {
            "none" | "secure-erase" => {}
            "fast-fill" => {
                let units = dev.geometry.logical_units as u32;
                py.allow_threads(|| dev.fill_untimed(0, units));
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "precondition '{other}': accepted: none, secure-erase, fast-fill"
                )))
            }
        }
        let pace = match pace {
            "model" => ssdlab_nbd::Pace::Model,
            "none" => ssdlab_nbd::Pace::None,
            other => {
                return Err(PyValueError::new_err(format!(
                    "pace '{other}': accepted: model, none"
                )))
            }
        };
        let listen = match (socket, port) {
            (Some(path), None) => ssdlab_nbd::Listen::Unix(path.into()),
            (None, Some(port)) => ssdlab_nbd::Listen::Tcp {
                bind: bind.unwrap_or_else(|| "127.0.0.1".into()),
                port,
            },
            _ => {
                return Err(PyValueError::new_err(
                    "give exactly one of a Unix socket path or a TCP port",
                ))
            }
        };
        let config = ssdlab_nbd::ServerConfig {
            log,
            read_only,
            max_connections,
            io_timeout: std::time::Duration::from_secs_f64(io_timeout_s),
            transport: std::time::Duration::from_nanos((transport_us * 1e3).round() as u64),
            time_scale,
            ..ssdlab_nbd::ServerConfig::new(listen, pace, export_name, description)
        };
        if power_cut_after.is_some() && store.is_none() {
            return Err(PyValueError::new_err(
                "--power-cut-after needs --store DIR (the drive is rebuilt from it)",
            ));
        }
        let mut config = config;
        config.power_cut_after = power_cut_after;
        config.store_dir = store.as_ref().map(std::path::PathBuf::from);
        let (data, mount) = match store {
            None => (
                ssdlab_nbd::store::DataStore::new(dev.geometry.mapping_unit_bytes),
                None,
            ),
            Some(dir) => {
                let fill = precondition == "fast-fill";
                if fill && read_only {
                    return Err(PyValueError::new_err(
                        "--precondition fast-fill with --read-only: a read-only start writes no store; accepted: one of them",
                    ));
                }
                let name = config.export_name.clone();
                let (disk, mount) = py
                    .allow_threads(|| {
                        let dir = std::path::Path::new(&dir);
                        match read_only {
                            true => ssdlab_nbd::disk::mount_read_only(dir, &mut dev, &name),
                            false => ssdlab_nbd::disk::mount(dir, &mut dev, &name, fill),
                        }
                    })
                    .map_err(|e| PyValueError::new_err(format!("store {e}")))?;
                (ssdlab_nbd::store::DataStore::on_disk(disk), Some(mount))
            }
        };
        let server = ssdlab_nbd::Server::start_with(dev, config, data)
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
        Ok(NbdServer {
            server: Some(server),
            mount,
        })
    }

    fn uri(&self) -> PyResult<String> {
        Ok(self.running()?.uri().to_string())
    }

    /// How the store was opened and rebuilt, as JSON ("null" without a store).
    fn mount_json(&self) -> String {
        serde_json::to_string(&self.mount).expect("mount serialises")
    }

    /// Statistics so far, as JSON.
    fn stats_json(&self, py: Python<'_>) -> PyResult<String> {
        let server = self.running()?;
        let stats = py.allow_threads(|| server.stats());
        Ok(serde_json::to_string(&stats).expect("stats serialise"))
    }

    /// The simulation thread died of an internal error (the server answers nothing more).
    fn failed(&self) -> bool {
        self.server.as_ref().is_some_and(|s| s.failed())
    }

    /// Answer what is in flight, close every connection, stop; the final statistics as JSON.
    fn shutdown(&mut self, py: Python<'_>) -> PyResult<String> {
        let server = self
            .server
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("the server is already stopped"))?;
        let stats = py.allow_threads(|| server.shutdown());
        Ok(serde_json::to_string(&stats).expect("stats serialise"))
    }
}

impl NbdServer {
    fn running(&self) -> PyResult<&ssdlab_nbd::Server> {
        self.server
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("the server is stopped"))
    }
}

/// Crypto erase a stopped store of a self-encrypting drive (`ssdlab_nbd::disk::crypto_erase_store`).
#[pyfunction]
pub(crate) fn crypto_erase_store(dir: &str) -> PyResult<String> {
    ssdlab_nbd::disk::crypto_erase_store(std::path::Path::new(dir)).map_err(PyValueError::new_err)
}

/// Power cuts of a drive against a shadow copy (see ssdlab_nbd::crash); the report as JSON.
#[pyfunction]
#[pyo3(signature = (toml_text, name, dir, cycles, seed, commands_per_cycle, span_units, queue_depth, prefill))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn crashtest(
    py: Python<'_>,
    toml_text: &str,
    name: &str,
    dir: &str,
    cycles: u64,
    seed: u64,
    commands_per_cycle: u32,
    span_units: u32,
    queue_depth: u32,
    prefill: bool,
) -> PyResult<String> {
    let cfg = DriveConfig::from_toml_str(toml_text).map_err(PyValueError::new_err)?;
    let opts = ssdlab_nbd::crash::CrashOptions {
        cycles,
        seed,
        commands_per_cycle,
        span_units,
        queue_depth,
        prefill,
    };
    let dir = std::path::PathBuf::from(dir);
    let report = py
        .allow_threads(|| ssdlab_nbd::crash::crashtest(&cfg, name, &dir, &opts, |_| {}))
        .map_err(PyRuntimeError::new_err)?;
    Ok(serde_json::to_string(&report).expect("report serialises"))
}
