//! The simulation thread: owns the drive and its data, takes requests from every connection,
//! submits them to the model, and writes each reply to its connection when the model
//! completes it (`Pace::Model`: when the wall clock reaches the completion time;
//! `Pace::None`: as soon as the simulation gets there).

use crate::store::{DataStore, WriteData};
use ssdlab_core::device::{Completion, Device, HostIo, IoKind};
use ssdlab_core::session::{Control, Point, Session, Source};
use ssdlab_core::stats::Histogram;
use ssdlab_core::time::{SimTime, NS_PER_S};
use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};

use std::time::{Duration, Instant};

mod clock;
mod io;
mod stats;

pub(crate) use clock::Clock;
use clock::WallClock;
pub use stats::ServeStats;

/// How replies are timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// Reply when the model says the command completes, mapped to wall-clock time.
    Model,
    /// Reply as soon as the simulation has completed the command.
    None,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmd {
    Read,
    Write,
    WriteZeroes,
    Trim,
    Flush,
}

pub(crate) struct Request {
    pub handle: u64,
    pub cmd: Cmd,
    pub offset: u64,
    pub length: u64,
    pub fua: bool,
    /// WRITE payload.
    pub data: Option<Vec<u8>>,
    /// When the request was read off the socket: the model sees it arrive then.
    pub arrived: Instant,
    /// Bytes of the connection's in-flight budget it holds until its reply is written.
    pub cost: u64,
}

/// A reply to write to a connection.
pub(crate) struct Reply {
    pub handle: u64,
    pub error: u32,
    /// READ: the offset and the data.
    pub read: Option<(u64, Vec<u8>)>,
    pub is_read: bool,
    /// Budget the request held (released once the reply is written).
    pub cost: u64,
}

pub(crate) enum Msg {
    Open {
        conn: u64,
        replies: std::sync::Arc<crate::ReplySink>,
    },
    Request {
        conn: u64,
        req: Request,
    },
    /// The client sent DISC or went away: close once its commands are answered.
    Closed {
        conn: u64,
    },
    Stats(Sender<ServeStats>),
    /// Answer what is in flight, then stop.
    Shutdown,
    /// Tests: an internal error in the simulation thread.
    #[cfg(test)]
    Crash,
}

pub(crate) struct PlannedCut {
    after: u64,
    dir: std::path::PathBuf,
    drive: String,
    registry: crate::Registry,
}

struct Inflight {
    conn: u64,
    handle: u64,
    cmd: Cmd,
    offset: u64,
    length: u64,
    write: Option<WriteData>,
    cost: u64,
    fua: bool,
}

struct Conn {
    replies: std::sync::Arc<crate::ReplySink>,
    outstanding: u64,
    closing: bool,
}

pub(crate) struct Engine {
    dev: Device,
    /// The run loop every driver of a device shares (`ssdlab_core::session`), and its recorder:
    /// what the host saw in model time (service times per operation, per-second series).
    session: Session,
    io: Io,
    /// Completions taken outside the loop (after a submission); the buffer is
    /// reused, swapped with the controller's.
    completions: Vec<Completion>,
}

/// Everything of the engine but the drive and the loop: the data, the connections and the
/// commands in flight, pacing and statistics. The session's source: it answers completions.
struct Io {
    store: DataStore,
    pace: Pace,
    inflight: BTreeMap<u64, Inflight>,
    conns: BTreeMap<u64, Conn>,
    next_tag: u64,
    /// Real time, or a test's scripted time.
    clock: Box<dyn Clock>,
    /// Wall-clock origin; the simulated time it maps to is `sim_origin`.
    wall_start: Instant,
    /// The session's measurement origin (`session.meter.rec.start`).
    sim_origin: SimTime,
    stats: ServeStats,
    late: Histogram,
    stopping: bool,
    /// The store failed (a full or failing disk): every later reply is an I/O error and the
    /// server stops; what the store holds is what the drive's protection keeps at a power cut.
    store_failed: bool,
    /// The drive's power-loss protection (what a store failure, like a cut, keeps).
    protection: ssdlab_core::config::PowerLossProtection,
    /// When the engine last took a request or sent a reply (Pace::Model polls for SPIN after).
    last_activity: Instant,
    /// Replies leave this long before the model's completion (see `ServerConfig::transport`).
    transport: Duration,
    /// Wall nanoseconds per simulated nanosecond (see `ServerConfig::time_scale`).
    time_scale: u32,
    /// A planned power cut: after how many commands, and what the rebuild needs.
    power_cut: Option<PlannedCut>,
    /// When the store's PENDING marks were last brought up to date (simulated time).
    pending_checked: SimTime,
    commands_seen: u64,
    /// Requests refused before they reached the engine (by connection readers) and
    /// connections closed over the limit.
    refused_outside: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Pace::None: an advance returns at the first step that completes a command.
    pause_on_completion: bool,
    completed_in_advance: usize,
    /// Tests: each paced reply's (tag, clock's model time when it left, model completion).
    #[cfg(test)]
    paced: std::sync::Arc<std::sync::Mutex<Vec<(u64, SimTime, SimTime)>>>,
}

