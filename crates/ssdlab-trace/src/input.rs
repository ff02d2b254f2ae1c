//! Trace files: opened plain or compressed (gzip, bzip2, xz, zstd, told by their magic bytes,
//! not their names), the format detected from the first lines (or blktrace's binary magic),
//! and read as one stream of records; a blktrace capture's per-CPU siblings are read together.

use crate::blktrace::{is_blktrace, BlktraceReader};
use crate::{detect, ReaderOptions, TraceFormat, TraceReader, TraceRecord};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Bzip2,
    Xz,
    Zstd,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Bzip2 => "bzip2",
            Compression::Xz => "xz",
            Compression::Zstd => "zstd",
        }
    }

    fn of(magic: &[u8]) -> Compression {
        match magic {
            [0x1f, 0x8b, ..] => Compression::Gzip,
            [b'B', b'Z', b'h', ..] => Compression::Bzip2,
            [0xfd, b'7', b'z', b'X', b'Z', 0x00, ..] => Compression::Xz,
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Compression::Zstd,
            _ => Compression::None,
        }
    }
}

pub type Input = Box<dyn BufRead + Send + Sync>;

/// Open a file, decompressing it if its first bytes say it is compressed.
pub fn open_file(path: &Path) -> Result<(Input, Compression), String> {
    let shown = path.display();
    let mut file = File::open(path).map_err(|e| format!("{shown}: cannot open: {e}"))?;
    let mut magic = [0u8; 6];
    let n = read_some(&mut file, &mut magic).map_err(|e| format!("{shown}: cannot read: {e}"))?;
    let compression = Compression::of(&magic[..n]);
    let file = File::open(path).map_err(|e| format!("{shown}: cannot open: {e}"))?;
    const BUF: usize = 1 << 20;
    let input: Input = match compression {
        Compression::None => Box::new(BufReader::with_capacity(BUF, file)),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            BUF,
            flate2::read::MultiGzDecoder::new(file),
        )),
        Compression::Bzip2 => Box::new(BufReader::with_capacity(
            BUF,
            bzip2::read::MultiBzDecoder::new(file),
        )),
        Compression::Xz => Box::new(BufReader::with_capacity(
            BUF,
            liblzma::read::XzDecoder::new_multi_decoder(file),
        )),
        Compression::Zstd => Box::new(BufReader::with_capacity(
            BUF,
            zstd::stream::read::Decoder::new(file).map_err(|e| format!("{shown}: zstd: {e}"))?,
        )),
    };
    Ok((input, compression))
}

fn read_some(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// The other per-CPU files of a blktrace capture: `X.blktrace.0` gives `X.blktrace.*`.
pub fn blktrace_siblings(path: &Path) -> Vec<PathBuf> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let Some(i) = name.rfind(".blktrace.") else {
        return vec![path.to_path_buf()];
    };
    let prefix = &name[..i + ".blktrace.".len()];
    let parent = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = parent.unwrap_or(Path::new("."));
    let mut found: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_str()?.to_string();
            let cpu: u64 = n.strip_prefix(prefix)?.parse().ok()?;
            // Named as the user named the first file (no "./" for the current directory).
            Some((
                cpu,
                parent.map_or_else(|| PathBuf::from(&n), |d| d.join(&n)),
            ))
        })
        .collect();
    found.sort();
    if found.is_empty() {
        return vec![path.to_path_buf()];
    }
    found.into_iter().map(|(_, p)| p).collect()
}

