//! The engine's side of everything but the model: answering a completion (reading the store
//! through the map, EIO for what the drive cannot correct), the store's PENDING marks, a
//! failed store, the wall clock's simulated time; and the session's source those make.

use super::*;

impl Io {
    /// Clear the store's PENDING mark of host units the model has programmed since (at most
    /// every 50 us of simulated time, or now with `force`: before a FLUSH or FUA reply, so
    /// that what they made durable survives a kill of the emulator).
    pub(super) fn settle_pending(&mut self, dev: &Device, force: bool) {
        let now = dev.now();
        if !force && now.ns() < self.pending_checked.ns() + 50_000 {
            return;
        }
        if !self.store.disk().is_some_and(|d| d.has_pending()) {
            return;
        }
        self.pending_checked = now;
        if let Err(e) = self.store.settle_programmed(dev) {
            self.store_failed(e);
        }
    }

    /// The store could not take or give data: say so once, answer everything with EIO from
    /// now on and stop.
    pub(super) fn store_failed(&mut self, e: std::io::Error) {
        if !self.store_failed {
            use ssdlab_core::config::PowerLossProtection as P;
            let kept = match self.protection {
                P::Full => "every write acknowledged before this is kept (full power-loss protection)".to_string(),
                p => format!(
                    "writes made durable by a completed FLUSH or FUA before this are kept; acknowledged writes the drive had not yet programmed are lost at the next start, as at a power cut of this drive ({} power-loss protection)",
                    p.name()
                ),
            };
            let msg = format!("the data store failed: {e}; stopping: {kept}");
            eprintln!("ssdlab serve: {msg}");
            self.stats.store_error = msg;
        }
        self.store_failed = true;
        self.stopping = true;
    }

    /// Where the model is due now: the wall clock's simulated time, ahead by the transport
    /// compensation (replies leave that much before their completion time).
    pub(super) fn wall_sim(&self) -> SimTime {
        self.sim_of(self.clock.now() + self.transport)
    }

    /// The simulated time of wall instant `at` (a wall nanosecond is 1 / `time_scale` of a
    /// simulated one).
    pub(super) fn sim_of(&self, at: Instant) -> SimTime {
        let wall = at.saturating_duration_since(self.wall_start).as_nanos() as u64;
        SimTime(self.sim_origin.ns() + wall / self.time_scale as u64)
    }

    /// The wall time `sim_ns` simulated nanoseconds take.
    pub(super) fn wall_of(&self, sim_ns: u64) -> Duration {
        Duration::from_nanos(sim_ns.saturating_mul(self.time_scale as u64))
    }

    /// Answer command `tag`; `failed`: the model could not read a unit of it (a NAND fault).
    pub(super) fn reply(&mut self, dev: &Device, tag: u64, failed: bool) {
        let f = self
            .inflight
            .remove(&tag)
            .expect("completion of a known command");
        let mut read = None;
        let mut uncorrectable = failed;
        match f.cmd {
            Cmd::Read => {
                let mut data = vec![0u8; f.length as usize];
                let ftl = &dev.ftl;
                match self.store.read(f.offset, &mut data, |lba| ftl.lookup(lba)) {
                    Ok(()) => {}
                    // A unit the drive cannot correct: this command fails, nothing else.
                    Err(e) if e.kind() == std::io::ErrorKind::InvalidData => uncorrectable = true,
                    Err(e) => self.store_failed(e),
                }
                self.stats.uncorrectable_reads += uncorrectable as u64;
                self.stats.reads += 1;
                self.stats.bytes_read += f.length;
                read = Some((f.offset, data));
            }
            Cmd::Write => {
                self.stats.writes += 1;
                self.stats.bytes_written += f.length;
                if f.fua {
                    self.settle_pending(dev, true);
                }
            }
            Cmd::WriteZeroes => self.stats.write_zeroes += 1,
            Cmd::Trim => self.stats.trims += 1,
            Cmd::Flush => {
                self.stats.flushes += 1;
                self.settle_pending(dev, true);
                // What the drive holds reaches the host's disk too.
                if let Some(Err(e)) = self.store.disk().map(|d| d.sync()) {
                    self.store_failed(e);
                }
            }
        }
        let error = if self.store_failed || uncorrectable {
            self.stats.errors += 1;
            read = None;
            crate::proto::EIO
        } else {
            0
        };
        let Some(c) = self.conns.get_mut(&f.conn) else {
            return;
        };
        c.replies.send(Reply {
            handle: f.handle,
            error,
            read,
            is_read: f.cmd == Cmd::Read,
            cost: f.cost,
        });
        c.outstanding -= 1;
        if c.closing && c.outstanding == 0 {
            self.conns.remove(&f.conn);
        }
    }
}

/// The engine's side of the session: requests arrive from the sockets (the engine submits
/// them), so the loop only steps the model; after each step the store takes the FTL's map
/// changes, and each completion is answered.
impl Source for Io {
    fn next_submission(&mut self, _now: SimTime) -> Option<SimTime> {
        None
    }

    fn submit(&mut self, _dev: &mut Device, _at: SimTime) {
        unreachable!("the engine submits requests as they arrive")
    }

    fn outstanding(&self) -> u64 {
        self.inflight.len() as u64
    }

    /// Apply the FTL's map changes to the data, and bring the PENDING marks up to date.
    fn stepped(&mut self, dev: &mut Device) {
        let inflight = &self.inflight;
        let applied = self
            .store
            .apply_from(dev, |tag| inflight.get(&tag).and_then(|f| f.write.as_ref()));
        if let Err(e) = applied {
            self.store_failed(e);
        }
        self.settle_pending(dev, false);
    }

    /// Answer the command (Pace::Model: how late behind the model the answer leaves).
    fn completed(&mut self, c: &Completion, dev: &Device) -> bool {
        if self.pace == Pace::Model {
            let wall = self.wall_sim();
            self.last_activity = self.clock.now();
            self.late.record(wall.ns().saturating_sub(c.completed.ns()));
            #[cfg(test)]
            self.paced
                .lock()
                .expect("paced")
                .push((c.io.tag, wall, c.completed));
        }
        self.reply(dev, c.io.tag, c.failed);
        self.completed_in_advance += 1;
        true
    }

    /// No end of its own (requests come from the sockets): idle until the engine submits
    /// more; Pace::None pauses an advance at the first step that completes a command.
    fn control(&mut self, point: Point, _dev: &mut Device) -> Control {
        match point {
            Point::Idle | Point::AtRest => Control::Pause,
            Point::AfterStep if self.pause_on_completion && self.completed_in_advance > 0 => {
                Control::Pause
            }
            _ => Control::Continue,
        }
    }
}
