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
/// stacks). A candidate block's entry in the map's block table (`Map::block_entries`) holds its
/// valid count above the sequence number of its last entry here (reversed, never 0; 0 marks a
/// block that is no candidate), so the least entry of a die's candidates is its victim; each
/// chunk of [`CHUNK`] blocks of a die keeps its least. A unit going stale (every host
/// overwrite) lowers the block's count and stores its new sequence in the same entry, and
/// lowers its chunk's least: one line of the block table and one of a small one. Linked lists
/// per valid count touched the block's neighbours' links and the bucket's head as well, and a
/// table of their own: random lines into tables beyond the caches on the big drives (2M blocks,
/// 16 MB of links on micron-p320h-700). Choosing a victim reads the die's chunk minima and one
/// chunk; a chunk is read again when its least block leaves.
#[derive(Clone, Debug)]
pub struct Buckets {
    /// Per die and chunk: the least key of its candidates (OUT when it has none).
    chunk_min: Vec<u64>,
    blocks_per_die: u32,
    chunks_per_die: u32,
    /// The next entry's sequence number.
    sequence: u64,
}

/// Blocks per chunk: a chunk's entries are eight cache lines.
const CHUNK: u32 = 64;
/// No candidate (a chunk's least when it holds none): above every key, as a key's count is
/// at most `config::MAX_UNITS_PER_BLOCK` (the configuration's limit on units per block).
const OUT: u64 = u64::MAX;
/// The bits of an entry below its valid count: the reversed entry sequence number (2^48
/// entries, an exabyte of 4 KiB overwrites, before the candidates are numbered afresh).
const SEQUENCE_BITS: u32 = super::map::VALID_SHIFT;
const SEQUENCE_MAX: u64 = (1 << SEQUENCE_BITS) - 1;

impl Buckets {
    /// `dies` = 0 builds an empty structure (policy other than greedy). `blocks`: of all dies,
    /// numbered die by die.
    pub fn new(dies: u32, blocks: usize) -> Self {
        let blocks_per_die = (blocks as u32).checked_div(dies).unwrap_or(0);
        let chunks_per_die = blocks_per_die.div_ceil(CHUNK);
        Buckets {
            chunk_min: vec![OUT; (dies * chunks_per_die) as usize],
            blocks_per_die,
            chunks_per_die,
            sequence: 0,
        }
    }

    /// No block is a candidate: with the map cleared ([`super::map::Map::clear`] zeroes the
    /// entries).
    pub fn clear(&mut self) {
        self.chunk_min.fill(OUT);
        self.sequence = 0;
    }

