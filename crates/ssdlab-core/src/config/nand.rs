//! The NAND part's fields (`[nand]`): geometry, array times, and the page types of a
//! wordline with their own times.

use super::{default_true, err, ConfigError};
use serde::{Deserialize, Serialize};

/// The NAND array: geometry and timing of one part, and how many dies sit on how many channels.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NandConfig {
    /// Part name from nand-parts.toml (informational).
    #[serde(default)]
    pub part: String,
    /// Channel buses; each has its own timeline. >= 1.
    pub channels: u32,
    /// Dies (targets/LUNs) in the drive. >= 1. Die i sits on channel i % channels, so dies
    /// need not divide evenly among channels (12 dies on 8 channels: 4 channels carry 2).
    pub dies: u32,
    /// Planes per die; a multi-plane operation touches one page in each. 1..=4.
    pub planes_per_die: u32,
    /// Erase blocks per plane.
    pub blocks_per_plane: u32,
    /// Pages per erase block.
    pub pages_per_block: u32,
    /// Bytes of user data per page (spare/OOB bytes not counted). Multiple of the mapping unit.
    pub page_size_bytes: u32,
    /// Array read time tR the model uses, microseconds (the part's effective read time where
    /// fitted: docs/fidelity.md "Effective array times").
    pub read_page_us: f64,
    /// The part's datasheet maximum tR, microseconds, kept for reference (and for
    /// `ssdlab validate --ablate effective-times`); the model does not read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_page_us_max: Option<f64>,
    /// Array program time tPROG the model uses, microseconds: the part's effective program
    /// time (lower and upper MLC pages alternate; docs/fidelity.md "Effective program time").
    pub program_page_us: f64,
    /// The part's datasheet typical tPROG, microseconds, kept for reference (and for
    /// `ssdlab validate --ablate effective-times`); the model does not read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_page_us_typ: Option<f64>,
    /// Each page type's array read time as a multiple of `read_page_us`: `[lower, upper]` for
    /// MLC, `[lower, middle, upper]` for TLC (which page of a block is which: [`page_type`]).
    /// Their mean over a block's pages must be 1 (within 0.5%): the types split the part's
    /// time, so its calibration stands and a change of `read_page_us` (a fit, a sweep) moves
    /// them all. Empty: every page reads in `read_page_us`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_page_type_factors: Vec<f64>,
    /// Each page type's array program time as a multiple of `program_page_us`, as
    /// `read_page_type_factors` (the same number of types; empty with `one_shot_program`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub program_page_type_factors: Vec<f64>,
    /// A wordline's pages are programmed at once (one-shot TLC): a page of the model is then
    /// the wordline, `page_size_bytes` holds its page types in turn (a mapping unit's type is
    /// its place in the page), and `program_page_us` is the one-shot program of all of them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_shot_program: bool,
    /// Block erase time tBERS, microseconds.
    pub erase_block_us: f64,
    /// Channel bus throughput as the controller runs it, MB/s (10^6 bytes per second).
    pub bus_mb_per_s: f64,
    /// Command and address cycles on the bus per operation, nanoseconds.
    #[serde(default = "default_bus_command_ns")]
    pub bus_command_ns: u64,
    /// Extra array time of a multi-plane operation over a single-plane one, percent.
    #[serde(default = "default_multi_plane_overhead_pct")]
    pub multi_plane_overhead_pct: f64,
    /// Cache-mode program: the next page's data transfer overlaps the current tPROG.
    #[serde(default = "default_true")]
    pub cache_program: bool,
    /// Rated program/erase cycles per block.
    #[serde(default)]
    pub pe_cycles_rated: u32,
    /// On-die copy-back: garbage collection moves a page inside the die (read to the page
    /// register, program from it) without crossing the channel bus or the controller's ECC.
    /// The IMFT 128 Gbit part supports it within a plane (MT29F128G08CBECB datasheet:
    /// "Copyback operations supported within the plane from which data is read"); firmware
    /// that re-checks ECC on every move does not use it.
    #[serde(default)]
    pub copyback: bool,
    /// The ECC codeword a read of part of a mapping unit moves over the channel bus, bytes:
    /// the controller reads only the codewords holding the sectors asked for (ONFI's RANDOM
    /// DATA READ, 05h-E0h, selects the columns of the page register). 0: a read moves its
    /// mapping units whole.
    #[serde(default)]
    pub read_sector_bytes: u32,
}

fn default_bus_command_ns() -> u64 {
    200
}
fn default_multi_plane_overhead_pct() -> f64 {
    2.0
}

