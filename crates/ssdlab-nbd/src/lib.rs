//! ssdlab-nbd: serve a simulated drive over the NBD protocol, so that real tools (qemu-io,
//! nbdcopy, fio's nbd engine, a VM) use it as a disk.
//!
//! Threads: one accepts connections; each connection has a reader (handshake, then requests)
//! (replies are written, possibly out of order, by the engine); one engine thread owns the drive
//! ([`ssdlab_core::device::Device`]) and the data kept with its physical units
//! ([`store::DataStore`]). The simulation core stays free of I/O: this crate is its only
//! link to sockets and the wall clock.

mod conn;
mod connection;
/// The drive a server or the crash harness runs: `cfg`'s, but never a zoned namespace. NBD has
/// no zone commands, and its writes anywhere but at a zone's write pointer would fail (the
/// store would then miss data the client thinks written). The error says so.
pub fn device(
    cfg: &ssdlab_core::config::DriveConfig,
    seed: u64,
) -> Result<ssdlab_core::device::Device, String> {
    let dev = ssdlab_core::device::Device::new(cfg, seed).map_err(|e| e.to_string())?;
    if dev.zones().is_some() {
        return Err("a zoned namespace ([placement] mode = \"zns\") cannot be served through NBD (it has no zone commands, and writes off a zone's write pointer would fail); accepted: a drive without mode = \"zns\"".into());
    }
    Ok(dev)
}

pub mod crash;
pub mod disk;
mod engine;
pub mod proto;
pub mod store;

pub use conn::{negotiate, Export, Session};
pub use engine::{Pace, ServeStats};

use connection::accept_loop;
pub(crate) use connection::ReplySink;
use engine::{Engine, Msg, Reply};
use ssdlab_core::device::Device;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Where to listen.
#[derive(Clone, Debug)]
pub enum Listen {
    Unix(PathBuf),
    Tcp { bind: String, port: u16 },
}

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub listen: Listen,
    pub pace: Pace,
    pub export_name: String,
    pub description: String,
    /// Largest READ or WRITE accepted (bytes).
    pub max_request: u32,
    /// Log a line per refused request or failed connection (to stderr).
    pub log: bool,
    /// A client that has not finished the handshake this long after connecting is
    /// disconnected, so half-open connections cannot hold threads and descriptors forever.
    pub handshake_timeout: Duration,
    /// Refuse WRITE, TRIM and WRITE_ZEROES and export the drive read-only.
    pub read_only: bool,
    /// Connections served at once; a client beyond them is closed at once (logged), unless a
    /// connection still in its handshake can give way (the oldest does).
    pub max_connections: usize,
    /// Connections in their handshake at once: a new client beyond them closes the oldest
    /// one still in its handshake, so sockets that never finish it cannot keep real clients
    /// out (issue 25 item 6: 32 silent sockets reopened every 10 s did).
    pub max_handshakes: usize,
    /// A peer (address, or process over a Unix socket) whose handshakes were closed this many
    /// times within a second has its new connections closed at once for that second
    /// ([`connection::PENALTY_EVICTIONS`] by default; 0: never), so a storm of sockets that
    /// reconnect as soon as they are closed cannot keep taking real clients' places.
    pub penalty_evictions: u32,
    /// Request bytes (WRITE payloads, READ lengths) one connection may have between reading
    /// the request and writing its reply; past it that socket is not read until replies drain,
    /// so memory is bounded by `max_connections` times this, whatever clients send.
    pub connection_inflight_bytes: u64,
    /// A client that takes no reply bytes, or sends none of a request it has started, for
    /// this long is disconnected; nobody else waits for it meanwhile.
    pub io_timeout: Duration,
    /// Cut the power once, right after this many commands (needs `store_dir`): what the
    /// drive's protection does not keep is lost, every connection drops, and the drive is
    /// rebuilt from the store and served again.
    pub power_cut_after: Option<u64>,
    /// The directory of the on-disk store (for the rebuild after a power cut).
    pub store_dir: Option<PathBuf>,
    /// Pace::Model: reply this much before the model's completion time, for the time the
    /// client and the NBD transport add to each round trip and a drive on the host's own
    /// bus would not have (measure it: `benches/bench_nbd.py` prints fio's floor against
    /// `nbdkit memory`). Zero by default.
    pub transport: Duration,
    /// Pace::Model: the drive runs this many times slower than real time (every simulated
    /// microsecond takes this many on the wall clock), so that what the client and the NBD
    /// transport add to each round trip is this many times smaller against the drive's own
    /// time: a test fixture for measuring a modelled drive through real tools (its rates are
    /// this many times what the client measures; `ssdlab procedure --target-time-scale`).
    /// 1 by default.
    pub time_scale: u32,
}

