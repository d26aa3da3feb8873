//! FFT: the SPLASH-2 six-step radix-√n complex FFT. The n points form a √n × √n matrix
//! whose rows are split among threads; three all-to-all transposes separate two phases
//! of row FFTs and a twiddle multiplication. It runs forward, then inverse, and checks
//! the round trip and sample points against a direct DFT.
//!
//! `_rep`: every thread builds its own copy of the read-only roots-of-unity table.

use super::{chunk, run_threads, unit, verify, Array, Space, Tracer};
use crate::trace::Trace;
use hetsched_core::{Error, Result};
use std::f64::consts::PI;
use std::sync::Barrier;

struct Ctx<'a> {
    r: usize,
    rows: std::ops::Range<usize>,
    roots: &'a Array,
    barrier: &'a Barrier,
}

impl Ctx<'_> {
    /// dst[i][j] = src[j][i] for the rows i this thread owns.
    fn transpose(&self, t: &mut Tracer, src: &Array, dst: &Array) {
        let r = self.r;
        for i in self.rows.clone() {
            for j in 0..r {
                let re = src.get(t, line!(), 2 * (j * r + i));
                let im = src.get(t, line!(), 2 * (j * r + i) + 1);
                t.ops(2);
                dst.set(t, line!(), 2 * (i * r + j), re);
                dst.set(t, line!(), 2 * (i * r + j) + 1, im);
            }
        }
    }

    /// In-place iterative radix-2 FFT of each owned row.
    fn row_ffts(&self, t: &mut Tracer, a: &Array) {
        let r = self.r;
        for row in self.rows.clone() {
            let base = 2 * row * r;
            let bits = r.trailing_zeros();
            for i in 0..r {
                let j = i.reverse_bits() >> (usize::BITS - bits);
                t.ops(4);
                if i < j {
                    for c in 0..2 {
                        let x = a.get(t, line!(), base + 2 * i + c);
                        let y = a.get(t, line!(), base + 2 * j + c);
                        a.set(t, line!(), base + 2 * i + c, y);
                        a.set(t, line!(), base + 2 * j + c, x);
                    }
                }
            }
            let mut len = 2;
            while len <= r {
                let step = r / len;
                for start in (0..r).step_by(len) {
                    for k in 0..len / 2 {
                        let wr = self.roots.get(t, line!(), 2 * k * step);
                        let wi = self.roots.get(t, line!(), 2 * k * step + 1);
                        let (u, v) = (base + 2 * (start + k), base + 2 * (start + k + len / 2));
                        let (ur, ui) = (a.get(t, line!(), u), a.get(t, line!(), u + 1));
                        let (vr, vi) = (a.get(t, line!(), v), a.get(t, line!(), v + 1));
                        let (tr, ti) = (vr * wr - vi * wi, vr * wi + vi * wr);
                        t.ops(10);
                        a.set(t, line!(), u, ur + tr);
                        a.set(t, line!(), u + 1, ui + ti);
                        a.set(t, line!(), v, ur - tr);
                        a.set(t, line!(), v + 1, ui - ti);
                    }
                }
                len *= 2;
            }
        }
    }

    /// Multiplies element (j2, k1) by ω_n^(j2·k1) (computed, as SPLASH's distributed table).
    fn twiddle(&self, t: &mut Tracer, a: &Array) {
        let r = self.r;
        let n = (r * r) as f64;
        for j2 in self.rows.clone() {
            for k1 in 0..r {
                let ang = -2.0 * PI * (j2 * k1) as f64 / n;
                let (wr, wi) = (ang.cos(), ang.sin());
                let idx = 2 * (j2 * r + k1);
                let (xr, xi) = (a.get(t, line!(), idx), a.get(t, line!(), idx + 1));
                t.ops(30);
                a.set(t, line!(), idx, xr * wr - xi * wi);
                a.set(t, line!(), idx + 1, xr * wi + xi * wr);
            }
        }
    }

    /// Forward DFT of `src` into `dst` (src is clobbered), all threads together.
    fn six_step(&self, t: &mut Tracer, src: &Array, dst: &Array) {
        self.transpose(t, src, dst);
        self.barrier.wait();
        self.row_ffts(t, dst);
        self.twiddle(t, dst);
        self.barrier.wait();
        self.transpose(t, dst, src);
        self.barrier.wait();
        self.row_ffts(t, src);
        self.barrier.wait();
        self.transpose(t, src, dst);
        self.barrier.wait();
    }

    /// Conjugates the owned rows (the inverse FFT is conj ∘ FFT ∘ conj / n).
    fn conjugate(&self, t: &mut Tracer, a: &Array) {
        for row in self.rows.clone() {
            for j in 0..self.r {
                let i = 2 * (row * self.r + j) + 1;
                let v = a.get(t, line!(), i);
                t.ops(1);
                a.set(t, line!(), i, -v);
            }
        }
    }
}

