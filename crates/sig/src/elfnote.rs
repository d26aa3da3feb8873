//! Signatures in ELF binaries: a `.note.hetsched` section of type SHT_NOTE holding one
//! note with name "hetsched", type [`NT_HETSCHED_SIGNATURE`] and the JSON as descriptor.
//!
//! Writing uses binutils' `objcopy --add-section` (it gives `.note*` sections the
//! SHT_NOTE type and leaves every loaded segment alone, so the program still runs);
//! reading uses the `object` crate.

use hetsched_core::{Error, Result};
use object::elf;
use object::read::elf::{FileHeader, SectionHeader};
use object::{Endianness, FileKind};
use std::io::Read;
use std::path::Path;
use std::process::Command;

/// Section name.
pub const SECTION: &str = ".note.hetsched";
/// Note owner name.
pub const NOTE_NAME: &[u8] = b"hetsched";
/// Note type of a signature.
pub const NT_HETSCHED_SIGNATURE: u32 = 1;

/// Encode one ELF note (little endian, 4-byte alignment).
pub fn encode_note(desc: &[u8]) -> Vec<u8> {
    let pad4 = |n: usize| (n + 3) & !3;
    let namesz = NOTE_NAME.len() + 1; // NUL-terminated
    let mut v = Vec::with_capacity(12 + pad4(namesz) + pad4(desc.len()));
    v.extend_from_slice(&(namesz as u32).to_le_bytes());
    v.extend_from_slice(&(desc.len() as u32).to_le_bytes());
    v.extend_from_slice(&NT_HETSCHED_SIGNATURE.to_le_bytes());
    v.extend_from_slice(NOTE_NAME);
    v.resize(12 + pad4(namesz), 0);
    v.extend_from_slice(desc);
    v.resize(12 + pad4(namesz) + pad4(desc.len()), 0);
    v
}

/// The largest ELF file `read` loads (1 GiB).
pub const MAX_ELF_BYTES: u64 = 1 << 30;

/// Read the signature note of an ELF file: `Ok(None)` when it has none, an input error
/// when the file is not ELF.
pub fn read(path: &Path) -> Result<Option<Vec<u8>>> {
    let name = path.display().to_string();
    let cannot = |e: std::io::Error| Error::input(format!("{name}: cannot read: {e}"));
    let mut data = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_ELF_BYTES + 1).read_to_end(&mut data))
        .map_err(cannot)?;
    if data.len() as u64 > MAX_ELF_BYTES {
        return Err(Error::input(format!(
            "{name}: larger than {MAX_ELF_BYTES} bytes: not a program this reads (e.g. /dev/zero)"
        )));
    }
    let bad = |e: object::Error| Error::input(format!("{name}: malformed ELF: {e}"));
    match FileKind::parse(&*data) {
        Ok(FileKind::Elf32) => find::<elf::FileHeader32<Endianness>>(&data).map_err(bad),
        Ok(FileKind::Elf64) => find::<elf::FileHeader64<Endianness>>(&data).map_err(bad),
        _ => Err(Error::input(format!("{name}: not an ELF file"))),
    }
}

fn find<E: FileHeader<Endian = Endianness>>(data: &[u8]) -> object::Result<Option<Vec<u8>>> {
    let header = E::parse(data)?;
    let endian = header.endian()?;
    for section in header.sections(endian, data)?.iter() {
        if let Some(mut notes) = section.notes(endian, data)? {
            while let Some(note) = notes.next()? {
                if note.name() == NOTE_NAME && note.n_type(endian).0 == NT_HETSCHED_SIGNATURE {
                    return Ok(Some(note.desc().to_vec()));
                }
            }
        }
    }
    Ok(None)
}

/// Write `desc` as the signature note of the ELF file `path`, in place, replacing any
/// earlier signature.
pub fn embed(path: &Path, desc: &[u8]) -> Result<()> {
    let had = read(path)?.is_some(); // also: refuses non-ELF files with a clear error
    let note = tempfile_with(&encode_note(desc))?;
    let mut cmd = Command::new("objcopy");
    if had {
        cmd.args(["--remove-section", SECTION]);
    }
    cmd.arg("--add-section")
        .arg(format!("{SECTION}={}", note.path().display()))
        .args(["--set-section-flags", &format!("{SECTION}=readonly")])
        .args(["--set-section-alignment", &format!("{SECTION}=4")])
        .arg(path);
    let out = cmd
        .output()
        .map_err(|e| Error::runtime(format!("cannot run objcopy (binutils): {e}")))?;
    if !out.status.success() {
        return Err(Error::runtime(format!(
            "objcopy failed on {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// A temporary file holding `bytes` (deleted on drop).
fn tempfile_with(bytes: &[u8]) -> Result<TempNote> {
    let path = std::env::temp_dir().join(format!(
        "hetsched-note-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::write(&path, bytes)
        .map_err(|e| Error::runtime(format!("cannot write {}: {e}", path.display())))?;
    Ok(TempNote(path))
}

struct TempNote(std::path::PathBuf);

impl TempNote {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempNote {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
