//! The threads of each connection: the accept loop (limits, refusals), the reader (handshake,
//! then requests to the engine within the connection's in-flight budget) and the reply
//! writer (replies in any order, large reads written straight from the engine's buffer).

use super::*;

/// Log lines about refused connections: at most one per this interval.
pub(crate) const ACCEPT_LOG_EVERY: Duration = Duration::from_secs(10);

/// A peer whose handshakes were closed this many times within [`PENALTY_WINDOW`] (it keeps
/// opening sockets that say nothing) has its new connections closed at once, taking no one's
/// place, until the window passes (issue 73, item 17; `ServerConfig::penalty_evictions`).
pub(crate) const PENALTY_EVICTIONS: u32 = 4;
pub(crate) const PENALTY_WINDOW: Duration = Duration::from_secs(1);

/// Handshakes closed to make room, by peer: (start of the window, closings in it).
#[derive(Default)]
pub(crate) struct Penalties {
    by_peer: std::collections::BTreeMap<Peer, (std::time::Instant, u32)>,
}

impl Penalties {
    fn closed(&mut self, peer: Peer, now: std::time::Instant) {
        if self.by_peer.len() > 4096 {
            self.by_peer
                .retain(|_, (start, _)| now.duration_since(*start) <= PENALTY_WINDOW);
        }
        let e = self.by_peer.entry(peer).or_insert((now, 0));
        if now.duration_since(e.0) > PENALTY_WINDOW {
            *e = (now, 0);
        }
        e.1 += 1;
    }

    fn penalised(&self, peer: Peer, now: std::time::Instant, after: u32) -> bool {
        after > 0
            && self.by_peer.get(&peer).is_some_and(|&(start, n)| {
                n >= after && now.duration_since(start) <= PENALTY_WINDOW
            })
    }
}

