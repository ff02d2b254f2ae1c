//! A 4-ary min-heap for the event kernel's queue. Every entry has a distinct `u128` key (a time
//! in the high bits and a tie-breaker in the low ones), so the order popped is fully determined.
//!
//! Four children per node: the queue holds one or two entries per die (about 150 on a
//! 64-die drive, several hundred on the 512-die P320h), and a pop walks half the levels of a
//! binary heap's, comparing four children that share a cache line. Measured against std's
//! BinaryHeap in the event kernel (GC steady state, `examples/steady`, alternated):
//! micron-p320h-700 570-577 -> 515-538 ns per NAND unit op, crucial-m500-960 99-101 -> 91-96;
//! on an 8-die drive it is no faster. A pop moves a hole down (one copy per level, not a swap)
//! and picks the least of four children as a small tournament of selects: a timed sequential
//! fill of crucial-m500-960 (about 155 pending events, 10 per 128 KiB write) 10.6 -> 8.0-9.0 s,
//! micron-p320h-175 GC steady state 438-463 -> 419-425 ns per NAND unit op, crucial-m500-960's
//! unchanged (entries are `Copy`, so this needs no unsafe code).

/// What the heap orders by: smallest key first; keys of entries in one heap are distinct.
pub(crate) trait Keyed {
    fn key(&self) -> u128;
}

/// The lesser of two (index, key) pairs.
#[inline(always)]
pub(crate) fn min_of(a: usize, ka: u128, b: usize, kb: u128) -> (usize, u128) {
    if kb < ka {
        (b, kb)
    } else {
        (a, ka)
    }
}

#[derive(Clone, Debug)]
pub(crate) struct QuadHeap<T> {
    entries: Vec<T>,
}

/// Not derived: that would ask the entries for a default too.
impl<T> Default for QuadHeap<T> {
    fn default() -> Self {
        QuadHeap {
            entries: Vec::new(),
        }
    }
}

impl<T: Keyed + Copy> QuadHeap<T> {
    /// The entry with the smallest key.
    #[inline]
    pub fn peek(&self) -> Option<&T> {
        self.entries.first()
    }

    #[inline]
    pub fn push(&mut self, entry: T) {
        let key = entry.key();
        let mut i = self.entries.len();
        self.entries.push(entry);
        while i > 0 {
            let parent = (i - 1) / 4;
            if self.entries[parent].key() <= key {
                break;
            }
            self.entries.swap(i, parent);
            i = parent;
        }
    }

    /// Remove the entry with the smallest key.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        let last = self.entries.pop()?;
        if self.entries.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.entries[0], last);
        self.sift_down_root();
        Some(top)
    }

    /// The root goes down, each step to the least of up to four children: a hole moves down
    /// (each child it passes is copied up once) and the root's entry is written once at the
    /// end. The least of four children is found as the winners of two pairs and the winner of
    /// those (selects the compiler turns into conditional moves, not dependent branches).
    #[inline]
    fn sift_down_root(&mut self) {
        let entries = &mut self.entries[..];
        let n = entries.len();
        let moving = entries[0];
        let key = moving.key();
        let mut i = 0;
        loop {
            let first = 4 * i + 1;
            let (least, least_key) = if let Some(c) = entries.get(first..first + 4) {
                let (a, ka) = min_of(0, c[0].key(), 1, c[1].key());
                let (b, kb) = min_of(2, c[2].key(), 3, c[3].key());
                let (m, km) = min_of(a, ka, b, kb);
                (first + m, km)
            } else if first < n {
                let mut least = first;
                let mut least_key = entries[first].key();
                for (c, entry) in entries.iter().enumerate().skip(first + 1) {
                    let k = entry.key();
                    if k < least_key {
                        least = c;
                        least_key = k;
                    }
                }
                (least, least_key)
            } else {
                break;
            };
            if key <= least_key {
                break;
            }
            entries[i] = entries[least];
            i = least;
        }
        entries[i] = moving;
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Keyed for u128 {
        fn key(&self) -> u128 {
            *self
        }
    }

    #[test]
    fn pops_every_key_in_order_whatever_the_pushes() {
        let mut h = QuadHeap::default();
        let mut rng = crate::rng::Rng::new(7);
        let mut all = Vec::new();
        for i in 0..5_000u128 {
            let k = (rng.below(300) as u128) << 64 | i;
            h.push(k);
            all.push(k);
            if i % 3 == 0 {
                // Pops interleaved with pushes take the least pushed so far.
                let least = *all.iter().min().unwrap();
                all.retain(|&a| a != least);
                assert_eq!(h.pop(), Some(least));
            }
        }
        all.sort_unstable();
        let rest: Vec<u128> = std::iter::from_fn(|| h.pop()).collect();
        assert_eq!(rest, all);
    }
}
