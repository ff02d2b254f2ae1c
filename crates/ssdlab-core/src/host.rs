//! The host interface: the link and the command latency.
//!
//! SATA: one half-duplex link (data and frames share it), NCQ depth at most 32. NVMe over
//! PCIe: one timeline per direction, deep queues. Data crosses at the link's rate or the
//! controller's data-path rate (`read_mb_per_s`, `write_mb_per_s`), whichever is slower. Every
//! command also carries the host's software stack (`host.driver_ns`: block layer, driver,
//! interrupt and completion), which no resource of the drive serialises, so low queue depths
//! are bound by it. The drive's part of the command path (front end, processor, data path,
//! acknowledgement) is the controller's ([`crate::device`]).

use crate::config::{ControllerConfig, HostConfig, HostInterfaceKind};
use crate::time::{SimDuration, SimTime, TransferRate};
use crate::timeline::GapTimeline;

#[derive(Clone, Debug)]
pub struct HostInterface {
    pub kind: HostInterfaceKind,
    link_bytes_per_s: u64,
    /// Data rate to the host (the link's, or the controller's read data path where that is
    /// slower) and from the host (the link's).
    read_rate: TransferRate,
    write_rate: TransferRate,
    link_command: SimDuration,
    /// Host to device (SATA: the only link timeline).
    to_device: GapTimeline,
    /// Device to host (NVMe only).
    to_host: GapTimeline,
    /// The host's software stack per command (`host.driver_ns`).
    pub driver: SimDuration,
    pub queue_depth_max: u32,
}

impl HostInterface {
    pub fn new(host: &HostConfig, controller: &ControllerConfig) -> Self {
        let link = host.link_bytes_per_s();
        let capped = |mb_per_s: f64| {
            if mb_per_s > 0.0 {
                link.min((mb_per_s * 1e6) as u64)
            } else {
                link
            }
        };
        HostInterface {
            kind: host.interface,
            link_bytes_per_s: link,
            read_rate: TransferRate::new(capped(controller.read_mb_per_s)),
            // Host data crosses the link into the DRAM buffer at the link's rate; the
            // controller's write data path (`write_mb_per_s`) is after the buffer, on the way
            // to the NAND ([`crate::device::Processor::write_path`]).
            write_rate: TransferRate::new(link),
            link_command: SimDuration(host.link_command_ns),
            to_device: GapTimeline::default(),
            to_host: GapTimeline::default(),
            driver: SimDuration(host.driver_ns),
            queue_depth_max: host.queue_depth_max,
        }
    }

    fn link_duration(
        &mut self,
        to_host: bool,
        bytes: u64,
        with_command_frames: bool,
    ) -> SimDuration {
        let frames = if with_command_frames {
            self.link_command.ns()
        } else {
            0
        };
        let rate = if to_host {
            &mut self.read_rate
        } else {
            &mut self.write_rate
        };
        SimDuration(frames + rate.duration(bytes).ns())
    }

    /// Move `bytes` from host to drive, no earlier than `earliest`; returns the end.
    pub fn to_device(
        &mut self,
        now: SimTime,
        earliest: SimTime,
        bytes: u64,
        with_command_frames: bool,
    ) -> SimTime {
        self.transfer(false, now, earliest, bytes, with_command_frames)
    }

    /// Move `bytes` from drive to host, no earlier than `earliest`; returns the end.
    pub fn to_host(
        &mut self,
        now: SimTime,
        earliest: SimTime,
        bytes: u64,
        with_command_frames: bool,
    ) -> SimTime {
        self.transfer(true, now, earliest, bytes, with_command_frames)
    }

    fn transfer(
        &mut self,
        to_host: bool,
        now: SimTime,
        earliest: SimTime,
        bytes: u64,
        with_command_frames: bool,
    ) -> SimTime {
        let d = self.link_duration(to_host, bytes, with_command_frames);
        // SATA is half duplex: both directions share one wire.
        let link = match (to_host, self.kind) {
            (true, HostInterfaceKind::Nvme) => &mut self.to_host,
            _ => &mut self.to_device,
        };
        link.reserve(now, earliest, d) + d
    }

    pub fn link_bytes_per_s(&self) -> u64 {
        self.link_bytes_per_s
    }
}
