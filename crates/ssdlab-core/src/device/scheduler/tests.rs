use super::active_dies::{BUCKETS, BUCKET_SHIFT};
use super::*;
use crate::config::tests::small;
use crate::ftl::UNMAPPED;
use crate::time::SimDuration;

/// Whether `die` may start at `now` with at most `max` dies busy, by looking at every die.
fn by_scan(nand: &Nand, dies: u32, die: u32, now: SimTime, max: u32) -> Option<SimTime> {
    let others = (0..dies).filter(|&d| d != die).map(|d| nand.die_free_at(d));
    let busy: Vec<SimTime> = others.filter(|&t| t > now).collect();
    (busy.len() as u32 >= max).then(|| busy.iter().min().copied())?
}

/// The wheel answers as a look at every die would, whatever the operations: ends within a
/// bucket of now, ends beyond the wheel (programs whose data comes 40-200 ms later), time
/// jumping over the whole wheel, a limit that starts to hold in the middle of a run.
#[test]
fn active_dies_answer_as_a_scan_of_every_die() {
    let mut c = small();
    c.nand.channels = 4;
    c.nand.dies = 24;
    let g = c.validate().unwrap();
    let mut nand = Nand::new(&c.nand, &g);
    let mut active = ActiveDies::default();
    let mut rng = crate::rng::Rng::new(11);
    let mut now = SimTime::ZERO;
    let (mut waited, mut far) = (0, 0);
    for step in 0..60_000u32 {
        if step == 500 {
            active.rebuild(&nand, g.dies);
        }
        now += SimDuration(match rng.below(100) {
            0 => 50_000_000 + rng.below(10_000_000),
            1..=9 => 0,
            _ => rng.below(300_000),
        });
        let die = rng.below(g.dies as u64) as u32;
        let max = 1 + rng.below(24) as u32;
        if step >= 500 {
            let expected = by_scan(&nand, g.dies, die, now, max);
            assert_eq!(
                active.must_wait(&nand, die, nand.die_free_at(die), now, max),
                expected,
                "step {step}"
            );
            waited += expected.is_some() as u32;
        }
        let before = nand.die_free_at(die);
        match rng.below(40) {
            0..=3 => {
                nand.erase(now, die);
            }
            4 => {
                let data = now + SimDuration(40_000_000 + rng.below(160_000_000));
                nand.program(now, data, die, 1, true, UNMAPPED);
            }
            5..=20 => {
                nand.program(now, now, die, 2, true, UNMAPPED);
            }
            _ => {
                nand.read(now, die, 1, 4096, 1);
            }
        }
        let after = nand.die_free_at(die);
        far += (after.0 - now.0 > BUCKETS << BUCKET_SHIFT) as u32;
        if step >= 500 {
            active.array_changed(&nand, now, die, before, after);
        }
    }
    // Both answers came often, and some ends were beyond the wheel.
    assert!(waited > 5_000 && waited < 55_000, "{waited}");
    assert!(far > 1_000, "{far}");
}
