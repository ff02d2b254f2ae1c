//! The controller's NAND read path: a host read (or a write's read-modify-write) as one NAND
//! read per run of units in a program unit, only the codewords a partial read needs, the
//! read faults' retries and RAIN rebuilds.

use super::{Backend, Controller};
use crate::device::scheduler::HostRead;
use crate::device::{Event, IoKind};
use crate::faults::ExtraReads;
use crate::ftl::UNMAPPED;

impl Controller {
    /// Read logical units `first..end` of a host read; the data goes to the host when the
    /// last NAND read is done (`read_ready`).
    pub(super) fn read_units(&mut self, slot: u32, first: u32, end: u32, b: &mut Backend) {
        b.sched.begin_batch(slot, b.kernel.now());
        self.enqueue_reads(slot, first, end, b);
        if let Some(ready) = b.sched.end_batch(slot) {
            if ready <= b.kernel.now() {
                self.read_ready(slot, b);
            } else {
                b.kernel.schedule(ready, Event::ReadReady(slot));
            }
        }
    }

    /// Queue one NAND read per run of units in the same PU; nothing for units in the buffer
    /// or never written.
    pub(super) fn enqueue_reads(&mut self, slot: u32, first: u32, end: u32, b: &mut Backend) {
        let mut run_first = UNMAPPED;
        let mut run_last = UNMAPPED;
        let mut run_lba = 0;
        for lba in first..end {
            let ppn = b.ftl.lookup(lba);
            if ppn == UNMAPPED {
                continue;
            }
            debug_assert_eq!(
                b.ftl.reverse(ppn),
                lba,
                "OOB LBA disagrees with the map on read"
            );
            if run_first != UNMAPPED
                && ppn == run_last + 1
                && b.ftl.pu_of(ppn) == b.ftl.pu_of(run_first)
            {
                run_last = ppn;
                continue;
            }
            self.enqueue_read_run(slot, run_first, run_last, run_lba, b);
            run_first = ppn;
            run_last = ppn;
            run_lba = lba;
        }
        self.enqueue_read_run(slot, run_first, run_last, run_lba, b);
    }

    /// One NAND read of units `first_ppn..=last_ppn` (logical units from `first_lba` on).
    fn enqueue_read_run(
        &mut self,
        slot: u32,
        first_ppn: u32,
        last_ppn: u32,
        first_lba: u32,
        b: &mut Backend,
    ) {
        if first_ppn == UNMAPPED || b.ftl.is_buffered(first_ppn) {
            return;
        }
        let die = b.ftl.die_of(first_ppn);
        let planes = b.ftl.planes_spanned(first_ppn, last_ppn);
        let units = last_ppn - first_ppn + 1;
        let s = &self.slots[slot as usize];
        let io = s.io;
        let host_read = io.kind == IoKind::Read;
        let unit = self.shape.unit.get();
        let mut bytes = units as u64 * unit;
        if host_read && self.shape.read_sector > 0 {
            // Only the codewords holding the sectors asked for cross the bus. The run's bytes
            // in the namespace, from its units' place in the command: on a zoned namespace a
            // unit's number is the FTL's (zones of capacity below their size), not offset / unit.
            debug_assert!(first_lba >= s.next_unit);
            let at = io.offset_bytes / unit * unit + (first_lba - s.next_unit) as u64 * unit;
            let run = (at, at + units as u64 * unit);
            let (from, to) = (
                io.offset_bytes.max(run.0),
                (io.offset_bytes + io.length_bytes).min(run.1),
            );
            let sector = self.shape.read_sector;
            bytes = (to.div_ceil(sector) - from / sector) * sector;
        }
        let read = HostRead {
            batch: slot,
            die,
            planes,
            bytes,
            types: b.sched.nand.page_types.of_run(first_ppn, last_ppn),
        };
        let extra = match self.faults.as_mut() {
            Some(f) if host_read => f.draw(die, first_lba, units, self.shape.rain_period),
            _ => ExtraReads::default(),
        };
        if extra.failed {
            let s = &mut self.slots[slot as usize];
            s.failed = true;
            s.status = crate::zones::Status::UnrecoveredReadError;
        }
        if !extra.dead_die {
            for _ in 0..1 + extra.retries {
                b.sched
                    .enqueue_host_read(b.kernel, &mut self.processor, read);
            }
        }
        if extra.stripe_reads > 0 {
            self.enqueue_stripe_reads(slot, die, extra.stripe_reads, read.types, b);
        }
    }

    /// A RAIN rebuild reads every other member of the stripe, whole: parity is striped across
    /// dies, so the members are on the dies after this one in turn (a failed die skipped),
    /// read in parallel across dies (their pages of the types of the page they rebuild).
    fn enqueue_stripe_reads(
        &mut self,
        slot: u32,
        die: u32,
        reads: u32,
        types: u8,
        b: &mut Backend,
    ) {
        let shape = self.shape;
        let dead = b.ftl.failed_die();
        let mut members = (1..shape.dies)
            .map(|k| (die + k) % shape.dies)
            .filter(|&d| Some(d) != dead)
            .cycle();
        for _ in 0..reads {
            let member = members
                .next()
                .expect("a stripe is rebuilt only with live members");
            let read = HostRead {
                batch: slot,
                die: member,
                planes: shape.planes_per_die,
                bytes: shape.units_per_pu as u64 * shape.unit.get(),
                types,
            };
            b.sched
                .enqueue_host_read(b.kernel, &mut self.processor, read);
        }
    }
}
