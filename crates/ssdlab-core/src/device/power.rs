//! The drive's power as the device reports it: energy up to any instant (static, by the link's
//! state over time, plus dynamic, from the NAND's and processor's busy time), the link's
//! state, and the host's link power policy. See [`crate::power`].

use super::Device;
use crate::config::DriveConfig;
use crate::power::{dynamic_energy_j, Activity, Link, LinkPolicy, LinkState};
use crate::thermal::Thermal;
use crate::time::SimTime;

/// A drive's heat model at power-on: at ambient temperature (None without `[thermal]`).
pub(super) fn new_thermal(config: &DriveConfig) -> Option<Thermal> {
    config
        .thermal
        .as_ref()
        .map(|t| Thermal::new(t, SimTime::ZERO, 0.0))
}

/// Dies the drive's power budget lets run at once, when it has a budget smaller than its dies.
pub(super) fn budget_dies(config: &DriveConfig, g: &crate::config::Geometry) -> Option<u32> {
    let p = config.power.as_ref()?;
    let idle = p.state_power_w(config.controller.dram_bytes, g.dies)[0];
    let dies = p.dies_within(p.power_limit_w?, idle);
    (dies < g.dies).then_some(dies.max(1))
}

impl Device {
    /// Whether the drive has a power model (a `[power]` section).
    pub fn has_power_model(&self) -> bool {
        self.config.power.is_some()
    }

    /// The host's link power management policy from now on (a job's or replay's
    /// `link_power`). Without a power model the link stays Active and this does nothing.
    pub fn set_link_policy(&mut self, policy: LinkPolicy) {
        let now = self.kernel.now();
        if let (Some(cfg), Some(link)) = (&self.config.power, &mut self.controller.link) {
            link.set_policy(cfg, policy, now);
        }
    }

    /// What the NAND and processor have spent time on since power-on.
    pub fn activity(&self) -> Activity {
        let n = &self.sched.nand.counters;
        Activity {
            read_array_ns: n.read_array_ns,
            program_array_ns: n.program_array_ns,
            erase_ns: n.erase_ns,
            bus_ns: self.sched.nand.bus_busy_ns(),
            processor_ns: self.controller.processor.busy_ns(),
            dram_bytes: n.bus_bytes,
        }
    }

    /// Static energy (joules) from power-on to `t` (no earlier than the link's last change:
    /// the current event time or later); 0 without a power model.
    pub fn static_energy_j(&self, t: SimTime) -> f64 {
        self.controller
            .link
            .as_ref()
            .map_or(0.0, |l: &Link| l.static_energy_j(t))
    }

    /// The host link's last change of state (`static_energy_j` needs a time no earlier).
    pub fn link_changed_at(&self) -> SimTime {
        self.controller
            .link
            .as_ref()
            .map_or(SimTime::ZERO, |l: &Link| l.last_change())
    }

    /// The drive's energy (joules) from power-on to `t` (as for `static_energy_j`): static
    /// and dynamic.
    pub fn energy_j(&self, t: SimTime) -> f64 {
        self.static_energy_j(t) + self.dynamic_energy_j()
    }

    /// Dynamic energy (joules) of everything started so far; 0 without a power model.
    pub fn dynamic_energy_j(&self) -> f64 {
        self.config
            .power
            .as_ref()
            .map_or(0.0, |p| dynamic_energy_j(p, &self.activity()))
    }

    /// After each event: the temperature, when an update is due.
    #[inline]
    pub(super) fn update_temperature_if_due(&mut self) {
        if self
            .thermal
            .as_ref()
            .is_some_and(|t| self.kernel.now() >= t.next_update())
        {
            self.update_temperature();
        }
    }

    /// Bring the temperature up to now; throttling starts or ends with it (the scheduler's
    /// limit on dies running at once).
    #[inline(never)]
    fn update_temperature(&mut self) {
        let now = self.kernel.now();
        let energy = self.energy_j(now);
        let dies = self.geometry.dies;
        if let Some(t) = &mut self.thermal {
            if t.update(now, energy) {
                let max = t.throttled.then(|| t.throttled_dies(dies));
                self.sched.set_thermal_dies_max(&mut self.kernel, max);
            }
        }
    }

    /// The drive's temperature at its last update, °C (None without a heat model).
    pub fn temperature_c(&self) -> Option<f64> {
        self.thermal.as_ref().map(|t| t.temperature_c())
    }

    /// Whether thermal throttling is on, how often it started and how long it lasted (ns).
    pub fn throttling(&self) -> Option<(bool, u64, u64)> {
        self.thermal
            .as_ref()
            .map(|t| (t.throttled, t.throttle_events, t.throttled_ns))
    }

    /// The host link's power state at `t` (Active without a power model).
    pub fn link_state(&self, t: SimTime) -> LinkState {
        self.controller
            .link
            .as_ref()
            .map_or(LinkState::Active, |l| l.state_at(t))
    }
}
