//! Whole-structure checks of the FTL and a digest of its state (tests, determinism).

use super::*;

impl Ftl {
    pub fn state_digest(&self) -> u64 {
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        let mut eat = |x: u32| {
            h = (h ^ x as u64).wrapping_mul(0x0000_0100_0000_01B3);
        };
        self.l2p.iter().for_each(|&x| eat(x));
        self.p2l.iter().for_each(|&x| eat(x));
        self.valid.iter().for_each(|&x| eat(x));
        self.erase_count.iter().for_each(|&x| eat(x));
        self.state.iter().for_each(|&x| eat(x as u32));
        h
    }

    /// Check every invariant of the whole structure; an error says which one failed.
    pub fn verify(&self) -> Result<(), String> {
        let g = &self.geometry;
        let mut mapped = 0u64;
        for (lba, &ppn) in self.l2p.iter().enumerate() {
            if ppn != UNMAPPED {
                mapped += 1;
                if self.p2l[ppn as usize] != lba as u32 {
                    return Err(format!(
                        "l2p[{lba}] = {ppn} but p2l[{ppn}] = {}",
                        self.p2l[ppn as usize]
                    ));
                }
            }
        }
        if mapped != self.mapped_units {
            return Err(format!(
                "{mapped} mapped units counted, {} recorded",
                self.mapped_units
            ));
        }
        let upb = g.units_per_block as usize;
        for (block, chunk) in self.p2l.chunks(upb).enumerate() {
            let mut valid = 0;
            for (i, &lba) in chunk.iter().enumerate() {
                if lba != UNMAPPED {
                    valid += 1;
                    let ppn = (block * upb + i) as u32;
                    if self.l2p[lba as usize] != ppn {
                        return Err(format!(
                            "p2l[{ppn}] = {lba} but l2p[{lba}] = {}",
                            self.l2p[lba as usize]
                        ));
                    }
                    let pu = (i as u32) / g.units_per_pu;
                    if g.is_parity_pu(pu) {
                        return Err(format!("ppn {ppn} holds data in a parity PU"));
                    }
                }
            }
            if valid != self.valid[block] {
                return Err(format!(
                    "block {block}: {valid} valid units, count says {}",
                    self.valid[block]
                ));
            }
            if matches!(self.state[block], BlockState::Free | BlockState::Retired) && valid != 0 {
                return Err(format!(
                    "{:?} block {block} holds {valid} valid units",
                    self.state[block]
                ));
            }
        }
        for (die, d) in self.dies.iter().enumerate() {
            let states_free = (0..g.blocks_per_die)
                .filter(|&b| {
                    self.state[(die as u32 * g.blocks_per_die + b) as usize] == BlockState::Free
                })
                .count() as u32;
            if states_free != d.free.len() {
                return Err(format!(
                    "die {die}: {states_free} free blocks, pool holds {}",
                    d.free.len()
                ));
            }
            for &b in &d.sealed_list {
                if self.state[b as usize] != BlockState::Sealed {
                    return Err(format!(
                        "block {b} listed as sealed in state {:?}",
                        self.state[b as usize]
                    ));
                }
            }
        }
        if self.policy == GcPolicy::Greedy {
            self.buckets.verify(&self.valid, &self.sealed_pos)?;
        }
        Ok(())
    }
}
