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
    LeastWorn(BinaryHeap<Reverse<(u32, u32)>>),
}

impl FreePool {
    pub fn new(least_worn: bool) -> Self {
        if least_worn {
            FreePool::LeastWorn(BinaryHeap::new())
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
            FreePool::LeastWorn(h) => h.push(Reverse((erase_count, block))),
        }
    }
    pub fn pop(&mut self) -> Option<u32> {
        match self {
            FreePool::Fifo(q) => q.pop_front(),
            FreePool::LeastWorn(h) => h.pop().map(|Reverse((_, b))| b),
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
    next: Vec<u32>,
    prev: Vec<u32>,
    /// Per die: no non-empty bucket below this index.
    min_hint: Vec<u32>,
}

impl Buckets {
    /// `dies` = 0 builds an empty structure (policy other than greedy).
    pub fn new(dies: u32, capacity: u32, blocks: usize) -> Self {
        let per_die = capacity + 1;
        let used = dies > 0;
        Buckets {
            per_die,
            head: vec![NONE; (dies * per_die) as usize],
            next: vec![NONE; if used { blocks } else { 0 }],
            prev: vec![NONE; if used { blocks } else { 0 }],
            min_hint: vec![0; dies as usize],
        }
    }

    pub fn clear(&mut self) {
        self.head.fill(NONE);
        self.next.fill(NONE);
        self.prev.fill(NONE);
        self.min_hint.fill(0);
    }

    #[inline]
    fn slot(&self, die: u32, valid: u32) -> usize {
        (die * self.per_die + valid) as usize
    }

    #[inline]
    pub fn insert(&mut self, die: u32, block: u32, valid: u32) {
        let s = self.slot(die, valid);
        let old = self.head[s];
        self.next[block as usize] = old;
        self.prev[block as usize] = NONE;
        if old != NONE {
            self.prev[old as usize] = block;
        }
        self.head[s] = block;
        let hint = &mut self.min_hint[die as usize];
        *hint = (*hint).min(valid);
    }

    #[inline]
    pub fn remove(&mut self, die: u32, block: u32, valid: u32) {
        let (p, n) = (self.prev[block as usize], self.next[block as usize]);
        if p == NONE {
            let s = self.slot(die, valid);
            debug_assert_eq!(self.head[s], block);
            self.head[s] = n;
        } else {
            self.next[p as usize] = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        }
        self.next[block as usize] = NONE;
        self.prev[block as usize] = NONE;
    }

    /// Start loading `block`'s links (a unit of it is about to go stale); no effect on values.
    #[inline]
    pub fn prefetch(&self, block: u32) {
        crate::mem::prefetch(&self.next, block as usize);
        crate::mem::prefetch(&self.prev, block as usize);
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
                    b = self.next[b as usize];
                }
            }
        }
        let sealed = sealed_pos.iter().filter(|&&p| p != NONE).count();
        if seen != sealed {
            return Err(format!("{seen} blocks in buckets, {sealed} sealed"));
        }
        Ok(())
    }
}