pub(crate) fn accept_loop(
    listener: Listener,
    stop: Arc<AtomicBool>,
    shared: Arc<Shared>,
) -> Vec<JoinHandle<()>> {
    let next_conn = AtomicU64::new(1);
    let mut threads = Vec::new();
    let log = shared.config.log;
    let mut last_log: Option<std::time::Instant> = None;
    let mut may_log = move || {
        let now = engine::wall_now();
        let due = last_log.is_none_or(|t| now.duration_since(t) >= ACCEPT_LOG_EVERY);
        if due {
            last_log = Some(now);
        }
        log && due
    };
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok(stream) => {
                let conn = next_conn.fetch_add(1, Ordering::Relaxed);
                let peer = stream.peer();
                let now = engine::wall_now();
                if peer.is_some_and(|p| {
                    shared.penalties.lock().expect("penalties").penalised(
                        p,
                        now,
                        shared.config.penalty_evictions,
                    )
                }) {
                    if may_log() {
                        eprintln!(
                            "ssdlab serve: a client ({}) keeps opening connections that say nothing in their handshake: its new ones are closed at once for {} s; more such closings are logged at most every {} s",
                            peer.map_or(String::new(), |p| match p {
                                Peer::Address(a) => format!("address {a}"),
                                Peer::Process(pid) => format!("process {pid}"),
                            }),
                            PENALTY_WINDOW.as_secs(),
                            ACCEPT_LOG_EVERY.as_secs()
                        );
                    }
                    shared.refused.fetch_add(1, Ordering::Relaxed);
                    stream.shutdown();
                    continue;
                }
                let (open, evicted) = make_room(&shared);
                if let Some(old) = evicted.filter(|_| may_log()) {
                    eprintln!(
                        "ssdlab serve: client {old} closed in its handshake to make room for a new one (at most {} handshakes at once); more such closings are logged at most every {} s",
                        shared.config.max_handshakes,
                        ACCEPT_LOG_EVERY.as_secs()
                    );
                }
                if open >= shared.config.max_connections {
                    if may_log() {
                        eprintln!(
                            "ssdlab serve: {open} connections open (--max-connections {}); closing new ones until one ends",
                            shared.config.max_connections
                        );
                    }
                    shared.refused.fetch_add(1, Ordering::Relaxed);
                    stream.shutdown();
                    continue;
                }
                let Ok(clone) = stream.try_clone() else {
                    continue;
                };
                let spoke = Arc::new(AtomicBool::new(false));
                shared.registry.lock().expect("registry").push(Open {
                    conn,
                    stream: clone,
                    budget: None,
                    evicted: false,
                    spoke: spoke.clone(),
                    peer,
                });
                let shared = shared.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("ssdlab-conn-{conn}"))
                    .spawn(move || {
                        if let Err(e) = serve_connection(conn, stream, &shared, &spoke) {
                            if shared.config.log {
                                eprintln!("ssdlab serve: client {conn}: {e}; connection closed");
                            }
                        }
                        shared
                            .registry
                            .lock()
                            .expect("registry")
                            .retain(|o| o.conn != conn);
                    });
                if let Ok(t) = spawned {
                    threads.push(t);
                }
                threads.retain(|t| !t.is_finished());
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => {
                // Out of descriptors (EMFILE) or the like: back off, say so now and then.
                if may_log() {
                    eprintln!("ssdlab serve: accept: {e}");
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    threads
}

/// Before a new client: if the handshakes in progress are at their limit, or the server is
/// full and one is in its handshake, one in its handshake is closed to make room: the oldest
/// of those that have sent nothing yet, else the oldest. A storm of half-open sockets that
/// reconnect as soon as they are closed then closes its own, not a real client part-way
/// through its options (issue 73, item 17). Returns the connections open (not counting those
/// closed) and the one closed, if any.
fn make_room(shared: &Shared) -> (usize, Option<u64>) {
    let mut reg = shared.registry.lock().expect("registry");
    let live = || reg.iter().filter(|o| !o.evicted);
    let open = live().count();
    let handshaking = live().filter(|o| o.budget.is_none()).count();
    if handshaking == 0
        || (handshaking < shared.config.max_handshakes && open < shared.config.max_connections)
    {
        return (open, None);
    }
    let oldest = reg
        .iter_mut()
        .filter(|o| !o.evicted && o.budget.is_none())
        .min_by_key(|o| (o.spoke.load(Ordering::Relaxed), o.conn))
        .expect("one in its handshake");
    oldest.evicted = true;
    if let Some(peer) = oldest.peer {
        shared
            .penalties
            .lock()
            .expect("penalties")
            .closed(peer, engine::wall_now());
    }
    // Not counted as a refusal: it may be a socket already gone whose thread has yet to end.
    oldest.stream.shutdown();
    (open - 1, Some(oldest.conn))
}

pub(crate) fn serve_connection(
    conn: u64,
    stream: Stream,
    shared: &Shared,
    spoke: &AtomicBool,
) -> Result<(), conn::ConnError> {
    let (export, config) = (&shared.export, &shared.config);
    stream.set_read_timeout(Some(config.handshake_timeout))?;
    let write_half = stream.try_clone()?;
    let mut reader = BufReader::with_capacity(256 * 1024, stream);
    let session = {
        // The handshake reads through the buffer and writes straight to the socket.
        let mut duplex = Duplex {
            r: &mut reader,
            w: write_half.try_clone()?,
            spoke: Some(spoke),
        };
        match negotiate(&mut duplex, export) {
            Ok(Some(s)) => s,
            Ok(None) => return Ok(()),
            Err(conn::ConnError::Io(e))
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(conn::ConnError::Io(io::Error::new(
                    e.kind(),
                    format!(
                        "no handshake within {} s",
                        config.handshake_timeout.as_secs_f64()
                    ),
                )))
            }
            Err(e) => return Err(e),
        }
    };
    // From here a read timeout between requests is an idle client; within one it drops it.
    reader.get_ref().set_read_timeout(Some(config.io_timeout))?;
    write_half.set_write_timeout(Some(config.io_timeout))?;
    let budget = Arc::new(Budget::new(config.connection_inflight_bytes));
    if let Some(o) = shared
        .registry
        .lock()
        .expect("registry")
        .iter_mut()
        .find(|o| o.conn == conn)
    {
        o.budget = Some(budget.clone());
    }
    // Replies go to the socket directly when nothing is queued and the socket takes them at
    // once, else to this connection's writer thread: the engine never waits for a socket.
    let (tx, rx) = channel();
    let queued = Arc::new(Mutex::new(0u64));
    let direct = Direct {
        stream: write_half.try_clone()?,
        session,
        budget: budget.clone(),
        queued: queued.clone(),
    };
    let writer = {
        let (budget, log, timeout) = (budget.clone(), config.log, config.io_timeout);
        std::thread::Builder::new()
            .name(format!("ssdlab-reply-{conn}"))
            .spawn(move || {
                write_replies(
                    conn, rx, write_half, session, &budget, &queued, log, timeout,
                )
            })?
    };
    let replies = Arc::new(ReplySink {
        tx,
        direct: Some(direct),
    });
    let _ = shared.engine.send(Msg::Open {
        conn,
        replies: replies.clone(),
    });
    let result = loop {
        match conn::read_request(&mut reader, export, |n| budget.reserve(n)) {
            Ok(conn::Incoming::Request(req)) => {
                if shared.engine.send(Msg::Request { conn, req }).is_err() {
                    break Ok(());
                }
            }
            Ok(conn::Incoming::Refused {
                handle,
                error,
                is_read,
                why,
            }) => {
                shared.refused.fetch_add(1, Ordering::Relaxed);
                if config.log {
                    eprintln!("ssdlab serve: client {conn}: refused: {why}");
                }
                replies.send(Reply {
                    handle,
                    error,
                    read: None,
                    is_read,
                    cost: 0,
                });
            }
            Ok(conn::Incoming::Disconnect) | Ok(conn::Incoming::Eof) => break Ok(()),
            // The writer dropped the client (it stopped taking replies): already logged.
            Err(conn::ConnError::Io(e)) if budget.dead.load(Ordering::SeqCst) => {
                let _ = e;
                break Ok(());
            }
            Err(e) => break Err(e),
        }
    };
    let _ = shared.engine.send(Msg::Closed { conn });
    drop(replies);
    // The writer ends once the engine has answered this client's last command.
    let _ = writer.join();
    result
}

/// The connection's writer thread: writes replies as they come, flushing when none wait. A
/// client that takes no reply bytes for `timeout` is dropped (its socket shut down, so its
/// reader ends too); its later replies are discarded. Ends when every sender is gone.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_replies(
    conn: u64,
    rx: Receiver<Outgoing>,
    stream: Stream,
    session: Session,
    budget: &Budget,
    queued: &Mutex<u64>,
    log: bool,
    timeout: Duration,
) {
    let mut w = BufWriter::with_capacity(256 * 1024, stream);
    let mut failed = false;
    let write = |w: &mut BufWriter<Stream>, item: Outgoing, failed: &mut bool, last: bool| {
        let cost = match &item {
            Outgoing::Reply(r) => r.cost,
            Outgoing::Rest(_, cost) => *cost,
        };
        if !*failed {
            let res = match &item {
                Outgoing::Reply(r) => conn::write_reply(w, r, session),
                Outgoing::Rest(bytes, _) => w.write_all(bytes),
            }
            .and_then(|_| if last { w.flush() } else { Ok(()) });
            if let Err(e) = res {
                *failed = true;
                if log {
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) {
                        eprintln!(
                            "ssdlab serve: client {conn}: took no reply data for {} s; disconnected",
                            timeout.as_secs_f64()
                        );
                    } else if e.kind() != io::ErrorKind::BrokenPipe {
                        eprintln!("ssdlab serve: client {conn}: writing replies: {e}");
                    }
                }
                budget.kill();
                w.get_ref().shutdown();
            }
        }
        budget.release(cost);
    };
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        let mut done = 0;
        while let Some(item) = next.take() {
            next = rx.try_recv().ok();
            let last = next.is_none();
            write(&mut w, item, &mut failed, last);
            done += 1;
        }
        // All on the socket (flushed): direct replies may go again once none is queued.
        *queued.lock().expect("queued") -= done;
    }
    if !failed {
        let _ = w.flush();
    }
    w.get_ref().shutdown();
}