/// The handshake deadline the CLI and Python API use.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Defaults of the other limits: 32 connections of 32 MiB in flight bound request and reply
/// data at 1 GiB; 30 s without progress on a reply or a started request drops a client.
pub const MAX_CONNECTIONS: usize = 32;
/// A real client's handshake takes a few round trips (well under a millisecond locally);
/// eight at once leaves room for several clients starting together.
pub const MAX_HANDSHAKES: usize = 8;
pub const CONNECTION_INFLIGHT_BYTES: u64 = 32 << 20;
pub const IO_TIMEOUT: Duration = Duration::from_secs(30);

impl ServerConfig {
    /// A configuration with the default limits.
    pub fn new(listen: Listen, pace: Pace, export_name: String, description: String) -> Self {
        ServerConfig {
            listen,
            pace,
            export_name,
            description,
            max_request: 32 << 20,
            log: true,
            handshake_timeout: HANDSHAKE_TIMEOUT,
            read_only: false,
            max_connections: MAX_CONNECTIONS,
            max_handshakes: MAX_HANDSHAKES,
            penalty_evictions: connection::PENALTY_EVICTIONS,
            connection_inflight_bytes: CONNECTION_INFLIGHT_BYTES,
            io_timeout: IO_TIMEOUT,
            power_cut_after: None,
            store_dir: None,
            transport: Duration::ZERO,
            time_scale: 1,
        }
    }
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// A client's origin, for the handshake penalty ([`connection::Penalties`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Peer {
    Address(std::net::IpAddr),
    Process(i32),
}

impl Stream {
    fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }
    fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_write_timeout(t),
            Stream::Unix(s) => s.set_write_timeout(t),
        }
    }
    #[allow(unsafe_code)]
    /// Write what the socket takes now without waiting (none on error: the writer thread
    /// meets the error and drops the client).
    fn send_now(&self, buf: &[u8]) -> usize {
        use std::os::fd::AsRawFd;
        let fd = match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        };
        // SAFETY: fd is an open socket owned by self; buf is valid for its length.
        let n = unsafe {
            libc::send(
                fd,
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        n.max(0) as usize
    }

    /// Who is at the other end, as far as the socket tells: the peer's address over TCP, its
    /// process over a Unix socket (SO_PEERCRED); None where it cannot be told.
    #[allow(unsafe_code)]
    fn peer(&self) -> Option<Peer> {
        match self {
            Stream::Tcp(s) => s.peer_addr().ok().map(|a| Peer::Address(a.ip())),
            Stream::Unix(s) => {
                use std::os::fd::AsRawFd;
                let mut cred = libc::ucred {
                    pid: 0,
                    uid: 0,
                    gid: 0,
                };
                let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
                // SAFETY: getsockopt on a socket this stream owns, into a ucred of the size
                // passed; it writes nothing else.
                let r = unsafe {
                    libc::getsockopt(
                        s.as_raw_fd(),
                        libc::SOL_SOCKET,
                        libc::SO_PEERCRED,
                        (&mut cred as *mut libc::ucred).cast(),
                        &mut len,
                    )
                };
                (r == 0 && cred.pid > 0).then_some(Peer::Process(cred.pid))
            }
        }
    }

    fn shutdown(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

impl Listener {
    fn bind(listen: &Listen) -> io::Result<Listener> {
        let l = match listen {
            Listen::Unix(path) => {
                if let Ok(meta) = std::fs::symlink_metadata(path) {
                    if !meta.file_type().is_socket() {
                        return Err(io::Error::new(
                            io::ErrorKind::AlreadyExists,
                            format!("{}: exists and is not a socket", path.display()),
                        ));
                    }
                    // A socket left by an earlier server: replace it.
                    std::fs::remove_file(path)?;
                }
                let l = UnixListener::bind(path)
                    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
                l.set_nonblocking(true)?;
                Listener::Unix(l, path.clone())
            }
            Listen::Tcp { bind, port } => {
                let l = TcpListener::bind((bind.as_str(), *port))
                    .map_err(|e| io::Error::new(e.kind(), format!("{bind}:{port}: {e}")))?;
                l.set_nonblocking(true)?;
                Listener::Tcp(l)
            }
        };
        Ok(l)
    }

    fn uri(&self, export: &str) -> String {
        match self {
            Listener::Unix(_, p) => format!("nbd+unix:///{export}?socket={}", p.display()),
            Listener::Tcp(l) => match l.local_addr() {
                Ok(a) => format!("nbd://{a}/{export}"),
                Err(_) => "nbd://?".into(),
            },
        }
    }

    fn accept(&self) -> io::Result<Stream> {
        let s = match self {
            Listener::Tcp(l) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(false)?;
                s.set_nodelay(true)?;
                Stream::Tcp(s)
            }
            Listener::Unix(l, _) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(false)?;
                Stream::Unix(s)
            }
        };
        Ok(s)
    }
}

