//! Signatures in ELF binaries: a `.note.hetsched` section of type SHT_NOTE holding one
//! note with name "hetsched", type [`NT_HETSCHED_SIGNATURE`] and the JSON as descriptor.
//!
//! Writing uses binutils' `objcopy --add-section` (it gives `.note*` sections the
//! SHT_NOTE type and leaves every loaded segment alone, so the program still runs);
//! reading uses the `object` crate.

use hetsched_core::{Error, PathContext, Result};
use hetsched_util::files::{self, OutFile};
use object::elf;
use object::read::elf::{FileHeader, SectionHeader};
use object::read::{ReadCache, ReadRef};
use object::{Endianness, FileKind};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
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

/// The largest ELF file [`embed`] rewrites (1 GiB): it copies the program through
/// memory. [`read`] reads only the parts it needs, whatever the program's size.
pub const MAX_ELF_BYTES: u64 = 1 << 30;
/// The most sections [`read`] looks through (their headers take 4 MiB at most).
pub const MAX_SECTIONS: u64 = 1 << 16;
/// The most bytes of note sections [`read`] looks through: a program's notes take a
/// few hundred, a signature a few kB.
pub const MAX_NOTE_BYTES: u64 = 16 << 20;

/// Read the signature note of an ELF file: `Ok(None)` when it has none, an input error
/// when the file is not ELF or not a regular file (a FIFO or a device is refused
/// without blocking). Only the headers and the note sections are read (on demand, of a
/// file of any size), so a large program costs little memory.
pub fn read(path: &Path) -> Result<Option<Vec<u8>>> {
    let (file, _) = files::open(path, "a program")?;
    find_in(&ReadCache::new(file), path)
}

/// The signature note of the ELF data `data` (the file `path`).
fn find_in<'a, R: ReadRef<'a>>(data: R, path: &Path) -> Result<Option<Vec<u8>>> {
    match FileKind::parse(data) {
        Ok(FileKind::Elf32) => find::<elf::FileHeader32<Endianness>, R>(data, path),
        Ok(FileKind::Elf64) => find::<elf::FileHeader64<Endianness>, R>(data, path),
        _ => Err(Error::input(format!("{}: not an ELF file", path.display()))),
    }
}

fn find<'a, E: FileHeader<Endian = Endianness>, R: ReadRef<'a>>(
    data: R,
    path: &Path,
) -> Result<Option<Vec<u8>>> {
    let name = path.display();
    let bad = |e: object::Error| Error::input(format!("{name}: malformed ELF: {e}"));
    let header = E::parse(data).map_err(bad)?;
    let endian = header.endian().map_err(bad)?;
    let count = header.shnum(endian, data).map_err(bad)? as u64;
    if count > MAX_SECTIONS {
        return Err(Error::input(format!(
            "{name}: {count} sections; a program read for its signature may have at most {MAX_SECTIONS}"
        )));
    }
    let mut note_bytes = 0u64;
    for section in header.sections(endian, data).map_err(bad)?.iter() {
        if section.sh_type(endian) != elf::SHT_NOTE {
            continue;
        }
        note_bytes += section.sh_size(endian).into();
        if note_bytes > MAX_NOTE_BYTES {
            return Err(Error::input(format!(
                "{name}: note sections of more than {}; a program read for its signature may have at most that",
                files::bytes(MAX_NOTE_BYTES)
            )));
        }
        if let Some(mut notes) = section.notes(endian, data).map_err(bad)? {
            while let Some(note) = notes.next().map_err(bad)? {
                if note.name() == NOTE_NAME && note.n_type(endian).0 == NT_HETSCHED_SIGNATURE {
                    return Ok(Some(note.desc().to_vec()));
                }
            }
        }
    }
    Ok(None)
}

/// `signature embed`: the signature file `sig` (checked: only valid signatures go in)
/// written into the ELF binary `bin`. Returns the bytes embedded.
pub fn embed_signature(bin: &Path, sig: &Path) -> Result<usize> {
    let text = files::read_text(sig, "a signature", crate::signature::MAX_FILE_BYTES)?;
    crate::signature::Signature::from_json(&text, &sig.display().to_string())?;
    embed(bin, text.as_bytes())?;
    Ok(text.len())
}

