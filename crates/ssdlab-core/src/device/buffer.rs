//! The controller's DRAM write buffer, and the FLUSH/FUA commands waiting for the NAND.

/// The DRAM write buffer, in mapping units: host data holds space from its admission until
/// the NAND program carrying it ends. Invariant: free_units <= units.
#[derive(Clone, Debug)]
pub struct WriteBuffer {
    pub units: u64,
    free_units: u64,
}

impl WriteBuffer {
    pub fn new(units: u64) -> WriteBuffer {
        WriteBuffer {
            units,
            free_units: units,
        }
    }

    pub fn free_units(&self) -> u64 {
        self.free_units
    }

    /// Take up to `wanted` units; returns how many were taken.
    pub fn take(&mut self, wanted: u64) -> u64 {
        let n = wanted.min(self.free_units);
        self.free_units -= n;
        n
    }

    pub fn release(&mut self, units: u64) {
        self.free_units += units;
        debug_assert!(self.free_units <= self.units);
    }

    /// Units held by host data still in partly filled program units went from `before` to
    /// `after` (untimed writes, which never wait for programs).
    pub fn held_changed(&mut self, before: u64, after: u64) {
        self.free_units = self.free_units + before - after;
    }

    pub fn empty(&mut self) {
        self.free_units = self.units;
    }
}

/// FLUSH and FUA commands waiting until the host programs queued before them, per die, have
/// finished.
#[derive(Clone, Debug, Default)]
pub struct FlushWaits {
    waits: Vec<(u32, Vec<u64>)>,
}

impl FlushWaits {
    /// `slot` waits until each die has finished `targets[die]` host programs.
    pub fn add(&mut self, slot: u32, targets: Vec<u64>) {
        self.waits.push((slot, targets));
    }

    pub fn is_empty(&self) -> bool {
        self.waits.is_empty()
    }

    /// Remove the waits that `reached` says are satisfied, calling `release` for each slot.
    pub fn release_reached(
        &mut self,
        reached: impl Fn(&[u64]) -> bool,
        mut release: impl FnMut(u32),
    ) {
        let mut i = 0;
        while i < self.waits.len() {
            if reached(&self.waits[i].1) {
                let (slot, _) = self.waits.swap_remove(i);
                release(slot);
            } else {
                i += 1;
            }
        }
    }
}
