//! Power: the drive's energy on the simulated timeline, and the host link's power states.
//!
//! Energy has two parts. **Static**: the drive's power while it idles in the link power state
//! it is in (active, partial, slumber, DevSleep), integrated over time; it covers what runs
//! whether or not there is work (controller and DRAM refresh, NAND standby, the PHY).
//! **Dynamic**: on top of it, each NAND operation's supply current for its array time
//! (V_CC x I_CC x t for read, program and erase, from the part's DC characteristics), each
//! byte over a channel bus (V_CCQ x I_CCQ x transfer time), and the controller's processor
//! while it works on host commands and garbage collection (`controller_busy_w` x its busy
//! time, which the model already spends). The dynamic part is taken from counters of time the
//! NAND and processor models keep, so accounting costs a few additions per operation, and an
//! operation's energy falls in the interval it starts in.
//!
//! **Link power states** (SATA 3.2, section 8.4 "Interface power states"): after the host
//! link has been idle for a policy's timers it goes to Partial, Slumber or DevSleep, and the
//! first command after that pays the state's exit latency before the drive sees it. The host
//! chooses the policy (`LinkPolicy`, as Linux's `link_power_management_policy` and the
//! reviews' HIPM/DIPM settings do); the drive's preset gives each state's power and exit
//! latency and its own (device-initiated) timers.
//!
//! Every figure is a `[power]` preset field with its unit in its name and, in the preset, its
//! source or ASSUMED. Without a `[power]` section the drive has no power model: nothing is
//! accounted and the link never leaves Active.

use crate::time::{SimDuration, SimTime};
use serde::{Deserialize, Serialize};

/// A drive's power figures (`[power]`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PowerConfig {
    /// NAND core supply and the part's typical currents (datasheet DC characteristics: ICC1
    /// array read, ICC2 program, ICC3 erase), per die.
    pub nand_vcc_v: f64,
    pub nand_icc_read_ma: f64,
    pub nand_icc_program_ma: f64,
    pub nand_icc_erase_ma: f64,
    /// NAND I/O supply and its current while data moves on the bus (ICCQ during I/O bursts).
    pub nand_vccq_v: f64,
    pub nand_iccq_io_ma: f64,
    /// The processor's power above idle while it works (per command, per GC copy and victim).
    pub controller_busy_w: f64,
    /// DRAM access energy per byte that crosses the controller's buffer (every byte to or
    /// from the NAND), picojoules; its idle and refresh power are in the idle figures.
    #[serde(default)]
    pub dram_pj_per_byte: f64,
    /// The drive idling with its link in each state: everything not itemised below (the
    /// controller, its PHY and regulators; with no `[power.dram]` and no `nand_standby_ma`,
    /// the whole drive).
    pub idle_active_w: f64,
    pub idle_partial_w: f64,
    pub idle_slumber_w: f64,
    pub idle_devsleep_w: f64,
    /// Time from each state back to Active (the first command after idle waits this long).
    pub partial_exit_us: f64,
    pub slumber_exit_us: f64,
    pub devsleep_exit_us: f64,
    /// Device-initiated power management (DIPM): the drive's own idle timers to Partial and
    /// to Slumber.
    pub dipm_partial_after_us: f64,
    pub dipm_slumber_after_us: f64,
    /// The most the drive may draw, W, where its documents give one (a power budget): the
    /// scheduler then lets only as many dies run array operations at once as fit in what is
    /// left after the drive's active idle power and a busy processor (`dies_within`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
    /// The NAND's standby current per die (ISB, CMOS inputs), mA at `nand_vcc_v`, on every
    /// die while the link is Active, Partial or Slumber (in DevSleep the drive powers the NAND
    /// down).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nand_standby_ma: f64,
    /// The DRAM's background power by state, from its datasheet's currents (`[power.dram]`),
    /// per GiB of `controller.dram_bytes`; absent: it is in the idle figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram: Option<DramPower>,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// The DRAM's background power in each state the firmware puts it in while the drive idles,
