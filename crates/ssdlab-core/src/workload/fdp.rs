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
    /// plid_select=scheme: (start, end, placement identifier) by offset, first match wins.
    pub(super) scheme: Option<Vec<(u64, u64, u16)>>,
}

/// fio's limit on a dp_scheme's entries (dataplacement.h DP_MAX_SCHEME_ENTRIES).
const MAX_SCHEME_ENTRIES: usize = 32;

/// A dp_scheme's text: `START,END,PID` lines (blank lines skipped; fio applies the first 32).
fn parse_scheme(text: &str) -> Result<Vec<(u64, u64, u16)>, String> {
    let mut entries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let bad = || {
            let shown: String = line.chars().take(40).collect();
            format!("dp_scheme: line {}: '{shown}'; accepted: START,END,PID (whole byte offsets START < END, a placement identifier 0 to 65534)", n + 1)
        };
        let parts: Vec<&str> = line.split(',').map(str::trim).collect();
        let [start, end, pid] = parts[..] else {
            return Err(bad());
        };
        let (Ok(start), Ok(end), Ok(pid)) =
            (start.parse::<u64>(), end.parse::<u64>(), pid.parse::<u16>())
        else {
            return Err(bad());
        };
        if start >= end || pid == u16::MAX {
            return Err(bad());
        }
        if entries.len() < MAX_SCHEME_ENTRIES {
            entries.push((start, end, pid));
        }
    }
    if entries.is_empty() {
        return Err("dp_scheme: no entries; accepted: START,END,PID lines".into());
    }
    Ok(entries)
}

impl PlacementChoice {
    /// The placement identifier of a job's `placed`-th write: its index in turn or drawn
    /// from `rng`, into the drive's RUH status list.
    pub(super) fn pid(
        &self,
        dev: &crate::device::Device,
        placed: u64,
        rng: &mut crate::rng::Rng,
        offset: u64,
    ) -> u16 {
        if let Some(scheme) = &self.scheme {
            // fio's dp_fill_dspec_data: the entry's value is the identifier itself.
            return scheme
                .iter()
                .find(|&&(start, end, _)| start <= offset && offset < end)
                .map_or(0, |e| e.2);
        }
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
        let (random, by_scheme) = match self.plid_select.as_str() {
            "roundrobin" => (false, false),
            "random" => (true, false),
            "scheme" => (false, true),
            other => {
                return Err(format!(
                    "plid_select: '{other}'; accepted: roundrobin, random, scheme (with dp_scheme)"
                ))
            }
        };
        let scheme = match (&self.dp_scheme, by_scheme) {
            (Some(text), true) => Some(parse_scheme(text)?),
            (None, true) => {
                return Err(
                    "plid_select: scheme needs dp_scheme (a file of START,END,PID lines)".into(),
                )
            }
            // fio reads a dp_scheme without plid_select=scheme and does not use it.
            (_, false) => None,
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
        Ok(Some(PlacementChoice {
            indices,
            random,
            scheme,
        }))
    }
}
