//! Block pools for the FTL: free blocks (FIFO, or least-worn first for dynamic wear levelling)
//! and greedy buckets of sealed blocks by valid count.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

const NONE: u32 = u32::MAX;

/// Erased blocks of one die, ready to open.
#[derive(Clone, Debug)]
pub enum FreePool {
    /// Oldest-freed first.
    Fifo(VecDeque<u32>),
    /// Least-worn first (dynamic wear levelling); ties broken by block number.
    LeastWorn(LeastWorn),
}

/// (erase count, block) pairs, the least first. The pairs that came in increasing order (a
/// fresh drive's blocks, all at erase count 0, in block order) wait in a queue, the others in
/// a heap; the least is the first of the queue or the top of the heap. A sequential fill of
/// micron-p320h-700 took 1.4M blocks from heaps of 4,000 (a pop: a dozen dependent loads, a
/// microsecond, 5% of the fill); from the queue it is one load in order.
#[derive(Clone, Debug, Default)]
pub struct LeastWorn {
    in_order: VecDeque<(u32, u32)>,
    others: BinaryHeap<Reverse<(u32, u32)>>,
}

impl LeastWorn {
    fn push(&mut self, key: (u32, u32)) {
        if self.in_order.back().is_none_or(|&last| last < key) {
            self.in_order.push_back(key);
        } else {
            self.others.push(Reverse(key));
        }
    }

    fn pop(&mut self) -> Option<(u32, u32)> {
        match (self.in_order.front(), self.others.peek()) {
            (Some(&a), Some(&Reverse(b))) if b < a => self.others.pop().map(|Reverse(k)| k),
            (Some(_), _) => self.in_order.pop_front(),
            (None, _) => self.others.pop().map(|Reverse(k)| k),
        }
    }

    fn len(&self) -> usize {
        self.in_order.len() + self.others.len()
    }
}

impl FreePool {
    pub fn new(least_worn: bool) -> Self {
        if least_worn {
            FreePool::LeastWorn(LeastWorn::default())
        } else {
            FreePool::Fifo(VecDeque::new())
        }
    }
    pub fn is_least_worn(&self) -> bool {
        matches!(self, FreePool::LeastWorn(_))
    }
    pub fn push(&mut self, block: u32, erase_count: u32) {
        match self {
            FreePool::Fifo(q) => q.push_back(block),
            FreePool::LeastWorn(h) => h.push((erase_count, block)),
        }
    }
    pub fn pop(&mut self) -> Option<u32> {
        match self {
            FreePool::Fifo(q) => q.pop_front(),
            FreePool::LeastWorn(h) => h.pop().map(|(_, b)| b),
        }
    }
    pub fn len(&self) -> u32 {
        match self {
            FreePool::Fifo(q) => q.len() as u32,
            FreePool::LeastWorn(h) => h.len() as u32,
        }
    }
}

/// Sealed blocks of each die ordered for greedy selection: the fewest valid units first, the
/// most recently entered among ties (the order of a stack per valid count, without the
/// stacks). Each candidate block holds a key, its valid count above the sequence number of
/// its last entry (reversed), so the least key of a die is its victim; each chunk of
/// [`CHUNK`] blocks of a die keeps its least key. A unit going stale (every host overwrite)
/// stores the block's new key and lowers its chunk's least: one line of the block table and
/// one of a small one. Linked lists per valid count touched the block's neighbours' links and
/// the bucket's head as well, random lines into tables beyond the caches on the big drives
/// (2M blocks, 16 MB of links on micron-p320h-700). Choosing a victim reads the die's chunk
/// minima and one chunk; a chunk is read again when its least block leaves.
#[derive(Clone, Debug)]
pub struct Buckets {
    /// Per block: its key while it is a candidate, [`OUT`] otherwise.
    keys: Vec<u64>,
    /// Per die and chunk: the least key of its blocks (OUT when none is a candidate).
    chunk_min: Vec<u64>,
    blocks_per_die: u32,
    chunks_per_die: u32,
    /// The next entry's sequence number.
    sequence: u64,
}