/// A connection's share of memory: request bytes read but not yet answered.
pub(crate) struct Budget {
    used: Mutex<u64>,
    freed: Condvar,
    limit: u64,
    /// The connection was dropped: nobody waits for budget any more.
    dead: AtomicBool,
}

impl Budget {
    fn new(limit: u64) -> Budget {
        Budget {
            used: Mutex::new(0),
            freed: Condvar::new(),
            limit,
            dead: AtomicBool::new(false),
        }
    }

    /// Take `n` bytes, waiting while the connection already holds its limit (one request
    /// larger than the limit alone is let through).
    fn reserve(&self, n: u64) -> io::Result<()> {
        let mut used = self.used.lock().expect("budget");
        loop {
            if self.dead.load(Ordering::SeqCst) {
                return Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "connection dropped",
                ));
            }
            if *used == 0 || *used + n <= self.limit {
                *used += n;
                return Ok(());
            }
            used = self
                .freed
                .wait_timeout(used, Duration::from_millis(200))
                .expect("budget")
                .0;
        }
    }

    fn release(&self, n: u64) {
        *self.used.lock().expect("budget") -= n;
        self.freed.notify_all();
    }

    fn kill(&self) {
        self.dead.store(true, Ordering::SeqCst);
        self.freed.notify_all();
    }

    fn idle(&self) -> bool {
        *self.used.lock().expect("budget") == 0
    }
}

/// An open connection, so that shutdown can let its replies drain and then wake it.
struct Open {
    conn: u64,
    stream: Stream,
    /// Set once the handshake is done: until then the connection is in its handshake.
    budget: Option<Arc<Budget>>,
    /// Closed to make room for a new client (still in the registry until its thread ends).
    evicted: bool,
    /// The client has sent something in its handshake (set by the handshake's reader): a
    /// socket that has said nothing gives way first (issue 73, item 17).
    spoke: Arc<AtomicBool>,
    peer: Option<Peer>,
}

type Registry = Arc<Mutex<Vec<Open>>>;

/// A running server.
pub struct Server {
    uri: String,
    stop: Arc<AtomicBool>,
    engine_tx: Sender<Msg>,
    accept: Option<JoinHandle<Vec<JoinHandle<()>>>>,
    engine: Option<JoinHandle<ServeStats>>,
    registry: Registry,
    socket_path: Option<PathBuf>,
    /// The simulation thread died (a bug): nothing will be answered any more.
    failed: Arc<AtomicBool>,
}

/// What every connection thread shares.
struct Shared {
    export: Export,
    engine: Sender<Msg>,
    registry: Registry,
    refused: Arc<AtomicU64>,
    config: ServerConfig,
    penalties: Mutex<connection::Penalties>,
}

impl Server {
    /// Listen and serve `dev` until [`Server::shutdown`], its data in memory.
    pub fn start(dev: Device, config: ServerConfig) -> io::Result<Server> {
        let store = store::DataStore::new(dev.geometry.mapping_unit_bytes);
        Server::start_with(dev, config, store)
    }

