//! Whole-structure checks of the FTL and a digest of its state (tests, determinism).

use super::*;

impl Ftl {
    pub fn state_digest(&self) -> u64 {
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        let mut eat = |x: u32| {
            h = (h ^ x as u64).wrapping_mul(0x0000_0100_0000_01B3);
        };
        self.map.digest_into(&mut eat);
        self.blocks.erase_count.iter().for_each(|&x| eat(x));
        self.blocks.state.iter().for_each(|&x| eat(x as u32));
        h
    }

    /// Check every invariant of the whole structure; an error says which one failed.
    pub fn verify(&self) -> Result<(), String> {
        let g = &self.geometry;
        self.map.verify(g)?;
        for block in 0..self.blocks.state.len() {
            let valid = self.map.valid(block as u32);
            if matches!(
                self.blocks.state[block],
                BlockState::Free | BlockState::Retired
            ) && valid != 0
            {
                return Err(format!(
                    "{:?} block {block} holds {valid} valid units",
                    self.blocks.state[block]
                ));
            }
        }
        for (die, d) in self.dies.iter().enumerate() {
            let states_free = (0..g.blocks_per_die)
                .filter(|&b| {
                    self.blocks.state[(die as u32 * g.blocks_per_die + b) as usize]
                        == BlockState::Free
                })
                .count() as u32;
            if states_free != d.free.len() {
                return Err(format!(
                    "die {die}: {states_free} free blocks, pool holds {}",
                    d.free.len()
                ));
            }
            for &b in &self.collector.dies[die].sealed_list {
                if self.blocks.state[b as usize] != BlockState::Sealed {
                    return Err(format!(
                        "block {b} listed as sealed in state {:?}",
                        self.blocks.state[b as usize]
                    ));
                }
            }
        }
        if self.collector.policy.kind == GcPolicy::Greedy {
            self.collector
                .buckets
                .verify(self.map.block_entries(), &self.blocks.sealed_pos)?;
        }
        Ok(())
    }
}
