//! The event kernel's queue: a 4-ary min-heap, and a calendar wheel in front of it. Every
//! entry has a distinct `u128` key (a time in the high bits and a tie-breaker in the low
//! ones), so the order popped is fully determined.
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
//!
//! The kernel's queue is a [`Wheel`] in front of it: a calendar of 1.024 us buckets 8.4 ms
//! long, each a short list sorted by key, with a bitmap of the buckets in use; only events
//! beyond it go to the heap. On micron-p320h-350's GC steady state at 25% spare (the events
//! that went to no lane: 0.91 per host write, 640,679 die wake-ups, 279,422 program ends out
//! of order, 183,939 power wakes; every die wake-up since) a heap pop walked four levels of
//! u128 selects; a wheel pop takes the first bucket's first entry and, if that empties the
//! bucket, finds the next in the bitmap ([`BucketBits`], shared with the scheduler's wheel of
//! busy dies). The wheel keeps its least key, so the kernel's look at the next event reads two
//! numbers and no event. callgrind, `steady micron-p320h-350.toml 4 1.2 1 25`: 4,806.2M ->
//! 4,558.3M instructions in all (-5.2%; the kept key alone, on the heap, 4,761.2M);
//! crucial-m500-120 `30 0.5 1` (8 dies, a few events pending: the heap was as cheap there)
//! 524.1M -> 522.3M (the kept key alone 520.8M). Results identical.

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

/// A bit per bucket of a wheel of `WORDS` x 64 buckets (a power of two), numbered without
/// bound and taken modulo their count: which are in use, and the first in use in a range (the
/// event queue's [`Wheel`], the scheduler's wheel of busy dies). The count is a constant, so
/// the word of a bucket needs no bounds check (with the count a field, crucial-m500-120's
/// steady state took 0.8% more instructions: 516.4M against 512.2M).
#[derive(Clone, Debug)]
pub(crate) struct BucketBits<const WORDS: usize> {
    words: Box<[u64; WORDS]>,
}

impl<const WORDS: usize> Default for BucketBits<WORDS> {
    fn default() -> Self {
        BucketBits {
            words: Box::new([0; WORDS]),
        }
    }
}

impl<const WORDS: usize> BucketBits<WORDS> {
    const MASK: u64 = {
        assert!(WORDS.is_power_of_two());
        WORDS as u64 * 64 - 1
    };

    /// The word of `bucket` and its bit in it.
    #[inline(always)]
    fn place(bucket: u64) -> (usize, u64) {
        let slot = bucket & Self::MASK;
        ((slot / 64) as usize, slot % 64)
    }

    #[inline]
    pub fn set(&mut self, bucket: u64) {
        let (word, bit) = Self::place(bucket);
        self.words[word] |= 1 << bit;
    }

    #[inline]
    pub fn clear(&mut self, bucket: u64) {
        let (word, bit) = Self::place(bucket);
        self.words[word] &= !(1 << bit);
    }

    /// The first bucket from `from` up to `to` (not included, at most a wheel's length on)
    /// whose bit is set.
    #[inline]
    pub fn first_set(&self, from: u64, to: u64) -> Option<u64> {
        let mut b = from;
        while b < to {
            let (word, bit) = Self::place(b);
            let rest = self.words[word] >> bit;
            if rest != 0 {
                let found = b + rest.trailing_zeros() as u64;
                return (found < to).then_some(found);
            }
            b += 64 - bit;
        }
        None
    }

    /// The first bucket from `from` on whose bit is set. There must be one within a wheel's
    /// length (the scan has no other bound).
    #[inline]
    pub fn next_set(&self, from: u64) -> u64 {
        // With no bit set the scan below would never end: a broken invariant (a bucket's
        // entries and its bit out of step) fails here, in a debug build, rather than hangs.
        debug_assert!(
            self.words.iter().any(|&w| w != 0),
            "BucketBits::next_set on an empty bitmap"
        );
        let mut b = from;
        loop {
            let (word, bit) = Self::place(b);
            let rest = self.words[word] >> bit;
            if rest != 0 {
                return b + rest.trailing_zeros() as u64;
            }
            b += 64 - bit;
        }
    }
}

