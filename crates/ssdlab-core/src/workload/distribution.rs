//! The random offset distributions of a job (fio's `random_distribution`): uniform, zipf,
//! pareto, zoned, zoned_abs and sequence, parsed and checked against the job's span.

use super::job::parse_size;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Distribution {
    Uniform,
    /// Zipf with exponent theta, sampled by inverting the continuous approximation of its CDF.
    Zipf(f64),
    /// fio's pareto:h: rank = (n - 1) * u^(ln h / ln(1 - h)).
    Pareto(f64),
    /// fio's zoned and zoned_abs, per direction (read, write, trim): zones of the span as
    /// (cumulative access percent, first slot, slots), each uniform within.
    Zoned(Box<[Vec<Zone>; 3]>),
    /// fio's sequence:B,B,...: the n-th IO of a direction goes to block `blocks[n % len]`
    /// (blocks of `blockalign`), or with `stride` to that block of group `n / len` (groups of
    /// `len` blocks); fio counts each direction's IOs over the whole job, so the pattern does
    /// not start again with a loop, and a strided pattern that passes the span's end ends the
    /// job (fio's io_u.c, `__get_next_rand_offset_sequence`).
    Sequence {
        blocks: Vec<u64>,
        stride: bool,
    },
}

/// The most block indices fio's `sequence` distribution takes (fio's FIO_SEQ_MAX).
const SEQUENCE_MAX: usize = 64;

/// fio's `sequence:B,B,...`: block indices (whole numbers), each within the span.
fn parse_sequence(list: &str, slots: u64, stride: bool) -> Result<Distribution, String> {
    let mut blocks = Vec::new();
    for part in list.split(',') {
        let part = part.trim();
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "random_distribution: sequence element '{part}' is not a block index; accepted: whole numbers 0 or more, e.g. sequence:2,0,1"
            ));
        }
        let b: u64 = part
            .parse()
            .map_err(|_| format!("random_distribution: sequence element '{part}' is too large"))?;
        if b >= slots {
            return Err(format!(
                "random_distribution: sequence block {b} lies beyond the job's span ({slots} blocks of blockalign); accepted: 0 to {}",
                slots.saturating_sub(1)
            ));
        }
        blocks.push(b);
    }
    if blocks.len() > SEQUENCE_MAX {
        return Err(format!(
            "random_distribution: sequence has {} elements; accepted: up to {SEQUENCE_MAX} (as fio)",
            blocks.len()
        ));
    }
    Ok(Distribution::Sequence { blocks, stride })
}

/// One zone of a zoned distribution (cumulative access percent, first slot, slots).
pub(super) type Zone = (u32, u64, u64);

/// fio's `zoned:A/S:A/S...` (S percent of the span; an empty last S takes the rest) or
/// `zoned_abs:A/SIZE:...`, with `,` between the read, write and trim lists (a missing list
/// takes the one before), over `slots` slots of `align` bytes.
fn parse_zones(
    spec: &str,
    absolute: bool,
    slots: u64,
    align: u64,
) -> Result<[Vec<Zone>; 3], String> {
    let kind = if absolute { "zoned_abs" } else { "zoned" };
    let mut lists: Vec<Vec<Zone>> = Vec::new();
    for list in spec.split(',').map(str::trim) {
        let (mut zones, mut access, mut used) = (Vec::new(), 0u32, 0u64);
        let parts: Vec<&str> = list.split(':').filter(|p| !p.is_empty()).collect();
        for (i, part) in parts.iter().enumerate() {
            let (a, z) = part.split_once('/').ok_or_else(|| {
                format!(
                    "random_distribution: {kind} '{part}' is not ACCESS/{}",
                    if absolute { "SIZE" } else { "SPAN" }
                )
            })?;
            let a: u32 = a.trim().parse().map_err(|_| {
                format!("random_distribution: {kind} access '{a}' is not a whole percentage")
            })?;
            let n = if z.trim().is_empty() && i + 1 == parts.len() {
                slots - used
            } else if absolute {
                parse_size(z).map_err(|e| format!("random_distribution: {kind}: {e}"))? / align
            } else {
                let pct: f64 = z.trim().parse().ok().filter(|p: &f64| *p > 0.0 && *p <= 100.0).ok_or_else(|| {
                    format!("random_distribution: {kind} span '{z}' is not a percentage in (0, 100]")
                })?;
                (slots as f64 * pct / 100.0) as u64
            };
            access += a;
            if used + n.max(1) > slots {
                return Err(format!("random_distribution: {kind} '{list}': the zones cover more than the job's span"));
            }
            zones.push((access, used, n.max(1)));
            used += n.max(1);
        }
        if access != 100 {
            return Err(format!(
                "random_distribution: {kind} '{list}': the accesses add up to {access}, not 100"
            ));
        }
        lists.push(zones);
    }
    if lists.len() > 3 {
        return Err(format!(
            "random_distribution: {kind} has {} lists; accepted: READ[,WRITE[,TRIM]]",
            lists.len()
        ));
    }
    while lists.len() < 3 {
        lists.push(lists.last().expect("one list at least").clone());
    }
    Ok([lists.remove(0), lists.remove(0), lists.remove(0)])
}

impl Distribution {
    /// fio's `random_distribution` text over a span of `slots` blocks of `align_bytes`
    /// (`sequence_slots` of them start an IO that fits), with `random_sequence_stride`.
    pub(super) fn parse(
        text: &str,
        stride: bool,
        slots: u64,
        sequence_slots: u64,
        align_bytes: u64,
    ) -> Result<Distribution, String> {
        Ok(match text.split_once(':') {
                None if text == "random" => Self::Uniform,
                Some(("zipf", v)) => {
                    let theta: f64 = v.parse().map_err(|_| format!("random_distribution: '{v}' is not a number"))?;
                    if theta.is_nan() || theta <= 0.0 || theta == 1.0 {
                        return Err("random_distribution: zipf theta must be > 0 and not 1".into());
                    }
                    Self::Zipf(theta)
                }
                Some(("pareto", v)) => {
                    let h: f64 = v.parse().map_err(|_| format!("random_distribution: '{v}' is not a number"))?;
                    if !(h > 0.0 && h < 1.0) {
                        return Err("random_distribution: pareto h must be in (0, 1)".into());
                    }
                    Self::Pareto(h)
                }
                Some((kind @ ("zoned" | "zoned_abs"), v)) => Self::Zoned(Box::new(parse_zones(
                    v,
                    kind == "zoned_abs",
                    slots,
                    align_bytes,
                )?)),
                Some(("sequence", v)) => parse_sequence(v, sequence_slots, stride)?,
                None if text == "sequence" => {
                    return Err("random_distribution: sequence needs its block indices, e.g. sequence:2,0,1".into())
                }
                _ => {
                    return Err(format!(
                        "random_distribution: '{}' is not supported; accepted: random, zipf:THETA, pareto:H, zoned:A/S:..., zoned_abs:A/SIZE:..., sequence:B,B,...",
                        text
                    ))
                }
            })
    }
}
