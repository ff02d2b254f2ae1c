//! Power loss: what a cut takes from a drive, by the design of its hold-up energy.
//!
//! The rules are drive behaviour, so they live here, next to the drive: the NBD emulator's
//! store ([`crate::ftl::MapChange`] consumer), its crash harness and its power cuts all ask
//! the same questions. At a cut, host data not yet on the NAND is in one of three states
//! ([`HostDataState`]): in the DRAM buffer (in no program yet), in a program queued on its die,
//! or in a program whose array time is running. [`PowerLossProtection`] says which survive,
//! and whether a running program corrupts the paired lower page of MLC cells
//! ([`crate::nand::paired_lower_page`]). Garbage-collection copies are never lost: firmware
//! keeps the old copy mapped until the new one is programmed.

use crate::config::{Geometry, PowerLossProtection};
use crate::device::Device;
use crate::ftl::{ProgramKind, UNMAPPED};

/// Where host data not yet on the NAND is when the power goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostDataState {
    /// In the DRAM write buffer, or in a program still queued on its die.
    Unprogrammed,
    /// In a program whose array time is running.
    Running,
}

impl PowerLossProtection {
    /// Whether host data in `state` survives a cut: `full` programs everything; `map` lets
    /// running programs finish; `none` keeps nothing.
    pub fn keeps(self, state: HostDataState) -> bool {
        match self {
            PowerLossProtection::Full => true,
            PowerLossProtection::Map => state == HostDataState::Running,
            PowerLossProtection::None => false,
        }
    }

    /// Whether a program running at the cut is interrupted, corrupting its paired lower page.
    pub fn interrupts_running_programs(self) -> bool {
        self == PowerLossProtection::None
    }
}

/// What a power cut takes: host copies lost (physical units), units corrupted (the paired
/// lower pages of interrupted programs, where no RAIN repairs them), and units RAIN repairs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CutLosses {
    /// Physical units of host copies not programmed, sorted, without duplicates.
    pub lost: Vec<u32>,
    /// Physical units corrupted, in the order found.
    pub corrupt: Vec<u32>,
    /// Units of interrupted lower pages that RAIN rebuilds.
    pub repaired_by_rain_units: u64,
}

/// The physical units of the lower page paired with the program unit at `ppn` (any unit of
/// it), if that program unit is an upper page.
pub fn paired_lower_units(g: &Geometry, ppn: u32) -> Option<std::ops::Range<u32>> {
    let within = ppn % g.units_per_block;
    let page = within / g.units_per_pu;
    let lower = crate::nand::paired_lower_page(page)?;
    let first = ppn - within + lower * g.units_per_pu;
    Some(first..first + g.units_per_pu)
}

impl Device {
    /// What a power cut now would take from a drive with `protection` (see the module).
    pub fn cut_losses(&self, protection: PowerLossProtection) -> CutLosses {
        let g = &self.geometry;
        let rain = g.rain_period > 0;
        let mut out = CutLosses::default();
        if protection == PowerLossProtection::Full {
            return out;
        }
        out.lost.extend(self.ftl.buffered_host_ppns());
        for u in self.unfinished_programs() {
            let p = u.program;
            if p.first_ppn == UNMAPPED {
                continue;
            }
            let state = match u.started {
                true => HostDataState::Running,
                false => HostDataState::Unprogrammed,
            };
            if p.kind == ProgramKind::Host && !protection.keeps(state) {
                out.lost.extend(p.first_ppn..p.first_ppn + g.units_per_pu);
            }
            if u.started && protection.interrupts_running_programs() {
                if let Some(lower) = paired_lower_units(g, p.first_ppn) {
                    if rain {
                        out.repaired_by_rain_units += lower.len() as u64;
                    } else {
                        out.corrupt.extend(lower);
                    }
                }
            }
        }
        out.lost.sort_unstable();
        out.lost.dedup();
        out
    }

    /// Cut the power now: returns what the drive's `controller.power_loss_protection` loses,
    /// then powers it on again ([`Device::power_cycle`]); a consumer of the map changes drops
    /// what was lost and rebuilds the FTL from what the NAND holds (`Ftl::restore`).
    pub fn power_cut(&mut self) -> CutLosses {
        let losses = self.cut_losses(self.config.controller.power_loss_protection);
        self.power_cycle();
        losses
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_class_keeps_what_its_hold_up_energy_covers() {
        use HostDataState::*;
        use PowerLossProtection as P;
        assert!(P::Full.keeps(Unprogrammed) && P::Full.keeps(Running));
        assert!(!P::Map.keeps(Unprogrammed) && P::Map.keeps(Running));
        assert!(!P::None.keeps(Unprogrammed) && !P::None.keeps(Running));
        assert!(P::None.interrupts_running_programs());
        assert!(!P::Map.interrupts_running_programs() && !P::Full.interrupts_running_programs());
    }

    #[test]
    fn upper_pages_pair_with_lower_pages_three_before() {
        let pairs: Vec<_> = (0..9).map(crate::nand::paired_lower_page).collect();
        assert_eq!(
            pairs,
            vec![
                None,
                None,
                None,
                Some(0),
                None,
                Some(2),
                None,
                Some(4),
                None
            ]
        );
    }

    #[test]
    fn a_cut_during_writes_loses_buffered_data_only_without_full_protection() {
        let mut cfg = crate::config::DriveConfig::from_toml_str(crate::EXAMPLE_DRIVE_TOML).unwrap();
        let mut dev = Device::new(&cfg, 1).unwrap();
        // 4 KiB writes, queued and not run: every one is in DRAM or a queued program.
        for tag in 0..64u64 {
            let io = crate::device::HostIo {
                kind: crate::device::IoKind::Write,
                offset_bytes: tag * 4096,
                length_bytes: 4096,
                fua: false,
                tag,
                placement: crate::ftl::NO_PLACEMENT,
            };
            let now = dev.now();
            dev.submit(io, now);
        }
        while dev.drain_completions().count() == 0 && dev.step() {}
        let none = dev.cut_losses(PowerLossProtection::None);
        let map = dev.cut_losses(PowerLossProtection::Map);
        let full = dev.cut_losses(PowerLossProtection::Full);
        assert!(!map.lost.is_empty(), "buffered host data is lost with map");
        assert!(none.lost.len() >= map.lost.len());
        assert!(map.lost.iter().all(|u| none.lost.contains(u)));
        assert_eq!(full, CutLosses::default());
        cfg.controller.power_loss_protection = PowerLossProtection::Map;
        let mut dev2 = Device::new(&cfg, 1).unwrap();
        assert_eq!(
            dev2.power_cut(),
            CutLosses::default(),
            "an idle drive loses nothing"
        );
        assert_eq!(dev2.outstanding(), 0);
    }
}
