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

/// Sealed blocks of each die in doubly linked lists by valid count, for O(1) greedy selection
/// and O(1) update when a unit becomes stale.
#[derive(Clone, Debug)]
pub struct Buckets {
    /// Buckets per die: valid counts 0..=capacity.
    per_die: u32,
    head: Vec<u32>,
    /// Per block: its list links, side by side so that a block's move costs one cache line
    /// of its own (on micron-p320h-700, 2M blocks, the links are 16 MB: beyond the caches).
    links: Vec<Links>,
    /// Per die: no non-empty bucket below this index.
    min_hint: Vec<u32>,
}

/// A block's place in its bucket's list: the next block (or NONE), and the previous block,
/// or `HEAD | slot` for the first of bucket `slot`, or NONE when the block is in no bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Links {
    next: u32,
    prev: u32,
}

const OUT: Links = Links {
    next: NONE,
    prev: NONE,
};

/// `prev` of a bucket's first block: this bit and the bucket's slot (block numbers and slots
/// stay below 2^31: the geometry's units fit a u32).
const HEAD: u32 = 1 << 31;

impl Buckets {
    /// `dies` = 0 builds an empty structure (policy other than greedy).
    pub fn new(dies: u32, capacity: u32, blocks: usize) -> Self {
        let per_die = capacity + 1;
        let used = dies > 0;
        assert!(((dies * per_die) as usize) < HEAD as usize && blocks < HEAD as usize);
        Buckets {
            per_die,
            head: vec![NONE; (dies * per_die) as usize],
            links: crate::mem::table(if used { blocks } else { 0 }, OUT),
            min_hint: vec![0; dies as usize],
        }
    }

    pub fn clear(&mut self) {
        self.head.fill(NONE);
        self.links.fill(OUT);
        self.min_hint.fill(0);
    }

    #[inline]
    fn slot(&self, die: u32, valid: u32) -> usize {
        (die * self.per_die + valid) as usize
    }

    /// Whether `block` is in a bucket (it is sealed, under the greedy policy).
    #[inline]
    pub fn contains(&self, block: u32) -> bool {
        self.links
            .get(block as usize)
            .is_some_and(|l| l.prev != NONE)
    }

    #[inline]
    pub fn insert(&mut self, die: u32, block: u32, valid: u32) {
        let s = self.slot(die, valid);
        let old = self.head[s];
        debug_assert_eq!(self.links[block as usize], OUT);
        self.links[block as usize] = Links {
            next: old,
            prev: HEAD | s as u32,
        };
        if old != NONE {
            self.links[old as usize].prev = block;
        }
        self.head[s] = block;
        let hint = &mut self.min_hint[die as usize];
        *hint = (*hint).min(valid);
    }

    #[inline]
    pub fn remove(&mut self, die: u32, block: u32, valid: u32) {
        let Links { next: n, prev: p } = self.links[block as usize];
        debug_assert_ne!(p, NONE, "block {block} is in no bucket");
        if p & HEAD != 0 {
            // The first of its list: `p` holds the bucket's slot.
            let s = (p & !HEAD) as usize;
            debug_assert_eq!(s, self.slot(die, valid));
            debug_assert_eq!(self.head[s], block);
            self.head[s] = n;
        } else {
            self.links[p as usize].next = n;
        }
        if n != NONE {
            self.links[n as usize].prev = p;
        }
        self.links[block as usize] = OUT;
    }

    /// Start loading `block`'s links (a unit of it is about to go stale); no effect on values.
    #[inline]
    pub fn prefetch(&self, block: u32) {
        crate::mem::prefetch(&self.links, block as usize);
    }

    /// Start loading what `move_down` of `block` (holding `valid` units) will touch besides
    /// its own links (loaded by `prefetch`): its neighbours' links and the head of the bucket
    /// below. No effect on values.
    #[inline]
    pub fn prefetch_neighbours(&self, die: u32, block: u32, valid: u32) {
        let Some(&Links { next, prev }) = self.links.get(block as usize) else {
            return;
        };
        if prev == NONE || valid == 0 {
            return;
        }
        crate::mem::prefetch(&self.links, next as usize);
        if prev & HEAD == 0 {
            crate::mem::prefetch(&self.links, prev as usize);
        }
        crate::mem::prefetch(&self.head, self.slot(die, valid - 1));
    }

    /// A unit of `block` went stale: its valid count drops from `valid_before`.
    #[inline]
    pub fn move_down(&mut self, die: u32, block: u32, valid_before: u32) {
        self.remove(die, block, valid_before);
        self.insert(die, block, valid_before - 1);
    }