/// Where the engine and the reader put a connection's replies. When the connection's writer
/// thread has nothing queued, a small reply goes straight to the socket with a write that
/// cannot block (saving the writer thread's wake-up, tens of microseconds at low queue depth);
/// whatever the socket does not take at once, and every reply while others are queued, goes to
/// the writer thread, in order.
pub(crate) struct ReplySink {
    pub(crate) tx: Sender<Outgoing>,
    pub(crate) direct: Option<Direct>,
}

/// A reply, or the unsent rest of one written directly (with the budget it holds).
pub(crate) enum Outgoing {
    Reply(Reply),
    Rest(Vec<u8>, u64),
}

pub(crate) struct Direct {
    stream: Stream,
    session: Session,
    budget: Arc<Budget>,
    /// Items handed to the writer thread and not yet on the socket.
    queued: Arc<Mutex<u64>>,
}

/// Replies with at most this much data may be written directly.
pub(crate) const DIRECT_MAX: usize = 64 << 10;

impl ReplySink {
    /// Queue one reply; never waits. A client that stopped reading loses its replies,
    /// nobody else's.
    pub(crate) fn send(&self, r: Reply) {
        let Some(d) = &self.direct else {
            let _ = self.tx.send(Outgoing::Reply(r));
            return;
        };
        let mut queued = d.queued.lock().expect("queued");
        let small = r
            .read
            .as_ref()
            .is_none_or(|(_, data)| data.len() <= DIRECT_MAX);
        if *queued > 0 || !small || d.budget.dead.load(Ordering::SeqCst) {
            *queued += 1;
            let _ = self.tx.send(Outgoing::Reply(r));
            return;
        }
        let mut bytes = Vec::with_capacity(64 + r.read.as_ref().map_or(0, |(_, d)| d.len()));
        conn::write_reply(&mut bytes, &r, d.session).expect("a reply encodes into memory");
        let sent = d.stream.send_now(&bytes);
        if sent == bytes.len() {
            d.budget.release(r.cost);
        } else {
            *queued += 1;
            let _ = self.tx.send(Outgoing::Rest(bytes[sent..].to_vec(), r.cost));
        }
    }
}