    /// Listen and serve `dev` with its data in `store` (from [`disk::mount`] for a store
    /// on disk) until [`Server::shutdown`].
    pub fn start_with(
        dev: Device,
        config: ServerConfig,
        store: store::DataStore,
    ) -> io::Result<Server> {
        let listener = Listener::bind(&config.listen)?;
        let export = Export {
            name: config.export_name.clone(),
            description: config.description.clone(),
            size: dev.user_bytes(),
            preferred_block: dev.geometry.mapping_unit_bytes,
            max_request: config.max_request,
            read_only: config.read_only,
        };
        let uri = listener.uri(&export.name);
        let socket_path = match &listener {
            Listener::Unix(_, p) => Some(p.clone()),
            Listener::Tcp(_) => None,
        };
        let refused = Arc::new(AtomicU64::new(0));
        let (engine_tx, engine_rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let registry: Registry = Arc::default();
        let mut engine = Engine::new(dev, config.pace, store, refused.clone());
        engine.set_transport(config.transport);
        engine.set_time_scale(config.time_scale);
        if let (Some(after), Some(dir)) = (config.power_cut_after, &config.store_dir) {
            engine.plan_power_cut(
                after,
                dir.clone(),
                config.export_name.clone(),
                registry.clone(),
            );
        }
        let failed = Arc::new(AtomicBool::new(false));
        let engine = {
            let (registry, stop, failed) = (registry.clone(), stop.clone(), failed.clone());
            std::thread::Builder::new()
                .name("ssdlab-engine".into())
                .spawn(move || {
                    let run = std::panic::AssertUnwindSafe(|| engine.run(engine_rx));
                    let stats = std::panic::catch_unwind(run).unwrap_or_else(|_| {
                        eprintln!("ssdlab serve: internal error in the simulation thread (message above); closing every connection");
                        ServeStats {
                            store_error: "internal error in the simulation thread".into(),
                            ..ServeStats::default()
                        }
                    });
                    // A bug in the simulation, or a store that failed (a full or failing
                    // disk): no command will be answered any more, so every connection is
                    // closed rather than left waiting, and the server has failed (its process
                    // exits non-zero).
                    if !stats.store_error.is_empty() {
                        stop.store(true, Ordering::SeqCst);
                        failed.store(true, Ordering::SeqCst);
                        for o in registry.lock().expect("registry").iter() {
                            o.stream.shutdown();
                        }
                    }
                    stats
                })?
        };
        let accept = {
            let shared = Arc::new(Shared {
                export,
                engine: engine_tx.clone(),
                registry: registry.clone(),
                refused,
                config,
                penalties: Mutex::new(connection::Penalties::default()),
            });
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("ssdlab-accept".into())
                .spawn(move || accept_loop(listener, stop, shared))?
        };
        Ok(Server {
            uri,
            stop,
            engine_tx,
            accept: Some(accept),
            engine: Some(engine),
            registry,
            socket_path,
            failed,
        })
    }

    /// The simulation thread died of an internal error: stop the server and report failure.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// The NBD URI clients connect to (nbd+unix:///NAME?socket=PATH or nbd://ADDR:PORT/NAME).
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Statistics so far.
    pub fn stats(&self) -> ServeStats {
        let (tx, rx) = channel();
        if self.engine_tx.send(Msg::Stats(tx)).is_err() {
            return ServeStats::default();
        }
        rx.recv().unwrap_or_default()
    }

    /// Stop accepting, answer every command in flight, let replies drain (a client that does
    /// not take them is not waited for beyond [`SHUTDOWN_DRAIN`]), close every connection,
    /// and return the final statistics.
    pub fn shutdown(mut self) -> ServeStats {
        self.stop.store(true, Ordering::SeqCst);
        let connection_threads = self
            .accept
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let _ = self.engine_tx.send(Msg::Shutdown);
        let stats = self
            .engine
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let mut waited = Duration::ZERO;
        let step = Duration::from_millis(10);
        while waited < SHUTDOWN_DRAIN
            && !self
                .registry
                .lock()
                .expect("registry")
                .iter()
                .all(|o| o.budget.as_ref().is_none_or(|b| b.idle()))
        {
            std::thread::sleep(step);
            waited += step;
        }
        for o in self.registry.lock().expect("registry").iter() {
            o.stream.shutdown();
        }
        for t in connection_threads {
            let _ = t.join();
        }
        if let Some(p) = &self.socket_path {
            let _ = std::fs::remove_file(p);
        }
        stats
    }
}

/// How long a shutdown lets answered replies reach their clients before closing.
pub const SHUTDOWN_DRAIN: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests;