/// The lower page that shares its cells with `page` (a page index within its block), if
/// `page` is the upper page of 2-bit MLC cells: a program of `page` interrupted by a power cut
/// corrupts that lower page too. ASSUMED (the parts' pairing is not published in the
/// reference data): pages 0, 1 and 2 are lower pages, and page p >= 3 odd is the upper page of
/// the cells whose lower page is p - 3; even pages from 4 are lower pages.
pub fn paired_lower_page(page: u32) -> Option<u32> {
    (page >= 3 && page % 2 == 1).then(|| page - 3)
}

/// The page type (0 = lower, 1 = upper for MLC; 0, 1, 2 = lower, middle, upper for TLC) of
/// page `page` of a block, for a part with `types` page types programmed page by page. MLC:
/// the pairing of [`paired_lower_page`] (an upper page is one that has a lower
/// page; ASSUMED, as that pairing). TLC: pages in turn, lower, middle, upper (ASSUMED: the
/// reference data publishes no TLC page order).
#[inline]
pub fn page_type(page: u32, types: u32) -> u32 {
    match types {
        2 => paired_lower_page(page).is_some() as u32,
        3 => page % 3,
        _ => 0,
    }
}

impl NandConfig {
    /// How many pages (programmed page by page) or mapping-unit slots (one-shot) of each type
    /// a block holds, as weights of the types' mean.
    fn page_type_weights(&self, types: u32) -> Vec<f64> {
        let mut weights = vec![0.0; types as usize];
        if self.one_shot_program {
            weights.fill(1.0);
        } else {
            for page in 0..self.pages_per_block {
                weights[page_type(page, types) as usize] += 1.0;
            }
        }
        weights
    }

    /// The page types' times: their count (1 to 3), each positive, and their mean over a
    /// block's pages that of the part.
    pub(super) fn check_page_types(&self, unit_bytes: u32) -> Result<(), ConfigError> {
        let (read, program) = (
            &self.read_page_type_factors,
            &self.program_page_type_factors,
        );
        let types = read.len() as u32;
        if types > 3 {
            return Err(err(
                "nand.read_page_type_factors",
                format!("{types} page types; accepted: 1 (SLC), 2 (MLC: lower, upper) or 3 (TLC: lower, middle, upper)"),
            ));
        }
        if self.one_shot_program {
            if types < 2 {
                return Err(err(
                    "nand.one_shot_program",
                    "needs the wordline's page types in nand.read_page_type_factors (2 or 3 read factors)",
                ));
            }
            if !program.is_empty() {
                return Err(err(
                    "nand.program_page_type_factors",
                    "must be empty with nand.one_shot_program: a wordline programs all its pages in program_page_us",
                ));
            }
            if !(self.page_size_bytes / unit_bytes).is_multiple_of(types) {
                return Err(err(
                    "nand.page_size_bytes",
                    format!("{} bytes do not split into {types} page types of whole mapping units ({unit_bytes} bytes); with one_shot_program a page is the wordline", self.page_size_bytes),
                ));
            }
        } else if program.len() != read.len() {
            return Err(err(
                "nand.program_page_type_factors",
                format!("{} factors for {} read factors (nand.read_page_type_factors); give one per page type, both or neither", program.len(), read.len()),
            ));
        }
        if types == 0 {
            return Ok(());
        }
        let weights = self.page_type_weights(types);
        for (field, factors, part) in [
            ("nand.read_page_type_factors", read, self.read_page_us),
            (
                "nand.program_page_type_factors",
                program,
                self.program_page_us,
            ),
        ] {
            if factors.is_empty() {
                continue;
            }
            if let Some(f) = factors.iter().find(|f| !(f.is_finite() && **f > 0.0)) {
                return Err(err(field, format!("{f}; each factor must be a positive number (a page type's time over the part's)")));
            }
            let mean = factors
                .iter()
                .zip(&weights)
                .map(|(f, w)| f * w)
                .sum::<f64>()
                / weights.iter().sum::<f64>();
            if (mean - 1.0).abs() > 0.005 {
                let counts = weights
                    .iter()
                    .map(|w| format!("{w}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let of = field
                    .trim_start_matches("nand.")
                    .replace("_type_factors", "_us");
                return Err(err(
                    field,
                    format!("their mean over a block ({counts} of each type) is {mean:.4}, not 1 (within 0.5%): the page types split nand.{of} = {part} us, they do not change it (the types' times here average {:.1} us)", mean * part),
                ));
            }
        }
        Ok(())
    }
}
