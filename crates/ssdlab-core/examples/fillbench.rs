//! Untimed-fill speed on a preset: ns per mapping unit (and Device::new / secure erase times).
use ssdlab_core::config::DriveConfig;
use ssdlab_core::device::Device;

#[allow(clippy::disallowed_methods)]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cfg = DriveConfig::from_toml_str(&std::fs::read_to_string(&args[1]).unwrap()).unwrap();
    let t = std::time::Instant::now();
    let mut dev = Device::new(&cfg, 1).unwrap();
    let t_new = t.elapsed();
    let t = std::time::Instant::now();
    dev.secure_erase();
    let t_erase = t.elapsed();
    let n = dev.geometry.logical_units as u32;
    let t = std::time::Instant::now();
    dev.fill_untimed(0, n);
    let t_fill = t.elapsed();
    println!(
        "new {t_new:?} secure_erase {t_erase:?} fill {t_fill:?} = {:.1} ns/unit",
        t_fill.as_nanos() as f64 / n as f64
    );
}
