//! What the drive does outside simulated time: an untimed fill, untimed random writes (to
//! reach steady state quickly), and a secure erase. The FTL decides exactly as in a timed run;
//! only the flash operations are not timed (`NullSink`).

use super::Device;
use crate::ftl::HostWrite;
use crate::time::SimTime;

impl Device {
    /// Write every logical unit in `first..first + count` without timing: the FTL reaches the
    /// state a timed sequential fill reaches, in no simulated time.
    pub fn fill_untimed(&mut self, first_unit: u32, count: u32) {
        assert_eq!(self.outstanding(), 0, "fill with commands outstanding");
        if count as u64 * 2 >= self.geometry.logical_units {
            self.expect_sequential_fill();
        }
        let before = self.ftl.buffered_host_units();
        self.ftl.fill_untimed(first_unit, count);
        self.controller.rewritten(first_unit, first_unit + count);
        // Units of the last, partial PU sit in the write buffer, as after a timed fill.
        let after = self.ftl.buffered_host_units();
        self.controller.buffer.held_changed(before, after);
    }

    /// Most of the drive is about to be written in order (a sequential fill, timed or not):
    /// the map's pages are allocated meanwhile on another thread, instead of one at a time as
    /// the fill first touches them (`mem::populate_in_background`). Changes no result; the
    /// memory is what the fill would take anyway.
    pub fn expect_sequential_fill(&self) {
        self.ftl.populate_map();
    }

    /// Write `writes` logical units drawn uniformly from `first..first + span` without timing:
    /// the FTL state (maps, valid counts, wear) that as many 4 KiB random writes reach, in no
    /// simulated time. Garbage collection decides exactly as in a timed run (its decisions
    /// depend on the writes, not on time); used to reach steady state quickly.
    pub fn random_writes_untimed(&mut self, first: u32, span: u32, writes: u64, seed: u64) {
        assert_eq!(
            self.outstanding(),
            0,
            "untimed writes with commands outstanding"
        );
        assert!(span > 0 && first as u64 + span as u64 <= self.geometry.logical_units);
        let before = self.ftl.buffered_host_units();
        let mut rng = crate::rng::Rng::derive(seed, "untimed-random-writes");
        let mut draw = || first + rng.below(span as u64) as u32;
        // The units are drawn `AHEAD` writes before they are written (the same draws in the
        // same order), so each write's map entry starts loading `AHEAD` writes early and what
        // its overwrite touches (the old copy's block entry: valid count, victim key) `NEAR`
        // writes early, from the map entry loaded by then: the random accesses of many writes
        // overlap instead of each waiting for memory alone (the job look-ahead of
        // `workload::run`, for the untimed path). Both stages go `BATCH` writes at a time, as
        // the job look-ahead does: issued one per write, perf put half the loop's samples
        // right after the map prefetch (waiting for its page walk, one at a time); in batches
        // the walks overlap.
        const AHEAD: u64 = 128;
        const NEAR: u64 = 64;
        const BATCH: u64 = 32;
        const _: () =
            assert!(AHEAD.is_multiple_of(BATCH) && NEAR.is_multiple_of(BATCH) && NEAR < AHEAD);
        let mut coming = [0u32; AHEAD as usize];
        let at = |position: u64| (position % AHEAD) as usize;
        let mut drawn = 0;
        for i in 0..writes {
            if i.is_multiple_of(BATCH) {
                // Draw up to `AHEAD` on, into the slots of the writes done (all of them at
                // first, then the batch just written).
                for position in drawn..(i + AHEAD).min(writes) {
                    coming[at(position)] = draw();
                    self.ftl.prefetch_lookup(coming[at(position)]);
                }
                drawn = (i + AHEAD).min(writes);
                for position in i + NEAR..(i + NEAR + BATCH).min(writes) {
                    self.ftl.prefetch_overwrite(coming[at(position)]);
                }
            }
            self.ftl
                .write_unit(HostWrite::untimed(coming[at(i)]), &mut crate::ftl::NullSink);
        }
        let after = self.ftl.buffered_host_units();
        self.controller.buffer.held_changed(before, after);
    }

    /// NVMe FDP's RUH Update (I/O Management Send) of the handle `pid` names, between runs:
    /// its reclaim unit closes where it is (the partly filled program units programmed,
    /// padded) and the next write through it starts a new one (see `Ftl::ruh_update`). The
    /// programs run before it returns. Why not, when it cannot: no placement, or commands
    /// outstanding.
    pub fn ruh_update(&mut self, pid: u16) -> Result<(), String> {
        if !self.ftl.has_placement() {
            return Err(format!(
                "{}: no [placement] table: RUH Update needs a drive with FDP",
                self.config.name
            ));
        }
        if self.outstanding() > 0 {
            return Err("RUH Update with commands outstanding".into());
        }
        let (c, mut b) = self.parts();
        let (ftl, mut flash) = b.ftl_and_flash(&mut c.processor);
        ftl.ruh_update(pid, &mut flash);
        self.run_until(SimTime(u64::MAX));
        Ok(())
    }

    /// Secure erase (ATA SECURITY ERASE UNIT): on a self-encrypting drive a crypto erase (a
    /// new media key, every unit unmapped, no block erased, `controller.crypto_erase_us`);
    /// on others every block erased and the map empty (untimed).
    pub fn secure_erase(&mut self) {
        assert_eq!(
            self.outstanding(),
            0,
            "secure erase with commands outstanding"
        );
        if self.config.controller.self_encrypting {
            self.crypto_erase().expect("a self-encrypting drive");
            return;
        }
        self.block_erase();
    }

    /// Every block erased and the map empty, whatever the drive (untimed): a factory-fresh
    /// drive.
    pub fn block_erase(&mut self) {
        self.run_until(SimTime(u64::MAX));
        self.ftl.secure_erase();
        self.controller.secure_erased();
    }

    /// A crypto erase of a self-encrypting drive (ATA SANITIZE CRYPTO SCRAMBLE, TCG Opal
    /// revert): what is buffered is programmed, the media key replaced, every unit unmapped;
    /// the drive reads as fresh after `controller.crypto_erase_us`, with no block erased
    /// (see `Ftl::crypto_erase`). Returns how long it took, or why it cannot run.
    pub fn crypto_erase(&mut self) -> Result<crate::time::SimDuration, String> {
        if !self.config.controller.self_encrypting {
            return Err(format!(
                "{}: not a self-encrypting drive (controller.self_encrypting = false); accepted: a drive with always-on encryption",
                self.config.name
            ));
        }
        if self.outstanding() > 0 {
            return Err("crypto erase with commands outstanding".into());
        }
        let now = self.now();
        self.submit(crate::device::HostIo::flush(u64::MAX), now);
        self.run_until(SimTime(u64::MAX));
        self.drain_completions().for_each(drop);
        self.ftl.crypto_erase();
        self.controller.secure_erased();
        let took = crate::time::SimDuration::from_us(self.config.controller.crypto_erase_us);
        // The command takes `took`; the drive's idle timer (background collection) runs from
        // its end, as from any command's.
        let until = self.now() + took;
        self.pass_time_to(until);
        self.controller.idle_since = until;
        Ok(took)
    }
}