/// With at most POLL_UP_TO_OUTSTANDING commands outstanding (a low-queue-depth client, which
/// waits on each reply), the engine stops sleeping SPIN before a paced completion and polls,
/// and keeps polling for SPIN after activity for the client's next request. Deeper queues
/// sleep: polling there takes the CPU the connection threads and the client need (measured
/// on 2 vCPUs: QD32 fio IOPS -19% with polling against -6% without). The engine thread's
/// timer slack is 1 us, so a sleep ends within a wake-up of its deadline.
const SPIN: Duration = Duration::from_micros(40);
const POLL_UP_TO_OUTSTANDING: usize = 4;

/// Ask the kernel to end this thread's timed sleeps within 1 us of their deadline (the default
/// timer slack, 50 us, would make every paced reply that late).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(crate) fn fine_timer_slack() {
    // SAFETY: prctl(PR_SET_TIMERSLACK) sets a per-thread scheduling hint; it reads and writes
    // no memory of ours. A failure leaves the default slack and is ignored.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong);
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn fine_timer_slack() {}

/// The wall clock: the emulator's one link to real time (the simulation core never reads it).
#[allow(clippy::disallowed_methods)]
pub(crate) fn wall_now() -> Instant {
    Instant::now()
}

impl Engine {
    pub fn new(
        dev: Device,
        pace: Pace,
        store: DataStore,
        refused_outside: std::sync::Arc<std::sync::atomic::AtomicU64>,
    ) -> Engine {
        Engine::with_clock(dev, pace, store, refused_outside, Box::new(WallClock))
    }

    /// An engine on `clock` (the wall clock, or in tests a scripted one).
    pub fn with_clock(
        mut dev: Device,
        pace: Pace,
        store: DataStore,
        refused_outside: std::sync::Arc<std::sync::atomic::AtomicU64>,
        clock: Box<dyn Clock>,
    ) -> Engine {
        dev.ftl.record_map_changes();
        let started = clock.now();
        let session = Session::new(&dev, dev.now(), NS_PER_S);
        Engine {
            io: Io {
                store,
                pace,
                inflight: BTreeMap::new(),
                conns: BTreeMap::new(),
                next_tag: 1,
                clock,
                wall_start: started,
                sim_origin: session.meter.rec.start,
                stats: ServeStats {
                    pace: match pace {
                        Pace::Model => "model".into(),
                        Pace::None => "none".into(),
                    },
                    ..ServeStats::default()
                },
                late: Histogram::default(),
                stopping: false,
                store_failed: false,
                protection: dev.config.controller.power_loss_protection,
                refused_outside,
                last_activity: started,
                power_cut: None,
                pending_checked: SimTime::ZERO,
                commands_seen: 0,
                transport: Duration::ZERO,
                time_scale: 1,
                pause_on_completion: false,
                completed_in_advance: 0,
                #[cfg(test)]
                paced: Default::default(),
            },
            session,
            dev,
            completions: Vec::new(),
        }
    }

    pub fn plan_power_cut(
        &mut self,
        after: u64,
        dir: std::path::PathBuf,
        drive: String,
        registry: crate::Registry,
    ) {
        self.io.power_cut = Some(PlannedCut {
            after,
            dir,
            drive,
            registry,
        });
    }