pub fn run(p: usize, n: usize, rep: bool) -> Result<Vec<Trace>> {
    let r = (n as f64).sqrt() as usize;
    if r * r != n || !r.is_power_of_two() || r < 2 {
        return Err(Error::input(format!(
            "fft: {n} points is not a power of four ≥ 4"
        )));
    }
    let input: Vec<(f64, f64)> = (0..n as u64)
        .map(|j| (unit(2 * j) - 0.5, unit(2 * j + 1) - 0.5))
        .collect();
    let space = Space::default();
    let (x, y) = (space.array(2 * n), space.array(2 * n));
    let shared_roots = space.array(2 * r);
    for k in 0..r {
        let ang = -2.0 * PI * k as f64 / r as f64;
        shared_roots.poke(2 * k, ang.cos());
        shared_roots.poke(2 * k + 1, ang.sin());
    }
    let own_roots: Vec<Array> = (0..if rep { p } else { 0 })
        .map(|_| space.array(2 * r))
        .collect();
    let forward = std::sync::Mutex::new(vec![(0.0, 0.0); n]);
    let barrier = Barrier::new(p);
    let traces = run_threads(p, |id, t| {
        let roots = if rep {
            let mine = &own_roots[id];
            for k in 0..r {
                let ang = -2.0 * PI * k as f64 / r as f64;
                t.ops(30);
                mine.set(t, line!(), 2 * k, ang.cos());
                mine.set(t, line!(), 2 * k + 1, ang.sin());
            }
            mine
        } else {
            &shared_roots
        };
        let ctx = Ctx {
            r,
            rows: chunk(id, r, p),
            roots,
            barrier: &barrier,
        };
        // Each thread initialises its own rows (so first touch distributes x).
        for i in ctx.rows.clone() {
            for j in 0..r {
                let (re, im) = input[i * r + j];
                x.set(t, line!(), 2 * (i * r + j), re);
                x.set(t, line!(), 2 * (i * r + j) + 1, im);
            }
        }
        barrier.wait();
        ctx.six_step(t, &x, &y);
        if id == 0 {
            let mut f = forward.lock().unwrap();
            for (k, v) in f.iter_mut().enumerate() {
                *v = (y.peek(2 * k), y.peek(2 * k + 1));
            }
        }
        barrier.wait();
        ctx.conjugate(t, &y);
        barrier.wait();
        ctx.six_step(t, &y, &x);
    });
    // Direct DFT at a few outputs.
    let forward = forward.into_inner().unwrap();
    for m in [0, 1, n / 3, n - 1] {
        let (mut sr, mut si) = (0.0, 0.0);
        for (j, &(a, b)) in input.iter().enumerate() {
            let ang = -2.0 * PI * ((j * m) % n) as f64 / n as f64;
            sr += a * ang.cos() - b * ang.sin();
            si += a * ang.sin() + b * ang.cos();
        }
        let err = (forward[m].0 - sr).abs() + (forward[m].1 - si).abs();
        verify(err < 1e-6 * n as f64, || {
            format!("fft: X[{m}] off by {err}")
        })?;
    }
    // Round trip: conj(x) / n must equal the input.
    let err = (0..n)
        .map(|k| {
            (x.peek(2 * k) / n as f64 - input[k].0).abs()
                + (-x.peek(2 * k + 1) / n as f64 - input[k].1).abs()
        })
        .fold(0.0, f64::max);
    verify(err < 1e-9, || {
        format!("fft: inverse round trip off by {err}")
    })?;
    Ok(traces)
}
