//! What this machine's memory costs the simulator: random loads into tables the size of a
//! drive's map, allocated as the map is (`mem::zeroed_table`: transparent huge pages where the
//! kernel offers them). Run it before timing anything: the simulator's speed in GC steady state
//! follows these figures more than the CPU's (a flat map outgrows every cache), and VMs of the
//! same name differ by 2x or more in them.
//!
//! For each table size, over one entry per 64-byte line: `dependent_ns`, one load after
//! another along a random cycle through the lines (each waits for the one before: the latency
//! of a miss, page walk included), and `independent_ns`, loads of lines at random none of
//! which waits for another (what the simulator's prefetching can reach at best: how many
//! misses the core and its page walkers keep in flight; the random draw included). Also the
//! MiB of the process on huge pages, and the seconds the table took to build.
//! cargo run --release -p ssdlab-core --example memprobe -- [MiB ...]   (default 32 256 2048)
use ssdlab_core::rng::Rng;

mod common;

/// u32 entries per 64-byte cache line.
const LINE: usize = 16;

/// A table of `lines` cache lines whose first entries make one random cycle through the lines
/// (Sattolo's algorithm): following it from any line visits every line once.
fn cycle(lines: usize, rng: &mut Rng) -> Vec<u32> {
    let mut order: Vec<u32> = (0..lines as u32).collect();
    for i in (1..lines).rev() {
        let j = rng.below(i as u64) as usize;
        order.swap(i, j);
    }
    let mut table = ssdlab_core::mem::zeroed_table(lines * LINE);
    for (line, &next) in order.iter().enumerate() {
        table[line * LINE] = next * LINE as u32;
    }
    table
}

#[allow(clippy::disallowed_methods)]
fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| {
            a.parse().ok().filter(|&mib| mib > 0).unwrap_or_else(|| {
                eprintln!("memprobe: table size '{a}': accepted: a whole number of MiB above 0");
                std::process::exit(2)
            })
        })
        .collect();
    let sizes = if sizes.is_empty() {
        vec![32, 256, 2048]
    } else {
        sizes
    };
    let mut rng = Rng::new(1);
    for mib in sizes {
        let lines = (mib << 20) / 64;
        let t = std::time::Instant::now();
        let table = cycle(lines, &mut rng);
        let built_s = t.elapsed().as_secs_f64();
        let huge_mib = common::huge_pages_mib();
        let loads = 4_000_000usize;
        let t = std::time::Instant::now();
        let mut at = 0u32;
        for _ in 0..loads {
            at = table[at as usize];
        }
        let dependent_ns = t.elapsed().as_nanos() as f64 / loads as f64;
        let t = std::time::Instant::now();
        let mut sum = 0u64;
        for _ in 0..loads {
            sum += table[rng.below(lines as u64) as usize * LINE] as u64;
        }
        let independent_ns = t.elapsed().as_nanos() as f64 / loads as f64;
        println!(
            "{{\"table_mib\": {mib}, \"dependent_ns\": {dependent_ns:.1}, \"independent_ns\": {independent_ns:.1}, \"huge_pages_mib\": {huge_mib}, \"built_s\": {built_s:.2}, \"check\": {}}}",
            (at as u64 + sum) % 7
        );
    }
}
