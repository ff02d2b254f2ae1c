//! Memory helpers for the big tables: transparent huge pages and prefetch hints.
//!
//! The only unsafe code in the crate. Neither helper changes any value the simulation sees:
//! they only make the flat map's random accesses cheaper (fewer TLB misses, overlapped misses).
#![allow(unsafe_code)]

/// A table of `len` zeros, backed by transparent huge pages where the kernel offers them on
/// request (THP "madvise" mode): a 1 GB map touched at random otherwise pays a TLB miss and a
/// page walk on nearly every access. The memory comes zeroed from the allocator (fresh pages
/// from the kernel for a big table), so no page is touched, nor allocated, until written.
pub fn zeroed_table(len: usize) -> Vec<u32> {
    let v = vec![0u32; len];
    advise_huge_pages(v.as_ptr() as usize, std::mem::size_of_val(v.as_slice()));
    v
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

#[inline(always)]
fn prefetch_element<T>(slice: &[T], index: usize) {
    debug_assert!(index < slice.len());
    #[cfg(target_arch = "x86_64")]
    // SAFETY: both callers pass an index in bounds of the slice, and a prefetch hint never
    // faults nor reads into any Rust value.
    unsafe {
        core::arch::x86_64::_mm_prefetch(
            slice.as_ptr().add(index) as *const i8,
            core::arch::x86_64::_MM_HINT_T0,
        );
    }
}