/// Blocks per chunk: a chunk's keys are eight cache lines.
const CHUNK: u32 = 64;
/// The key of a block that is no candidate.
const OUT: u64 = u64::MAX;
/// Bits of a key below its valid count: the reversed entry sequence number (2^48 entries, an
/// exabyte of 4 KiB overwrites, before the candidates are numbered afresh).
const SEQUENCE_BITS: u32 = 48;
const SEQUENCE_MAX: u64 = (1 << SEQUENCE_BITS) - 1;

impl Buckets {
    /// `dies` = 0 builds an empty structure (policy other than greedy). `blocks`: of all dies,
    /// numbered die by die.
    pub fn new(dies: u32, capacity: u32, blocks: usize) -> Self {
        let used = dies > 0;
        assert!(
            (capacity as u64) < (OUT >> SEQUENCE_BITS),
            "{capacity} units per block: a key holds up to 65534"
        );
        let blocks_per_die = if used { blocks as u32 / dies } else { 0 };
        let chunks_per_die = blocks_per_die.div_ceil(CHUNK);
        Buckets {
            keys: crate::mem::table(if used { blocks } else { 0 }, OUT),
            chunk_min: vec![OUT; (dies * chunks_per_die) as usize],
            blocks_per_die,
            chunks_per_die,
            sequence: 0,
        }
    }

    pub fn clear(&mut self) {
        self.keys.fill(OUT);
        self.chunk_min.fill(OUT);
        self.sequence = 0;
    }

    /// The chunk of `block` (of `die`), as an index into `chunk_min`.
    #[inline]
    fn chunk(&self, die: u32, block: u32) -> usize {
        (die * self.chunks_per_die + (block - die * self.blocks_per_die) / CHUNK) as usize
    }

    /// The blocks of chunk `c` (an index into `chunk_min`).
    fn chunk_blocks(&self, c: usize) -> std::ops::Range<usize> {
        let (die, i) = (
            c as u32 / self.chunks_per_die,
            c as u32 % self.chunks_per_die,
        );
        let first = die * self.blocks_per_die + i * CHUNK;
        let end = (first + CHUNK).min((die + 1) * self.blocks_per_die);
        first as usize..end as usize
    }

    /// A new key for a block holding `valid` units: after every key made so far among equals.
    #[inline]
    fn next_key(&mut self, valid: u32) -> u64 {
        if self.sequence == SEQUENCE_MAX {
            self.renumber();
        }
        let key = ((valid as u64) << SEQUENCE_BITS) | (SEQUENCE_MAX - self.sequence);
        self.sequence += 1;
        key
    }

    /// The sequence numbers run out: number the candidates afresh from 0 in the order they
    /// entered (so every comparison stays as it was), and their chunks' least keys with them.
    #[cold]
    fn renumber(&mut self) {
        let mut entered: Vec<(u64, usize)> = (self.keys.iter().enumerate())
            .filter(|&(_, &k)| k != OUT)
            .map(|(b, &k)| (SEQUENCE_MAX - (k & SEQUENCE_MAX), b))
            .collect();
        entered.sort_unstable();
        for (sequence, &(_, b)) in entered.iter().enumerate() {
            let valid = self.keys[b] >> SEQUENCE_BITS;
            self.keys[b] = (valid << SEQUENCE_BITS) | (SEQUENCE_MAX - sequence as u64);
        }
        self.sequence = entered.len() as u64;
        for c in 0..self.chunk_min.len() {
            self.chunk_min[c] = self.least_of_chunk(c);
        }
    }

    /// The least key among chunk `c`'s blocks (OUT when none is a candidate).
    fn least_of_chunk(&self, c: usize) -> u64 {
        self.keys[self.chunk_blocks(c)]
            .iter()
            .copied()
            .min()
            .unwrap_or(OUT)
    }

    /// `block` (of `die`) enters with `valid` units.
    #[inline]
    fn enter(&mut self, die: u32, block: u32, valid: u32) {
        let key = self.next_key(valid);
        self.keys[block as usize] = key;
        let c = self.chunk(die, block);
        self.chunk_min[c] = self.chunk_min[c].min(key);
    }

    /// Whether `block` is in a bucket (it is sealed, under the greedy policy).
    #[inline]
    pub fn contains(&self, block: u32) -> bool {
        self.keys.get(block as usize).is_some_and(|&k| k != OUT)
    }

