//! Memory helpers for the big tables: transparent huge pages and prefetch hints.
//!
//! The only unsafe code in the crate. Neither helper changes any value the simulation sees:
//! they only make the flat map's random accesses cheaper (fewer TLB misses, overlapped misses).
#![allow(unsafe_code)]

/// A table of `len` zeros, backed by transparent huge pages where the kernel offers them on
/// request (THP "madvise" mode): a 1 GB map touched at random otherwise pays a TLB miss and a
/// page walk on nearly every access. The memory comes zeroed from the allocator (fresh pages
/// from the kernel for a big table), so no page is touched, nor allocated, until written.
pub fn zeroed_table<T: Copy + Default>(len: usize) -> Vec<T> {
    // An integer's default is 0: the allocator hands out zeroed memory for it.
    let v = vec![T::default(); len];
    advise_huge_pages(v.as_ptr() as usize, std::mem::size_of_val(v.as_slice()));
    v
}

/// A table of `len` copies of `value`, backed by transparent huge pages as `zeroed_table`'s
/// (for the per-block tables of drives with millions of blocks, touched at random).
pub fn table<T: Clone>(len: usize, value: T) -> Vec<T> {
    let mut v = Vec::with_capacity(len);
    advise_huge_pages(v.as_ptr() as usize, std::mem::size_of::<T>() * len);
    v.resize(len, value);
    v
}

/// Have the kernel allocate and zero the pages of `tables` now, on one thread of its own, so
/// the simulation does not stop to fault each one in on first touch (a full 960 GB map is 2.2
/// GB of pages, zeroed at about 1 GB/s on a small VM). For tables about to be written whole (a
/// sequential fill): each is given with the number of equal regions the fill writes side by
/// side (1 for a table written in order; the dies for one laid out die by die), and the thread
/// goes through them in the order the fill reaches them: the first 1/64 of every region of
/// every table, then the next. One thread, so it takes the spare core and not the
/// simulation's (a thread per table competed with it on two cores).
///
/// MADV_POPULATE_WRITE (Linux 5.14) only maps pages: it never reads or writes the tables'
/// contents, so the simulation goes on writing them meanwhile, and a page it reaches first is
/// simply skipped. Should a table be freed first, the call fails or maps pages of whatever
/// uses the range then, changing none of their contents either. Elsewhere, or on older
/// kernels, nothing happens and pages fault in on first touch as before.
pub fn populate_in_background(tables: &[(&[u32], usize)]) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        const STEPS: usize = 64;
        // Page-aligned address ranges, in the order to populate them. The thread holds
        // addresses, not the tables: nothing of the simulation is shared.
        let mut ranges = Vec::new();
        for step in 0..STEPS {
            for &(table, regions) in tables {
                let (addr, bytes) = (table.as_ptr() as usize, std::mem::size_of_val(table));
                let regions = regions.max(1);
                for r in 0..regions {
                    let region = |k: usize| addr + bytes * (r * STEPS + k) / (regions * STEPS);
                    let start = (region(step) + PAGE - 1) & !(PAGE - 1);
                    let end = (region(step + 1) + PAGE - 1) & !(PAGE - 1);
                    let end = end.min((addr + bytes) & !(PAGE - 1));
                    if end > start {
                        ranges.push((start, end));
                    }
                }
            }
        }
        if !ranges.is_empty() {
            std::thread::spawn(move || {
                for (start, end) in ranges {
                    // SAFETY: madvise(MADV_POPULATE_WRITE) only populates page tables for the
                    // range; it changes no byte of memory (see above), so it races with no
                    // Rust access. Failure (old kernel, range gone) is harmless and ignored.
                    unsafe {
                        libc::madvise(
                            start as *mut libc::c_void,
                            end - start,
                            libc::MADV_POPULATE_WRITE,
                        );
                    }
                }
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = tables;
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(addr: usize, bytes: usize) {
    const HUGE_PAGE_BYTES: usize = 2 << 20;
    let start = (addr + HUGE_PAGE_BYTES - 1) & !(HUGE_PAGE_BYTES - 1);
    let end = (addr + bytes) & !(HUGE_PAGE_BYTES - 1);
    if end > start {
        // SAFETY: madvise(MADV_HUGEPAGE) only advises the kernel about the backing of memory
        // this Vec owns (its reserved capacity); it changes no contents and no validity. A
        // failure (THP unavailable) is harmless and ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_addr: usize, _bytes: usize) {}

/// Ask the CPU to start loading `slice[index]` into cache; no effect on values.
#[inline(always)]
pub fn prefetch<T>(slice: &[T], index: usize) {
    if index < slice.len() {
        prefetch_element(slice, index);
    }
}

/// `prefetch` of `slice[index]`, or of the last element when `index` is beyond it (an
/// UNMAPPED entry): no branch on the index.
#[inline(always)]
pub fn prefetch_clamped<T>(slice: &[T], index: usize) {
    if let Some(last) = slice.len().checked_sub(1) {
        prefetch_element(slice, index.min(last));
    }
}

/// `prefetch` of every cache line that holds an element of `slice[range]` (the part of it
/// within the slice).
#[inline]
pub fn prefetch_range<T>(slice: &[T], range: std::ops::Range<usize>) {
    const LINE: usize = 64;
    let end = range.end.min(slice.len());
    if range.start >= end {
        return;
    }
    let size = std::mem::size_of::<T>();
    let (first, last) = (range.start * size, end * size - 1);
    // Byte offsets into the slice of the first byte of each line, the first line's possibly
    // before the slice (a line shares its page with the element in it; a prefetch never
    // faults anyway).
    let base = slice.as_ptr() as usize;
    let mut line = (base + first) & !(LINE - 1);
    while line <= base + last {
        prefetch_address(line);
        line += LINE;
    }
}

#[inline(always)]
fn prefetch_element<T>(slice: &[T], index: usize) {
    debug_assert!(index < slice.len());
    prefetch_address(slice.as_ptr().wrapping_add(index) as usize);
}

#[inline(always)]
fn prefetch_address(address: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch hint never faults nor reads into any Rust value, whatever the
    // address; the pointer is never dereferenced.
    unsafe {
        core::arch::x86_64::_mm_prefetch(address as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
