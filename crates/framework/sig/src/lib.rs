//! hetsched-sig: architectural signatures after Shelepov & Fedorova.
//!
//! Memory traces (valgrind lackey, live or saved, or the compact binary format) →
//! exact or sampled reuse distances over 64-byte blocks → the paper's 20 buckets and
//! working set → estimated last-level miss rates for 24 cache configurations →
//! clock-speed elasticity and sensitivity class → a JSON signature stored in an ELF
//! note. See docs/signatures.md.

pub mod analysis;
pub mod block_slots;
pub mod buckets;
pub mod elasticity;
mod live_slots;
pub mod missrate;
pub mod near;
mod prefetch;
pub mod reuse;
pub mod sampled;
pub mod trace;

pub use analysis::{Analyzer, Mode, Profile};
pub mod bench;
pub mod elfnote;
pub mod signature;
pub mod source;
pub mod validate;
