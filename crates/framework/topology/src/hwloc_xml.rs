//! What an hwloc XML file must be before libhwloc reads it.
//!
//! libhwloc 2.9's XML import trusts the sets of the objects it reads. For a 2.x file it
//! does not check that an object with a `cpuset` also has a `complete_cpuset` (nor a
//! `nodeset` its `complete_nodeset`): the missing set stays a NULL bitmap that the core
//! later dereferences, a SIGSEGV in `hwloc_bitmap_set`, `_or`, `_isequal` or
//! `_compare_first` (`lstopo` 2.9 crashes the same way). A Machine with a cpuset and a
//! PU, 150 bytes, is enough. hwloc's export always writes both sets of a pair, and a
//! 2.x export always has a NUMANode, so a file that breaks either was not written by
//! hwloc and is refused here with what is wrong, before hwloc sees it. hwloc checks the pairs of a 1.x file itself (and ignores a Group
//! whose sets are incomplete): they are checked here too, Groups excepted, for the
//! message. A 1.x file needs no NUMA node, but a 1.x NUMANode without a cpuset crashes
//! hwloc too (`hwloc_bitmap_isequal`), and 1.x exports always gave them one.
//!
//! This catches every crash a mutation fuzzer found in hwloc 2.9's XML import (all
//! were missing sets), but hwloc may have others: the load itself runs in a child
//! process ([`crate::hwloc::load`]), so what gets past this check cannot take hetsched
//! down either.

use hetsched_core::{Error, Result};
use std::path::Path;

/// An hwloc export of a 192-PU machine has 3,900 XML nodes (330 kB): a thousand times
/// that is more than [`crate::machine_file::limits::MAX_FILE_BYTES`] of such XML holds. Keeps the parse of a
/// hostile file within memory.
const MAX_NODES: u32 = 4_000_000;

/// Checks `text`, the contents of the hwloc XML file `path`: well-formed XML whose root
/// is `<topology>`, a format version this hwloc (2.9) imports, and objects hwloc can
/// load without crashing.
pub fn check(path: &Path, text: &str) -> Result<()> {
    let fail = |what: String| Err(Error::input(format!("{}: {what}", path.display())));
    let options = roxmltree::ParsingOptions {
        // hwloc's exports name their DTD (`<!DOCTYPE topology SYSTEM "hwloc2.dtd">`);
        // roxmltree bounds entity expansion itself.
        allow_dtd: true,
        nodes_limit: MAX_NODES,
        ..Default::default()
    };
    let doc = match roxmltree::Document::parse_with_options(text, options) {
        Ok(doc) => doc,
        Err(roxmltree::Error::NodesLimitReached) => {
            return fail(format!(
                "more than {MAX_NODES} XML nodes; not an hwloc export of a real machine"
            ))
        }
        Err(e) => return fail(format!("not an hwloc XML file: malformed XML: {e}")),
    };
    let topology = doc.root_element();
    if topology.tag_name().name() != "topology" {
        return fail(format!(
            "not an hwloc XML file (the root element is <{}>, not <topology>)",
            topology.tag_name().name()
        ));
    }
    // hwloc reads the version as "%u.%u"; anything else, or none, is 1.x to it.
    let major = topology.attribute("version").map_or(1, |v| {
        let (major, rest) = v.split_at(v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len()));
        let minor_digits = rest
            .strip_prefix('.')
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
        match major.parse::<u32>() {
            Ok(m) if minor_digits => m,
            _ => 1,
        }
    });
    if major > 2 {
        return fail(format!(
            "hwloc XML version {} is newer than this hwloc (2.9) can import (versions 1.x and 2.x); re-export it with hwloc 2.x",
            topology.attribute("version").unwrap_or_default()
        ));
    }

    let objects: Vec<_> = topology
        .descendants()
        .filter(|n| n.has_tag_name("object"))
        .collect();
    let fail_at = |n: &roxmltree::Node, what: String| {
        let line = doc.text_pos_at(n.range().start).row;
        Err(Error::input(format!("{}:{line}: {what}", path.display())))
    };
    if major >= 2
        && !objects
            .iter()
            .any(|o| o.attribute("type") == Some("NUMANode"))
    {
        return fail(
            "no NUMANode object: hwloc 2.9 crashes on or refuses such a file; an hwloc 2.x export always has one"
                .to_string(),
        );
    }
    for o in &objects {
        let kind = o.attribute("type").unwrap_or("untyped");
        let index = o
            .attribute("os_index")
            .map_or(String::new(), |i| format!(" P#{i}"));
        if major < 2 && kind == "Group" {
            continue; // hwloc ignores a 1.x Group with incomplete sets
        }
        for (set, complete) in [
            ("cpuset", "complete_cpuset"),
            ("nodeset", "complete_nodeset"),
        ] {
            let (has, lacks) = match (o.has_attribute(set), o.has_attribute(complete)) {
                (true, false) => (set, complete),
                (false, true) => (complete, set),
                _ => continue,
            };
            return fail_at(
                o,
                format!("object {kind}{index} has a {has} but no {lacks}: hwloc 2.9 crashes on such a file; an hwloc export always writes both"),
            );
        }
        // hwloc compares a 1.x NUMA node's complete_cpuset with its parent's.
        if major < 2 && kind == "NUMANode" && !o.has_attribute("cpuset") {
            return fail_at(
                o,
                format!("object NUMANode{index} has no cpuset: hwloc 2.9 crashes on such a 1.x file; an hwloc 1.x export always gives NUMA nodes one"),
            );
        }
    }
    Ok(())
}
