//! Raytrace-like: primary rays through a bounding-volume hierarchy of spheres (the
//! pointer-chasing scene traversal of SPLASH-2 raytrace). Checks every pixel's nearest
//! sphere against brute force.
//!
//! Structured like SPLASH-2 raytrace: the scene is built before the parallel phase
//! (SPLASH-2's master reads it and builds its hierarchical grid before creating the
//! workers), so first-touch-after-initialisation homes each scene page at the first
//! thread that reads it. The image is cut into 8 × 8-pixel blocks dealt round-robin to
//! the threads (SPLASH-2's `InitWorkPool`; we keep the initial deal and leave out its
//! work stealing, so traces stay deterministic). Each thread owns a ray stack
//! (SPLASH-2's per-process ray tree stack, `InitRayTreeStack`) that it first touches
//! itself: per pixel it pushes the primary ray and pops it before tracing, and the BVH
//! walk keeps its node stack there. Per pixel a ray walks the BVH (node boxes, child
//! links), tests the spheres of the leaves it reaches, and the thread writes the hit
//! into the shared frame buffer.
//!
//! `_rep`: every thread copies the read-only scene (nodes and spheres) into its own
//! arrays before rendering.

use super::{run_threads, unit, verify, Array, Space, Tracer};
use crate::trace::Trace;
use hetsched_core::Result;

const NODE: usize = 8; // min xyz, max xyz, link a, link b
const SPHERE: usize = 4; // centre xyz, radius
const LEAF: u64 = 1 << 63;
/// Image block side (pixels) of the round-robin deal.
const BLOCK: usize = 8;
/// Per-thread ray stack: the ray record (origin, direction, level, weight), then the
/// BVH walk's node stack.
const RAY: usize = 8;
const STACK: usize = 64;
/// Scene size: one sphere per two pixels, between 64 and 4096.
fn spheres(side: usize) -> usize {
    (side * side / 2).clamp(64, 4096)
}

struct Scene {
    nodes: Vec<[f64; 6]>,
    links: Vec<(u64, u64)>,
    spheres: Vec<[f64; 4]>,
}

/// Builds a median-split BVH (leaves of ≤ 4 spheres), spheres stored in leaf order.
fn build(mut s: Vec<[f64; 4]>) -> Scene {
    let mut scene = Scene {
        nodes: Vec::new(),
        links: Vec::new(),
        spheres: Vec::new(),
    };
    fn rec(sc: &mut Scene, s: &mut [[f64; 4]], axis: usize) -> usize {
        let mut b = [f64::MAX, f64::MAX, f64::MAX, f64::MIN, f64::MIN, f64::MIN];
        for q in s.iter() {
            for d in 0..3 {
                b[d] = b[d].min(q[d] - q[3]);
                b[3 + d] = b[3 + d].max(q[d] + q[3]);
            }
        }
        let id = sc.nodes.len();
        sc.nodes.push(b);
        sc.links.push((0, 0));
        if s.len() <= 4 {
            sc.links[id] = (LEAF | sc.spheres.len() as u64, s.len() as u64);
            sc.spheres.extend_from_slice(s);
        } else {
            s.sort_by(|x, y| x[axis].total_cmp(&y[axis]));
            let (l, r) = s.split_at_mut(s.len() / 2);
            let a = rec(sc, l, (axis + 1) % 3) as u64;
            let c = rec(sc, r, (axis + 1) % 3) as u64;
            sc.links[id] = (a, c);
        }
        id
    }
    rec(&mut scene, &mut s, 0);
    scene
}

fn ray(px: usize, py: usize, side: usize) -> ([f64; 3], [f64; 3]) {
    let (x, y) = (
        (px as f64 + 0.5) / side as f64 - 0.5,
        (py as f64 + 0.5) / side as f64 - 0.5,
    );
    let len = (x * x + y * y + 4.0).sqrt();
    ([0.5, 0.5, -2.0], [x / len, y / len, 2.0 / len])
}

fn hit_sphere(o: [f64; 3], d: [f64; 3], s: [f64; 4]) -> Option<f64> {
    let oc = [o[0] - s[0], o[1] - s[1], o[2] - s[2]];
    let b = oc[0] * d[0] + oc[1] * d[1] + oc[2] * d[2];
    let c = oc[0] * oc[0] + oc[1] * oc[1] + oc[2] * oc[2] - s[3] * s[3];
    let disc = b * b - c;
    (disc >= 0.0).then(|| -b - disc.sqrt()).filter(|&t| t > 0.0)
}

fn hit_box(o: [f64; 3], d: [f64; 3], b: [f64; 6], best: f64) -> bool {
    let (mut lo, mut hi) = (0.0f64, best);
    for a in 0..3 {
        let inv = 1.0 / d[a];
        let (t0, t1) = ((b[a] - o[a]) * inv, (b[3 + a] - o[a]) * inv);
        lo = lo.max(t0.min(t1));
        hi = hi.min(t0.max(t1));
    }
    lo <= hi
}

