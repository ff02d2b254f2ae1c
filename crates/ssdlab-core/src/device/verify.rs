//! Invariants across the drive's parts, checked by tests and, with the `verify` feature, after
//! every step.

use super::Device;

impl Device {
    /// Check the invariants the parts state, across them: the controller's own, the write
    /// buffer's space against the host data it holds (in the FTL's open program units and in
    /// programs not yet done), and the FTL's map and blocks whole. An error says which failed.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.controller.check()?;
        let held = self.controller.buffer.units - self.controller.buffer.free_units();
        let holding = self.ftl.buffered_host_units() + self.sched.host_units_unreleased();
        if held != holding {
            return Err(format!(
                "write buffer holds {held} units; open program units and unfinished programs hold {holding}"
            ));
        }
        Ok(())
    }

    /// With the `verify` feature: the cheap checks after every step, the whole FTL after every
    /// 1024th.
    #[cfg(feature = "verify")]
    pub(super) fn verify_step(&mut self) {
        self.steps_verified += 1;
        let full = self.steps_verified.is_multiple_of(1024);
        let checked =
            self.check_invariants()
                .and_then(|()| if full { self.ftl.verify() } else { Ok(()) });
        if let Err(e) = checked {
            panic!("invariant broken at {:?}: {e}", self.now());
        }
    }
}
