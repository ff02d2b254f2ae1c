//! The engine driven in one thread with a seeded interleaving of requests and model
//! steps (the threaded server's interleaving depends on the machine's timing).
use super::*;
use ssdlab_core::config::DriveConfig;
use ssdlab_core::rng::Rng;
use std::sync::mpsc::channel;

struct Rig {
    engine: Engine,
    replies: Receiver<crate::connection::Outgoing>,
}

fn example() -> DriveConfig {
    DriveConfig::from_toml_str(ssdlab_core::EXAMPLE_DRIVE_TOML).unwrap()
}

fn rig(dir: &std::path::Path, fill: bool) -> Rig {
    rig_with(dir, &example(), fill)
}

fn rig_with(dir: &std::path::Path, cfg: &DriveConfig, fill: bool) -> Rig {
    let mut dev = Device::new(cfg, 3).unwrap();
    if fill {
        let units = dev.geometry.logical_units as u32;
        dev.fill_untimed(0, units);
    }
    let (disk, _) = crate::disk::mount(dir, &mut dev, "example-small", fill).unwrap();
    let store = DataStore::on_disk(disk);
    let mut engine = Engine::new(dev, Pace::None, store, Default::default());
    let (tx, replies) = channel();
    engine.handle(Msg::Open {
        conn: 1,
        replies: std::sync::Arc::new(crate::ReplySink { tx, direct: None }),
    });
    Rig { engine, replies }
}

impl Rig {
    fn send(&mut self, handle: u64, cmd: Cmd, offset: u64, length: u64, data: Option<Vec<u8>>) {
        let req = Request {
            handle,
            cmd,
            offset,
            length,
            fua: false,
            data,
            arrived: wall_now(),
            cost: 0,
        };
        self.engine.handle(Msg::Request { conn: 1, req });
    }

    fn reply(&self) -> Option<Reply> {
        match self.replies.try_recv().ok()? {
            crate::connection::Outgoing::Reply(r) => Some(r),
            crate::connection::Outgoing::Rest(..) => {
                unreachable!("no direct replies without a socket")
            }
        }
    }

    /// A clean stop, as `run` ends.
    fn stop(self) {
        let (tx, rx) = channel();
        tx.send(Msg::Shutdown).unwrap();
        drop(tx);
        let stats = self.engine.run(rx);
        assert_eq!(stats.store_error, "");
    }
}