    #[inline]
    pub fn insert(&mut self, die: u32, block: u32, valid: u32) {
        debug_assert_eq!(self.keys[block as usize], OUT);
        self.enter(die, block, valid);
    }

    pub fn remove(&mut self, die: u32, block: u32, valid: u32) {
        let key = std::mem::replace(&mut self.keys[block as usize], OUT);
        debug_assert_ne!(key, OUT, "block {block} is in no bucket");
        debug_assert_eq!(key >> SEQUENCE_BITS, valid as u64);
        let c = self.chunk(die, block);
        if self.chunk_min[c] == key {
            self.chunk_min[c] = self.least_of_chunk(c);
        }
    }

    /// Start loading `block`'s key (a unit of it is about to go stale); no effect on values.
    #[inline]
    pub fn prefetch(&self, block: u32) {
        crate::mem::prefetch(&self.keys, block as usize);
    }

    /// A unit of `block` went stale: its valid count drops from `valid_before`.
    #[inline]
    pub fn move_down(&mut self, die: u32, block: u32, valid_before: u32) {
        debug_assert_eq!(
            self.keys[block as usize] >> SEQUENCE_BITS,
            valid_before as u64
        );
        // The new key is below the old one, so the chunk's least stays right.
        self.enter(die, block, valid_before - 1);
    }

    /// The sealed block of `die` with the fewest valid units (the most recently entered among
    /// ties: sealed with that count, or moved down to it).
    pub fn min(&self, die: u32) -> Option<u32> {
        let chunks =
            (die * self.chunks_per_die) as usize..((die + 1) * self.chunks_per_die) as usize;
        let (c, &least) = self.chunk_min[chunks.clone()]
            .iter()
            .enumerate()
            .min_by_key(|&(_, &k)| k)?;
        if least == OUT {
            return None;
        }
        let blocks = self.chunk_blocks(chunks.start + c);
        let at = self.keys[blocks.clone()].iter().position(|&k| k == least)?;
        Some((blocks.start + at) as u32)
    }