/// Reads from the buffered reader, writes to the other half of the socket.
pub(crate) struct Duplex<'a, R: Read> {
    r: &'a mut R,
    w: Stream,
    /// Set once the client has sent a byte.
    spoke: Option<&'a AtomicBool>,
}

impl<R: Read> Read for Duplex<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.r.read(buf)?;
        if n > 0 {
            if let Some(spoke) = self.spoke.take() {
                spoke.store(true, Ordering::Relaxed);
            }
        }
        Ok(n)
    }
}

impl<R: Read> Write for Duplex<'_, R> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.w.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

#[cfg(test)]
mod penalty_tests {
    use super::*;

    #[test]
    fn a_peer_is_penalised_after_enough_closings_within_the_window_and_only_then() {
        let mut p = Penalties::default();
        let (a, b) = (Peer::Process(10), Peer::Process(11));
        let t0 = engine::wall_now();
        for i in 0..PENALTY_EVICTIONS {
            assert!(!p.penalised(a, t0, PENALTY_EVICTIONS), "after {i}");
            p.closed(a, t0);
        }
        assert!(p.penalised(a, t0, PENALTY_EVICTIONS));
        assert!(
            !p.penalised(b, t0, PENALTY_EVICTIONS),
            "another peer is not"
        );
        assert!(!p.penalised(a, t0, 0), "0 turns the penalty off");
        // The window passes: the peer starts again from nothing.
        let later = t0 + PENALTY_WINDOW + Duration::from_millis(1);
        assert!(!p.penalised(a, later, PENALTY_EVICTIONS));
        p.closed(a, later);
        assert!(!p.penalised(a, later, PENALTY_EVICTIONS));
    }
}
