//! Float-to-integer nanosecond conversions on the simulator's hot path.
//!
//! `f64::round` and `f64::ceil` are library calls on the x86-64 baseline (no SSE4.1
//! `roundsd`), several per simulated task. These give the same results as
//! `x.round() as u64` and `x.ceil().max(0.0) as u64` (saturating, NaN and negatives to
//! 0) from a truncating cast, which is one instruction. Below 2^62 (146 years in
//! nanoseconds) they convert through `i64`, whose conversions are single instructions
//! where `u64`'s are branchy sequences.

/// Where the `i64` path applies: no overflow after adding one.
const SIGNED_FAST: f64 = (1u64 << 62) as f64;

/// `x.round() as u64`: nearest integer, halves away from zero.
#[inline]
pub fn round_u64(x: f64) -> u64 {
    if (0.0..SIGNED_FAST).contains(&x) {
        let whole = x as i64;
        return (whole + (x - whole as f64 >= 0.5) as i64) as u64;
    }
    let whole = x as u64;
    // Exact: `whole` is `x` truncated, so the difference is its fraction (or 0 above
    // 2^53, where every f64 is an integer).
    let up = x - whole as f64 >= 0.5;
    whole.saturating_add(up as u64)
}

/// `x.ceil().max(0.0) as u64`: the smallest integer not below `x`.
#[inline]
pub fn ceil_u64(x: f64) -> u64 {
    if (0.0..SIGNED_FAST).contains(&x) {
        let whole = x as i64;
        return (whole + ((whole as f64) < x) as i64) as u64;
    }
    let whole = x as u64;
    whole.saturating_add(((whole as f64) < x) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agree_with_the_library_functions() {
        let mut xs = vec![
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            0.49999999999999994,
            -0.3,
            -0.5,
            -2.7,
            SIGNED_FAST,
            SIGNED_FAST - 1024.0,
            SIGNED_FAST - 0.5,
            1e-300,
            4503599627370495.5,
            9007199254740993.0,
            1.8446744073709552e19,
            3e19,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        // A deterministic spread of magnitudes and fractions.
        let mut v = 0.123_f64;
        for _ in 0..100_000 {
            v = (v * 7.77 + 0.311) % 1e7;
            xs.push(v);
            xs.push(v.trunc() + 0.5);
            xs.push(v * 1e9);
        }
        for x in xs {
            assert_eq!(round_u64(x), x.round() as u64, "round {x:e}");
            assert_eq!(ceil_u64(x), x.ceil().max(0.0) as u64, "ceil {x:e}");
        }
    }
}
