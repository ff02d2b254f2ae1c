//! Host commands as the host submits them, and their completions.

use crate::time::SimTime;

/// Host command kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoKind {
    Read,
    Write,
    Trim,
    Flush,
    /// Zone Append (a zoned namespace): `offset_bytes` names the zone's start; the drive
    /// writes at the zone's write pointer and the completion's `io.offset_bytes` is where.
    ZoneAppend,
}

/// A host command as submitted.
#[derive(Clone, Copy, Debug)]
pub struct HostIo {
    pub kind: IoKind,
    pub offset_bytes: u64,
    pub length_bytes: u64,
    /// Force unit access: complete only when the data is on the NAND.
    pub fua: bool,
    /// The submitter's own tag, returned with the completion.
    pub tag: u64,
    /// A write's placement identifier (NVMe FDP's DSPEC with DTYPE 2), or
    /// [`crate::ftl::NO_PLACEMENT`]: none.
    pub placement: u16,
}

impl HostIo {
    /// A FLUSH: complete once everything written before it is on the NAND.
    pub fn flush(tag: u64) -> HostIo {
        HostIo {
            kind: IoKind::Flush,
            offset_bytes: 0,
            length_bytes: 0,
            fua: false,
            tag,
            placement: crate::ftl::NO_PLACEMENT,
        }
    }
}

/// A completed host command.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    pub io: HostIo,
    pub submitted: SimTime,
    pub completed: SimTime,
    /// A READ that could not return all its data (an uncorrectable unit without RAIN, see
    /// [`crate::faults`]), or a command refused (`status`): the host sees an error for this
    /// command only.
    pub failed: bool,
    /// The command's status (a zoned namespace's refusals; `UnrecoveredReadError` for a
    /// failed read).
    pub status: crate::zones::Status,
}

impl Completion {
    pub fn latency_ns(&self) -> u64 {
        self.completed.ns() - self.submitted.ns()
    }
}