/// The format of a trace from its first bytes: blktrace's magic, or its first 20 lines.
pub fn detect_file(path: &Path, tolerant: bool) -> Result<TraceFormat, String> {
    let shown = path.display();
    let (mut head, compression) = open_file(path)?;
    let mut first = Vec::new();
    loop {
        let buf = match head.fill_buf() {
            Ok(b) => b,
            Err(e) => return Err(read_error(&shown.to_string(), compression, &e)),
        };
        if buf.is_empty() || first.len() >= 4 {
            break;
        }
        let take = buf.len().min(4 - first.len());
        first.extend_from_slice(&buf[..take]);
        head.consume(take);
    }
    if is_blktrace(&first) {
        return Ok(TraceFormat::Blktrace);
    }
    let mut lines = Vec::new();
    let mut bytes = first;
    while lines.len() < 20 {
        match head.read_until(b'\n', &mut bytes) {
            Ok(0) => {
                if !bytes.is_empty() {
                    lines.push(String::from_utf8_lossy(&bytes).trim_end().to_string());
                }
                break;
            }
            Ok(_) => {
                lines.push(String::from_utf8_lossy(&bytes).trim_end().to_string());
                bytes.clear();
            }
            Err(e) => return Err(read_error(&shown.to_string(), compression, &e)),
        }
    }
    if lines.iter().all(|l| l.trim().is_empty()) {
        return Err(format!("{shown}: the trace is empty"));
    }
    let refs: Vec<&str> = lines.iter().map(|s| s.as_str()).collect();
    let found = if tolerant {
        crate::detect::detect_tolerant(&refs)
    } else {
        detect(&refs)
    };
    found.ok_or_else(|| {
        format!(
            "{shown}: cannot tell the trace format from its first lines; give --format ({}) or map the columns with --columns",
            TraceFormat::NAMES
        )
    })
}

fn read_error(path: &str, compression: Compression, e: &std::io::Error) -> String {
    match compression {
        Compression::None => format!("{path}: cannot read: {e}"),
        c => format!(
            "{path}: the {} stream is corrupt or truncated: {e}",
            c.name()
        ),
    }
}

enum Inner {
    Text(Box<TraceReader<Input>>),
    Binary(Box<BlktraceReader>),
}

/// One trace file as records. Errors carry the path (and line, for text).
pub struct Records {
    inner: Inner,
    path: String,
    pub format: TraceFormat,
    pub compression: Compression,
}

impl Records {
    /// Open `path`; `options.format` is used unless `detect` (then detected).
    pub fn open(path: &str, mut options: ReaderOptions, detect: bool) -> Result<Records, String> {
        let p = Path::new(path);
        if detect {
            options.format = detect_file(p, options.skip_bad_lines)?;
        }
        if options.format == TraceFormat::Columns && options.columns.is_none() {
            return Err("the columns format needs --columns".into());
        }
        let (input, compression) = open_file(p)?;
        let inner = if options.format == TraceFormat::Blktrace {
            drop(input);
            let mut inputs: Vec<(String, Box<dyn Read + Send + Sync>)> = Vec::new();
            for f in blktrace_siblings(p) {
                let (r, _) = open_file(&f)?;
                inputs.push((f.display().to_string(), Box::new(r)));
            }
            Inner::Binary(Box::new(BlktraceReader::new(
                inputs,
                options.blkparse_arrival,
            )))
        } else {
            Inner::Text(Box::new(TraceReader::new(input, options.clone())))
        };
        Ok(Records {
            inner,
            path: path.to_string(),
            format: options.format,
            compression,
        })
    }

    pub fn notes(&self) -> Vec<String> {
        match &self.inner {
            Inner::Text(r) => r.notes(),
            Inner::Binary(r) => r.notes(),
        }
    }

    pub fn bad_lines(&self) -> u64 {
        match &self.inner {
            Inner::Text(r) => r.bad_lines,
            Inner::Binary(_) => 0,
        }
    }

    pub fn path(&self) -> &str {
        &self.path
    }
}

impl Iterator for Records {
    type Item = Result<TraceRecord, String>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            // Binary errors name the CPU file they are about.
            Inner::Binary(r) => Some(r.next()?.map_err(|e| e.message)),
            Inner::Text(r) => {
                let e = match r.next()? {
                    Ok(rec) => return Some(Ok(rec)),
                    Err(e) => e,
                };
                if self.compression != Compression::None {
                    // A parse error inside a compressed file may be garbage from a damaged
                    // stream: read the rest, and say so if the stream is broken.
                    if let Err(io) = std::io::copy(r.input_mut(), &mut std::io::sink()) {
                        return Some(Err(format!(
                            "{}: the {} stream is corrupt or truncated ({io}); the first bad line is line {}",
                            self.path,
                            self.compression.name(),
                            e.line_number
                        )));
                    }
                    if e.message.starts_with("cannot read the trace") {
                        return Some(Err(format!(
                            "{}: the {} stream is corrupt or truncated: {}",
                            self.path,
                            self.compression.name(),
                            e.message
                        )));
                    }
                }
                Some(Err(format!("{}: {e}", self.path)))
            }
        }
    }
}
