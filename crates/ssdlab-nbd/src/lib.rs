//! ssdlab-nbd: serve a simulated drive over the NBD protocol, so that real tools (qemu-io,
//! nbdcopy, fio's nbd engine, a VM) use it as a disk.
//!
//! Threads: one accepts connections; each connection has a reader (handshake, then requests)
//! (replies are written, possibly out of order, by the engine); one engine thread owns the drive
//! ([`ssdlab_core::device::Device`]) and the data kept with its physical units
//! ([`store::DataStore`]). The simulation core stays free of I/O: this crate is its only
//! link to sockets and the wall clock.

mod conn;
pub mod disk;
mod engine;
pub mod proto;
pub mod store;

pub use conn::{negotiate, Export, Session};
pub use engine::{Pace, ServeStats};

use engine::{Engine, Msg, Reply};
use ssdlab_core::device::Device;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
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
}

/// The handshake deadline the CLI and Python API use.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
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

/// Open connections, so that shutdown can wake their readers.
type Registry = Arc<Mutex<Vec<(u64, Stream)>>>;

/// A running server.
pub struct Server {
    uri: String,
    stop: Arc<AtomicBool>,
    engine_tx: Sender<Msg>,
    accept: Option<JoinHandle<Vec<JoinHandle<()>>>>,
    engine: Option<JoinHandle<ServeStats>>,
    registry: Registry,
    socket_path: Option<PathBuf>,
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
        };
        let uri = listener.uri(&export.name);
        let socket_path = match &listener {
            Listener::Unix(_, p) => Some(p.clone()),
            Listener::Tcp(_) => None,
        };
        let (engine_tx, engine_rx) = channel();
        let engine = Engine::new(dev, config.pace, store);
        let engine = std::thread::Builder::new()
            .name("ssdlab-engine".into())
            .spawn(move || engine.run(engine_rx))?;
        let stop = Arc::new(AtomicBool::new(false));
        let registry: Registry = Arc::default();
        let accept = {
            let (stop, registry, tx) = (stop.clone(), registry.clone(), engine_tx.clone());
            let (log, deadline) = (config.log, config.handshake_timeout);
            std::thread::Builder::new()
                .name("ssdlab-accept".into())
                .spawn(move || accept_loop(listener, export, stop, registry, tx, log, deadline))?
        };
        Ok(Server {
            uri,
            stop,
            engine_tx,
            accept: Some(accept),
            engine: Some(engine),
            registry,
            socket_path,
        })
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

    /// Stop accepting, answer every command in flight, close every connection, and return
    /// the final statistics.
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
        for (_, s) in self.registry.lock().expect("registry").iter() {
            s.shutdown();
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

fn accept_loop(
    listener: Listener,
    export: Export,
    stop: Arc<AtomicBool>,
    registry: Registry,
    engine: Sender<Msg>,
    log: bool,
    handshake_timeout: Duration,
) -> Vec<JoinHandle<()>> {
    let next_conn = AtomicU64::new(1);
    let mut threads = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok(stream) => {
                let conn = next_conn.fetch_add(1, Ordering::Relaxed);
                let Ok(clone) = stream.try_clone() else {
                    continue;
                };
                registry.lock().expect("registry").push((conn, clone));
                let (export, registry, engine) = (export.clone(), registry.clone(), engine.clone());
                let spawned = std::thread::Builder::new()
                    .name(format!("ssdlab-conn-{conn}"))
                    .spawn(move || {
                        if let Err(e) =
                            serve_connection(conn, stream, &export, &engine, log, handshake_timeout)
                        {
                            if log {
                                eprintln!("ssdlab serve: client {conn}: {e}; connection closed");
                            }
                        }
                        registry
                            .lock()
                            .expect("registry")
                            .retain(|(c, _)| *c != conn);
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
                if log {
                    eprintln!("ssdlab serve: accept: {e}");
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    threads
}

fn serve_connection(
    conn: u64,
    stream: Stream,
    export: &Export,
    engine: &Sender<Msg>,
    log: bool,
    handshake_timeout: Duration,
) -> Result<(), conn::ConnError> {
    stream.set_read_timeout(Some(handshake_timeout))?;
    let write_half = stream.try_clone()?;
    let mut reader = BufReader::with_capacity(256 * 1024, stream);
    let session = {
        // The handshake reads through the buffer and writes straight to the socket.
        let mut duplex = Duplex {
            r: &mut reader,
            w: write_half.try_clone()?,
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
                    format!("no handshake within {} s", handshake_timeout.as_secs_f64()),
                )))
            }
            Err(e) => return Err(e),
        }
    };
    reader.get_ref().set_read_timeout(None)?;
    // Replies are written by whoever has them (the engine, or this reader for refusals),
    // straight to the socket: no thread hop per reply.
    let replies = Arc::new(ReplySink {
        w: Mutex::new(Some(BufWriter::with_capacity(256 * 1024, write_half))),
        session,
        conn,
        log,
    });
    let _ = engine.send(Msg::Open {
        conn,
        replies: replies.clone(),
    });
    let result = loop {
        match conn::read_request(&mut reader, export) {
            Ok(conn::Incoming::Request(req)) => {
                if engine.send(Msg::Request { conn, req }).is_err() {
                    break Ok(());
                }
            }
            Ok(conn::Incoming::Refused {
                handle,
                error,
                is_read,
                why,
            }) => {
                if log {
                    eprintln!("ssdlab serve: client {conn}: refused: {why}");
                }
                replies.send(Reply {
                    handle,
                    error,
                    read: None,
                    is_read,
                });
            }
            Ok(conn::Incoming::Disconnect) | Ok(conn::Incoming::Eof) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    let _ = engine.send(Msg::Closed { conn });
    result
}

/// The write half of a connection. The socket is shut down when the last holder (the reader
/// thread, or the engine once every command is answered) lets go of it.
pub(crate) struct ReplySink {
    w: Mutex<Option<BufWriter<Stream>>>,
    session: Session,
    conn: u64,
    log: bool,
}

impl ReplySink {
    /// Write one reply now. A client that stopped reading loses its replies, nobody else's.
    pub(crate) fn send(&self, r: Reply) {
        let mut guard = self.w.lock().expect("reply writer");
        let Some(w) = guard.as_mut() else {
            return;
        };
        if let Err(e) = conn::write_reply(w, &r, self.session).and_then(|_| w.flush()) {
            if self.log && e.kind() != io::ErrorKind::BrokenPipe {
                eprintln!("ssdlab serve: client {}: writing replies: {e}", self.conn);
            }
            *guard = None;
        }
    }
}

impl Drop for ReplySink {
    fn drop(&mut self) {
        if let Some(w) = self.w.get_mut().ok().and_then(|w| w.take()) {
            if let Ok(mut s) = w.into_inner() {
                let _ = s.flush();
                s.shutdown();
            }
        }
    }
}

/// Reads from the buffered reader, writes to the other half of the socket.
struct Duplex<'a, R: Read> {
    r: &'a mut R,
    w: Stream,
}

impl<R: Read> Read for Duplex<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.r.read(buf)
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
mod tests;