    /// The sealed block of `die` with the fewest valid units (most recently sealed among ties).
    pub fn min(&mut self, die: u32) -> Option<u32> {
        let start = self.min_hint[die as usize];
        for v in start..self.per_die {
            let b = self.head[self.slot(die, v)];
            if b != NONE {
                self.min_hint[die as usize] = v;
                return Some(b);
            }
        }
        self.min_hint[die as usize] = self.per_die;
        None
    }

    /// Every sealed block sits in the bucket of its valid count, and only sealed blocks do.
    pub fn verify(&self, valid: &[u32], sealed_pos: &[u32]) -> Result<(), String> {
        let mut seen = 0usize;
        let dies = self.min_hint.len() as u32;
        for die in 0..dies {
            for v in 0..self.per_die {
                let mut b = self.head[self.slot(die, v)];
                while b != NONE {
                    seen += 1;
                    if valid[b as usize] != v {
                        return Err(format!(
                            "block {b} in bucket {v} has {} valid units",
                            valid[b as usize]
                        ));
                    }
                    if v < self.min_hint[die as usize] {
                        return Err(format!("die {die}: bucket {v} below the hint is not empty"));
                    }
                    let l = self.links[b as usize];
                    let slot = self.slot(die, v);
                    let linked = if b == self.head[slot] {
                        l.prev == HEAD | slot as u32
                    } else {
                        l.prev & HEAD == 0 && self.links[l.prev as usize].next == b
                    };
                    if !linked {
                        return Err(format!("block {b} in bucket {v}: links {l:?}"));
                    }
                    b = l.next;
                }
            }
        }
        let sealed = sealed_pos.iter().filter(|&&p| p != NONE).count();
        let linked = self.links.iter().filter(|l| l.prev != NONE).count();
        if seen != sealed || linked != sealed {
            return Err(format!(
                "{seen} blocks in buckets ({linked} linked), {sealed} sealed"
            ));
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

    /// Blocks move between buckets, leave from the head, the middle and the tail of a list,
    /// and `min` gives the fewest-valid block, the most recently moved among ties.
    #[test]
    fn buckets_keep_lists_and_membership() {
        // Two dies of 8 blocks, capacity 4.
        let mut b = Buckets::new(2, 4, 16);
        let mut valid = vec![0u32; 16];
        let mut sealed = vec![NONE; 16];
        let seal = |b: &mut Buckets, valid: &mut Vec<u32>, sealed: &mut Vec<u32>, blk: u32, v| {
            b.insert(blk / 8, blk, v);
            valid[blk as usize] = v;
            sealed[blk as usize] = 0;
        };
        for blk in [0, 1, 2, 3] {
            seal(&mut b, &mut valid, &mut sealed, blk, 4);
        }
        seal(&mut b, &mut valid, &mut sealed, 9, 2);
        b.verify(&valid, &sealed).unwrap();
        assert!(b.contains(2) && !b.contains(4) && !b.contains(8));
        assert_eq!(b.min(0), Some(3));
        assert_eq!(b.min(1), Some(9));
        // Middle (2), tail (0) and head (3) of die 0's bucket 4 move down.
        for blk in [2, 0, 3] {
            b.move_down(0, blk, valid[blk as usize]);
            valid[blk as usize] -= 1;
            b.verify(&valid, &sealed).unwrap();
        }
        assert_eq!(b.min(0), Some(3));
        b.move_down(0, 0, 3);
        valid[0] = 2;
        assert_eq!(b.min(0), Some(0));
        // The head leaves; then the only block of a bucket.
        b.remove(0, 0, 2);
        sealed[0] = NONE;
        assert!(!b.contains(0));
        b.verify(&valid, &sealed).unwrap();
        assert_eq!(b.min(0), Some(3));
        b.remove(1, 9, 2);
        sealed[9] = NONE;
        assert_eq!(b.min(1), None);
        b.verify(&valid, &sealed).unwrap();
        // A block sealed again after leaving.
        seal(&mut b, &mut valid, &mut sealed, 0, 1);
        assert_eq!(b.min(0), Some(0));
        b.verify(&valid, &sealed).unwrap();
        // verify notices a wrong back link, and a block sealed but in no bucket.
        b.insert(0, 5, 1);
        valid[5] = 1;
        sealed[5] = 0;
        b.verify(&valid, &sealed).unwrap();
        let saved = b.links[0];
        b.links[0].prev = HEAD | b.slot(0, 1) as u32;
        assert!(b.verify(&valid, &sealed).is_err());
        b.links[0] = saved;
        sealed[6] = 0;
        assert!(b.verify(&valid, &sealed).is_err());
    }
}