    /// Whether the block of this entry is in a bucket (it is sealed, under the greedy policy).
    #[inline]
    pub fn is_candidate(entry: u64) -> bool {
        entry & SEQUENCE_MAX != 0
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

    /// The least key among chunk `c`'s candidates (OUT when it has none).
    fn least_of_chunk(&self, entries: &[u64], c: usize) -> u64 {
        entries[self.chunk_blocks(c)]
            .iter()
            .copied()
            .filter(|&e| Self::is_candidate(e))
            .min()
            .unwrap_or(OUT)
    }

    /// `block` (of `die`) enters with the count its entry holds: after every block entered so
    /// far among equals.
    #[inline]
    fn enter(&mut self, entries: &mut [u64], die: u32, block: u32) {
        if self.sequence == SEQUENCE_MAX {
            self.renumber(entries);
        }
        let entry = &mut entries[block as usize];
        let key = (*entry & !SEQUENCE_MAX) | (SEQUENCE_MAX - self.sequence);
        *entry = key;
        self.sequence += 1;
        let c = self.chunk(die, block);
        self.chunk_min[c] = self.chunk_min[c].min(key);
    }

    /// The sequence numbers run out: number the candidates afresh from 0 in the order they
    /// entered (so every comparison stays as it was), and their chunks' least keys with them.
    #[cold]
    fn renumber(&mut self, entries: &mut [u64]) {
        let mut entered: Vec<(u64, usize)> = (entries.iter().enumerate())
            .filter(|&(_, &e)| Self::is_candidate(e))
            .map(|(b, &e)| (SEQUENCE_MAX - (e & SEQUENCE_MAX), b))
            .collect();
        entered.sort_unstable();
        for (sequence, &(_, b)) in entered.iter().enumerate() {
            entries[b] = (entries[b] & !SEQUENCE_MAX) | (SEQUENCE_MAX - sequence as u64);
        }
        self.sequence = entered.len() as u64;
        for c in 0..self.chunk_min.len() {
            self.chunk_min[c] = self.least_of_chunk(entries, c);
        }
    }

    /// `block` (of `die`), sealed, becomes a candidate.
    #[inline]
    pub fn insert(&mut self, entries: &mut [u64], die: u32, block: u32) {
        debug_assert!(!Self::is_candidate(entries[block as usize]));
        self.enter(entries, die, block);
    }

    /// `block` (of `die`) is no candidate any more.
    pub fn remove(&mut self, entries: &mut [u64], die: u32, block: u32) {
        let key = entries[block as usize];
        debug_assert!(Self::is_candidate(key), "block {block} is in no bucket");
        entries[block as usize] = key & !SEQUENCE_MAX;
        let c = self.chunk(die, block);
        if self.chunk_min[c] == key {
            self.chunk_min[c] = self.least_of_chunk(entries, c);
        }
    }

    /// A unit of candidate `block` went stale: the map has lowered the count in its entry.
    #[inline]
    pub fn move_down(&mut self, entries: &mut [u64], die: u32, block: u32) {
        // The new key is below the chunk's least or the block's key before the count went down,
        // so the chunk's least stays right.
        self.enter(entries, die, block);
    }

    /// The sealed block of `die` with the fewest valid units (the most recently entered among
    /// ties: sealed with that count, or moved down to it).
    pub fn min(&self, entries: &[u64], die: u32) -> Option<u32> {
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
        let at = entries[blocks.clone()].iter().position(|&k| k == least)?;
        Some((blocks.start + at) as u32)
    }

    /// The candidates are the sealed blocks, their sequence numbers distinct, each chunk's
    /// least right.
    pub fn verify(&self, entries: &[u64], sealed_pos: &[u32]) -> Result<(), String> {
        let mut sequences = Vec::new();
        for (b, &entry) in entries.iter().enumerate() {
            let sealed = sealed_pos[b] != NONE;
            if Self::is_candidate(entry) != sealed {
                return Err(format!("block {b}: sealed {sealed}, entry {entry:#x}"));
            }
            if sealed {
                sequences.push(entry & SEQUENCE_MAX);
            }
        }
        sequences.sort_unstable();
        if let Some(w) = sequences.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!(
                "entry sequence {:#x} used twice",
                SEQUENCE_MAX - w[0]
            ));
        }
        for c in 0..self.chunk_min.len() {
            let least = self.least_of_chunk(entries, c);
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
    /// the most recently entered among ties, across a renumbering too. A sealed block without a
    /// key, a repeated sequence number and a stale chunk least are caught by `verify`.
    #[test]
    fn buckets_choose_as_stacks_per_valid_count() {
        let (dies, per_die, capacity) = (3u32, 150u32, 6u64);
        let blocks = (dies * per_die) as usize;
        let mut b = Buckets::new(dies, blocks);
        // The block table as the map keeps it: the count above SEQUENCE_BITS.
        let mut entries = vec![0u64; blocks];
        let count = |e: u64| e >> SEQUENCE_BITS;
        // The reference: per die and valid count, a stack of blocks (the last entered on top).
        let mut stacks = vec![vec![Vec::<u32>::new(); capacity as usize + 1]; dies as usize];
        let mut sealed = vec![NONE; blocks];
        let mut rng = crate::rng::Rng::new(5);
        let mut chosen = 0;
        for step in 0..60_000 {
            let block = rng.below(blocks as u64) as u32;
            let die = block / per_die;
            let stack = &mut stacks[die as usize];
            let e = &mut entries[block as usize];
            if sealed[block as usize] == NONE {
                let v = rng.below(capacity + 1);
                *e = v << SEQUENCE_BITS;
                b.insert(&mut entries, die, block);
                stack[v as usize].push(block);
                sealed[block as usize] = 0;
            } else if count(*e) > 0 && rng.below(4) > 0 {
                let v = count(*e) as usize;
                *e -= 1 << SEQUENCE_BITS;
                b.move_down(&mut entries, die, block);
                stack[v].retain(|&x| x != block);
                stack[v - 1].push(block);
            } else {
                // The die's victim leaves, or this block (wear levelling, retirement).
                let leaving = if rng.below(2) == 0 {
                    b.min(&entries, die).unwrap()
                } else {
                    block
                };
                let v = count(entries[leaving as usize]) as usize;
                b.remove(&mut entries, die, leaving);
                stack[v].retain(|&x| x != leaving);
                sealed[leaving as usize] = NONE;
            }
            for d in 0..dies {
                let want = stacks[d as usize].iter().find_map(|s| s.last().copied());
                assert_eq!(b.min(&entries, d), want, "step {step}, die {d}");
                chosen += want.is_some() as u32;
            }
            if step % 1000 == 0 {
                b.verify(&entries, &sealed).unwrap();
            }
            if step == 30_000 {
                // The sequence numbers run out 200 entries on: the candidates are numbered
                // afresh, the choices stay those of the stacks.
                b.sequence = SEQUENCE_MAX - 200;
            }
        }
        assert!(chosen > 100_000);
        assert!(b.sequence < SEQUENCE_MAX - 200, "numbered afresh");
        b.verify(&entries, &sealed).unwrap();
        for (x, &e) in entries.iter().enumerate() {
            assert_eq!(Buckets::is_candidate(e), sealed[x] != NONE);
        }
        // verify notices a sealed block that is no candidate, a sequence number used twice,
        // a stale chunk least.
        let free = (0..blocks).find(|&x| sealed[x] == NONE).unwrap();
        sealed[free] = 0;
        assert!(b.verify(&entries, &sealed).is_err());
        sealed[free] = NONE;
        let two: Vec<usize> = (0..blocks).filter(|&x| sealed[x] != NONE).take(2).collect();
        let saved = entries[two[1]];
        entries[two[1]] = (saved & !SEQUENCE_MAX) | (entries[two[0]] & SEQUENCE_MAX);
        assert!(b.verify(&entries, &sealed).is_err());
        entries[two[1]] = saved;
        b.verify(&entries, &sealed).unwrap();
        b.chunk_min[0] = 0;
        assert!(b.verify(&entries, &sealed).is_err());
        b.clear();
        entries.fill(0);
        assert_eq!((0..dies).find_map(|d| b.min(&entries, d)), None);
    }
}
