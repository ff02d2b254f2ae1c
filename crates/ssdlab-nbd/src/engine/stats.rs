//! What the server did: the statistics `serve` prints on exit or on a signal, taken from the
//! engine's counters and the session's recorder.

use super::{Engine, Pace};

/// What the server did, for the report on exit or on a signal.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ServeStats {
    pub pace: String,
    pub wall_s: f64,
    pub simulated_s: f64,
    pub connections: u64,
    pub reads: u64,
    pub writes: u64,
    pub write_zeroes: u64,
    pub trims: u64,
    pub flushes: u64,
    pub errors: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Commands answered per wall-clock second.
    pub iops: f64,
    pub write_amplification: f64,
    pub gc_units_copied: u64,
    pub blocks_erased: u64,
    /// Victims whose erase waited on the erase hold (the copies a cut falls back to), and
    /// holds ended early (a die out of free blocks: never, since issue 73 item 14).
    pub gc_erases_held: u64,
    pub gc_erase_holds_broken: u64,
    pub stored_bytes: u64,
    /// Logical units the drive maps (written and not trimmed since).
    pub mapped_units: u64,
    /// How far the reply ran behind the model's completion time (Pace::Model only).
    pub late_p50_us: f64,
    pub late_p99_us: f64,
    pub late_max_us: f64,
    /// Power cuts (`--power-cut-after`) and what they lost: host copies (acknowledged or in
    /// flight) and, of those, copies that fell back to an older one; units corrupted.
    pub power_cuts: u64,
    pub power_cut_lost_units: u64,
    pub power_cut_fell_back_units: u64,
    pub power_cut_corrupted_units: u64,
    /// READs answered EIO because a unit in them is uncorrectable (after a power cut of a
    /// drive without protection).
    pub uncorrectable_reads: u64,
    /// Why the on-disk store stopped taking data (empty while it works).
    pub store_error: String,
    /// What seeded NAND faults did (`--faults`).
    pub faults: ssdlab_core::faults::FaultCounters,
    /// Reads, writes and trims (with flushes) as the model timed them: service times from
    /// submission to the model's completion, rates over simulated time.
    pub model_read: ssdlab_core::stats::OpSummary,
    pub model_write: ssdlab_core::stats::OpSummary,
    pub model_trim: ssdlab_core::stats::OpSummary,
    /// The drive's power since it was started (a drive with a power model); the peak is the
    /// highest interval's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power: Option<ssdlab_core::power::PowerSummary>,
}

impl Engine {
    pub(super) fn snapshot(&self) -> ServeStats {
        let mut s = self.io.stats.clone();
        s.errors += self
            .io
            .refused_outside
            .load(std::sync::atomic::Ordering::Relaxed);
        s.wall_s = (self.io.clock.now() - self.io.wall_start).as_secs_f64();
        s.simulated_s = self
            .dev
            .now()
            .ns()
            .saturating_sub(self.session.meter.rec.start.ns()) as f64
            / 1e9;
        let ops = s.reads + s.writes + s.write_zeroes + s.trims + s.flushes;
        s.iops = if s.wall_s > 0.0 {
            ops as f64 / s.wall_s
        } else {
            0.0
        };
        let at = self.session.meter.rec.at_start;
        s.write_amplification = self.dev.write_amplification(
            self.dev.pages_committed() - at.pages_committed,
            self.dev.ftl.counters.host_units_written - at.host_units_written,
        );
        let elapsed_s = s.simulated_s;
        let summary = |o: &ssdlab_core::stats::OpStats| {
            let mut x = o.summary(elapsed_s);
            x.latency_ns_bins.clear(); // the service-time figures, not the histogram
            x
        };
        s.model_read = summary(&self.session.meter.rec.read);
        s.model_write = summary(&self.session.meter.rec.write);
        s.model_trim = summary(&self.session.meter.rec.trim);
        s.gc_units_copied = self.dev.ftl.counters.gc_units_copied;
        s.blocks_erased = self.dev.ftl.counters.blocks_erased;
        s.gc_erases_held = self.dev.ftl.counters.gc_erases_held;
        s.gc_erase_holds_broken = self.dev.ftl.counters.gc_erase_holds_broken;
        s.stored_bytes = self.io.store.stored_bytes();
        s.mapped_units = self.dev.ftl.mapped_units();
        s.faults = self.dev.fault_counters();
        s.power = self.power_summary(&s);
        if self.io.pace == Pace::Model && self.io.late.count > 0 {
            s.late_p50_us = self.io.late.quantile(0.5) as f64 / 1e3;
            s.late_p99_us = self.io.late.quantile(0.99) as f64 / 1e3;
            s.late_max_us = self.io.late.max as f64 / 1e3;
        }
        s
    }

    /// Energy from the drive's power-on to now over its simulated time, with the session's
    /// bytes and commands.
    fn power_summary(&self, s: &ServeStats) -> Option<ssdlab_core::power::PowerSummary> {
        if !self.dev.has_power_model() {
            return None;
        }
        let now = self.dev.now();
        let over = ssdlab_core::power::PowerSummary::over(
            self.dev.energy_j(now),
            now.seconds_f64(),
            s.bytes_read + s.bytes_written,
            s.reads + s.writes,
        );
        // Only the highest interval is taken from the series (its span does not matter).
        let series =
            ssdlab_core::power::PowerSummary::of(&self.session.meter.rec.series, true, 0.0);
        Some(ssdlab_core::power::PowerSummary {
            peak_w: series.map_or(over.peak_w, |p| p.peak_w.max(over.average_w)),
            temperature_c_max: self.dev.temperature_c(),
            throttled_s: self.dev.throttling().map(|(_, _, ns)| ns as f64 * 1e-9),
            ..over
        })
    }
}
