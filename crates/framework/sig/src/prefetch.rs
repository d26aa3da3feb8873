//! Software prefetch: the exact analyser's tables are too big for the cache and the
//! addresses it needs are known some accesses ahead.

/// Ask the CPU to start loading the cache line of `x` (a hint: it never faults).
#[inline(always)]
pub(crate) fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching any address is allowed; this one is even a valid reference.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