    /// Cut the power now: the store loses what the drive's protection does not keep, every
    /// connection drops (its commands in flight are never answered, as at a real cut), and the
    /// drive is rebuilt from the store as at power-on and served again.
    fn cut_power(&mut self, cut: PlannedCut) {
        self.settle();
        let protection = self.dev.config.controller.power_loss_protection;
        let cut_losses = self.dev.cut_losses(protection);
        let (lost, corrupt) = (cut_losses.lost, cut_losses.corrupt);
        let unit = self.dev.geometry.mapping_unit_bytes;
        let Some(disk) = self.io.store.disk() else {
            return;
        };
        match disk.power_cut(&lost, &corrupt) {
            Ok((current, fell_back)) => {
                self.io.stats.power_cut_lost_units += current;
                self.io.stats.power_cut_fell_back_units += fell_back;
                self.io.stats.power_cut_corrupted_units += corrupt.len() as u64;
            }
            Err(e) => return self.io.store_failed(e),
        }
        self.io.stats.power_cuts += 1;
        for o in cut.registry.lock().expect("registry").iter() {
            o.stream.shutdown();
        }
        self.io.conns.clear();
        self.io.inflight.clear();
        // Power on: the old store goes unclosed, as the process that held it would.
        drop(std::mem::replace(&mut self.io.store, DataStore::new(unit)));
        self.dev.power_cycle();
        match crate::disk::mount(&cut.dir, &mut self.dev, &cut.drive, false) {
            Ok((disk, mount)) => {
                eprintln!(
                    "ssdlab serve: power cut after {} commands ({} protection): {} host copies lost ({} fell back to an older copy), {} units corrupted; rebuilt: {} units mapped, modelled mount time {:.1} ms",
                    cut.after,
                    protection.name(),
                    self.io.stats.power_cut_lost_units,
                    self.io.stats.power_cut_fell_back_units,
                    self.io.stats.power_cut_corrupted_units,
                    mount.report.mapped_units,
                    mount.report.mount_ns as f64 / 1e6
                );
                self.io.store = DataStore::on_disk(disk);
            }
            Err(e) => {
                eprintln!("ssdlab serve: power cut: the drive does not come back: {e}");
                self.io.store_failed(std::io::Error::other(e));
                return;
            }
        }
        self.dev.ftl.record_map_changes();
        self.io.wall_start = self.io.clock.now();
        self.session = Session::new(&self.dev, self.dev.now(), NS_PER_S);
        self.io.sim_origin = self.session.meter.rec.start;
    }

    pub fn set_transport(&mut self, transport: Duration) {
        self.io.transport = transport;
    }

    /// Pace::Model: the drive runs `scale` times slower than real time (see
    /// `ServerConfig::time_scale`).
    pub fn set_time_scale(&mut self, scale: u32) {
        self.io.time_scale = scale.max(1);
    }

