//! StarPU's footprint: the 32-bit hash of a task's data shapes that keys a history-based
//! performance model, computed exactly as StarPU 1.3 does, so that a task whose data
//! has the shapes of a StarPU example's task finds that example's calibrated models
//! ([`crate::perf_model::Arch::footprint`]; `hetsched_topology::starpu` imports them).
//!
//! StarPU 1.3 (read in its sources, tag `starpu-1.3`):
//!
//! - the hash, `starpu_hash_crc32c_be(input, inputcrc)` in `src/common/hash.c`: a CRC
//!   with the CRC-32C polynomial `0x1EDC6F41`, *not reflected* (most significant bit
//!   first, unlike the usual CRC-32C), no final xor, `inputcrc` as its initial value,
//!   over the 4 bytes of the 32-bit `input` in memory order (little-endian on the x86
//!   machines that wrote Debian's calibrations; this module always takes them
//!   little-endian);
//! - a handle's interface footprint: the matrix interface
//!   (`footprint_matrix_interface_crc32` in `src/datawizard/interfaces/matrix_interface.c`)
//!   hashes `nx` with `ny` as the initial value; the vector interface hashes `nx` from
//!   0; the block interface hashes `nx` from 0, then `ny`, then `nz` (element size and
//!   leading dimension play no part);
//! - a handle's footprint (`_starpu_compute_data_footprint` in
//!   `src/datawizard/footprint.c`): the interface footprint hashed from the interface id
//!   (`enum starpu_data_interface_id`: matrix 0, block 1, vector 2);
//! - a task's footprint (`starpu_task_data_footprint`, which
//!   `_starpu_compute_buffers_footprint` uses for a model without its own `footprint`
//!   or `size_base` function, as the Cholesky and LU examples' models): each buffer's
//!   handle footprint hashed in turn, in the codelet's buffer order, from 0.
//!
//! Checked against Debian's `starpu-examples` calibrations: every footprint in their
//! Cholesky (`chol_model_11/21/22`) and LU (`starpu_[sd]lu_lu_model_*`) files, all
//! hosts, is [`square_tiles`] of a tile side of 320, 640, 960 or 1440 on the codelet's
//! 1, 2 or 3 buffers; the tests below recompute those of each side, and
//! `crates/framework/sim/tests/graphs.rs` looks every generated task up in the
//! imported idgraf models.
//!
//! The CRC is written here rather than taken from a crate (the exception to "prefer a
//! library"): StarPU's variant (unreflected, caller-chosen initial value, fed 4 bytes
//! at a time) is a 6-line loop, and a general CRC crate would need it configured as a
//! custom algorithm to the same end.

/// StarPU's polynomial, `_STARPU_CRC32C_POLY_BE` in `src/common/hash.c`.
const POLY: u32 = 0x1EDC_6F41;

/// `enum starpu_data_interface_id` (StarPU 1.3's `include/starpu_data_interfaces.h`).
const MATRIX_INTERFACE_ID: u32 = 0;
const BLOCK_INTERFACE_ID: u32 = 1;
const VECTOR_INTERFACE_ID: u32 = 2;

/// StarPU's `starpu_hash_crc32c_be(input, crc)`: `input`'s 4 bytes (little-endian) into
/// the running CRC `crc`.
pub fn crc32c_be(input: u32, crc: u32) -> u32 {
    input.to_le_bytes().iter().fold(crc, |crc, &byte| {
        let mut crc = crc ^ (u32::from(byte) << 24);
        for _ in 0..8 {
            crc = (crc << 1) ^ if crc & 0x8000_0000 != 0 { POLY } else { 0 };
        }
        crc
    })
}

/// The shape of a data handle, as far as StarPU's footprint sees it: its interface
/// and dimensions in elements (StarPU 1.3 keeps them as 32-bit counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// StarPU's matrix interface: `nx` elements a row (the contiguous dimension), `ny`
    /// rows.
    Matrix { nx: u32, ny: u32 },
    /// StarPU's vector interface.
    Vector { nx: u32 },
    /// StarPU's block (3-D) interface.
    Block { nx: u32, ny: u32, nz: u32 },
}

