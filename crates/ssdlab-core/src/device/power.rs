//! The drive's power as the device reports it: energy up to any instant (static, by the link's
//! state over time, plus dynamic, from the NAND's and processor's busy time), the link's
//! state, and the host's link power policy. See [`crate::power`].

use super::Device;
use crate::power::{dynamic_energy_j, Activity, Link, LinkPolicy, LinkState};
use crate::time::SimTime;

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

    /// Dynamic energy (joules) of everything started so far; 0 without a power model.
    pub fn dynamic_energy_j(&self) -> f64 {
        self.config
            .power
            .as_ref()
            .map_or(0.0, |p| dynamic_energy_j(p, &self.activity()))
    }

    /// The host link's power state at `t` (Active without a power model).
    pub fn link_state(&self, t: SimTime) -> LinkState {
        self.controller
            .link
            .as_ref()
            .map_or(LinkState::Active, |l| l.state_at(t))
    }
}