    pub fn run(mut self, rx: Receiver<Msg>) -> ServeStats {
        fine_timer_slack();
        loop {
            if self.io.stopping && self.io.inflight.is_empty() {
                break;
            }
            let msg = match self.io.pace {
                Pace::Model => {
                    let now = self.io.wall_sim();
                    self.advance_to(now);
                    let wait = match self.dev.next_event_time() {
                        Some(t) => self.io.wall_of(t.ns().saturating_sub(now.ns())),
                        None => Duration::from_millis(50),
                    };
                    // A sleeping thread wakes late (the kernel's timer slack, 50 us by
                    // default, plus the wake-up itself): sleep only until SPIN before the
                    // next completion, then poll; and poll for SPIN after any activity, when
                    // the next request of a low-queue-depth client is due.
                    let low_qd = self.dev.outstanding() <= POLL_UP_TO_OUTSTANDING;
                    let since = self
                        .io
                        .clock
                        .now()
                        .saturating_duration_since(self.io.last_activity);
                    let poll = low_qd && (wait <= SPIN || since < SPIN);
                    let timeout = match (poll, low_qd) {
                        (true, _) => Duration::ZERO,
                        (false, true) => wait.saturating_sub(SPIN),
                        (false, false) => wait,
                    };
                    match self
                        .io
                        .clock
                        .recv_timeout(&rx, timeout.min(Duration::from_millis(50)))
                    {
                        Ok(m) => m,
                        Err(RecvTimeoutError::Timeout) => {
                            if poll {
                                std::hint::spin_loop();
                            }
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                Pace::None => {
                    // With commands outstanding, a look at the queue between model steps;
                    // else a wait for the next request.
                    let busy = self.dev.outstanding() > 0;
                    let timeout = if busy {
                        Duration::ZERO
                    } else {
                        Duration::from_millis(50)
                    };
                    match self.io.clock.recv_timeout(&rx, timeout) {
                        Ok(m) => m,
                        Err(RecvTimeoutError::Timeout) => {
                            if busy {
                                self.step_to_completion();
                            }
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
            };
            self.handle(msg);
        }
        // Each connection closes once its reader has let go of it too.
        self.io.conns.clear();
        if !self.io.store_failed {
            #[cfg(test)]
            if let Some(disk) = self.io.store.disk() {
                let d = disk.disagreements(&self.dev.ftl);
                assert!(d.is_empty(), "store and map disagree before close: {d:#?}");
            }
            if let Some(disk) = self.io.store.disk() {
                if let Err(e) = disk.close() {
                    eprintln!("ssdlab serve: closing the store: {e}");
                    self.io.stats.store_error = e;
                }
            }
        }
        self.snapshot()
    }

    fn handle(&mut self, msg: Msg) {
        if matches!(msg, Msg::Request { .. }) {
            self.io.last_activity = self.io.clock.now();
        }
        match msg {
            Msg::Open { conn, replies } => {
                self.io.stats.connections += 1;
                self.io.conns.insert(
                    conn,
                    Conn {
                        replies,
                        outstanding: 0,
                        closing: false,
                    },
                );
            }
            Msg::Request { conn, req } => self.request(conn, req),
            Msg::Closed { conn } => {
                if let Some(c) = self.io.conns.get_mut(&conn) {
                    c.closing = true;
                    if c.outstanding == 0 {
                        self.io.conns.remove(&conn);
                    }
                }
            }
            Msg::Stats(to) => {
                let _ = to.send(self.snapshot());
            }
            Msg::Shutdown => self.io.stopping = true,
            #[cfg(test)]
            Msg::Crash => panic!("a simulated internal error (test)"),
        }
    }

    fn request(&mut self, conn: u64, req: Request) {
        if !self.io.conns.contains_key(&conn) {
            return; // a connection a power cut dropped: its requests die with it
        }
        let is_read = req.cmd == Cmd::Read;
        let reply_now = |engine: &mut Engine, error: u32, data: Option<Vec<u8>>| {
            if error != 0 {
                engine.io.stats.errors += 1;
            }
            if let Some(c) = engine.io.conns.get(&conn) {
                c.replies.send(Reply {
                    handle: req.handle,
                    error,
                    read: data.map(|d| (req.offset, d)),
                    is_read,
                    cost: req.cost,
                });
            }
        };
        if self.io.stopping {
            reply_now(self, crate::proto::ESHUTDOWN, None);
            return;
        }
        if req.length == 0 && req.cmd != Cmd::Flush {
            reply_now(self, 0, is_read.then(Vec::new));
            return;
        }
        let (kind, write) = match req.cmd {
            Cmd::Read => (IoKind::Read, None),
            Cmd::Write => (IoKind::Write, Some(req.data)),
            Cmd::WriteZeroes => (IoKind::Write, Some(None)),
            Cmd::Trim => (IoKind::Trim, None),
            Cmd::Flush => (IoKind::Flush, None),
        };
        let tag = self.io.next_tag;
        self.io.next_tag += 1;
        self.io.inflight.insert(
            tag,
            Inflight {
                conn,
                handle: req.handle,
                cmd: req.cmd,
                offset: req.offset,
                length: req.length,
                write: write.map(|bytes| WriteData {
                    offset: req.offset,
                    length: req.length,
                    bytes,
                }),
                cost: req.cost,
                fua: req.fua,
            },
        );
        if let Some(c) = self.io.conns.get_mut(&conn) {
            c.outstanding += 1;
        }
        let at = match self.io.pace {
            Pace::Model => {
                let t = self.io.sim_of(req.arrived).max(self.dev.now());
                // Up to now (an idle drive's background collection included: the session's
                // loop takes its steps and applies their map changes).
                self.advance_to(t);
                t.max(self.dev.now())
            }
            Pace::None => self.dev.now(),
        };
        let (offset, length) = match kind {
            IoKind::Flush => (0, 0),
            _ => (req.offset, req.length),
        };
        // The intervals before it close first: what the command does lands in its own.
        self.session.meter.before_event(&self.dev, at);
        self.dev.submit(
            HostIo {
                kind,
                offset_bytes: offset,
                length_bytes: length,
                fua: req.fua,
                tag,
                placement: ssdlab_core::ftl::NO_PLACEMENT,
            },
            at,
        );
        self.settle();
        self.io.commands_seen += 1;
        if self
            .io
            .power_cut
            .as_ref()
            .is_some_and(|c| c.after == self.io.commands_seen)
        {
            let cut = self.io.power_cut.take().expect("planned");
            self.cut_power(cut);
        }
    }

    /// Process every model event up to `t`, replying to what completes (the session's loop).
    fn advance_to(&mut self, t: SimTime) {
        self.session.advance(&mut self.dev, &mut self.io, t);
    }

    /// Pace::None: run the model until at least one command completes.
    fn step_to_completion(&mut self) {
        self.io.pause_on_completion = true;
        self.io.completed_in_advance = 0;
        self.session
            .advance(&mut self.dev, &mut self.io, SimTime(u64::MAX));
        self.io.pause_on_completion = false;
    }

    /// Outside the loop (after a submission): apply the FTL's map changes
    /// to the data, then reply to what completed. Returns how many completed.
    fn settle(&mut self) -> usize {
        self.io.stepped(&mut self.dev);
        let mut completions = std::mem::take(&mut self.completions);
        self.dev.take_completions(&mut completions);
        for c in &completions {
            self.session.meter.rec.record(c, c.completed);
            self.io.completed(c, &self.dev);
        }
        let n = completions.len();
        completions.clear();
        self.completions = completions;
        n
    }
}

#[cfg(test)]
mod tests;