/// A calendar queue: entries whose time (a key's high 64 bits, in ns) falls within
/// [`WHEEL_BUCKETS`] buckets of 2^[`WHEEL_SHIFT`] ns from the last one popped are kept in
/// per-bucket lists sorted by key, found through a bitmap of the buckets in use; later ones go
/// to a [`QuadHeap`]. A pop takes the lesser of the first bucket's first entry and the heap's:
/// the order popped is the keys' whatever the structure, as with the heap alone.
#[derive(Clone, Debug)]
pub(crate) struct Wheel<T> {
    /// Entries and the next of their bucket (`NIL`: the last); freed places chained from `free`.
    nodes: Vec<(T, u32)>,
    free: u32,
    /// Per bucket (its number modulo `WHEEL_BUCKETS`): its first entry, `NIL` if none. A
    /// fixed-size array, so that a bucket's index needs no bounds check.
    heads: Box<[u32; WHEEL_BUCKETS as usize]>,
    /// The buckets in use.
    occupied: BucketBits<{ (WHEEL_BUCKETS / 64) as usize }>,
    /// The bucket of the last entry popped. Invariant: every entry on the wheel is in a bucket
    /// from `cursor` to `cursor + WHEEL_BUCKETS - 1` (entries are never earlier than the last
    /// one popped).
    cursor: u64,
    /// The first bucket in use (`u64::MAX`: none).
    first: u64,
    /// The least key of all, on the wheel or beyond (`u128::MAX`: empty): what the kernel
    /// compares with its lanes at every event.
    least: u128,
    on_wheel: usize,
    far: QuadHeap<T>,
}

pub(crate) const WHEEL_SHIFT: u32 = 10;
pub(crate) const WHEEL_BUCKETS: u64 = 1 << 13;
const NIL: u32 = u32::MAX;

impl<T> Default for Wheel<T> {
    fn default() -> Self {
        Wheel {
            nodes: Vec::new(),
            free: NIL,
            heads: Box::new([NIL; WHEEL_BUCKETS as usize]),
            occupied: BucketBits::default(),
            cursor: 0,
            first: u64::MAX,
            least: u128::MAX,
            on_wheel: 0,
            far: QuadHeap::default(),
        }
    }
}

#[inline(always)]
fn bucket_of(key: u128) -> u64 {
    ((key >> 64) as u64) >> WHEEL_SHIFT
}

impl<T: Keyed + Copy> Wheel<T> {
    /// The smallest key (`u128::MAX` when empty).
    #[inline(always)]
    pub fn least_key(&self) -> u128 {
        self.least
    }

    #[inline(always)]
    fn first_on_wheel(&self) -> Option<&T> {
        if self.first == u64::MAX {
            return None;
        }
        let head = self.heads[(self.first % WHEEL_BUCKETS) as usize];
        Some(&self.nodes[head as usize].0)
    }

    #[inline]
    pub fn push(&mut self, entry: T) {
        let key = entry.key();
        self.least = self.least.min(key);
        let b = bucket_of(key);
        debug_assert!(b >= self.cursor, "an entry before the last one popped");
        if b - self.cursor >= WHEEL_BUCKETS {
            self.far.push(entry);
            return;
        }
        let node = if self.free == NIL {
            self.nodes.push((entry, NIL));
            (self.nodes.len() - 1) as u32
        } else {
            let n = self.free;
            self.free = self.nodes[n as usize].1;
            self.nodes[n as usize] = (entry, NIL);
            n
        };
        let slot = (b % WHEEL_BUCKETS) as usize;
        let head = self.heads[slot];
        if head == NIL || key < self.nodes[head as usize].0.key() {
            self.nodes[node as usize].1 = head;
            self.heads[slot] = node;
            self.occupied.set(b);
        } else {
            // After the last entry of the bucket with a smaller key.
            let mut prev = head;
            loop {
                let next = self.nodes[prev as usize].1;
                if next == NIL || key < self.nodes[next as usize].0.key() {
                    self.nodes[node as usize].1 = next;
                    self.nodes[prev as usize].1 = node;
                    break;
                }
                prev = next;
            }
        }
        self.first = self.first.min(b);
        self.on_wheel += 1;
    }

