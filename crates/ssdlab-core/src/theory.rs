//! Write amplification where theory is exact: uniform random single-unit overwrites on one die
//! of one plane with one mapping unit per page, against the analytic and mean-field models.
//!
//! alpha = physical pages / logical pages. The models count `blocks` blocks that hold data (the
//! write frontier among them); the simulated drive gets `gc_foreground_free_blocks_min` free
//! blocks on top, the reserve its collector keeps, which the models do not have. Garbage
//! collection writes into its own stream, as in every preset: under uniform random writes a
//! page's fate does not depend on the block it sits in, so the models hold for it.

use crate::config::{DriveConfig, GcPolicy};
use crate::ftl::{Ftl, HostWrite, NullSink};
use crate::rng::Rng;

pub use crate::meanfield::{d_choices_waf, fifo_waf, greedy_waf, lambert_w0};

/// The setting of the models: one die, one plane, a page = a 4 KiB mapping unit, `blocks`
/// blocks holding data plus the collector's free reserve, logical = blocks x b / alpha.
pub fn theory_config(
    pages_per_block: u32,
    blocks: u32,
    alpha: f64,
    policy: GcPolicy,
    d: u32,
) -> DriveConfig {
    let free_min = 2;
    let policy = match policy {
        GcPolicy::Greedy => "greedy",
        GcPolicy::Fifo => "fifo",
        GcPolicy::CostBenefit => "cost-benefit",
        GcPolicy::DChoices => "d-choices",
    };
    let logical = (pages_per_block as f64 * blocks as f64 / alpha).floor() as u64;
    let text = format!(
        r#"name = "theory"
[nand]
channels = 1
dies = 1
planes_per_die = 1
blocks_per_plane = {total}
pages_per_block = {pages_per_block}
page_size_bytes = 4096
read_page_us = 50.0
program_page_us = 1000.0
erase_block_us = 3000.0
bus_mb_per_s = 200.0
[controller]
command_ns = 1000
[ftl]
user_capacity_bytes = {user}
mapping_unit_bytes = 4096
write_buffer_bytes = 65536
gc_policy = "{policy}"
gc_d_choices = {d}
gc_foreground_free_blocks_min = {free_min}
gc_foreground_mode = "paced"
gc_background_free_blocks_target = {free_min}
gc_separate_stream = true
[host]
interface = "sata"
sata_line_gbit_per_s = 6.0
queue_depth_max = 32
"#,
        total = blocks + free_min,
        user = logical * 4096,
        d = d.max(1),
    );
    DriveConfig::from_toml_str(&text).expect("theory configuration is valid")
}

/// Simulated write amplification: fill, `warmup` x logical random overwrites, then measure
/// over `measure` x logical more (NAND programs per host write, untimed).
pub fn simulate_waf(cfg: &DriveConfig, warmup: f64, measure: f64, seed: u64) -> f64 {
    let g = cfg.validate().expect("valid configuration");
    let mut ftl = Ftl::new(&cfg.ftl, &g, seed);
    let n = ftl.logical_units();
    let mut rng = Rng::derive(seed, "theory/writes");
    ftl.fill_untimed(0, n as u32);
    for _ in 0..(warmup * n as f64) as u64 {
        ftl.write_unit(HostWrite::untimed(rng.below(n) as u32), &mut NullSink);
    }
    let (h0, g0) = (
        ftl.counters.host_units_written,
        ftl.counters.gc_units_copied,
    );
    for _ in 0..(measure * n as f64) as u64 {
        ftl.write_unit(HostWrite::untimed(rng.below(n) as u32), &mut NullSink);
    }
    let host = (ftl.counters.host_units_written - h0) as f64;
    (host + (ftl.counters.gc_units_copied - g0) as f64) / host
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lambert_w_inverts() {
        for x in [-0.3678, -0.3, -0.1, -1e-3, 0.0] {
            let w = lambert_w0(x);
            assert!((w * w.exp() - x).abs() < 1e-12, "W({x}) = {w}");
        }
    }

    #[test]
    fn d_choices_limits() {
        // d = 1: random victim, exactly alpha / (alpha - 1).
        for alpha in [1.07, 1.25, 2.0] {
            let a = d_choices_waf(alpha, 64, 1);
            assert!((a - alpha / (alpha - 1.0)).abs() < 1e-6 * a, "{alpha}: {a}");
        }
        // Many choices approach greedy from above; more choices never hurt.
        let (g, d10, d2) = (
            greedy_waf(1.25, 64),
            d_choices_waf(1.25, 64, 10),
            d_choices_waf(1.25, 64, 2),
        );
        assert!(g <= d10 && d10 < d2 && d2 < 5.0, "{g} {d10} {d2}");
        assert!((d_choices_waf(1.25, 64, 200) - g).abs() / g < 0.01);
        // FIFO is worse than greedy, better than random.
        assert!(greedy_waf(1.25, 64) < fifo_waf(1.25) && fifo_waf(1.25) < 5.0);
    }

    #[test]
    fn simulator_matches_theory_on_small_configurations() {
        // The CI-sized version of `ssdlab validate`'s theory rows (which use >= 1024 blocks).
        for (policy, d, b, alpha, expected) in [
            (GcPolicy::Greedy, 0, 32, 1.25, greedy_waf(1.25, 32)),
            (GcPolicy::Fifo, 0, 32, 1.25, fifo_waf(1.25)),
            (GcPolicy::DChoices, 1, 32, 1.5, 3.0),
            (GcPolicy::DChoices, 5, 32, 1.25, d_choices_waf(1.25, 32, 5)),
        ] {
            let got = simulate_waf(&theory_config(b, 1024, alpha, policy, d), 5.0, 5.0, 7);
            let err = (got - expected).abs() / expected;
            eprintln!(
                "{policy:?} d {d} b {b} alpha {alpha}: sim {got:.4} theory {expected:.4} ({:.2}%)",
                err * 100.0
            );
            assert!(err < 0.015, "{policy:?} d {d}: {got} vs {expected}");
        }
    }
}
