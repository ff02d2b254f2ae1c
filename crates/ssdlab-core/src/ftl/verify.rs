//! Whole-structure checks of the FTL and a digest of its state (tests, determinism).

use super::*;

impl Ftl {
    pub fn state_digest(&self) -> u64 {
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        let mut eat = |x: u32| {
            h = (h ^ x as u64).wrapping_mul(0x0000_0100_0000_01B3);
        };
        self.map.digest_into(&mut eat);
        self.blocks.digest_into(&mut eat);
        h
    }

    /// Check every invariant of the whole structure; an error says which one failed.
    pub fn verify(&self) -> Result<(), String> {
        let g = &self.geometry;
        self.map.verify(g)?;
        self.blocks
            .verify(|b| self.map.valid(b), self.map.block_entries())?;
        Ok(())
    }
}