    /// Every sealed block has the key of its valid count, only sealed blocks have one, keys are
    /// distinct, and each chunk's least is right.
    pub fn verify(&self, valid: &[u32], sealed_pos: &[u32]) -> Result<(), String> {
        let mut sequences = Vec::new();
        for (b, &key) in self.keys.iter().enumerate() {
            let sealed = sealed_pos[b] != NONE;
            if (key != OUT) != sealed {
                return Err(format!("block {b}: sealed {sealed}, key {key:#x}"));
            }
            if key == OUT {
                continue;
            }
            if key >> SEQUENCE_BITS != valid[b] as u64 {
                return Err(format!(
                    "block {b} keyed with {} valid units has {}",
                    key >> SEQUENCE_BITS,
                    valid[b]
                ));
            }
            sequences.push(key & SEQUENCE_MAX);
        }
        sequences.sort_unstable();
        if let Some(w) = sequences.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!(
                "entry sequence {:#x} used twice",
                SEQUENCE_MAX - w[0]
            ));
        }
        for c in 0..self.chunk_min.len() {
            let least = self.least_of_chunk(c);
            if self.chunk_min[c] != least {
                return Err(format!(
                    "chunk {c}: least key {:#x}, recorded {:#x}",
                    least, self.chunk_min[c]
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The least-worn pool gives its blocks in the order a heap of (erase count, block) does:
    /// a fresh die's blocks in order, then blocks coming back with one more erase each, in and
    /// out of order, interleaved with takes.
    #[test]
    fn least_worn_pool_pops_in_heap_order() {
        let mut rng = crate::rng::Rng::new(11);
        let mut pool = FreePool::new(true);
        let mut reference = BinaryHeap::new();
        let mut erase_count = vec![0u32; 500];
        for b in 0..400 {
            pool.push(b, 0);
            reference.push(Reverse((0, b)));
        }
        let mut out = Vec::new();
        for _ in 0..20_000 {
            if rng.below(2) == 0 || reference.len() < 5 {
                // A block not in the pool comes back erased once more.
                let b = rng.below(500) as u32;
                if reference.iter().any(|&Reverse((_, x))| x == b) {
                    continue;
                }
                erase_count[b as usize] += 1;
                pool.push(b, erase_count[b as usize]);
                reference.push(Reverse((erase_count[b as usize], b)));
            } else {
                let want = reference.pop().map(|Reverse((_, b))| b);
                assert_eq!(pool.pop(), want);
                out.push(want);
            }
            assert_eq!(pool.len() as usize, reference.len());
        }
        assert!(out.len() > 5_000);
        while let Some(Reverse((_, b))) = reference.pop() {
            assert_eq!(pool.pop(), Some(b));
        }
        assert_eq!(pool.pop(), None);
    }

    /// Blocks enter, move down and leave at random on three dies of 150 blocks (chunks of 64,
    /// the last one short); `min` gives what stacks per valid count would: the fewest valid,
    /// the most recently entered among ties. Stale keys and chunk minima are caught by `verify`.
    #[test]
    fn buckets_choose_as_stacks_per_valid_count() {
        let (dies, per_die, capacity) = (3u32, 150u32, 6u32);
        let blocks = (dies * per_die) as usize;
        let mut b = Buckets::new(dies, capacity, blocks);
        // The reference: per die and valid count, a stack of blocks (the last entered on top).
        let mut stacks = vec![vec![Vec::<u32>::new(); capacity as usize + 1]; dies as usize];
        let mut valid = vec![0u32; blocks];
        let mut sealed = vec![NONE; blocks];
        let mut rng = crate::rng::Rng::new(5);
        let mut chosen = 0;
        for step in 0..60_000 {
            let block = rng.below(blocks as u64) as u32;
            let die = block / per_die;
            let stack = &mut stacks[die as usize];
            if sealed[block as usize] == NONE {
                let v = rng.below(capacity as u64 + 1) as u32;
                b.insert(die, block, v);
                stack[v as usize].push(block);
                valid[block as usize] = v;
                sealed[block as usize] = 0;
            } else if valid[block as usize] > 0 && rng.below(4) > 0 {
                let v = valid[block as usize];
                b.move_down(die, block, v);
                stack[v as usize].retain(|&x| x != block);
                stack[v as usize - 1].push(block);
                valid[block as usize] = v - 1;
            } else {
                // The die's victim leaves, or this block (wear levelling, retirement).
                let leaving = if rng.below(2) == 0 {
                    b.min(die).unwrap()
                } else {
                    block
                };
                let v = valid[leaving as usize];
                b.remove(die, leaving, v);
                stack[v as usize].retain(|&x| x != leaving);
                sealed[leaving as usize] = NONE;
            }
            for d in 0..dies {
                let want = stacks[d as usize].iter().find_map(|s| s.last().copied());
                assert_eq!(b.min(d), want, "step {step}, die {d}");
                chosen += want.is_some() as u32;
            }
            if step % 1000 == 0 {
                b.verify(&valid, &sealed).unwrap();
            }
            if step == 30_000 {
                // The sequence numbers run out 200 entries on: the candidates are numbered
                // afresh, the choices stay those of the stacks.
                b.sequence = SEQUENCE_MAX - 200;
            }
        }
        assert!(chosen > 100_000);
        assert!(b.sequence < SEQUENCE_MAX - 200, "numbered afresh");
        b.verify(&valid, &sealed).unwrap();
        // verify notices a key of the wrong count, a sealed block without a key, a stale
        // chunk least.
        let some = (0..blocks)
            .find(|&x| sealed[x] != NONE && valid[x] > 0)
            .unwrap();
        valid[some] -= 1;
        assert!(b.verify(&valid, &sealed).is_err());
        valid[some] += 1;
        let free = (0..blocks).find(|&x| sealed[x] == NONE).unwrap();
        sealed[free] = 0;
        assert!(b.verify(&valid, &sealed).is_err());
        sealed[free] = NONE;
        b.chunk_min[0] = 0;
        assert!(b.verify(&valid, &sealed).is_err());
        b.clear();
        assert_eq!((0..dies).find_map(|d| b.min(d)), None);
    }
}