/// W per GiB of DRAM (each figure IDD x VDD summed over the part's rails, the refresh the
/// controller issues included where the DRAM does not refresh itself). Link Active: precharge
/// standby, clock running (IDD2N + refresh); Partial: precharge power-down (IDD2P + refresh);
/// Slumber: self refresh (IDD6). In DevSleep the drive has saved what it needs to the NAND and
/// powers the DRAM down (SATA 3.2 DevSleep: the device may remove power from all but its
/// DEVSLP detector), so it draws nothing there.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DramPower {
    pub standby_w_per_gib: f64,
    pub power_down_w_per_gib: f64,
    pub self_refresh_w_per_gib: f64,
}

impl PowerConfig {
    /// Every figure finite and not negative; an error names the field.
    pub fn check(&self) -> Result<(), (String, String)> {
        let fields = [
            ("nand_vcc_v", self.nand_vcc_v),
            ("nand_icc_read_ma", self.nand_icc_read_ma),
            ("nand_icc_program_ma", self.nand_icc_program_ma),
            ("nand_icc_erase_ma", self.nand_icc_erase_ma),
            ("nand_vccq_v", self.nand_vccq_v),
            ("nand_iccq_io_ma", self.nand_iccq_io_ma),
            ("controller_busy_w", self.controller_busy_w),
            ("dram_pj_per_byte", self.dram_pj_per_byte),
            ("idle_active_w", self.idle_active_w),
            ("idle_partial_w", self.idle_partial_w),
            ("idle_slumber_w", self.idle_slumber_w),
            ("idle_devsleep_w", self.idle_devsleep_w),
            ("partial_exit_us", self.partial_exit_us),
            ("slumber_exit_us", self.slumber_exit_us),
            ("devsleep_exit_us", self.devsleep_exit_us),
            ("dipm_partial_after_us", self.dipm_partial_after_us),
            ("dipm_slumber_after_us", self.dipm_slumber_after_us),
            ("nand_standby_ma", self.nand_standby_ma),
        ];
        let dram = self.dram.as_ref().map_or([0.0; 3], |d| {
            [
                d.standby_w_per_gib,
                d.power_down_w_per_gib,
                d.self_refresh_w_per_gib,
            ]
        });
        let dram_fields = [
            ("dram.standby_w_per_gib", dram[0]),
            ("dram.power_down_w_per_gib", dram[1]),
            ("dram.self_refresh_w_per_gib", dram[2]),
        ];
        for (name, v) in fields.into_iter().chain(dram_fields) {
            if !v.is_finite() || v < 0.0 {
                return Err((
                    format!("power.{name}"),
                    format!("{v} is not a finite number >= 0"),
                ));
            }
        }
        if let Some(limit) = self.power_limit_w {
            if !(limit.is_finite() && self.dies_within(limit, self.idle_active_w) >= 1) {
                return Err((
                    "power.power_limit_w".into(),
                    format!(
                        "{limit} W leaves no die running above the active idle power {} W and a busy processor {} W; accepted: enough for one die ({:.3} W more)",
                        self.idle_active_w, self.controller_busy_w, self.die_active_w()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// One die's power while its array works (the highest of read, program and erase) with
    /// its bus moving data, W.
    pub fn die_active_w(&self) -> f64 {
        let icc = self
            .nand_icc_read_ma
            .max(self.nand_icc_program_ma)
            .max(self.nand_icc_erase_ma);
        (self.nand_vcc_v * icc + self.nand_vccq_v * self.nand_iccq_io_ma) * 1e-3
    }

    /// The drive's idle power with its link in each state (Active, Partial, Slumber,
    /// DevSleep), W: the idle figures plus the DRAM's background power for `dram_bytes` of
    /// DRAM and the standby current of `dies` NAND dies.
    pub fn state_power_w(&self, dram_bytes: u64, dies: u32) -> [f64; 4] {
        let gib = dram_bytes as f64 / (1u64 << 30) as f64;
        let nand = dies as f64 * self.nand_standby_ma * self.nand_vcc_v * 1e-3;
        let dram = self.dram.as_ref().map_or([0.0; 3], |d| {
            [
                d.standby_w_per_gib,
                d.power_down_w_per_gib,
                d.self_refresh_w_per_gib,
            ]
            .map(|w| w * gib)
        });
        [
            self.idle_active_w + dram[0] + nand,
            self.idle_partial_w + dram[1] + nand,
            self.idle_slumber_w + dram[2] + nand,
            self.idle_devsleep_w,
        ]
    }

    /// Dies that may run at once within `limit_w` above `active_idle_w` (the drive's idle
    /// power with the link active: `state_power_w(..)[0]`).
    pub fn dies_within(&self, limit_w: f64, active_idle_w: f64) -> u32 {
        let spare = limit_w - active_idle_w - self.controller_busy_w;
        if spare <= 0.0 || self.die_active_w() <= 0.0 {
            return if spare > 0.0 { u32::MAX } else { 0 };
        }
        (spare / self.die_active_w()).floor().min(u32::MAX as f64) as u32
    }
}

/// The host's link power management policy (a job's or replay's `link_power`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum LinkPolicy {
    /// The link stays Active (Linux `max_performance`; the reviews' "no LPM").
    #[default]
    #[serde(rename = "none")]
    None,
    /// Host-initiated: the host puts the idle link into Slumber after [`HIPM_SLUMBER_AFTER`]
    /// (AHCI aggressive link power management, Linux `min_power`).
    #[serde(rename = "hipm")]
    Hipm,
    /// Device-initiated: the drive's own timers (`power.dipm_*_after_us`).
    #[serde(rename = "dipm")]
    Dipm,
    /// Both: each state at the earlier of the two timers.
    #[serde(rename = "hipm+dipm")]
    HipmDipm,
    /// Both, and the host asserts DEVSLP after [`DEVSLEEP_AFTER`] of idle.
    #[serde(rename = "devsleep")]
    DevSleep,
}

impl LinkPolicy {
    pub const NAMES: &'static str = "none, hipm, dipm, hipm+dipm, devsleep";

    pub fn parse(s: &str) -> Option<LinkPolicy> {
        Some(match s {
            "none" => LinkPolicy::None,
            "hipm" => LinkPolicy::Hipm,
            "dipm" => LinkPolicy::Dipm,
            "hipm+dipm" => LinkPolicy::HipmDipm,
            "devsleep" => LinkPolicy::DevSleep,
            _ => return None,
        })
    }
}

/// The host's idle time before it takes the link to Slumber under HIPM. ASSUMED: Linux's
/// aggressive policy requests Slumber as soon as the port is idle; noticing it and the PMREQ
/// handshake take on the order of 100 us, so a closed-loop host's next command (arriving at
/// once) finds the link still active.
pub const HIPM_SLUMBER_AFTER: SimDuration = SimDuration(100_000);

/// The host's idle time before it asserts DEVSLP. ASSUMED: the AHCI DevSleep idle timeout
/// (DITO) is host-set; 1 s is a value between the 100 ms-class timers of Intel's platform
/// guidance and the multi-second ones of OS defaults.
pub const DEVSLEEP_AFTER: SimDuration = SimDuration(1_000_000_000);

/// A link power state, in order of depth (the series column's code).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[repr(u8)]
pub enum LinkState {
    Active = 0,
    Partial = 1,
    Slumber = 2,
    DevSleep = 3,
}

/// The link's state over time and the static energy it implies. Busy (a command in the drive)
/// means Active; an idle stretch walks down the policy's ladder of states.
#[derive(Clone, Debug)]
pub struct Link {
    /// (state, idle time when it is reached), deepest last; empty when the link stays Active.
    ladder: Vec<(LinkState, SimDuration)>,
    /// Idle power of each state, watts.
    power_w: [f64; 4],
    exit: [SimDuration; 4],
    /// The idle stretch under way began then (None while a command is in the drive).
    idle_since: Option<SimTime>,
    /// Static energy up to `accounted_to`, joules.
    static_j: f64,
    accounted_to: SimTime,
}

impl Link {
    /// The link of a drive whose idle power in each state is `power_w`
    /// ([`PowerConfig::state_power_w`]).
    pub fn new(cfg: &PowerConfig, power_w: [f64; 4], policy: LinkPolicy, now: SimTime) -> Link {
        let us = |v: f64| SimDuration((v * 1e3).round() as u64);
        let dipm = [
            (LinkState::Partial, us(cfg.dipm_partial_after_us)),
            (LinkState::Slumber, us(cfg.dipm_slumber_after_us)),
        ];
        let hipm = [(LinkState::Slumber, HIPM_SLUMBER_AFTER)];
        let mut steps: Vec<(LinkState, SimDuration)> = match policy {
            LinkPolicy::None => vec![],
            LinkPolicy::Hipm => hipm.to_vec(),
            LinkPolicy::Dipm => dipm.to_vec(),
            LinkPolicy::HipmDipm | LinkPolicy::DevSleep => {
                let mut v = dipm.to_vec();
                v.extend(hipm);
                if policy == LinkPolicy::DevSleep {
                    v.push((LinkState::DevSleep, DEVSLEEP_AFTER));
                }
                v
            }
        };
        // Each state at its earliest timer; a deeper state reached first hides a shallower one.
        steps.sort_by_key(|&(s, at)| (at, std::cmp::Reverse(s)));
        let mut ladder: Vec<(LinkState, SimDuration)> = Vec::new();
        for (s, at) in steps {
            if ladder.last().is_none_or(|&(deepest, _)| s > deepest) {
                ladder.push((s, at));
            }
        }
        Link {
            ladder,
            power_w,
            exit: [
                SimDuration(0),
                us(cfg.partial_exit_us),
                us(cfg.slumber_exit_us),
                us(cfg.devsleep_exit_us),
            ],
            idle_since: Some(now),
            static_j: 0.0,
            accounted_to: now,
        }
    }

    /// The link's state at `t` (no earlier than the last change).
    pub fn state_at(&self, t: SimTime) -> LinkState {
        let Some(since) = self.idle_since else {
            return LinkState::Active;
        };
        let idle = t.saturating_since(since);
        self.ladder
            .iter()
            .rev()
            .find(|&&(_, at)| idle >= at)
            .map_or(LinkState::Active, |&(s, _)| s)
    }

    /// Static energy from `accounted_to` to `t` (`t` no earlier), joules.
    fn static_j_to(&self, t: SimTime) -> f64 {
        let from = self.accounted_to;
        if t <= from {
            return 0.0;
        }
        let Some(since) = self.idle_since else {
            return self.power_w[0] * (t - from).secs_f64();
        };
        // Walk the ladder: [since + at_k, since + at_{k+1}) is state k's stretch.
        let mut e = 0.0;
        let mut state_from = since;
        let mut state = LinkState::Active;
        for &(next, at) in self.ladder.iter().chain(std::iter::once(&(
            LinkState::DevSleep,
            SimDuration(u64::MAX / 4),
        ))) {
            let state_to = since + at;
            let (a, b) = (state_from.max(from), state_to.min(t));
            if b > a {
                e += self.power_w[state as usize] * (b - a).secs_f64();
            }
            if state_to >= t {
                break;
            }
            state_from = state_to;
            state = next;
        }
        e
    }

    /// The link's last change of state (static energy is known from then on).
    pub fn last_change(&self) -> SimTime {
        self.accounted_to
    }

    /// Static energy up to `t` (no earlier than the last change), joules.
    pub fn static_energy_j(&self, t: SimTime) -> f64 {
        debug_assert!(
            t >= self.accounted_to,
            "static energy asked at {t:?}, before the link's last change at {:?}",
            self.accounted_to
        );
        self.static_j + self.static_j_to(t)
    }

    /// The host changes its policy at `now`: energy so far is kept, the idle stretch under
    /// way (if any) continues under the new timers.
    pub fn set_policy(&mut self, cfg: &PowerConfig, policy: LinkPolicy, now: SimTime) {
        self.static_j += self.static_j_to(now);
        self.accounted_to = now;
        self.ladder = Link::new(cfg, self.power_w, policy, now).ladder;
        if self.idle_since.is_some() {
            self.idle_since = Some(now); // the new timers run from now
        }
    }

    /// A command arrives at `now`: the link leaves its idle state. Returns the exit latency
    /// the command waits (zero when the link was Active or a command is already in the drive).
    pub fn wake(&mut self, now: SimTime) -> SimDuration {
        let state = self.state_at(now);
        self.static_j += self.static_j_to(now);
        self.accounted_to = now;
        self.idle_since = None;
        self.exit[state as usize]
    }

    /// The last command left the drive at `now`: an idle stretch begins.
    pub fn idle(&mut self, now: SimTime) {
        self.static_j += self.static_j_to(now);
        self.accounted_to = now;
        self.idle_since = Some(now);
    }
}

/// Cumulative activity the dynamic energy is computed from: array and bus time of the NAND,
/// busy time of the processor (all nanoseconds, since power-on).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Activity {
    pub read_array_ns: u64,
    pub program_array_ns: u64,
    pub erase_ns: u64,
    pub bus_ns: u64,
    pub processor_ns: u64,
    /// Bytes moved to and from the NAND (through the controller's DRAM buffer).
    pub dram_bytes: u64,
}

/// Joules of `a` for a drive with figures `cfg`.
pub fn dynamic_energy_j(cfg: &PowerConfig, a: &Activity) -> f64 {
    let ns = 1e-9;
    let ma = 1e-3;
    cfg.nand_vcc_v
        * ma
        * ns
        * (cfg.nand_icc_read_ma * a.read_array_ns as f64
            + cfg.nand_icc_program_ma * a.program_array_ns as f64
            + cfg.nand_icc_erase_ma * a.erase_ns as f64)
        + cfg.nand_vccq_v * cfg.nand_iccq_io_ma * ma * ns * a.bus_ns as f64
        + cfg.controller_busy_w * ns * a.processor_ns as f64
        + cfg.dram_pj_per_byte * 1e-12 * a.dram_bytes as f64
}

/// A run's power, from its interval series (`energy_uj`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PowerSummary {
    /// Energy over the run's intervals (the last one to its end), joules.
    pub energy_j: f64,
    pub average_w: f64,
    /// The highest interval's average power.
    pub peak_w: f64,
    /// Energy per gigabyte (1e9 bytes) the host moved, read and written together.
    pub joules_per_gb: f64,
    /// Host IOs per second per watt of average power.
    pub iops_per_w: f64,
    /// With a heat model: the highest temperature at an interval's end, °C, and the time
    /// spent throttled (intervals ending throttled x interval), seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature_c_max: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttled_s: Option<f64>,
}

impl PowerSummary {
    /// None when the drive has no power model (`has_power_model`) or the series is empty.
    /// `elapsed_s`: the run's span (its last interval ends with it, `Recorder::close_all`).
    pub fn of(
        series: &crate::stats::IntervalSeries,
        has_power_model: bool,
        elapsed_s: f64,
    ) -> Option<Self> {
        if !has_power_model || series.energy_uj.is_empty() {
            return None;
        }
        let interval_s = series.interval_ns as f64 * 1e-9;
        let energy_j = series.energy_uj.iter().sum::<u64>() as f64 * 1e-6;
        let whole_s = interval_s * series.energy_uj.len() as f64;
        let span_s = if elapsed_s > 0.0 {
            elapsed_s.min(whole_s)
        } else {
            whole_s
        };
        let peak_uj = series.energy_uj.iter().copied().max().unwrap_or(0);
        let bytes: u64 = series.read_bytes.iter().chain(&series.write_bytes).sum();
        let ios: u64 = series.read_ios.iter().chain(&series.write_ios).sum();
        let over = PowerSummary::over(energy_j, span_s, bytes, ios);
        Some(PowerSummary {
            // A run within one interval (or a last interval cut short) averages over its span.
            peak_w: (peak_uj as f64 * 1e-6 / interval_s).max(over.average_w),
            temperature_c_max: series
                .temperature_mc
                .iter()
                .copied()
                .max()
                .filter(|&t| t > 0)
                .map(|t| t as f64 * 1e-3),
            throttled_s: series
                .temperature_mc
                .iter()
                .any(|&t| t > 0)
                .then(|| series.throttled.iter().sum::<u64>() as f64 * interval_s),
            ..over
        })
    }

    /// `energy_j` spent over `span_s` seconds in which the host moved `bytes` in `ios`
    /// commands: the average and the per-byte and per-watt figures (peak = average, no
    /// temperature; the caller fills in what it knows better).
    pub fn over(energy_j: f64, span_s: f64, bytes: u64, ios: u64) -> PowerSummary {
        let average_w = if span_s > 0.0 { energy_j / span_s } else { 0.0 };
        PowerSummary {
            energy_j,
            average_w,
            peak_w: average_w,
            joules_per_gb: if bytes > 0 {
                energy_j / (bytes as f64 * 1e-9)
            } else {
                0.0
            },
            iops_per_w: if average_w > 0.0 {
                ios as f64 / span_s / average_w
            } else {
                0.0
            },
            temperature_c_max: None,
            throttled_s: None,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