impl Shape {
    /// The handle's footprint (`_starpu_compute_data_footprint`): the interface's own
    /// hash, hashed from the interface id.
    pub fn footprint(self) -> u32 {
        let (id, own) = match self {
            Shape::Matrix { nx, ny } => (MATRIX_INTERFACE_ID, crc32c_be(nx, ny)),
            Shape::Vector { nx } => (VECTOR_INTERFACE_ID, crc32c_be(nx, 0)),
            Shape::Block { nx, ny, nz } => (
                BLOCK_INTERFACE_ID,
                crc32c_be(nz, crc32c_be(ny, crc32c_be(nx, 0))),
            ),
        };
        crc32c_be(own, id)
    }

    /// The number of elements (as u64: it cannot overflow).
    pub fn elements(self) -> u64 {
        match self {
            Shape::Matrix { nx, ny } => u64::from(nx) * u64::from(ny),
            Shape::Vector { nx } => u64::from(nx),
            Shape::Block { nx, ny, nz } => u64::from(nx) * u64::from(ny) * u64::from(nz),
        }
    }
}

/// A task's footprint (`starpu_task_data_footprint`): its buffers' shapes, in the
/// codelet's order. As [`crate::perf_model::Arch::footprint`] is a u64, the 32-bit hash
/// is widened.
pub fn task(buffers: impl IntoIterator<Item = Shape>) -> u64 {
    u64::from(
        buffers
            .into_iter()
            .fold(0, |acc, shape| crc32c_be(shape.footprint(), acc)),
    )
}

/// The footprint of a task on `buffers` square `b`×`b` matrix tiles (the tiled
/// Cholesky, LU and QR kernels' case).
pub fn square_tiles(b: u32, buffers: usize) -> u64 {
    task(std::iter::repeat_n(Shape::Matrix { nx: b, ny: b }, buffers))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debian's `chol_model_11/21/22.idgraf` (single precision; StarPU's `size` column
    /// is the bytes of all buffers, 4-byte elements): POTRF on one tile, TRSM on two,
    /// GEMM on three, for tiles of 320, 640 and 960.
    #[test]
    fn debian_cholesky_hashes() {
        let expected = [
            // (b, buffers, hash, StarPU's size column)
            (960, 1, 0x617e_5fe6, 3_686_400),
            (320, 1, 0xcea3_7d6d, 409_600),
            (640, 1, 0xafdd_228b, 1_638_400),
            (960, 2, 0xff82_dda0, 7_372_800),
            (320, 2, 0x2c19_22b7, 819_200),
            (640, 2, 0xd39b_ff17, 3_276_800),
            (960, 3, 0x24c8_4a50, 11_059_200),
            (320, 3, 0xd464_31bb, 1_228_800),
            (640, 3, 0xf0ac_7beb, 4_915_200),
        ];
        for (b, buffers, hash, size) in expected {
            assert_eq!(square_tiles(b, buffers), hash, "{b}x{b}, {buffers} buffers");
            let bytes = Shape::Matrix { nx: b, ny: b }.elements() * 4 * buffers as u64;
            assert_eq!(bytes, size);
        }
    }

    /// Debian's LU models: the same hashes, as the footprint does not see the element
    /// size (`starpu_dlu_lu_model_22.idgraf` has 24c84a50 with size 22118400 = 3 × 960²
    /// × 8), and sirocco's `starpu_slu_lu_model_11/12/22` add tiles of 1440.
    #[test]
    fn debian_lu_hashes() {
        assert_eq!(square_tiles(960, 3), 0x24c8_4a50);
        assert_eq!(square_tiles(1440, 1), 0x25eb_b669);
        assert_eq!(square_tiles(1440, 2), 0x0e8b_ce2b);
        assert_eq!(square_tiles(1440, 3), 0x8cfc_3ba0);
    }

    #[test]
    fn buffer_order_and_interface_matter() {
        let a = Shape::Matrix { nx: 960, ny: 320 };
        let b = Shape::Matrix { nx: 320, ny: 960 };
        assert_ne!(a.footprint(), b.footprint());
        assert_ne!(task([a, b]), task([b, a]));
        assert_ne!(
            Shape::Vector { nx: 960 }.footprint(),
            Shape::Block {
                nx: 960,
                ny: 1,
                nz: 1
            }
            .footprint()
        );
        assert_eq!(task([]), 0);
    }
}