/// Traces one ray through the scene stored in `nodes` / `spheres`, keeping the node
/// stack in the thread's `own` array after its ray record; the nearest sphere.
fn trace(
    t: &mut Tracer,
    nodes: &Array,
    spheres: &Array,
    own: &Array,
    o: [f64; 3],
    d: [f64; 3],
) -> u64 {
    let (mut best, mut hit) = (f64::MAX, u64::MAX);
    own.set_u(t, line!(), RAY, 0);
    let mut top = 1;
    while top > 0 {
        top -= 1;
        let nd = own.get_u(t, line!(), RAY + top);
        let base = nd as usize * NODE;
        let b = [0, 1, 2, 3, 4, 5].map(|k| nodes.get(t, line!(), base + k));
        t.ops(20);
        if !hit_box(o, d, b, best) {
            continue;
        }
        let a = nodes.get_u(t, line!(), base + 6);
        let c = nodes.get_u(t, line!(), base + 7);
        if a & LEAF != 0 {
            for s in (a & !LEAF)..(a & !LEAF) + c {
                let sp = [0, 1, 2, 3].map(|k| spheres.get(t, line!(), s as usize * SPHERE + k));
                t.ops(15);
                if let Some(th) = hit_sphere(o, d, sp).filter(|&th| th < best) {
                    (best, hit) = (th, s);
                }
            }
        } else {
            own.set_u(t, line!(), RAY + top, c);
            own.set_u(t, line!(), RAY + top + 1, a);
            top += 2;
        }
    }
    hit
}

pub fn run(p: usize, side: usize, rep: bool) -> Result<Vec<Trace>> {
    let input: Vec<[f64; 4]> = (0..spheres(side) as u64)
        .map(|k| {
            [
                unit(4 * k),
                unit(4 * k + 1),
                unit(4 * k + 2),
                0.005 + 0.015 * unit(4 * k + 3),
            ]
        })
        .collect();
    let scene = build(input);
    let space = Space::default();
    let store = |space: &Space| -> (Array, Array) {
        let (nodes, spheres) = (
            space.array(scene.nodes.len() * NODE),
            space.array(spheres(side) * SPHERE),
        );
        for (i, (b, l)) in scene.nodes.iter().zip(&scene.links).enumerate() {
            (0..6).for_each(|k| nodes.poke(i * NODE + k, b[k]));
            nodes.poke_u(i * NODE + 6, l.0);
            nodes.poke_u(i * NODE + 7, l.1);
        }
        for (i, s) in scene.spheres.iter().enumerate() {
            (0..4).for_each(|k| spheres.poke(i * SPHERE + k, s[k]));
        }
        (nodes, spheres)
    };
    let (nodes, spheres) = store(&space);
    let copies: Vec<(Array, Array)> = (0..if rep { p } else { 0 })
        .map(|_| (space.array(nodes.len()), space.array(spheres.len())))
        .collect();
    let stacks: Vec<Array> = (0..p).map(|_| space.array(RAY + STACK)).collect();
    let image = space.array(side * side);
    let traces = run_threads(p, |id, t| {
        let (nd, sp) = if rep {
            let (cn, cs) = &copies[id];
            cn.touch(t, line!()); // private: first touched at home
            cs.touch(t, line!());
            for (src, dst) in [(&nodes, cn), (&spheres, cs)] {
                for i in 0..src.len() {
                    let v = src.get_u(t, line!(), i);
                    dst.set_u(t, line!(), i, v);
                }
            }
            (cn, cs)
        } else {
            (&nodes, &spheres)
        };
        let own = &stacks[id];
        own.touch(t, line!()); // private: first touched at home
        let blocks = side.div_ceil(BLOCK);
        for blk in (id..blocks * blocks).step_by(p) {
            let (bx, by) = (blk % blocks * BLOCK, blk / blocks * BLOCK);
            for py in by..(by + BLOCK).min(side) {
                for px in bx..(bx + BLOCK).min(side) {
                    let (o, d) = ray(px, py, side);
                    // Push the primary ray onto the ray stack, pop it to trace it.
                    for (k, v) in o.iter().chain(&d).enumerate() {
                        own.set(t, line!(), k, *v);
                    }
                    own.set(t, line!(), 6, 0.0); // level
                    own.set(t, line!(), 7, 1.0); // weight
                    let r = [0, 1, 2, 3, 4, 5, 6, 7].map(|k| own.get(t, line!(), k));
                    t.ops(10);
                    let hit = trace(t, nd, sp, own, [r[0], r[1], r[2]], [r[3], r[4], r[5]]);
                    image.set_u(t, line!(), py * side + px, hit);
                }
            }
        }
    });
    for py in 0..side {
        for px in 0..side {
            let (o, d) = ray(px, py, side);
            let (mut best, mut hit) = (f64::MAX, u64::MAX);
            for (s, sp) in scene.spheres.iter().enumerate() {
                if let Some(th) = hit_sphere(o, d, *sp).filter(|&th| th < best) {
                    (best, hit) = (th, s as u64);
                }
            }
            let got = image.peek_u(py * side + px);
            verify(got == hit, || {
                format!("raytrace: pixel ({px}, {py}) hit {got}, brute force {hit}")
            })?;
        }
    }
    Ok(traces)
}
