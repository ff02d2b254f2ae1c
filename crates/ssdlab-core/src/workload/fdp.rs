//! fio's FDP options on a job: which placement identifier each write carries (`fdp`,
//! `dataplacement`, `plids`/`fdp_pli`, `plid_select`/`fdp_pli_select`).

use super::job::Job;

/// Which placement identifier index each write of an FDP job takes (fio's plids and
/// plid_select).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct PlacementChoice {
    /// The indices, in the order given; empty: every index of the drive's list.
    pub(super) indices: Vec<u16>,
    pub(super) random: bool,
}

impl PlacementChoice {
    /// The placement identifier of a job's `placed`-th write: its index in turn or drawn
    /// from `rng`, into the drive's RUH status list.
    pub(super) fn pid(
        &self,
        dev: &crate::device::Device,
        placed: u64,
        rng: &mut crate::rng::Rng,
    ) -> u16 {
        let n = if self.indices.is_empty() {
            dev.ftl.placement_ids() as u64
        } else {
            self.indices.len() as u64
        };
        let i = if self.random {
            rng.below(n.max(1))
        } else {
            placed % n.max(1)
        };
        let index = self.indices.get(i as usize).copied().unwrap_or(i as u16);
        dev.ftl.placement_id(index)
    }
}

impl Job {
    /// fio's fdp, dataplacement, plids (fdp_pli) and plid_select (fdp_pli_select).
    pub(super) fn placement_choice(&self) -> Result<Option<PlacementChoice>, String> {
        let fdp = match self.dataplacement.as_str() {
            "none" => self.fdp,
            "fdp" => true,
            other => {
                return Err(format!(
                    "dataplacement: '{other}'; accepted: none, fdp (streams is not modelled)"
                ))
            }
        };
        let random = match self.plid_select.as_str() {
            "roundrobin" => false,
            "random" => true,
            other => {
                return Err(format!(
                    "plid_select: '{other}'; accepted: roundrobin, random (scheme with dp_scheme is not modelled)"
                ))
            }
        };
        if !fdp {
            if self.plids.is_some() {
                return Err("plids: placement identifiers without fdp; accepted: with fdp=1 or dataplacement=fdp".into());
            }
            return Ok(None);
        }
        let mut indices = Vec::new();
        for part in self.plids.as_deref().unwrap_or("").split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let index = |t: &str| {
                t.trim().parse::<u16>().ok().filter(|&i| i < u16::MAX).ok_or_else(|| {
                    format!("plids: '{part}'; accepted: indices 0 to 65534 and ranges A-B, joined by commas")
                })
            };
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (index(a)?, index(b)?);
                    if a > b {
                        return Err(format!(
                            "plids: '{part}': the range's start is above its end"
                        ));
                    }
                    indices.extend(a..=b);
                }
                None => indices.push(index(part)?),
            }
        }
        Ok(Some(PlacementChoice { indices, random }))
    }
}