/// Random unaligned writes, zeroes, trims and reads, up to 8 non-overlapping in flight,
/// with model steps between arrivals chosen by `rng`; checks every read.
fn exercise(r: &mut Rig, mirror: &mut [u8], ops: usize, rng: &mut Rng) {
    let span = mirror.len() as u64;
    let mut handle = 0u64;
    let mut i = 0;
    while i < ops {
        let mut batch: Vec<(u64, u64, u64)> = Vec::new();
        let mut reads: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        while batch.len() < 8 && i < ops {
            i += 1;
            let len = match rng.below(4) {
                0 => 1 + rng.below(9000),
                _ => 4096 * (1 + rng.below(8)),
            };
            let off = rng.below(span - len);
            if batch.iter().any(|&(_, o, l)| off < o + l && o < off + len) {
                continue;
            }
            handle += 1;
            let range = off as usize..(off + len) as usize;
            match rng.below(20) {
                0 => {
                    let first = off.div_ceil(4096) * 4096;
                    let end = (off + len) / 4096 * 4096;
                    if end > first {
                        mirror[first as usize..end as usize].fill(0);
                    }
                    r.send(handle, Cmd::Trim, off, len, None);
                }
                1 => {
                    mirror[range].fill(0);
                    r.send(handle, Cmd::WriteZeroes, off, len, None);
                }
                2..=9 => {
                    reads.insert(handle, (off, len));
                    r.send(handle, Cmd::Read, off, len, None);
                }
                _ => {
                    let data: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
                    mirror[range].copy_from_slice(&data);
                    r.send(handle, Cmd::Write, off, len, Some(data));
                }
            }
            batch.push((handle, off, len));
            for _ in 0..rng.below(3) {
                r.engine.step_to_completion();
            }
        }
        let mut answered = 0;
        let mut done: Vec<u64> = Vec::new();
        while answered < batch.len() {
            while let Some(rep) = r.reply() {
                answered += 1;
                if let Some(&(_, off, len)) = batch.iter().find(|b| b.0 == rep.handle) {
                    let first = off / 4096 * 4096;
                    let end = (off + len).div_ceil(4096) * 4096;
                    let mut buf = vec![0u8; (end - first) as usize];
                    let ftl = &r.engine.dev.ftl;
                    r.engine
                        .io
                        .store
                        .read(first, &mut buf, |l| ftl.lookup(l))
                        .unwrap();
                    let want = &mirror[first as usize..end as usize];
                    let busy = |b: u64| {
                        batch.iter().any(|&(h, o, l)| {
                            h != rep.handle && !done.contains(&h) && b >= o && b < o + l
                        })
                    };
                    let wrong = buf
                        .iter()
                        .zip(want)
                        .enumerate()
                        .position(|(i, (a, b))| a != b && !busy(first + i as u64));
                    done.push(rep.handle);
                    if let Some(at) = wrong {
                        panic!(
                            "after command {}: byte {} wrong",
                            rep.handle,
                            first + at as u64
                        );
                    }
                }
                assert_eq!(rep.error, 0);
                if let Some(&(off, len)) = reads.get(&rep.handle) {
                    let (_, data) = rep.read.expect("read data");
                    let want = &mirror[off as usize..(off + len) as usize];
                    if data != want {
                        let at = data.iter().zip(want).position(|(a, b)| a != b).unwrap();
                        panic!("read {off}+{len} differs at byte {}", off + at as u64);
                    }
                }
            }
            if answered < batch.len() {
                r.engine.step_to_completion();
            }
        }
    }
}

fn read_back(r: &mut Rig, mirror: &[u8]) {
    let mib = 1u64 << 20;
    for m in 0..mirror.len() as u64 / mib {
        r.send(m, Cmd::Read, m * mib, mib, None);
        let rep = loop {
            if let Some(rep) = r.reply() {
                break rep;
            }
            r.engine.step_to_completion();
        };
        let (_, data) = rep.read.expect("read data");
        let want = &mirror[(m * mib) as usize..((m + 1) * mib) as usize];
        if data != want {
            let at = data.iter().zip(want).position(|(a, b)| a != b).unwrap();
            panic!("byte {} differs", m * mib + at as u64);
        }
    }
}