    /// Remove the entry with the smallest key.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        if self.least == u128::MAX {
            return None;
        }
        // Keys are distinct: the least is the wheel's first or the far heap's (the wheel's
        // when nothing is beyond it: its first need not be read to tell).
        let entry = if self.far.len() == 0
            || self.first_on_wheel().map_or(u128::MAX, |n| n.key()) == self.least
        {
            self.pop_near()
        } else {
            let e = self.far.pop()?;
            self.cursor = self.cursor.max(bucket_of(e.key()));
            e
        };
        // Both sides' firsts read again: keeping the far side's first from before the pop
        // held a u128 across it (crucial-m500-120 `steady 30 0.5 1`: 6.0M more instructions,
        // 1.2%).
        let near = self.first_on_wheel().map_or(u128::MAX, |n| n.key());
        let far = self.far.peek().map_or(u128::MAX, |f| f.key());
        self.least = near.min(far);
        Some(entry)
    }

    /// Remove the first entry of the first bucket in use (there is one).
    #[inline]
    fn pop_near(&mut self) -> T {
        let b = self.first;
        let slot = (b % WHEEL_BUCKETS) as usize;
        let node = self.heads[slot];
        let (entry, next) = self.nodes[node as usize];
        self.nodes[node as usize].1 = self.free;
        self.free = node;
        self.heads[slot] = next;
        self.on_wheel -= 1;
        self.cursor = b;
        if next == NIL {
            self.occupied.clear(b);
            // Every other entry is in a later bucket of the wheel: when there is one, the scan
            // needs no bound.
            self.first = if self.on_wheel == 0 {
                u64::MAX
            } else {
                self.occupied.next_set(b + 1)
            };
        }
        entry
    }

    pub fn len(&self) -> usize {
        self.on_wheel + self.far.len()
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

    /// The wheel pops in key order whatever the times: many in one bucket, equal times, the
    /// far heap, and entries far beyond the wheel that come back within it as time passes.
    #[test]
    fn the_wheel_pops_every_key_in_order() {
        let mut w = Wheel::default();
        let mut rng = crate::rng::Rng::new(9);
        let mut pending: Vec<u128> = Vec::new();
        let mut now = 0u64;
        let mut sequence = 0u128;
        for round in 0..60_000u64 {
            let spread = match round % 4 {
                0 => 50,
                1 => 1 << WHEEL_SHIFT,
                2 => WHEEL_BUCKETS << WHEEL_SHIFT,
                _ => 3 * (WHEEL_BUCKETS << WHEEL_SHIFT),
            };
            if rng.below(5) < 3 || pending.is_empty() {
                sequence += 1;
                let at = now + rng.below(spread);
                let k = (at as u128) << 64 | sequence;
                w.push(k);
                pending.push(k);
            } else {
                let least = *pending.iter().min().unwrap();
                pending.retain(|&a| a != least);
                assert_eq!(w.least_key(), least);
                assert_eq!(w.pop(), Some(least));
                now = (least >> 64) as u64;
            }
            assert_eq!(w.len(), pending.len());
        }
        pending.sort_unstable();
        let rest: Vec<u128> = std::iter::from_fn(|| w.pop()).collect();
        assert_eq!(rest, pending);
    }

    /// The unbounded scan finds a set bit behind its start (round the wheel) and, in a debug
    /// build, refuses an empty bitmap instead of scanning for ever.
    #[test]
    fn next_set_wraps_round_and_refuses_an_empty_bitmap() {
        let mut bits = BucketBits::<2>::default();
        bits.set(5);
        assert_eq!(bits.next_set(6), 128 + 5);
        assert_eq!(bits.next_set(5), 5);
        bits.clear(5);
        if cfg!(debug_assertions) {
            let empty = std::panic::catch_unwind(|| bits.next_set(0));
            assert!(empty.is_err());
        }
    }
}