/// `signature show`: the signature JSON embedded in the ELF binary `bin`; none is bad
/// input.
pub fn signature_text(bin: &Path) -> Result<String> {
    let Some(desc) = read(bin)? else {
        return Err(Error::input(format!(
            "{}: no hetsched signature (no {SECTION} note)",
            bin.display()
        )));
    };
    String::from_utf8(desc)
        .map_err(|_| Error::input(format!("{}: signature note is not UTF-8", bin.display())))
}

/// Write `desc` as the signature note of the ELF file `path`, in place, replacing any
/// earlier signature.
///
/// `path` must be a regular file, not a link (a link planted where a program was
/// expected would otherwise choose which file is rewritten). objcopy works on a copy in
/// a private temporary directory; the result replaces `path` by a rename (an
/// [`OutFile`]) with the program's mode and, where this process may set it, its owner.
pub fn embed(path: &Path, desc: &[u8]) -> Result<()> {
    let name = path.display();
    // Checked first: the final name is neither a link nor a device.
    let mut out = OutFile::create(path)?;
    let (mut file, size) = files::open_nofollow(path, "a program")?;
    if size > MAX_ELF_BYTES {
        return Err(Error::input(format!(
            "{name}: {size} bytes; a program a signature is embedded in may have at most {}",
            files::bytes(MAX_ELF_BYTES)
        )));
    }
    let meta = file
        .metadata()
        .map_err(|e| Error::input(format!("{name}: {e}")))?;
    let mut data = Vec::with_capacity(size as usize);
    (&mut file)
        .take(MAX_ELF_BYTES + 1)
        .read_to_end(&mut data)
        .map_err(|e| Error::input(format!("{name}: cannot read: {e}")))?;
    // Also refuses non-ELF files with a clear error.
    let had = find_in(data.as_slice(), path)?.is_some();
    let work = tempfile::Builder::new()
        .prefix("hetsched-embed-")
        .tempdir()
        .map_err(|e| Error::runtime(format!("cannot make a temporary directory: {e}")))?;
    let (input, note) = (work.path().join("program"), work.path().join("note"));
    let written = |p: &Path, bytes: &[u8]| {
        std::fs::write(p, bytes)
            .map_err(|e| Error::runtime(format!("cannot write {}: {e}", p.display())))
    };
    written(&input, &data)?;
    written(&note, &encode_note(desc))?;
    drop(data);
    let mut cmd = Command::new("objcopy");
    if had {
        cmd.args(["--remove-section", SECTION]);
    }
    cmd.arg("--add-section")
        .arg(format!("{SECTION}={}", note.display()))
        .args(["--set-section-flags", &format!("{SECTION}=readonly")])
        .args(["--set-section-alignment", &format!("{SECTION}=4")])
        .arg(&input);
    let run = cmd
        .output()
        .map_err(|e| Error::runtime(format!("cannot run objcopy (binutils): {e}")))?;
    if !run.status.success() {
        return Err(Error::runtime(format!(
            "objcopy failed on {name}: {}",
            String::from_utf8_lossy(&run.stderr).trim()
        )));
    }
    let result = std::fs::read(&input).at(&input)?;
    out.write_all(&result).map_err(|e| out.error(e))?;
    // Written before the mode is set: a write by a user other than root would clear
    // the set-user-ID bit again.
    out.flush().map_err(|e| out.error(e))?;
    let temp = out.get_ref();
    let keep = |e: std::io::Error| Error::runtime(format!("{name}: cannot keep its mode: {e}"));
    temp.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))
        .map_err(keep)?;
    if is_root() {
        std::os::unix::fs::fchown(temp, Some(meta.uid()), Some(meta.gid())).map_err(keep)?;
        // chown clears the set-user-ID and set-group-ID bits: set them again.
        temp.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))
            .map_err(keep)?;
    }
    out.finish()?;
    Ok(())
}

/// Whether this process runs as root (and so may give a file to another user).
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