/// Restarts through garbage collection, every byte checked after each command and each
/// restart. Seed 145 caught a partial write whose old copy's block was erased by the
/// collection that write triggered (now journalled in two parts, [`ssdlab_core::ftl::HELD`]).
/// `SSDLAB_RESTART_SEEDS=N` runs seeds 0..N instead (150 take ~3 minutes).
#[test]
fn a_store_restarted_cleanly_reads_back_under_any_interleaving() {
    let seeds: Vec<u64> = match std::env::var("SSDLAB_RESTART_SEEDS") {
        Ok(n) => (0..n.parse().expect("a number of seeds")).collect(),
        Err(_) => vec![145, 0],
    };
    for seed in seeds {
        let dir = std::env::temp_dir().join(format!(
            "ssdlab-engine-restart-{}-{seed}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let mut rng = Rng::new(1000 + seed);
        let mut mirror = vec![0u8; 32 << 20];
        let mut r = rig(&dir, true);
        exercise(&mut r, &mut mirror, 8_000, &mut rng);
        r.stop();
        for _ in 0..3 {
            let mut r = rig(&dir, false);
            read_back(&mut r, &mirror);
            exercise(&mut r, &mut mirror, 4_000, &mut rng);
            read_back(&mut r, &mirror);
            r.stop();
        }
        let mut r = rig(&dir, false);
        read_back(&mut r, &mirror);
        r.stop();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Blocks retired after program and erase failures stay out of service after a restart
/// (the store keeps them with their erase counts), and no data is lost on the way.
#[test]
fn grown_bad_blocks_stay_retired_across_a_restart() {
    let dir = std::env::temp_dir().join(format!("ssdlab-engine-bad-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut faulty = example();
    faulty.faults =
        ssdlab_core::faults::FaultConfig::parse("program_fail=0.005,erase_fail=0.05,seed=3")
            .unwrap();
    let mut rng = Rng::new(77);
    let mut mirror = vec![0u8; 32 << 20];
    let mut r = rig_with(&dir, &faulty, true);
    exercise(&mut r, &mut mirror, 8_000, &mut rng);
    let retired = r.engine.dev.ftl.retired_blocks();
    let f = r.engine.dev.fault_counters();
    assert!(
        retired > 0 && f.program_failures > 0 && f.erase_failures > 0,
        "{f:?}"
    );
    r.stop();
    let mut r = rig(&dir, false);
    assert_eq!(r.engine.dev.ftl.retired_blocks(), retired);
    read_back(&mut r, &mirror);
    exercise(&mut r, &mut mirror, 2_000, &mut rng);
    read_back(&mut r, &mirror);
    assert_eq!(r.engine.dev.ftl.retired_blocks(), retired);
    r.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A drive without power-loss protection holds a victim's erase until the host data that
/// superseded copies in it is programmed (`ssdlab_core::ftl::hold`); the store must learn that
/// data is programmed (its PENDING marks cleared) before it erases the block, or a kill between
/// the two leaves the unit with neither copy (found by the SIGKILL loop in test_serve.py on
/// CI's machine: a flushed unit read back as zeros). Every erase in a test build checks it
/// (`DiskUnits::no_pending_falls_back_into`); the store fails, and says so, when it does not hold.
#[test]
fn no_block_is_erased_while_a_pending_unit_falls_back_into_it() {
    let dir = std::env::temp_dir().join(format!("ssdlab-engine-hold-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cfg = example();
    cfg.controller.power_loss_protection = ssdlab_core::config::PowerLossProtection::None;
    let mut rng = Rng::new(5);
    let mut mirror = vec![0u8; 32 << 20];
    let mut r = rig_with(&dir, &cfg, true);
    exercise(&mut r, &mut mirror, 8_000, &mut rng);
    let held = r.engine.dev.ftl.counters.gc_erases_held;
    assert!(
        held > 0,
        "no erase was held: the test does not reach the hold"
    );
    assert_eq!(r.engine.io.stats.store_error, "");
    r.stop();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Pace::Model on a scripted clock (`clock::ScriptedClock`), the drive `scale` times slower
/// than real time: QD1 reads arriving every `scale` milliseconds, then a burst of 64 writes at
/// once. Returns each paced reply's (tag, the clock's model time when it left, the model's
/// completion) and the statistics.
fn paced_run(scale: u32) -> (Vec<(u64, SimTime, SimTime)>, ServeStats) {
    use super::clock::ScriptedClock;
    let mut dev = Device::new(&example(), 3).unwrap();
    let units = dev.geometry.logical_units as u32;
    dev.fill_untimed(0, units);
    let unit = dev.geometry.mapping_unit_bytes as u64;
    let origin = wall_now();
    let mut clock = ScriptedClock::new(origin);
    let (tx, replies) = channel();
    let sink = std::sync::Arc::new(crate::ReplySink { tx, direct: None });
    clock.at(
        Duration::ZERO,
        Msg::Open {
            conn: 1,
            replies: sink,
        },
    );
    let request = |handle: u64, at: Duration, cmd: Cmd, data: Option<Vec<u8>>| Msg::Request {
        conn: 1,
        req: Request {
            handle,
            cmd,
            offset: (handle * 7919 % units as u64) * unit,
            length: unit,
            fua: false,
            data,
            arrived: origin + at,
            cost: 0,
        },
    };
    let reads = 2_000u64;
    let ms = Duration::from_millis(scale as u64);
    for h in 0..reads {
        let at = ms * h as u32;
        clock.at(at, request(h, at, Cmd::Read, None));
    }
    let burst = ms * 2_100;
    for h in reads..reads + 64 {
        clock.at(
            burst,
            request(h, burst, Cmd::Write, Some(vec![h as u8; unit as usize])),
        );
    }
    clock.at(ms * 2_500, Msg::Shutdown);
    let mut engine = Engine::with_clock(
        dev,
        Pace::Model,
        DataStore::new(unit as u32),
        Default::default(),
        Box::new(clock),
    );
    engine.set_time_scale(scale);
    let paced = engine.io.paced.clone();
    let (_keep, rx) = channel::<Msg>();
    let stats = engine.run(rx);
    let answered = std::iter::from_fn(|| replies.try_recv().ok()).count();
    assert_eq!(answered as u64, reads + 64);
    assert_eq!((stats.reads, stats.writes), (reads, 64));
    let paced = paced.lock().unwrap().clone();
    assert_eq!(paced.len() as u64, reads + 64);
    (paced, stats)
}

/// Every reply leaves when the model completes its command: never before, and within one
/// polling turn after (the engine sleeps until `SPIN` before a completion at low queue depth,
/// then polls; deeper, it sleeps to the completion). Two and a half seconds of pacing, no
/// sleeping.
#[test]
fn paced_replies_leave_at_the_models_completion_time() {
    let (paced, stats) = paced_run(1);
    let poll = super::clock::ScriptedClock::POLL.as_nanos() as u64;
    for &(tag, left, completed) in paced.iter() {
        assert!(
            left >= completed,
            "command {tag} answered {} ns before its completion",
            completed.ns() - left.ns()
        );
        assert!(
            left.ns() - completed.ns() <= poll,
            "command {tag} answered {} ns late",
            left.ns() - completed.ns()
        );
    }
    // The writes of the burst complete one after another, not at once: each answered then.
    let reads = 2_000;
    let writes: Vec<SimTime> = paced.iter().filter(|p| p.0 >= reads).map(|p| p.2).collect();
    assert!(
        writes.last().unwrap().ns() - writes[0].ns() > 10_000,
        "{writes:?}"
    );
    assert!((2.5..2.6).contains(&stats.wall_s), "{}", stats.wall_s);
    // The model's clock stands at its last event (the burst's end), not past the wall's.
    let last = paced.iter().map(|p| p.2).max().unwrap();
    assert!(stats.simulated_s >= last.seconds_f64() - 1e-9 && stats.simulated_s <= stats.wall_s);
    assert!(
        stats.late_max_us * 1e3 <= poll as f64,
        "{}",
        stats.late_max_us
    );
}

/// A drive ten times slower than real time (`ServerConfig::time_scale`), its requests arriving
/// ten times further apart on the wall: the model sees exactly the run at real time (the same
/// completion of every command), and each reply leaves at ten times its model time.
#[test]
fn a_drive_served_ten_times_slower_runs_the_same_model_ten_times_longer() {
    let (one, _) = paced_run(1);
    let (ten, stats) = paced_run(10);
    let completions = |p: &[(u64, SimTime, SimTime)]| {
        let mut c: Vec<(u64, SimTime)> = p.iter().map(|&(t, _, c)| (t, c)).collect();
        c.sort();
        c
    };
    assert_eq!(completions(&one), completions(&ten));
    for &(tag, left, completed) in ten.iter() {
        assert!(left >= completed, "command {tag} answered early");
        // One polling turn of the wall clock is a tenth as much of the model's time.
        assert!(left.ns() - completed.ns() <= 10, "command {tag} late");
    }
    assert!((25.0..25.1).contains(&stats.wall_s), "{}", stats.wall_s);
    assert!(stats.simulated_s <= 2.6, "{}", stats.simulated_s);
}
